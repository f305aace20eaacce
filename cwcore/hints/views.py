"""The diagnostic views of frozen hints: ``retrieved``, ``manifest``, ``included``, ``excluded``.

Each view is built from what :mod:`cwcore.hints.frozen` persisted with a decision — the hint
bytes and the diagnostics (ids, numbers and reasons, never query or evidence text) — so it reads
the same for a decision made today and one frozen months ago, and needs no index.

* ``retrieved`` — per decision: the quoted excerpt of the hint (or the marker's phrases, which
  are spans of the user's own message), the ranked candidates, the candidate/dedup/branch
  counts, the planner exclusions, the token use and budget, warnings and the latency.
* ``manifest`` — the context-manifest entries of a decision: every selected or privacy-excluded
  item as kind ``retrieval`` with its source entry id, classification, score, tokens, group
  (the user-message key) and reason; ``retrievedEventIds`` lists their canonical source ids
  (``<documentId>#<messageKey>``) and nothing else.
* ``included`` — the items that entered the context (a decision shows at most one).
* ``excluded`` — the items left out after ranking, each with its reason and stage: ``rank``
  (``duplicate``, ``suppressed:…``, ``max-results``) and ``planner`` (``privacy:…``, the gate's
  ``weak``/``ambiguous``…, ``budget``, ``active-budget``, and ``one-per-message`` for ranked
  candidates behind the one that was shown). With ``all``, the rows the ``filter`` stage dropped
  before ranking are listed too (``unverified``, ``stale``, ``stale:tool-payload``,
  ``durable-archive``).

A decision whose hint was withdrawn at freezing (``active-budget``) has no included item: its
candidate is listed as excluded with that reason.

* ``memory`` — the memory selection of each turn the hooks delivered (kept per session and
  user-message key, the session-start block under ``session-start``): the record ids per
  section of the block, and every record left out with its reason and stage — a processor of
  the pipeline (``StatusFilterProcessor``, … ``NegativeScopeProcessor``) or ``selection``
  (``not-relevant``, ``selected-limit``, ``budget``, …) — plus bytes, budget and ranking. Built
  from :func:`cwcore.hints.frozen.memory_listing` records, not from frozen decisions.
"""

from __future__ import annotations

from typing import Any

from cwcore.errors import InvalidInput
from cwcore.hints import render

VIEWS = ("retrieved", "manifest", "included", "excluded", "memory")
#: Reasons of rows dropped before ranking (shown by ``excluded`` only with ``all``).
FILTER_REASONS = ("unverified", "stale", "durable-archive")
RANK_REASONS = ("duplicate", "suppressed", "max-results")
#: The reason of a ranked candidate behind the one shown: a decision shows one item at most.
BEHIND_SHOWN = "one-per-message"


def stage(reason: str) -> str:
    """``filter``, ``rank`` or ``planner``: where an exclusion reason comes from."""
    head = reason.split(":", 1)[0]
    if head in FILTER_REASONS:
        return "filter"
    if head in RANK_REASONS:
        return "rank"
    return "planner"


def _head(record: dict[str, Any]) -> dict[str, Any]:
    return {
        "session": record["session"],
        "messageKey": record["messageKey"],
        "outcome": record["outcome"],
        "reason": record.get("reason"),
        "createdAt": record.get("createdAt"),
    }


def included(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of a decision that entered the context (none when no hint was kept)."""
    if not record.get("hint"):
        return []
    return [dict(item) for item in (record.get("diagnostics") or {}).get("included") or []]


def excluded(record: dict[str, Any], *, everything: bool = False) -> list[dict[str, Any]]:
    """What a decision left out, with reasons and stages (see the module docstring)."""
    diag = record.get("diagnostics") or {}
    out: list[dict[str, Any]] = []
    for item in diag.get("excluded") or []:
        reason = str(item.get("reason") or "")
        entry = {**item, "reason": reason, "stage": stage(reason)}
        if everything or entry["stage"] != "filter":
            out.append(entry)
    shown = {item["id"] for item in included(record)}
    # A privacy exclusion already accounts for the best candidate (it left the ranked list).
    top_accounted = bool(shown) or any(e["reason"].startswith("privacy:") for e in out)
    for rank, item in enumerate(diag.get("retrieved") or []):
        if item["id"] in shown:
            continue
        if rank == 0 and not top_accounted:
            # The best candidate was not shown: the gate, the budget or the freeze said why.
            reason = str(record.get("reason") or diag.get("reason") or "none")
        else:
            reason = BEHIND_SHOWN
        out.append({**item, "reason": reason, "stage": "planner"})
    return out


def manifest(record: dict[str, Any]) -> dict[str, Any]:
    """Manifest entries (selected and privacy-excluded items) and their source ids."""
    diag = record.get("diagnostics") or {}
    entries = [
        {
            "kind": "retrieval",
            "id": item["id"],
            "included": True,
            "classification": item.get("classification"),
            "score": item.get("score"),
            "tokens": item.get("tokens"),
            "group": item.get("group", record["messageKey"]),
            "reason": item.get("reason"),
        }
        for item in included(record)
    ]
    for item in diag.get("excluded") or []:
        if str(item.get("reason") or "").startswith("privacy:"):
            entries.append(
                {
                    "kind": "retrieval",
                    "id": item["id"],
                    "included": False,
                    "classification": item.get("classification"),
                    "score": None,
                    "tokens": 0,
                    "group": record["messageKey"],
                    "reason": item["reason"],
                }
            )
    return {
        **_head(record),
        "entries": entries,
        "retrievedEventIds": [e["id"] for e in entries],
    }


def retrieved(record: dict[str, Any]) -> dict[str, Any]:
    """Local excerpts, candidates, counts, planner exclusions, token use and latency."""
    diag = record.get("diagnostics") or {}
    hint = str(record.get("hint") or "")
    is_marker = bool(hint) and record["outcome"] == "marker"
    return {
        **_head(record),
        "excerpt": render.quoted_content(hint) if hint and not is_marker else None,
        "markerPhrases": render.marker_phrases(hint) if is_marker else None,
        "candidates": list(diag.get("retrieved") or []),
        "counts": dict(diag.get("counts") or {}),
        "exclusions": [e for e in excluded(record) if e["stage"] == "planner"],
        "tokens": int(record.get("tokens") or 0),
        "budget": diag.get("budget"),
        "warnings": list(diag.get("warnings") or []),
        "latencyMs": diag.get("latencyMs"),
    }


def memory(record: dict[str, Any]) -> dict[str, Any]:
    """One turn's memory selection: what entered the block and what was left out, and why."""
    excluded: list[dict[str, Any]] = []
    for trace in record.get("traces") or []:
        reasons = trace.get("exclusion_reasons") or {}
        for rid in trace.get("excluded_ids") or []:
            excluded.append({"id": rid, "reason": reasons.get(rid), "stage": trace["processor"]})
    excluded += [{**e, "stage": "selection"} for e in record.get("unselected") or []]
    more = sum(int(t.get("excludedMore") or 0) for t in record.get("traces") or [])
    more += int(record.get("unselectedMore") or 0)
    return {
        "session": record["session"],
        "messageKey": record["messageKey"],
        "event": record.get("event"),
        "project": record.get("project"),
        "createdAt": record.get("createdAt"),
        "skipped": bool(record.get("skipped")),
        "reason": record.get("reason"),
        "bytes": int(record.get("bytes") or 0),
        "budgetBytes": record.get("budgetBytes"),
        "selected": dict(record.get("sections") or {}),
        "truncated": list(record.get("truncated") or []),
        "excluded": excluded,
        "excludedMore": more,
        "ranking": record.get("ranking"),
        "traces": [
            {k: t[k] for k in ("processor", "input_count", "output_count")}
            for t in record.get("traces") or []
        ],
        "latencyMs": record.get("latencyMs"),
    }


def view(name: str, records: list[dict[str, Any]], *, everything: bool = False) -> dict[str, Any]:
    """The ``name`` view of frozen decisions (``everything`` applies to ``excluded``)."""
    if name not in VIEWS:
        raise InvalidInput(f"view must be one of {', '.join(VIEWS)}")
    if everything and name != "excluded":
        raise InvalidInput("all applies to the excluded view only")
    decisions: list[dict[str, Any]]
    if name == "retrieved":
        decisions = [retrieved(r) for r in records]
    elif name == "manifest":
        decisions = [manifest(r) for r in records]
    elif name == "memory":
        decisions = [memory(r) for r in records]
    elif name == "included":
        decisions = [{**_head(r), "included": included(r)} for r in records]
    else:
        decisions = [{**_head(r), "excluded": excluded(r, everything=everything)} for r in records]
    return {"view": name, "all": everything, "decisions": decisions}

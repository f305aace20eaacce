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

from collections.abc import Mapping
from typing import Any

from cwcore.contract.hints import (
    DecisionHead,
    ExcludedDecision,
    Exclusion,
    HintsView,
    IncludedDecision,
    ManifestDecision,
    ManifestEntry,
    MemoryDecision,
    MemoryExclusion,
    MemoryTurn,
    RetrievedDecision,
    TraceCounts,
    ViewDecision,
)
from cwcore.contract.preflight import Counts, Diagnostics, IncludedItem, PrivacyExclusion
from cwcore.errors import InvalidInput
from cwcore.hints import render
from cwcore.store import codec

VIEWS = ("retrieved", "manifest", "included", "excluded", "memory")
#: Reasons of rows dropped before ranking (shown by ``excluded`` only with ``all``).
FILTER_REASONS = ("unverified", "stale", "durable-archive")
RANK_REASONS = ("duplicate", "suppressed", "max-results")
#: The reason of a ranked candidate behind the one shown: a decision shows one item at most.
BEHIND_SHOWN = "one-per-message"

#: A frozen decision as the store keeps it (:func:`cwcore.hints.frozen.listing`).
Stored = Mapping[str, Any]


def stage(reason: str) -> str:
    """``filter``, ``rank`` or ``planner``: where an exclusion reason comes from."""
    head = reason.split(":", 1)[0]
    if head in FILTER_REASONS:
        return "filter"
    if head in RANK_REASONS:
        return "rank"
    return "planner"


def head(record: Stored) -> DecisionHead:
    return DecisionHead(
        session=record["session"],
        message_key=record["messageKey"],
        outcome=record["outcome"],
        reason=record.get("reason"),
        created_at=record.get("createdAt"),
    )


#: What parsing a stored record that lacks a field or holds the wrong type raises.
_MALFORMED = (KeyError, TypeError, ValueError, AttributeError)


def diagnostics(record: Stored) -> Diagnostics:
    """The diagnostics frozen with a decision (empty for a record that kept none); a record
    whose diagnostics do not read back is corrupt (:class:`~cwcore.errors.CorruptRecord`)."""
    try:
        return Diagnostics.from_json(record.get("diagnostics") or {})
    except _MALFORMED as exc:
        raise codec.corrupt("hint diagnostics", f"{type(exc).__name__}: {exc}") from None


def memory_turn(record: Stored) -> MemoryTurn:
    """A kept memory selection; one that does not read back is corrupt."""
    try:
        return MemoryTurn.from_json(record)
    except _MALFORMED as exc:
        raise codec.corrupt("memory turn", f"{type(exc).__name__}: {exc}") from None


def included(record: Stored, diag: Diagnostics) -> tuple[IncludedItem, ...]:
    """The items of a decision that entered the context (none when no hint was kept)."""
    return diag.shown if record.get("hint") else ()


def excluded(record: Stored, diag: Diagnostics, *, everything: bool = False) -> list[Exclusion]:
    """What a decision left out, with reasons and stages (see the module docstring)."""
    out: list[Exclusion] = []
    for row in diag.left_out:
        reason = row.reason or ""
        entry = Exclusion(row, reason, stage(reason))
        if everything or entry.stage != "filter":
            out.append(entry)
    shown = {item.id for item in included(record, diag)}
    # A privacy exclusion already accounts for the best candidate (it left the ranked list).
    top_accounted = bool(shown) or any(e.reason.startswith("privacy:") for e in out)
    for rank, candidate in enumerate(diag.candidates):
        if candidate.id in shown:
            continue
        if rank == 0 and not top_accounted:
            # The best candidate was not shown: the gate, the budget or the freeze said why.
            reason = str(record.get("reason") or diag.reason or "none")
        else:
            reason = BEHIND_SHOWN
        out.append(Exclusion(candidate, reason, "planner"))
    return out


def manifest(record: Stored, diag: Diagnostics) -> ManifestDecision:
    """Manifest entries (selected and privacy-excluded items) and their source ids."""
    entries = [
        ManifestEntry(
            kind="retrieval",
            id=item.id,
            included=True,
            classification=item.classification,
            score=item.score,
            tokens=item.tokens,
            group=item.group,
            reason=item.reason,
        )
        for item in included(record, diag)
    ]
    for row in diag.left_out:
        if (row.reason or "").startswith("privacy:"):
            entries.append(
                ManifestEntry(
                    kind="retrieval",
                    id=row.id,
                    included=False,
                    classification=(
                        row.classification if isinstance(row, PrivacyExclusion) else None
                    ),
                    score=None,
                    tokens=0,
                    group=record["messageKey"],
                    reason=row.reason,
                )
            )
    return ManifestDecision(head(record), tuple(entries))


def retrieved(record: Stored, diag: Diagnostics) -> RetrievedDecision:
    """Local excerpts, candidates, counts, planner exclusions, token use and latency."""
    hint = str(record.get("hint") or "")
    is_marker = bool(hint) and record["outcome"] == "marker"
    return RetrievedDecision(
        head=head(record),
        excerpt=render.quoted_content(hint) if hint and not is_marker else None,
        marker_phrases=tuple(render.marker_phrases(hint)) if is_marker else None,
        candidates=diag.candidates,
        counts=diag.counts or Counts(),
        exclusions=tuple(e for e in excluded(record, diag) if e.stage == "planner"),
        tokens=int(record.get("tokens") or 0),
        budget=diag.budget,
        warnings=diag.warnings or (),
        latency_ms=diag.latency_ms,
    )


def memory(record: Stored) -> MemoryDecision:
    """One turn's memory selection: what entered the block and what was left out, and why."""
    turn = memory_turn(record)
    left_out: list[MemoryExclusion] = []
    for trace in turn.traces:
        reasons = dict(trace.exclusion_reasons)
        for rid in trace.excluded_ids:
            left_out.append(MemoryExclusion(rid, reasons.get(rid), trace.processor))
    left_out += [MemoryExclusion(u.id, u.reason, "selection") for u in turn.unselected]
    more = sum(t.excluded_more or 0 for t in turn.traces) + (turn.unselected_more or 0)
    return MemoryDecision(
        session=turn.session,
        message_key=turn.message_key,
        event=turn.event,
        project=turn.project,
        created_at=turn.created_at,
        skipped=turn.skipped,
        reason=turn.reason,
        bytes=turn.bytes,
        budget_bytes=turn.budget_bytes,
        selected=turn.sections,
        truncated=turn.truncated,
        excluded=tuple(left_out),
        excluded_more=more,
        ranking=turn.ranking,
        traces=tuple(TraceCounts(t.processor, t.input_count, t.output_count) for t in turn.traces),
        latency_ms=turn.latency_ms,
    )


def _decision(name: str, record: Stored, everything: bool) -> ViewDecision:
    if name == "memory":
        return memory(record)
    diag = diagnostics(record)
    if name == "retrieved":
        return retrieved(record, diag)
    if name == "manifest":
        return manifest(record, diag)
    if name == "included":
        return IncludedDecision(head(record), included(record, diag))
    return ExcludedDecision(head(record), tuple(excluded(record, diag, everything=everything)))


def view(
    name: str, records: list[dict[str, Any]], *, everything: bool = False, truncated: bool
) -> HintsView:
    """The ``name`` view of frozen decisions (``everything`` applies to ``excluded``);
    ``truncated`` says the records were cut at the listing's limit."""
    if name not in VIEWS:
        raise InvalidInput(f"view must be one of {', '.join(VIEWS)}")
    if everything and name != "excluded":
        raise InvalidInput("all applies to the excluded view only")
    decisions = tuple(_decision(name, r, everything) for r in records)
    return HintsView(name, everything, decisions, truncated)

"""What a turn's memory selection leaves behind for diagnostics, bounded.

:func:`summary` keeps ids, counts and reasons of an :func:`cwcore.memory.injection.build`
result — never the block's text or a statement — and at most :data:`MAX_IDS` ids per list, so
a record per user message stays small however many memory records the store holds (up to
100,000). A cut list says how many ids it left out (``excludedMore``, ``unselectedMore``,
``scoresMore``).
"""

from __future__ import annotations

from typing import Any

MAX_IDS = 100


def _trace(trace: dict[str, Any], limit: int) -> dict[str, Any]:
    ids = list(trace.get("excluded_ids") or [])
    reasons = trace.get("exclusion_reasons") or {}
    kept = ids[:limit]
    out = {
        "processor": trace["processor"],
        "input_count": trace["input_count"],
        "output_count": trace["output_count"],
        "excluded_ids": kept,
        "exclusion_reasons": {i: reasons[i] for i in kept if i in reasons},
    }
    if len(ids) > limit:
        out["excludedMore"] = len(ids) - limit
    return out


def summary(result: dict[str, Any], *, limit: int = MAX_IDS) -> dict[str, Any]:
    """The diagnostic part of an injection result: skipped and why, bytes and budget, the ids
    per section, truncated sections, each processor's trace, the records left out and why, and
    the ranking (mode, weights, best scores) — each id list at most ``limit`` long."""
    out: dict[str, Any] = {
        "skipped": bool(result.get("skipped")),
        "reason": result.get("reason"),
        "bytes": int(result.get("bytes") or 0),
        "budgetBytes": result.get("budgetBytes"),
        "sections": dict(result.get("sections") or {}),
        "truncated": list(result.get("truncated") or []),
        "traces": [_trace(t, limit) for t in result.get("traces") or []],
    }
    unselected = list(result.get("unselected") or [])
    out["unselected"] = unselected[:limit]
    if len(unselected) > limit:
        out["unselectedMore"] = len(unselected) - limit
    ranking = result.get("ranking")
    if ranking:
        scores = list(ranking.get("scores") or [])
        out["ranking"] = {
            "mode": ranking.get("mode"),
            "weights": ranking.get("weights"),
            "scores": scores[:limit],
        }
        if len(scores) > limit:
            out["ranking"]["scoresMore"] = len(scores) - limit
    return out

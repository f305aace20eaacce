"""Ordering the lexical/semantic tier: RRF of both modes' ranks, blended, times the prior.

This is the one definition of the tier's order that search and the evaluation share. Each mode
ranks its own candidates (keys: window ids as strings in search, documents in the eval); a
candidate's normalized score for the blend is the best calibrated score any mode gave it;
:func:`cwcore.retrieve.fusion.fuse` applies RRF (k = 60) and the 75/60/40 % rank/score blend;
the importance prior (capped 1.15× by its producer) multiplies the blended value. Ties break by
best rank, then key. Presented scores are never changed here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cwcore.retrieve import fusion


@dataclass
class TierEntry:
    key: str
    order: float  # blended fusion value × prior: the sort key, never presented
    fused: fusion.Fused
    prior: float


def fuse_tier(
    lexical: Sequence[tuple[str, float]],
    semantic: Sequence[tuple[str, float]],
    prior: Mapping[str, float] | None = None,
) -> list[TierEntry]:
    """Order the union of ``lexical`` and ``semantic`` (each ``(key, calibrated score)``, best
    first); ``prior`` maps keys to the importance multiplier (default 1)."""
    scores: dict[str, float] = {}
    for key, score in (*lexical, *semantic):
        scores[key] = max(scores.get(key, 0.0), float(score))
    rankings: dict[str, list[str]] = {}
    if lexical:
        rankings["lexical"] = [k for k, _ in lexical]
    if semantic:
        rankings["semantic"] = [k for k, _ in semantic]
    out = []
    for f in fusion.fuse(rankings, scores):
        boost = (prior or {}).get(f.key, 1.0)
        out.append(TierEntry(f.key, f.order * boost, f, boost))
    out.sort(key=lambda e: (-e.order, min(e.fused.ranks.values()), e.key))
    return out

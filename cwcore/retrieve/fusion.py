"""Reciprocal Rank Fusion within the lexical/semantic tier (k = 60).

Each mode ranks its own candidates. A candidate's RRF credit is the sum over the modes that
found it of ``weight / (k + rank)`` (:data:`MODE_WEIGHTS`); the credit, normalized by the best
credit, is blended with the candidate's own normalized score, trusting rank most near the
head: 75 % rank weight for ranks
1–3, 60 % for 4–10, 40 % beyond (the candidate's best rank across modes decides). Fusion orders
only: it never changes a presented score and never moves a candidate across tiers — callers fuse
one tier at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

RRF_K = 60
#: RRF credit per mode: a mode's ``1 / (k + rank)`` is multiplied by its weight. A semantic
#: rank counts 0.3 of a lexical one, so a semantic hit joins the order beside lexical evidence
#: instead of displacing it: chosen by ``make eval`` on all three dev sets together (weights
#: 1.0, 0.7, 0.5 and 0.3 measured, and 1.0 to 0.2 with the pooled calibration in the blend;
#: docs/evaluation.md).
MODE_WEIGHTS: dict[str, float] = {"lexical": 1.0, "semantic": 0.3}
#: Blend the rank credit with the candidates' calibrated scores (``rank_weight``); False orders
#: by the weighted RRF credit alone.
SCORE_BLEND = True


def rank_weight(rank: int) -> float:
    """Weight of the rank-fusion component for a 1-based rank."""
    if rank <= 3:
        return 0.75
    if rank <= 10:
        return 0.60
    return 0.40


@dataclass
class Fused:
    """A fused candidate: its id, the blended ordering key, and the trace of where it came from."""

    key: str
    order: float
    ranks: dict[str, int] = field(default_factory=dict)  # mode -> 1-based rank
    rrf: float = 0.0


def fuse(
    rankings: Mapping[str, Sequence[str]],
    scores: Mapping[str, float],
    *,
    k: int = RRF_K,
) -> list[Fused]:
    """Fuse per-mode rankings (mode -> ordered candidate keys) into one order.

    ``scores`` holds each candidate's normalized score in [0, 1] (its best mode's). Ties break by
    best rank, then key, so the result is deterministic.
    """
    fused: dict[str, Fused] = {}
    for mode, keys in rankings.items():
        for rank, key in enumerate(keys, start=1):
            entry = fused.setdefault(key, Fused(key, 0.0))
            if mode not in entry.ranks:
                entry.ranks[mode] = rank
                entry.rrf += MODE_WEIGHTS.get(mode, 1.0) / (k + rank)
    if not fused:
        return []
    best = max(f.rrf for f in fused.values())
    for entry in fused.values():
        weight = rank_weight(min(entry.ranks.values())) if SCORE_BLEND else 1.0
        entry.order = weight * (entry.rrf / best) + (1 - weight) * scores.get(entry.key, 0.0)
    return sorted(fused.values(), key=lambda f: (-f.order, min(f.ranks.values()), f.key))


@dataclass
class TierEntry:
    key: str
    order: float  # blended fusion value × prior: the sort key, never presented
    fused: Fused
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
    for f in fuse(rankings, scores):
        boost = (prior or {}).get(f.key, 1.0)
        out.append(TierEntry(f.key, f.order * boost, f, boost))
    out.sort(key=lambda e: (-e.order, min(e.fused.ranks.values()), e.key))
    return out

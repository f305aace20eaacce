"""Reciprocal Rank Fusion within the lexical/semantic tier (k = 60).

Each mode ranks its own candidates. A candidate's RRF credit is the sum over the modes that
found it of ``weight / (k + rank)`` (``k``, the weights and the blend switch are fields of
:class:`~cwcore.retrieve.params.RetrievalParams`: ``rrf_k``, ``lexical_weight``,
``semantic_weight``, ``score_blend``); the credit, normalized by the best
credit, is blended with the candidate's own normalized score, trusting rank most near the
head: 75 % rank weight for ranks
1–3, 60 % for 4–10, 40 % beyond (the candidate's best rank across modes decides). Fusion orders
only: it never changes a presented score and never moves a candidate across tiers — callers fuse
one tier at a time.

Equal evidence shares a rank: when a mode's raw values are given (``ties``), candidates with
equal raw values get the rank of the first of them (competition ranking, 1, 1, 1, 4), so their
RRF credit is equal and only the priors (recency first) order them; what is still equal comes
newest first (the higher window id when keys are window ids; docs/retrieval.md, "Order and
ties").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from cwcore.retrieve.params import DEFAULT, RetrievalParams

#: A candidate key: a window id (search) or any string id (tests, other rankings).
K = TypeVar("K", bound=int | str)


def rank_weight(rank: int) -> float:
    """Weight of the rank-fusion component for a 1-based rank (spec 000.33: a contract, not a
    retrieval parameter)."""
    if rank <= 3:
        return 0.75
    if rank <= 10:
        return 0.60
    return 0.40


@dataclass
class Fused(Generic[K]):
    """A fused candidate: its id, the blended ordering key, and the trace of where it came from."""

    key: K
    order: float
    ranks: dict[str, int] = field(default_factory=dict)  # mode -> 1-based rank
    rrf: float = 0.0


def _newest(key: int | str) -> tuple[int, int, str]:
    """The last tie key: a window id (or a numeric string) higher first, i.e. the newer window;
    any other key in string order."""
    if isinstance(key, int):
        return (0, -key, "")
    return (0, -int(key), "") if key.isdigit() else (1, 0, key)


def _ranks(keys: Sequence[K], raw: Sequence[float] | None) -> list[int]:
    """1-based ranks of ``keys`` (best first); with ``raw`` values, an equal value shares the
    rank of the first key holding it."""
    if raw is None:
        return list(range(1, len(keys) + 1))
    ranks: list[int] = []
    for i, value in enumerate(raw):
        ranks.append(ranks[-1] if i and value == raw[i - 1] else i + 1)
    return ranks


def fuse(
    rankings: Mapping[str, Sequence[K]],
    scores: Mapping[K, float],
    *,
    params: RetrievalParams = DEFAULT,
    ties: Mapping[str, Sequence[float]] | None = None,
) -> list[Fused[K]]:
    """Fuse per-mode rankings (mode -> ordered candidate keys) into one order.

    ``params`` gives the RRF ``k``, each mode's weight and whether the credit is blended with
    ``scores`` (:class:`~cwcore.retrieve.params.RetrievalParams`).

    ``scores`` holds each candidate's normalized score in [0, 1] (its best mode's). ``ties``
    holds, per mode, the raw value each ranked key was ordered by (same length as its ranking):
    equal values share a rank. Ties break by best rank, then newest key (:func:`_newest`), so
    the result is deterministic.
    """
    fused: dict[K, Fused[K]] = {}
    for mode, keys in rankings.items():
        for rank, key in zip(_ranks(keys, (ties or {}).get(mode)), keys, strict=True):
            entry = fused.setdefault(key, Fused(key, 0.0))
            if mode not in entry.ranks:
                entry.ranks[mode] = rank
                entry.rrf += params.mode_weight(mode) / (params.rrf_k + rank)
    if not fused:
        return []
    # Every mode weighted 0 (a measured alternative) leaves no credit: the scores alone order.
    best = max(f.rrf for f in fused.values()) or 1.0
    for entry in fused.values():
        weight = rank_weight(min(entry.ranks.values())) if params.score_blend else 1.0
        entry.order = weight * (entry.rrf / best) + (1 - weight) * scores.get(entry.key, 0.0)
    return sorted(fused.values(), key=lambda f: (-f.order, min(f.ranks.values()), _newest(f.key)))


@dataclass
class TierEntry(Generic[K]):
    key: K
    order: float  # blended fusion value × prior: the sort key, never presented
    fused: Fused[K]
    prior: float


def fuse_tier(
    lexical: Sequence[tuple[K, float]],
    semantic: Sequence[tuple[K, float]],
    prior: Mapping[K, float] | None = None,
    *,
    ties: Mapping[str, Sequence[float]] | None = None,
    params: RetrievalParams = DEFAULT,
) -> list[TierEntry[K]]:
    """Order the union of ``lexical`` and ``semantic`` (each ``(key, calibrated score)``, best
    first); ``prior`` maps keys to the importance multiplier (default 1); ``ties`` and
    ``params`` as in :func:`fuse` (keys ``"lexical"``, ``"semantic"``)."""
    scores: dict[K, float] = {}
    for key, score in (*lexical, *semantic):
        scores[key] = max(scores.get(key, 0.0), float(score))
    rankings: dict[str, list[K]] = {}
    if lexical:
        rankings["lexical"] = [k for k, _ in lexical]
    if semantic:
        rankings["semantic"] = [k for k, _ in semantic]
    out = []
    for f in fuse(rankings, scores, ties=ties, params=params):
        boost = 1.0 if prior is None else prior.get(f.key, 1.0)
        out.append(TierEntry(f.key, f.order * boost, f, boost))
    out.sort(key=lambda e: (-e.order, min(e.fused.ranks.values()), _newest(e.key)))
    return out

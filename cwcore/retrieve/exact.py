"""The exact tier: windows holding the query's anchors verbatim, ranked by what they pin down.

An anchor (a path, symbol, error, quoted phrase, commit or value the query names) is strong
evidence of a location only when few windows contain it. Each anchor's window document
frequency ``df`` is counted in the search's scope (``n`` windows):

* an anchor found in at most ``max(TIER_MIN_DF, TIER_SHARE × n)`` windows is *specific*: the
  windows holding it form the exact tier, above every structural, lexical and semantic hit;
* a more common anchor (a product name in prose, a flag every command line repeats) forms no
  tier: its windows compete lexically, where its words are ordinary query terms.

Within the tier, windows are ordered by the IDF-weighted share of the query's anchors they
cover, then by BM25 of the whole query over those windows (the rest of the query decides between
windows naming the same anchor), then newest first. The presented score is
``0.5 + 0.5 × coverage × specificity``, specificity being ``1 − ln df / ln n`` of the most
specific covered anchor: a unique anchor the window fully covers scores 1.0, an anchor that
occurs in a large share of the scope scores in the moderate band.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from cwcore.index import bm25, derived
from cwcore.index.anchors import Anchor
from cwcore.index.postings import PostingIndex
from cwcore.retrieve.candidates import Candidate, Visible
from cwcore.store.rocks import Store

#: Exact postings read per anchor, newest first (an anchor past this is common by any measure).
EXACT_SCAN = 400
#: An anchor in more than this share of the scope's windows forms no exact tier...
TIER_SHARE = 0.05
#: ...unless it occurs in at most this many windows (small scopes: every anchor is specific).
TIER_MIN_DF = 20


@dataclass(frozen=True)
class AnchorStat:
    """One query anchor in the scope: the visible windows holding it and how specific it is."""

    anchor: Anchor
    wids: tuple[int, ...]
    df: int
    idf: float
    specificity: float  # 1 − ln df / ln n, in [0, 1]; 0 when absent
    specific: bool  # forms the exact tier


def _idf(df: int, n: int) -> float:
    return math.log1p((n - df + 0.5) / (df + 0.5)) if df else 0.0


def anchor_stats(store: Store, visible: Visible, anchors: list[Anchor], n: int) -> list[AnchorStat]:
    """Each distinct anchor value's visible windows and specificity; ``n`` is the scope size."""
    n = max(n, 1)
    limit = max(TIER_MIN_DF, TIER_SHARE * n)
    out = []
    seen: set[str] = set()
    for anchor in sorted(anchors, key=lambda a: a.rank):
        if anchor.value in seen:
            continue
        seen.add(anchor.value)
        prefix = derived.EXACT.prefix(derived.anchor_digest(anchor.value))
        wids = [
            int(derived.EXACT.decode(key)[1])
            for key, _ in store.scan("exact", prefix, reverse=True, limit=EXACT_SCAN)
        ]
        found = tuple(visible.filter(wids))
        df = len(found)
        spec = 0.0
        if df:
            spec = 1.0 if n < 2 else max(0.0, min(1.0, 1.0 - math.log(df) / math.log(n)))
        out.append(AnchorStat(anchor, found, df, _idf(df, n), spec, 0 < df <= limit))
    return out


def exact_tier(
    index: PostingIndex,
    stats: list[AnchorStat],
    terms: list[str],
    only: np.ndarray | None,
) -> list[Candidate]:
    """The exact tier's candidates, best first (see the module docstring for the order)."""
    specific = [s for s in stats if s.specific]
    if not specific:
        return []
    tier_wids = sorted({w for s in specific for w in s.wids})
    holders: dict[int, list[AnchorStat]] = {w: [] for w in tier_wids}
    for s in stats:
        for w in s.wids:
            if w in holders:
                holders[w].append(s)
    total_idf = sum(s.idf for s in stats if s.df) or 1.0
    lexical = _bm25_of(index, terms, tier_wids, only)
    out = []
    for wid in tier_wids:
        held = holders[wid]
        matched = {s.anchor.value for s in held}
        # A query anchor inside a longer one the window matched counts as matched too (a file
        # name inside the full path the index kept as one anchor).
        covered = [s for s in stats if s.df and any(s.anchor.value in m for m in matched)]
        coverage = sum(s.idf for s in covered) / total_idf
        strength = max(s.specificity for s in held)
        best = min(held, key=lambda s: s.anchor.rank)
        cand = Candidate(
            wid,
            "exact",
            round(0.5 + 0.5 * coverage * strength, 4),
            coverage,
            best.anchor.match_type,
        )
        cand.literals = [s.anchor.value for s in held]
        cand.matched_terms = list(dict.fromkeys(cand.literals))
        cand.order = (round(coverage, 6), lexical.get(wid, 0.0))
        out.append(cand)
    out.sort(key=lambda c: (-c.order[0], -c.order[1], -c.wid))
    return out


def _bm25_of(
    index: PostingIndex, terms: list[str], wids: list[int], only: np.ndarray | None
) -> dict[int, float]:
    """BM25 of ``terms`` for each of ``wids`` (0 for a window matching none)."""
    if not terms or not wids:
        return {}
    ordinals = np.asarray(wids, dtype=np.uint32)
    if only is not None:
        ordinals = np.intersect1d(ordinals, only)
    hits = bm25.search(index.reader(), terms, k=len(ordinals), only=ordinals)
    return {int(o): float(s) for o, s in zip(hits.ordinals, hits.scores, strict=True)}

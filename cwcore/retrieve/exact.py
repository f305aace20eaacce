"""The exact tier: windows holding the query's anchors verbatim, ranked by what they pin down.

An anchor (a path, symbol, error, quoted phrase, commit or value the query names) is strong
evidence of a location only when few windows contain it. Each anchor's window document
frequency ``df`` is counted in the search's scope (``n`` windows):

* an anchor found in at most ``max(exact_tier_min_df, exact_tier_share × n)`` windows
  (:class:`~cwcore.retrieve.params.RetrievalParams`: 20, 5 %) is *specific*: the
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
from cwcore.index.postings.reader import ManifestChanged
from cwcore.retrieve.candidates import Candidate, Visible
from cwcore.retrieve.params import DEFAULT, RetrievalParams
from cwcore.store.rocks import Store
from cwcore.text.tokenize import tokens

#: Exact postings read per anchor, newest first (an anchor past this is common by any measure).
EXACT_SCAN = 400
#: A phrase's rarest term: postings read at most, newest windows first.
PHRASE_POSTINGS = 65_536
#: Windows holding every term of a phrase read and checked verbatim at most, newest first...
PHRASE_SCAN = 2_000
#: ...in batches of this many (two store reads each), stopping once this many hold the phrase.
PHRASE_BATCH = 256
PHRASE_HITS = 400


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


def anchor_stats(
    store: Store,
    visible: Visible,
    anchors: list[Anchor],
    n: int,
    params: RetrievalParams = DEFAULT,
) -> list[AnchorStat]:
    """Each distinct anchor value's visible windows and specificity; ``n`` is the scope size.
    An anchor in more than ``params.exact_tier_share`` of the scope forms no exact tier unless
    it occurs in at most ``params.exact_tier_min_df`` windows (small scopes: every anchor is
    specific)."""
    n = max(n, 1)
    limit = max(params.exact_tier_min_df, params.exact_tier_share * n)
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
    params: RetrievalParams = DEFAULT,
) -> list[Candidate]:
    """The exact tier's candidates, best first (see the module docstring for the order);
    ``params`` gives the BM25 constants of the order within the tier."""
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
    lexical = _bm25_of(index, terms, tier_wids, only, params)
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
    index: PostingIndex,
    terms: list[str],
    wids: list[int],
    only: np.ndarray | None,
    params: RetrievalParams = DEFAULT,
) -> dict[int, float]:
    """BM25 of ``terms`` for each of ``wids`` (0 for a window matching none)."""
    if not terms or not wids:
        return {}
    ordinals = np.asarray(wids, dtype=np.uint32)
    if only is not None:
        ordinals = np.intersect1d(ordinals, only)
    hits = bm25.search(
        index.reader(),
        terms,
        k=len(ordinals),
        only=ordinals,
        k1=params.bm25_k1,
        b=params.bm25_b,
    )
    return {int(o): float(s) for o, s in zip(hits.ordinals, hits.scores, strict=True)}


def phrase_windows(
    index: PostingIndex, visible: Visible, phrase: str, only: np.ndarray | None
) -> list[int]:
    """Visible windows of the scope whose text holds ``phrase`` verbatim (case-sensitive),
    newest first, wherever they rank: a quoted phrase is confirmed in the whole index, not in
    the best BM25 windows only.

    The candidates are the windows holding every distinct term of the phrase: the postings of
    its rarest term (at most :data:`PHRASE_POSTINGS`, newest first) intersected in numpy with
    each other term's, reading only the blocks that cover the survivors, then with ``only``.
    At most :data:`PHRASE_SCAN` of them are read, newest first, in batches of
    :data:`PHRASE_BATCH`, until :data:`PHRASE_HITS` hold the phrase. Nothing else is loaded.
    """
    terms = list(dict.fromkeys(tokens(phrase)))
    if not terms:
        return []
    reader = index.reader()
    wids = np.empty(0, dtype=np.uint32)
    for _ in range(5):
        snap = reader.snapshot()
        try:
            plans = sorted(reader.plan(snap, terms), key=lambda p: p.df)
            if not plans[0].df:
                return []  # a term no window holds
            wids = reader.fetch(plans[0], newest=PHRASE_POSTINGS).ordinals
            for plan in plans[1:]:
                if not len(wids):
                    break
                held = reader.fetch(plan, near=wids).ordinals
                wids = np.intersect1d(wids, held, assume_unique=True)
            reader.check(snap)
            if len(snap.retired):
                wids = np.setdiff1d(wids, snap.retired, assume_unique=True)
            break
        except ManifestChanged:
            continue
    if only is not None:
        wids = np.intersect1d(wids, only)
    newest = [int(w) for w in wids[::-1][:PHRASE_SCAN]]
    found: list[int] = []
    for at in range(0, len(newest), PHRASE_BATCH):
        batch = visible.filter(newest[at : at + PHRASE_BATCH])
        visible.prefetch(batch)
        found += [w for w in batch if phrase in visible.text(w)[1]]
        if len(found) >= PHRASE_HITS:
            break
    return found[:PHRASE_HITS]


def phrase_candidates(
    index: PostingIndex,
    visible: Visible,
    anchor: Anchor,
    terms: list[str],
    only: np.ndarray | None,
    params: RetrievalParams = DEFAULT,
) -> list[Candidate]:
    """The exact tier of an exact-looking query no anchor posting answered: the windows holding
    ``anchor`` verbatim (:func:`phrase_windows`), ordered by BM25 of the query's ``terms`` over
    them, then newest first."""
    wids = phrase_windows(index, visible, anchor.value, only)
    scores = _bm25_of(index, terms, wids, only, params)
    out = []
    for wid in sorted(wids, key=lambda w: (-scores.get(w, 0.0), -w)):
        cand = Candidate(wid, "exact", 1.0, 1.0, anchor.match_type)
        cand.literals = [anchor.value]
        cand.matched_terms = [anchor.value]
        out.append(cand)
    return out

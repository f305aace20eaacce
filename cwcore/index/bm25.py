"""BM25 top-k over persisted postings, with numpy and MaxScore pruning.

Score of a document d for query terms q (each distinct term counted once)::

    score(d) = Σ_t idf(t) · tf·(K1 + 1) / (tf + K1·(1 − B + B·dl/avgdl))
    idf(t)   = ln(1 + (N − df + 0.5) / (df + 0.5))

with Lucene's non-negative idf, N the live documents, avgdl their mean weighted length, df the
live documents holding t (see :mod:`cwcore.index.postings` for how each is kept). tf and dl are
the BM25F-weighted values stored at index time, so one formula serves weighted and unweighted
documents alike.

Evaluation (spec 000 "Candidate generation", step 3): terms run least-common first. Each term has
an upper bound on its contribution (its idf, its largest tf, its smallest dl). While documents not
yet seen could still reach the current k-th score, a term is scored in full; once the bounds of
the remaining terms add up to less than that score, the remaining terms only score the existing
candidates — a cheap ``searchsorted`` over the blocks that cover them (MaxScore; exact top k).

Work budget: at most ``budget`` postings are scored in full per query. When a term would pass it,
only its newest postings (highest ordinals, i.e. the most recently admitted documents) up to the
remaining budget are scored, later terms score existing candidates only, and the result says
``truncated=True``. Its hits are then exact for those postings but may miss older documents that
match only the common terms.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from cwcore.errors import StoreError
from cwcore.index.postings import F64Array, ManifestChanged, PostingReader, Postings, U32Array

#: BM25 constants (Lucene's defaults), in one place.
K1 = 1.2
B = 0.75
#: Postings scored in full per query before truncation (≈ 2–4 ms of numpy on this machine).
DEFAULT_BUDGET = 262_144
#: Distinct query terms considered (the least common are kept); a bit each in ``Hits.masks``.
MAX_QUERY_TERMS = 64
_RETRIES = 5
# Relative slack on the pruning test so float rounding never prunes a document that could tie.
_SLACK = 1e-9

Dead = npt.NDArray[np.bool_] | Collection[int] | None


def idf(df: float | F64Array, n: int) -> float | F64Array:
    """Lucene's BM25 idf ``ln(1 + (N − df + 0.5) / (df + 0.5))``; always ≥ 0 for df ≤ N."""
    return np.log1p((n - df + 0.5) / (df + 0.5))


def term_scores(weight: float, tf: F64Array, dl: F64Array, avgdl: float) -> F64Array:
    """Per-posting BM25 contributions of one term with idf ``weight``."""
    return weight * (tf * (K1 + 1.0)) / (tf + K1 * (1.0 - B + B * dl / avgdl))


@dataclass(frozen=True)
class Hits:
    """Top hits, best first; ties broken by lower ordinal.

    ``matched[i]`` counts the query terms hit ``i`` contains and bit j of ``masks[i]`` says
    whether it contains ``terms[j]``. ``df`` is the live document frequency of each query term
    that occurs. ``postings_scored`` counts postings scored in full (the budgeted work).
    """

    ordinals: U32Array
    scores: F64Array
    matched: npt.NDArray[np.uint8]
    masks: npt.NDArray[np.uint64]
    terms: tuple[str, ...]
    df: dict[str, int]
    n_docs: int
    avgdl: float
    postings_scored: int
    truncated: bool

    def __len__(self) -> int:
        return len(self.ordinals)


def _empty(terms: tuple[str, ...], n_docs: int, avgdl: float) -> Hits:
    return Hits(
        np.empty(0, np.uint32),
        np.empty(0, np.float64),
        np.empty(0, np.uint8),
        np.empty(0, np.uint64),
        terms,
        {},
        n_docs,
        avgdl,
        0,
        False,
    )


def _unique_terms(terms: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(t for t in terms if t))


class _Hider:
    """Which ordinals a query must not return: the caller's ``dead`` set plus retired ones."""

    def __init__(self, dead: Dead, retired: U32Array) -> None:
        self.mask: npt.NDArray[np.bool_] | None = None
        self.listed: U32Array | None = None
        if isinstance(dead, np.ndarray) and dead.dtype == np.bool_:
            self.mask = dead
        elif dead is not None and len(dead):
            self.listed = np.unique(np.fromiter((int(o) for o in dead), dtype=np.uint32))
        self.retired = retired

    def hidden(
        self, ordinals: U32Array, in_retired: npt.NDArray[np.bool_] | None
    ) -> npt.NDArray[np.bool_]:
        hide = np.zeros(len(ordinals), dtype=bool) if in_retired is None else in_retired.copy()
        if self.mask is not None and len(ordinals):
            mask = self.mask
            if int(ordinals[-1]) < len(mask):
                hide |= mask[ordinals]
            else:  # ordinals past the mask's end are live
                inside = ordinals < len(mask)
                hide[inside] |= mask[ordinals[inside]]
        if self.listed is not None:
            hide |= np.isin(ordinals, self.listed)
        return hide


class _Candidates:
    """Sorted candidate ordinals with their partial scores and matched-term masks."""

    def __init__(self, ordinals: U32Array | None = None) -> None:
        self.ordinals = np.empty(0, np.uint32) if ordinals is None else ordinals
        n = len(self.ordinals)
        self.scores = np.zeros(n, np.float64)
        self.masks = np.zeros(n, np.uint64)
        self.counts = np.zeros(n, np.uint8)

    def __len__(self) -> int:
        return len(self.ordinals)

    def kth(self, k: int) -> float:
        """The k-th best partial score (a lower bound of the final k-th score), or -inf."""
        n = len(self.scores)
        if n < k:
            return float("-inf")
        return float(np.partition(self.scores, n - k)[n - k])

    def add(self, ordinals: U32Array, scores: F64Array, bit: np.uint64) -> None:
        """Add a term's (sorted) postings: existing candidates accumulate, new ones are inserted."""
        if not len(self.ordinals):
            self.ordinals = ordinals.copy()
            self.scores = scores.copy()
            self.masks = np.full(len(ordinals), bit, np.uint64)
            self.counts = np.ones(len(ordinals), np.uint8)
            return
        pos = np.searchsorted(self.ordinals, ordinals)
        hit = pos < len(self.ordinals)
        hit[hit] = self.ordinals[pos[hit]] == ordinals[hit]
        self._accumulate(pos[hit], scores[hit], bit)
        new = ~hit
        if new.any():
            at = pos[new]
            self.ordinals = np.insert(self.ordinals, at, ordinals[new])
            self.scores = np.insert(self.scores, at, scores[new])
            self.masks = np.insert(self.masks, at, bit)
            self.counts = np.insert(self.counts, at, np.uint8(1))

    def score_existing(
        self, postings: Postings, weight: float, avgdl: float, bit: np.uint64
    ) -> None:
        """Score only the existing candidates found in ``postings`` (sorted, hidden removed)."""
        ordinals = postings.ordinals
        if not len(ordinals) or not len(self.ordinals):
            return
        pos = np.searchsorted(ordinals, self.ordinals)
        hit = pos < len(ordinals)
        hit[hit] = ordinals[pos[hit]] == self.ordinals[hit]
        where = np.flatnonzero(hit)
        at = pos[hit]
        self._accumulate(where, term_scores(weight, postings.tf[at], postings.dl[at], avgdl), bit)

    def _accumulate(self, where: npt.NDArray[np.intp], scores: F64Array, bit: np.uint64) -> None:
        self.scores[where] += scores
        self.masks[where] |= bit
        self.counts[where] += np.uint8(1)

    def top(self, k: int) -> npt.NDArray[np.intp]:
        """Indices of the best k, by score descending then ordinal ascending."""
        n = len(self.scores)
        if n > k:
            threshold = np.partition(self.scores, n - k)[n - k]
            keep = np.flatnonzero(self.scores >= threshold)
        else:
            keep = np.arange(n)
        order = np.lexsort((self.ordinals[keep], -self.scores[keep]))
        return keep[order[:k]]


def search(
    reader: PostingReader,
    terms: Sequence[str],
    *,
    k: int = 10,
    dead: Dead = None,
    only: U32Array | None = None,
    budget: int = DEFAULT_BUDGET,
) -> Hits:
    """The top ``k`` documents for ``terms`` (duplicates ignored; OR semantics).

    ``dead``: ordinals never returned — a boolean mask indexed by ordinal (ordinals past its end
    are live) or a collection of ordinals; it hides hits but does not change N, avgdl or df
    (call :meth:`PostingIndex.retire` for that). ``only``: if given, sorted unique ordinals the
    hits are restricted to (a scope); every term then scores just those. ``budget``: postings
    scored in full before the query is truncated (see the module docstring).
    """
    for _ in range(_RETRIES):
        try:
            return _search_once(reader, terms, k, dead, only, budget)
        except ManifestChanged:
            continue
    raise StoreError("bm25: the index kept changing during a query; retry")


def _search_once(
    reader: PostingReader,
    raw_terms: Sequence[str],
    k: int,
    dead: Dead,
    only: U32Array | None,
    budget: int,
) -> Hits:
    snap = reader.snapshot()
    manifest = snap.manifest
    n_docs, avgdl = manifest.live_docs, manifest.avgdl
    terms = _unique_terms(raw_terms)
    if n_docs <= 0 or avgdl <= 0 or not terms or k <= 0:
        return _empty(terms, n_docs, avgdl)
    plans = reader.plan(snap, terms)
    present = [i for i, p in enumerate(plans) if p.entries]
    # Least common first; keep the MAX_QUERY_TERMS least common (the rarest carry the signal).
    present.sort(key=lambda i: (plans[i].df, plans[i].term))
    present = present[:MAX_QUERY_TERMS]
    retired = snap.retired
    hider = _Hider(dead, retired)
    bounds = [
        _upper_bound(plans[i].df - len(retired), plans[i].max_tf, plans[i].min_dl, n_docs, avgdl)
        for i in present
    ]
    remaining = np.cumsum(bounds[::-1])[::-1] if bounds else np.empty(0)

    cands = _Candidates()
    if only is not None:
        only_arr = np.asarray(only, dtype=np.uint32)
        cands = _Candidates(
            only_arr[~hider.hidden(only_arr, np.isin(only_arr, retired) if len(retired) else None)]
        )
    spent = 0
    truncated = False
    dfs: dict[str, int] = {}
    for step, i in enumerate(present):
        plan = plans[i]
        bit = np.uint64(1) << np.uint64(i)
        existing_only = only is not None or (
            len(cands) >= k and remaining[step] * (1.0 + _SLACK) < cands.kth(k)
        )
        limit = budget - spent
        if not existing_only and limit <= 0:
            existing_only, truncated = True, True
        if existing_only:
            near = np.union1d(cands.ordinals, retired) if len(retired) else cands.ordinals
            postings = reader.fetch(plan, near=near)
        elif plan.df > limit:
            truncated = True
            postings = reader.fetch(plan, newest=limit, near=retired if len(retired) else None)
        else:
            postings = reader.fetch(plan)
        in_retired = np.isin(postings.ordinals, retired) if len(retired) else None
        # Every block that could hold a retired ordinal was fetched, so this df is exact.
        df = plan.df - (int(in_retired.sum()) if in_retired is not None else 0)
        df = min(max(df, 0), n_docs)
        dfs[plan.term] = df
        if df == 0:
            continue
        weight = float(idf(df, n_docs))
        hide = hider.hidden(postings.ordinals, in_retired)
        if hide.any():
            keep = ~hide
            postings = Postings(postings.ordinals[keep], postings.tf[keep], postings.dl[keep])
        if existing_only:
            cands.score_existing(postings, weight, avgdl, bit)
            continue
        if len(postings.ordinals) > limit:  # budget: the newest postings only
            postings = Postings(
                postings.ordinals[-limit:], postings.tf[-limit:], postings.dl[-limit:]
            )
        spent += len(postings.ordinals)
        cands.add(postings.ordinals, term_scores(weight, postings.tf, postings.dl, avgdl), bit)
    reader.check(snap)

    if only is not None and len(cands):  # a scope candidate must match at least one term
        matched = np.flatnonzero(cands.counts)
        sub = _Candidates(cands.ordinals[matched])
        sub.scores, sub.masks, sub.counts = (
            cands.scores[matched],
            cands.masks[matched],
            cands.counts[matched],
        )
        cands = sub
    best = cands.top(k)
    return Hits(
        cands.ordinals[best],
        cands.scores[best],
        cands.counts[best],
        cands.masks[best],
        terms,
        dfs,
        n_docs,
        avgdl,
        spent,
        truncated,
    )


def _upper_bound(df_low: int, max_tf: float, min_dl: float, n_docs: int, avgdl: float) -> float:
    """The most one term can add to any document's score (idf at its lowest possible df)."""
    weight = float(idf(min(max(df_low, 0), n_docs), n_docs))
    return float(term_scores(weight, np.array([max_tf]), np.array([min_dl]), avgdl)[0])

"""BM25 top-k over persisted postings, with numpy and MaxScore pruning.

Score of a document d for query terms q (each distinct term counted once)::

    score(d) = Σ_t idf(t) · tf·(K1 + 1) / (tf + K1·(1 − B + B·dl/avgdl))
    idf(t)   = ln(1 + (N − df + 0.5) / (df + 0.5))

with Lucene's non-negative idf, N the live documents, avgdl their mean weighted length, df the
live documents holding t (see :mod:`cwcore.index.postings` for how each is kept). tf and dl are
the BM25F-weighted values stored at index time, so one formula serves weighted and unweighted
documents alike.

Evaluation: terms run least-common first, within a bounded work budget. Each term has
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

import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from cwcore.errors import StoreError
from cwcore.index.postings import (
    F64Array,
    Manifest,
    ManifestChanged,
    PostingReader,
    Postings,
    TermPlan,
    U32Array,
    retired_in,
)

#: BM25 constants (Lucene's defaults): the defaults of :func:`search`'s ``k1`` and ``b``. Explicit
#: search passes its own (``cwcore.retrieve.params.RetrievalParams.bm25_k1`` / ``bm25_b``, whose
#: defaults equal these; the index layer cannot import the retrieval layer).
K1 = 1.2
B = 0.75
#: Postings scored in full per query before truncation (≈ 2–4 ms of numpy on this machine).
DEFAULT_BUDGET = 262_144
#: Distinct query terms considered (the least common are kept); a bit each in ``Hits.masks``.
MAX_QUERY_TERMS = 64
#: Dense accumulation (arrays indexed by ordinal) when the query's ordinal span is at most this
#: (≈ 18 bytes per ordinal: 18 MB at the limit) and its postings times DENSE_DENSITY reach it.
DENSE_SPAN = 1 << 20
DENSE_DENSITY = 8
#: Sets of dense accumulator arrays kept between queries (:class:`_DensePool`): enough for the
#: searches that run at once, each set 18 bytes per ordinal of the archive (1.8 MB at 100k).
DENSE_POOL = 2
# A kept set's capacity is a multiple of this many ordinals.
_POOL_QUANTUM = 1 << 16
# The sorted members come from a sort while members × this < span, else from a scan of the span.
_SORT_RATIO = 8
_RETRIES = 5
# Relative slack on the pruning test so float rounding never prunes a document that could tie.
_SLACK = 1e-9
# Relative margin over the summed bounds of the scored terms for a score's float rounding (a few
# ulps; far below this).
_BOUND_ROUNDING = 1e-9

Dead = npt.NDArray[np.bool_] | Collection[int] | None


def idf(df: float | F64Array, n: int) -> float | F64Array:
    """Lucene's BM25 idf ``ln(1 + (N − df + 0.5) / (df + 0.5))``; always ≥ 0 for df ≤ N."""
    return np.log1p((n - df + 0.5) / (df + 0.5))


def term_scores(
    weight: float, tf: F64Array, dl: F64Array, avgdl: float, k1: float = K1, b: float = B
) -> F64Array:
    """Per-posting BM25 contributions of one term with idf ``weight``."""
    return weight * (tf * (k1 + 1.0)) / (tf + k1 * (1.0 - b + b * dl / avgdl))


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


class _Sparse:
    """Candidates as sorted arrays of ordinals, partial scores, term masks and counts.

    Costs O(postings · log candidates): used when the query's ordinal span is too wide for a
    dense accumulator or the query is too light to pay for one.
    """

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
        return _kth(self.scores, k)

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
        self, reader: PostingReader, plan: TermPlan, query: _Query, bit: np.uint64
    ) -> int:
        """Score only the existing candidates for ``plan``; returns the term's live df."""
        where, tf, dl, retired_seen = reader.lookup(plan, self.ordinals, query.retired)
        df = query.live_df(plan, retired_seen)
        if df and len(where):
            self._accumulate(where, query.scores(query.idf(df, plan), tf, dl), bit)
        return df

    def _accumulate(self, where: npt.NDArray[np.intp], scores: F64Array, bit: np.uint64) -> None:
        self.scores[where] += scores
        self.masks[where] |= bit
        self.counts[where] += np.uint8(1)

    def finish(
        self, k: int
    ) -> tuple[U32Array, F64Array, npt.NDArray[np.uint8], npt.NDArray[np.uint64]]:
        """The best k that matched a term: ordinals, scores, counts, masks."""
        matched = np.flatnonzero(self.counts)
        best = matched[_top(self.scores[matched], self.ordinals[matched], k)]
        return self.ordinals[best], self.scores[best], self.counts[best], self.masks[best]

    def release(self) -> None:
        """Nothing to give back: the arrays are the query's own."""


class _DenseArrays:
    """The four arrays of a dense accumulator, ``capacity`` entries each, all zero (False)
    between queries: :class:`_Dense` writes only at its members and zeroes exactly those when
    it is done, so the arrays can serve the next query without being allocated again."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.scores = np.zeros(capacity, np.float64)
        self.masks = np.zeros(capacity, np.uint64)
        self.counts = np.zeros(capacity, np.uint8)
        self.member = np.zeros(capacity, bool)

    @property
    def nbytes(self) -> int:
        return self.scores.nbytes + self.masks.nbytes + self.counts.nbytes + self.member.nbytes


class _DensePool:
    """Dense accumulator arrays kept between queries, at most :data:`DENSE_POOL` sets.

    A fresh set costs its whole span in page faults and zeroing however few candidates a query
    has (about 1 ms at 100k ordinals, 5 ms at 500k: more than the scoring itself); a kept set
    costs only the entries the query wrote. Each query takes a set for itself (searches may run
    on several threads) and gives it back zeroed; :func:`release_buffers` drops the kept sets
    (the daemon's quiet-period heap trim)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._free: list[_DenseArrays] = []

    def take(self, span: int) -> _DenseArrays:
        with self._lock:
            fits = [a for a in self._free if a.capacity >= span]
            if fits:
                best = min(fits, key=lambda a: a.capacity)
                self._free.remove(best)
                return best
        # Rounded up so an archive that grows a little does not allocate a new set per query.
        return _DenseArrays(-(-span // _POOL_QUANTUM) * _POOL_QUANTUM)

    def give(self, arrays: _DenseArrays) -> None:
        with self._lock:
            self._free.append(arrays)
            # The largest sets serve every span the smaller ones could.
            self._free.sort(key=lambda a: -a.capacity)
            del self._free[DENSE_POOL:]

    def clear(self) -> None:
        with self._lock:
            self._free.clear()

    def kept_bytes(self) -> int:
        with self._lock:
            return sum(a.nbytes for a in self._free)


_POOL = _DensePool()


def release_buffers() -> None:
    """Drop the dense accumulator arrays kept between queries (they are allocated again by the
    next query that needs them)."""
    _POOL.clear()


def kept_buffer_bytes() -> int:
    """Bytes of the dense accumulator arrays kept between queries."""
    return _POOL.kept_bytes()


class _Dense:
    """Candidates in arrays indexed by ``ordinal - base``: every step is a linear scatter or
    gather, no binary search. Used when the query's ordinal span is at most :data:`DENSE_SPAN`
    and its postings are many relative to that span.

    The arrays come zeroed from :data:`_POOL` and the members (the indices ever written) are
    kept as a list, so apart from the scoring itself the work is in proportion to the
    candidates, not to the span: the k-th score, the final top k and the sorted members read
    only the members, and :meth:`release` zeroes only them."""

    def __init__(self, base: int, span: int) -> None:
        self.base = base
        self.span = span
        self._arrays: _DenseArrays | None = _POOL.take(span)
        arrays = self._arrays
        self.scores = arrays.scores[:span]
        self.masks = arrays.masks[:span]
        self.counts = arrays.counts[:span]
        self.member = arrays.member[:span]
        self.size = 0
        # Indices (ordinal - base) that became members, one array per step, in no order.
        self._added: list[npt.NDArray[np.intp]] = []
        # The candidates' ordinals, sorted, while no term added any (the existing-only terms
        # after pruning all score the same set).
        self._members: U32Array | None = None

    def __len__(self) -> int:
        return self.size

    def _rel(self) -> npt.NDArray[np.intp]:
        """Every member's index, each once, in no particular order."""
        if len(self._added) != 1:
            self._added = [np.concatenate(self._added) if self._added else np.empty(0, np.intp)]
        return self._added[0]

    def _join(self, rel: npt.NDArray[np.intp]) -> None:
        """Make the indices ``rel`` (distinct) members."""
        fresh = rel[~self.member[rel]]
        if len(fresh):
            self._added.append(fresh)
            self.size += len(fresh)
            self.member[fresh] = True
            self._members = None

    def restrict(self, ordinals: U32Array) -> None:
        """Make ``ordinals`` (those inside the span) the candidates, with zero scores."""
        rel = ordinals.astype(np.intp) - self.base
        self._join(np.unique(rel[(rel >= 0) & (rel < self.span)]))

    def kth(self, k: int) -> float:
        # The members' scores, whatever their order: the k-th largest is the same value.
        return _kth(self.scores[self._rel()], k) if self.size >= k else float("-inf")

    def add(self, ordinals: U32Array, scores: F64Array, bit: np.uint64) -> None:
        rel = ordinals.astype(np.intp) - self.base  # a term's ordinals are distinct
        self._join(rel)
        self.scores[rel] += scores
        self.masks[rel] |= bit
        self.counts[rel] += np.uint8(1)

    def score_existing(
        self, reader: PostingReader, plan: TermPlan, query: _Query, bit: np.uint64
    ) -> int:
        members = self._members
        if members is None:
            # The same sorted array either way: sorting the members costs less than scanning
            # the span while they are few in it.
            if self.size * _SORT_RATIO < self.span:
                rel = np.sort(self._rel())
            else:
                rel = np.flatnonzero(self.member)
            members = rel.astype(np.uint32) + np.uint32(self.base)
            self._members = members
        views = reader.views(plan, members, query.retired)
        retired_seen = sum(retired_in(v.ordinals, query.retired) for v in views)
        df = query.live_df(plan, retired_seen)
        if not df:
            return df
        weight = query.idf(df, plan)
        for view in views:
            rel = view.ordinals.astype(np.intp) - self.base
            at = np.flatnonzero(self.member[rel])
            if len(at):
                where = rel[at]
                self.scores[where] += query.scores(weight, view.tf_at(at), view.dl_at(at))
                self.masks[where] |= bit
                self.counts[where] += np.uint8(1)
        return df

    def finish(
        self, k: int
    ) -> tuple[U32Array, F64Array, npt.NDArray[np.uint8], npt.NDArray[np.uint64]]:
        rel = self._rel()
        matched = rel[self.counts[rel] > 0]
        ordinals = matched.astype(np.uint32) + np.uint32(self.base)
        # _top orders by score, then ordinal (distinct): the order of ``matched`` is irrelevant.
        best = _top(self.scores[matched], ordinals, k)
        at = matched[best]
        return ordinals[best], self.scores[at], self.counts[at], self.masks[at]

    def release(self) -> None:
        """Zero the members' entries and give the arrays back to the pool (once; the
        accumulator is not used afterwards)."""
        arrays, self._arrays = self._arrays, None
        if arrays is None:
            return
        rel = self._rel()
        self.scores[rel] = 0.0
        self.masks[rel] = 0
        self.counts[rel] = 0
        self.member[rel] = False
        _POOL.give(arrays)


def _kth(scores: F64Array, k: int) -> float:
    n = len(scores)
    if n < k:
        return float("-inf")
    return float(np.partition(scores, n - k)[n - k])


def _top(scores: F64Array, ordinals: U32Array, k: int) -> npt.NDArray[np.intp]:
    """Indices of the best k by score descending, then ordinal ascending."""
    n = len(scores)
    if n > k:
        threshold = np.partition(scores, n - k)[n - k]
        keep = np.flatnonzero(scores >= threshold)
    else:
        keep = np.arange(n)
    order = np.lexsort((ordinals[keep], -scores[keep]))
    return keep[order[:k]]


@dataclass(frozen=True)
class _Query:
    """Corpus statistics of one evaluation."""

    n_docs: int
    avgdl: float
    retired: U32Array
    weights: Mapping[str, float] = field(default_factory=dict)
    k1: float = K1
    b: float = B

    def live_df(self, plan: TermPlan, retired_seen: int) -> int:
        return min(max(plan.df - retired_seen, 0), self.n_docs)

    def idf(self, df: int, plan: TermPlan | None = None) -> float:
        """The term's idf, times its query weight (1 unless the caller weighted it)."""
        weight = self.weights.get(plan.term, 1.0) if plan is not None else 1.0
        return float(idf(df, self.n_docs)) * weight

    def scores(self, weight: float, tf: F64Array, dl: F64Array) -> F64Array:
        """:func:`term_scores` with this evaluation's avgdl, ``k1`` and ``b``."""
        return term_scores(weight, tf, dl, self.avgdl, self.k1, self.b)


def search(
    reader: PostingReader,
    terms: Sequence[str],
    *,
    k: int = 10,
    dead: Dead = None,
    only: U32Array | None = None,
    budget: int = DEFAULT_BUDGET,
    weights: Mapping[str, float] | None = None,
    k1: float = K1,
    b: float = B,
) -> Hits:
    """The top ``k`` documents for ``terms`` (duplicates ignored; OR semantics), scored with the
    BM25 constants ``k1`` (term-frequency saturation) and ``b`` (length normalization, [0, 1]).

    ``weights``: a query weight per term (default 1) multiplying its contribution, as RM3
    weights expansion terms below the user's own.

    ``dead``: ordinals never returned — a boolean mask indexed by ordinal (ordinals past its end
    are live) or a collection of ordinals; it hides hits but does not change N, avgdl or df
    (call :meth:`PostingIndex.retire` for that). ``only``: if given, sorted unique ordinals the
    hits are restricted to (a scope); every term then scores just those. ``budget``: postings
    scored in full before the query is truncated (see the module docstring).
    """
    for _ in range(_RETRIES):
        try:
            return _search_once(reader, terms, k, dead, only, budget, weights or {}, k1, b)
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
    weights: Mapping[str, float],
    k1: float = K1,
    b: float = B,
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
        weights.get(plans[i].term, 1.0)
        * _upper_bound(
            plans[i].df - len(retired), plans[i].max_tf, plans[i].min_dl, n_docs, avgdl, k1, b
        )
        for i in present
    ]
    remaining = np.cumsum(bounds[::-1])[::-1] if bounds else np.empty(0)

    query = _Query(n_docs, avgdl, retired, weights, k1, b)
    if only is None:
        cands = _candidates(manifest, [plans[i] for i in present])
    else:
        scope = np.asarray(only, dtype=np.uint32)
        scope = scope[~hider.hidden(scope, np.isin(scope, retired) if len(retired) else None)]
        cands = _scoped(manifest, [plans[i] for i in present], scope)
    spent = 0
    seen = 0.0
    truncated = False
    dfs: dict[str, int] = {}
    # Once the remaining terms are pruned they stay pruned: their summed bound only shrinks,
    # ``seen`` only grows and, with no negative weight, no score (so not the k-th) ever falls.
    # The test (and its k-th score) is then not computed again. A scope prunes every term.
    latch = only is not None or all(weights.get(plans[i].term, 1.0) >= 0 for i in present)
    pruned = only is not None
    for step, i in enumerate(present):
        plan = plans[i]
        bit = np.uint64(1) << np.uint64(i)
        # No score can exceed the bounds of the terms scored so far (``seen``): while the rest
        # may add as much, the k-th score cannot prune them and is not computed.
        rest = float(remaining[step]) * (1.0 + _SLACK)
        existing_only = pruned or (
            len(cands) >= k and rest < seen * (1.0 + _BOUND_ROUNDING) and rest < cands.kth(k)
        )
        pruned = existing_only and latch
        seen += bounds[step]
        limit = budget - spent
        if not existing_only and limit <= 0:
            existing_only, truncated = True, True
        if existing_only:
            dfs[plan.term] = cands.score_existing(reader, plan, query, bit)
            continue
        if plan.df > limit:
            truncated = True
            postings = reader.fetch(plan, newest=limit, near=retired if len(retired) else None)
        else:
            postings = reader.fetch(plan)
        in_retired = np.isin(postings.ordinals, retired) if len(retired) else None
        # Every block that could hold a retired ordinal was fetched, so this df is exact.
        df = query.live_df(plan, int(in_retired.sum()) if in_retired is not None else 0)
        dfs[plan.term] = df
        if df == 0:
            continue
        hide = hider.hidden(postings.ordinals, in_retired)
        if hide.any():
            keep = ~hide
            postings = Postings(postings.ordinals[keep], postings.tf[keep], postings.dl[keep])
        if len(postings.ordinals) > limit:  # budget: the newest postings only
            postings = Postings(
                postings.ordinals[-limit:], postings.tf[-limit:], postings.dl[-limit:]
            )
        spent += len(postings.ordinals)
        cands.add(
            postings.ordinals,
            query.scores(query.idf(df, plan), postings.tf, postings.dl),
            bit,
        )
    reader.check(snap)
    ordinals, scores, counts, masks = cands.finish(k)
    # Only a query that ran to its end gives its arrays back: one interrupted part-way (a
    # changed manifest, an error) may have written entries it had not listed yet.
    cands.release()
    return Hits(ordinals, scores, counts, masks, terms, dfs, n_docs, avgdl, spent, truncated)


def _candidates(manifest: Manifest, plans: list[TermPlan]) -> _Sparse | _Dense:
    """A dense accumulator when the query's ordinal span is small enough and its postings are
    dense enough in it to repay zeroing the arrays; sparse arrays otherwise."""
    ranges = {s.id: (s.min_ordinal, s.max_ordinal) for s in manifest.segments}
    used = {e.segment for p in plans for e in p.entries}
    if not used:
        return _Sparse()
    base = min(ranges[s][0] for s in used)
    span = max(ranges[s][1] for s in used) - base + 1
    postings = sum(p.df for p in plans)
    if span <= DENSE_SPAN and postings * DENSE_DENSITY >= span:
        return _Dense(base, span)
    return _Sparse()


def _scoped(manifest: Manifest, plans: list[TermPlan], scope: U32Array) -> _Sparse | _Dense:
    """The accumulator of a scoped query, whose candidates are the ``scope`` ordinals from the
    start (every term only scores them). A scope much smaller than the query's postings is kept
    sparse: each block is then searched for the scope's ordinals in it (a binary search each)
    rather than every posting of the block being tested against a dense membership array."""
    if len(scope) * DENSE_DENSITY < sum(p.df for p in plans):
        return _Sparse(scope)
    cands = _candidates(manifest, plans)
    if isinstance(cands, _Dense):
        cands.restrict(scope)
        return cands
    return _Sparse(scope)


def _upper_bound(
    df_low: int,
    max_tf: float,
    min_dl: float,
    n_docs: int,
    avgdl: float,
    k1: float = K1,
    b: float = B,
) -> float:
    """The most one term can add to any document's score (idf at its lowest possible df)."""
    weight = float(idf(min(max(df_low, 0), n_docs), n_docs))
    # term_scores' formula on Python floats: the same IEEE operations in the same order, so the
    # same value, without building one-element arrays per query term.
    tf, dl = float(max_tf), float(min_dl)
    return weight * (tf * (k1 + 1.0)) / (tf + k1 * (1.0 - b + b * dl / avgdl))

"""BM25 scores against rank_bm25 (Lucene idf), across segments, merges and retirements."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rank_bm25 import BM25Okapi

from cwcore.index import bm25
from cwcore.index.postings import PostingIndex
from cwcore.store.rocks import Store


class LuceneOracle(BM25Okapi):
    """rank_bm25's BM25Okapi with Lucene's idf instead of its epsilon-floored one."""

    def __init__(self, corpus: list[list[str]]) -> None:
        super().__init__(corpus, k1=bm25.K1, b=bm25.B)

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


@contextmanager
def accumulator(mode: str) -> Iterator[None]:
    """Force the sparse or the dense candidate accumulator ("auto": the engine's choice)."""
    saved = bm25.DENSE_SPAN, bm25.DENSE_DENSITY
    if mode == "sparse":
        bm25.DENSE_SPAN = 0
    elif mode == "dense":
        bm25.DENSE_SPAN, bm25.DENSE_DENSITY = 1 << 20, 1 << 30
    try:
        yield
    finally:
        bm25.DENSE_SPAN, bm25.DENSE_DENSITY = saved


MODES = ["auto", "sparse", "dense"]


def _corpus(seed: int, n_docs: int, vocab: int) -> list[list[str]]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    weights = [1 / (i + 1) for i in range(vocab)]  # Zipf-like: a few common, many rare
    return [rng.choices(words, weights, k=rng.randint(1, 25)) for _ in range(n_docs)]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "db") as db:
        yield db


def _build(store: Store, corpus: list[list[str]], max_docs: int) -> PostingIndex:
    index = PostingIndex(store)
    writer = index.writer(max_docs=max_docs)
    for ordinal, doc in enumerate(corpus):
        writer.add(ordinal, Counter(doc), len(doc))
    writer.flush()
    return index


def _check_against_oracle(
    index: PostingIndex, corpus: list[list[str]], live: list[int], queries: list[list[str]]
) -> None:
    oracle = LuceneOracle([corpus[o] for o in live])
    reader = index.reader()
    for query in queries:
        expected = np.zeros(len(corpus))
        expected[live] = oracle.get_scores(query)
        hits = bm25.search(reader, query, k=len(corpus), budget=10**9)
        got = np.zeros(len(corpus))
        got[hits.ordinals] = hits.scores
        assert not hits.truncated
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-12)
        # Every live document with a positive oracle score is a hit, and nothing else is.
        assert sorted(hits.ordinals.tolist()) == [o for o in live if expected[o] > 0]
        for ordinal, count, mask in zip(hits.ordinals, hits.matched, hits.masks, strict=True):
            present = [j for j, t in enumerate(hits.terms) if t in corpus[ordinal]]
            assert count == len(present)
            assert int(mask) == sum(1 << j for j in present)
        # Pruned top 10 equals the head of the full ranking (score desc, ordinal asc).
        top = bm25.search(reader, query, k=10)
        full = sorted(zip(-hits.scores, hits.ordinals.tolist(), strict=True))[:10]
        assert top.ordinals.tolist() == [o for _, o in full]


def _queries(seed: int, vocab: int) -> list[list[str]]:
    rng = random.Random(seed)
    # Distinct terms: the oracle counts a repeated query term twice, cw once.
    queries = [
        [f"w{i}" for i in rng.sample(range(vocab), min(vocab, rng.randint(1, 4)))]
        for _ in range(12)
    ]
    return [*queries, ["w0", "w1"], ["w0", f"w{vocab - 1}"], ["missing", "w3"]]


@pytest.mark.parametrize("mode", MODES)
def test_scores_equal_the_oracle_across_segments_merges_and_retirements(
    store: Store, mode: str
) -> None:
    with accumulator(mode):
        _oracle_lifecycle(store)


def _oracle_lifecycle(store: Store) -> None:
    corpus = _corpus(seed=7, n_docs=400, vocab=150)
    queries = _queries(seed=8, vocab=150)
    index = _build(store, corpus, max_docs=45)  # 9 segments
    assert len(index.manifest().segments) == 9
    live = list(range(len(corpus)))
    _check_against_oracle(index, corpus, live, queries)

    assert index.merge() is not None  # the tier of 8 small segments, nothing retired
    assert len(index.manifest().segments) == 2
    _check_against_oracle(index, corpus, live, queries)

    retired = random.Random(9).sample(live, 60)
    assert index.retire(retired) == 60
    live = [o for o in live if o not in set(retired)]
    _check_against_oracle(index, corpus, live, queries)  # hidden, not yet dropped

    writer = index.writer(max_docs=45)  # more segments, then merges that drop retired postings
    more = _corpus(seed=10, n_docs=300, vocab=150)
    for ordinal, doc in enumerate(more, start=len(corpus)):
        writer.add(ordinal, Counter(doc), len(doc))
    writer.flush()
    corpus += more
    live += range(400, 700)
    _check_against_oracle(index, corpus, live, queries)
    assert index.merge() is not None
    _check_against_oracle(index, corpus, live, queries)
    index.force_merge()
    assert len(index.manifest().segments) == 1
    assert len(index.snapshot().retired) == 0
    _check_against_oracle(index, corpus, live, queries)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 10**6),
    n_docs=st.integers(1, 120),
    vocab=st.integers(2, 60),
    max_docs=st.integers(1, 50),
    mode=st.sampled_from(MODES),
)
def test_random_corpora_match_the_oracle(
    tmp_path_factory: pytest.TempPathFactory,
    seed: int,
    n_docs: int,
    vocab: int,
    max_docs: int,
    mode: str,
) -> None:
    corpus = _corpus(seed, n_docs, vocab)
    with Store(tmp_path_factory.mktemp("db")) as db, accumulator(mode):
        index = _build(db, corpus, max_docs)
        _check_against_oracle(index, corpus, list(range(n_docs)), _queries(seed, vocab))


def test_weighted_frequencies_use_the_same_formula(store: Store) -> None:
    index = PostingIndex(store)
    writer = index.writer()
    writer.add(0, {"parse": 2.5, "config": 0.5}, 6.0)  # BM25F: user text weighs more
    writer.add(1, {"parse": 1.0}, 3.0)
    writer.flush()
    hits = bm25.search(index.reader(), ["parse"])
    avgdl, n = 4.5, 2
    weight = math.log(1 + (n - 2 + 0.5) / (2 + 0.5))
    for ordinal, tf, dl in ((0, 2.5, 6.0), (1, 1.0, 3.0)):
        expected = weight * tf * (bm25.K1 + 1) / (tf + bm25.K1 * (1 - bm25.B + bm25.B * dl / avgdl))
        assert hits.scores[hits.ordinals.tolist().index(ordinal)] == pytest.approx(expected, 1e-12)


def test_dead_mask_hides_without_changing_statistics(store: Store) -> None:
    corpus = _corpus(seed=3, n_docs=200, vocab=40)
    index = _build(store, corpus, max_docs=64)
    reader = index.reader()
    full = bm25.search(reader, ["w1", "w5"], k=200)
    dead = np.zeros(150, dtype=bool)  # shorter than the ordinal space: the rest is live
    dead[full.ordinals[:3]] = True
    masked = bm25.search(reader, ["w1", "w5"], k=200, dead=dead)
    assert masked.ordinals.tolist() == full.ordinals[3:].tolist()
    assert np.array_equal(masked.scores, full.scores[3:])
    listed = bm25.search(reader, ["w1", "w5"], k=200, dead=set(full.ordinals[:3].tolist()))
    assert listed.ordinals.tolist() == masked.ordinals.tolist()


@pytest.mark.parametrize("mode", MODES)
def test_only_restricts_hits_to_a_scope(store: Store, mode: str) -> None:
    with accumulator(mode):
        _scoped(store)


def _scoped(store: Store) -> None:
    corpus = _corpus(seed=4, n_docs=300, vocab=50)
    index = _build(store, corpus, max_docs=100)
    reader = index.reader()
    full = bm25.search(reader, ["w2", "w9"], k=300)
    scope = np.arange(0, 300, 3, dtype=np.uint32)
    scoped = bm25.search(reader, ["w2", "w9"], k=300, only=scope)
    expected = [(o, s) for o, s in zip(full.ordinals, full.scores, strict=True) if o % 3 == 0]
    assert scoped.ordinals.tolist() == [o for o, _ in expected]
    np.testing.assert_allclose(scoped.scores, [s for _, s in expected], rtol=1e-12)


def test_budget_truncates_to_the_newest_postings(store: Store) -> None:
    corpus = [["common"] for _ in range(500)] + [["common", "rare"]]
    index = _build(store, corpus, max_docs=100)
    reader = index.reader()
    hits = bm25.search(reader, ["common"], k=500, budget=50)
    assert hits.truncated and hits.postings_scored == 50
    assert sorted(hits.ordinals.tolist()) == list(range(451, 501))
    # The rare term is scored first and in full; the common one then only adds to candidates.
    hits = bm25.search(reader, ["common", "rare"], k=5, budget=1)
    assert hits.ordinals.tolist()[0] == 500 and hits.matched.tolist()[0] == 2


def test_empty_index_and_empty_query(store: Store) -> None:
    index = PostingIndex(store)
    assert len(bm25.search(index.reader(), ["x"])) == 0
    index = _build(store, [["a"]], max_docs=10)
    assert len(bm25.search(index.reader(), [])) == 0
    assert len(bm25.search(index.reader(), ["a"], k=0)) == 0

"""The dense accumulator's arrays are kept between queries (``bm25._DensePool``): a query on
kept arrays answers exactly as one on fresh arrays, the arrays go back all zero, a query that
fails part-way does not give its arrays back, and the pruning test is not repeated once the
remaining terms are pruned. A scope much smaller than the query's postings is scored sparse."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cwcore.index import bm25
from cwcore.index.postings import ManifestChanged, PostingIndex, PostingReader
from cwcore.store.rocks import Store
from tests.index.test_bm25_oracle import _build, _corpus, accumulator


@pytest.fixture
def index(tmp_path: Path) -> Iterator[PostingIndex]:
    with Store(tmp_path / "db") as db:
        yield _build(db, _corpus(seed=11, n_docs=600, vocab=80), max_docs=150)


@pytest.fixture(autouse=True)
def empty_pool() -> Iterator[None]:
    bm25.release_buffers()
    yield
    bm25.release_buffers()


def _queries() -> list[tuple[list[str], np.ndarray | None, dict[str, float] | None]]:
    rng = random.Random(5)
    out: list[tuple[list[str], np.ndarray | None, dict[str, float] | None]] = []
    for _ in range(30):
        terms = [f"w{i}" for i in rng.sample(range(80), rng.randint(1, 8))]
        only = None
        if rng.random() < 0.3:
            only = np.array(sorted(rng.sample(range(600), 60)), dtype=np.uint32)
        weights = {terms[-1]: 0.4} if rng.random() < 0.3 else None
        out.append((terms, only, weights))
    return out


def _answer(hits: bm25.Hits) -> tuple[list[int], list[float], list[int], list[int], dict[str, int]]:
    return (
        hits.ordinals.tolist(),
        hits.scores.tolist(),
        hits.matched.tolist(),
        hits.masks.tolist(),
        hits.df,
    )


def _all_zero() -> bool:
    return all(
        not a.scores.any() and not a.masks.any() and not a.counts.any() and not a.member.any()
        for a in bm25._POOL._free
    )


def test_kept_arrays_answer_as_fresh_ones(index: PostingIndex) -> None:
    reader = index.reader()
    with accumulator("dense"):
        fresh = []
        for terms, only, weights in _queries():
            bm25.release_buffers()
            fresh.append(_answer(bm25.search(reader, terms, k=10, only=only, weights=weights)))
        bm25.release_buffers()
        kept = [
            _answer(bm25.search(reader, terms, k=10, only=only, weights=weights))
            for terms, only, weights in _queries()
        ]
        assert bm25.kept_buffer_bytes() > 0 and _all_zero()
    assert kept == fresh


def test_both_ways_to_sort_the_members_agree(
    index: PostingIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = index.reader()
    answers = []
    with accumulator("dense"):
        for ratio in (0, 1 << 30):  # always scan the span, always sort the members
            monkeypatch.setattr(bm25, "_SORT_RATIO", ratio)
            answers.append(
                [_answer(bm25.search(reader, t, k=10, only=o, weights=w)) for t, o, w in _queries()]
            )
    assert answers[0] == answers[1]


def test_an_interrupted_query_keeps_no_arrays(
    index: PostingIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    reader = index.reader()
    with accumulator("dense"):
        expected = _answer(bm25.search(reader, ["w1", "w2", "w7"], k=10))
        bm25.release_buffers()
        real = PostingReader.check
        failures = [1]

        def check_once(self: PostingReader, snap: object) -> None:
            if failures:
                failures.pop()
                raise ManifestChanged  # after the terms were scored: the retry starts afresh
            real(self, snap)  # type: ignore[arg-type]

        monkeypatch.setattr(PostingReader, "check", check_once)
        taken: list[int] = []
        take = bm25._POOL.take

        def counted(span: int) -> bm25._DenseArrays:
            taken.append(span)
            return take(span)

        monkeypatch.setattr(bm25._POOL, "take", counted)
        assert _answer(bm25.search(reader, ["w1", "w2", "w7"], k=10)) == expected
        assert len(taken) == 2  # the failed attempt's arrays were not given back for the retry
        assert len(bm25._POOL._free) == 1 and _all_zero()


def test_the_pool_keeps_the_largest_few() -> None:
    pool = bm25._DensePool()
    sets = [pool.take(span) for span in (10, 70_000, 200_000)]
    assert [s.capacity for s in sets] == [1 << 16, 2 << 16, 4 << 16]
    for s in sets:
        pool.give(s)
    assert [s.capacity for s in pool._free] == [4 << 16, 2 << 16][: bm25.DENSE_POOL]
    assert pool.take(100).capacity == 2 << 16  # the smallest that fits
    pool.clear()
    assert pool.kept_bytes() == 0


def test_pruning_is_not_tested_again_once_it_holds(
    index: PostingIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []
    kth, existing = bm25._Dense.kth, bm25._Dense.score_existing

    def count_kth(self: bm25._Dense, k: int) -> float:
        events.append("kth")
        return kth(self, k)

    def note_existing(self: bm25._Dense, *args: object) -> int:
        events.append("existing")
        return existing(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(bm25._Dense, "kth", count_kth)
    monkeypatch.setattr(bm25._Dense, "score_existing", note_existing)
    reader = index.reader()
    terms = [f"w{i}" for i in range(0, 80, 3)]  # rare and common terms: pruning sets in
    with accumulator("dense"):
        top = bm25.search(reader, terms, k=5)
        full = bm25.search(reader, terms, k=600)
    assert "existing" in events
    assert "kth" not in events[events.index("existing") :]
    expected = sorted(zip((-full.scores).tolist(), full.ordinals.tolist(), strict=True))[:5]
    assert top.ordinals.tolist() == [o for _, o in expected]


def test_a_small_scope_is_scored_sparse_with_the_same_answer(
    index: PostingIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []
    real = bm25._scoped

    def noted(*args: object) -> bm25._Sparse | bm25._Dense:
        cands = real(*args)  # type: ignore[arg-type]
        made.append(type(cands).__name__)
        return cands

    monkeypatch.setattr(bm25, "_scoped", noted)
    reader = index.reader()
    terms = ["w0", "w1", "w2", "w5", "w30"]  # common terms: thousands of postings
    small = np.arange(0, 600, 40, dtype=np.uint32)  # 15 windows
    got = _answer(bm25.search(reader, terms, k=10, only=small))
    with accumulator("dense"):  # the dense accumulator restricted to the same scope
        dense = _answer(bm25.search(reader, terms, k=10, only=small))
    assert made == ["_Sparse", "_Dense"]
    assert got == dense
    wide = np.arange(0, 600, 1, dtype=np.uint32)  # a scope as large as the archive: dense
    bm25.search(reader, terms, k=10, only=wide)
    assert made[-1] == "_Dense"


@pytest.mark.parametrize("mode", ["auto", "sparse", "dense"])
def test_a_scope_holds_with_a_negative_weight(index: PostingIndex, mode: str) -> None:
    """A negative query weight turns the pruning latch off; a scope must still restrict every
    term to its windows."""
    scope = np.arange(0, 600, 7, dtype=np.uint32)
    terms = ["w3", "w0", "w1", "w2"]
    with accumulator(mode):
        hits = bm25.search(index.reader(), terms, k=600, only=scope, weights={"w1": -0.5})
    assert len(hits) and set(hits.ordinals.tolist()) <= set(scope.tolist())

"""The experimental tantivy scorer (``CW_LEXICAL_ENGINE=tantivy``) on a tiny corpus, beside the
posting engine: same windows, same top results, the same ``Hits`` contract; deletion of a
tombstoned document on the next sync; the default path never selects it.

Skipped when ``tantivy`` is not installed (it is a ``bench`` extra, not a dependency)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cwcore.config import Settings
from cwcore.index import bm25, tantivy_engine
from cwcore.index.worker import IndexWorker
from cwcore.model import DocumentPart, DocumentSpec, SessionSpec
from cwcore.retrieve import lexical
from cwcore.store.admission import Admission
from cwcore.store.retention import Retention
from cwcore.store.rocks import Store

if not tantivy_engine.available():
    pytest.skip("tantivy is not installed", allow_module_level=True)

SESSION = SessionSpec("sess-tantivy", "proj", "test")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "store") as db:
        yield db


def _turn(doc_id: str, user: str, assistant: str) -> DocumentSpec:
    parts = (
        DocumentPart(f"user:{doc_id}", "user", "text", user),
        DocumentPart(f"assistant:{doc_id}", "assistant", "text", assistant),
    )
    return DocumentSpec(doc_id, "turn", SESSION.session_id, "proj", "test", parts)


def _corpus(store: Store, n: int = 40) -> IndexWorker:
    rng = random.Random(36)
    words = [f"w{i}" for i in range(50)]
    zipf = [1 / (i + 1) for i in range(50)]

    def text() -> str:
        return " ".join(rng.choices(words, zipf, k=rng.randint(4, 40)))

    result = Admission(store).admit(
        SESSION, (), [_turn(f"t{i:02d}", text(), text()) for i in range(n)]
    )
    assert not result.rejected
    worker = IndexWorker(store, Settings())
    worker.drain()
    return worker


def test_repeated_scales_weighted_frequencies() -> None:
    text = tantivy_engine.repeated({"a": 1.5, "b": 0.5, "c": 0.0, "d": 3.0}, scale=2.0)
    assert sorted(text.split()) == ["a"] * 3 + ["b"] + ["d"] * 6
    assert tantivy_engine.repeated({"x": 0.2}, scale=1.0) == "x"  # never below one occurrence


def test_top_results_match_the_posting_engine(store: Store) -> None:
    worker = _corpus(store)
    engine = tantivy_engine.TantivyLexical(store, store.path.with_name("tv"), Settings())
    stats = engine.sync()
    assert stats is not None and stats.documents == 40 and stats.windows == 40
    assert engine.sync() is None  # same generation: nothing to do
    reader = worker.bm25.reader()
    queries = [["w40"], ["w12", "w33"], ["w7", "w21", "w45"], ["w1", "w49", "w30"]]
    for query in queries:
        ours = bm25.search(reader, query, k=5)
        theirs = engine.search(query, k=5)
        assert len(theirs) == len(ours)
        # The same documents match; the best one agrees (the emulation moves near-ties).
        assert int(theirs.ordinals[0]) == int(ours.ordinals[0]), query
        assert theirs.df == ours.df
        assert theirs.n_docs == ours.n_docs
        for wid, mask in zip(theirs.ordinals, theirs.masks, strict=True):
            held = {t for j, t in enumerate(theirs.terms) if int(mask) >> j & 1}
            assert held == {t for t in query if t in _terms_of(engine, int(wid))}


def _terms_of(engine: tantivy_engine.TantivyLexical, wid: int) -> set[str]:
    hits = engine.search([f"w{i}" for i in range(50)], k=1, only=np.array([wid], np.uint32))
    return {t for j, t in enumerate(hits.terms) if int(hits.masks[0]) >> j & 1}


def test_scope_and_weights(store: Store) -> None:
    worker = _corpus(store)
    engine = tantivy_engine.TantivyLexical(store, store.path.with_name("tv"), Settings())
    everything = engine.search(["w3", "w9"], k=40)
    scope = np.sort(everything.ordinals[1::2])
    scoped = engine.search(["w3", "w9"], k=40, only=scope)
    assert set(scoped.ordinals.tolist()) == set(scope.tolist())
    ours = bm25.search(worker.bm25.reader(), ["w3", "w9"], k=40, only=scope)
    assert set(ours.ordinals.tolist()) == set(scoped.ordinals.tolist())
    # A query weight below 1 lowers that term's share of every score.
    light = engine.search(["w3", "w9"], k=40, weights={"w9": 0.1})
    full = dict(zip(everything.ordinals.tolist(), everything.scores.tolist(), strict=True))
    assert all(s <= full[w] + 1e-6 for w, s in zip(light.ordinals, light.scores, strict=True))


def test_a_forgotten_document_leaves_on_the_next_sync(store: Store) -> None:
    worker = _corpus(store, n=6)
    engine = tantivy_engine.TantivyLexical(store, store.path.with_name("tv"), Settings())
    before = engine.search(["w0"], k=10)
    assert before.n_docs == 6
    assert Retention(store).forget("t00").documents == 1
    worker.drain()
    after = engine.search(["w0"], k=10)
    assert after.n_docs == 5
    assert engine.last_build is not None and engine.last_build.deleted == 1


def test_the_default_engine_is_the_posting_engine(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker = _corpus(store, n=4)
    assert lexical.LEXICAL_ENGINE == "postings"
    assert lexical._scorer(worker.bm25) is bm25.search
    monkeypatch.setattr(lexical, "LEXICAL_ENGINE", "tantivy")
    assert lexical._scorer(worker.bm25) is not bm25.search

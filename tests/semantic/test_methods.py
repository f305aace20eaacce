"""Engine methods and the runtime: status, one embedding batch, disabled and strict behaviour."""

from __future__ import annotations

import json
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.errors import ModelUnavailable
from cwcore.semantic import errors
from cwcore.semantic import index as handler
from cwcore.semantic.embedder import Embedder
from cwtui.cli import app
from tests.semantic.conftest import FakeEmbedder
from tests.support import engine_of, semantic_of, store_of, use_embedder


def test_embed_pending_and_query_with_the_real_model(topics: Archive, minilm: Embedder) -> None:
    semantic = use_embedder(semantic_of(topics), minilm)  # the session's loaded model
    first = topics.call("semantic.embed_pending", {"maxWindows": 4})
    assert first["embedded"] == 4 and first["pending"] == 2
    topics.call("semantic.embed_pending", {})
    status = topics.call("semantic.status")
    assert status["embedded"] == 6 and status["pending"] == 0
    hits = semantic.query("tests fail because sqlite is locked", 3)
    from cwcore.index import derived

    top = derived.window_record(store_of(topics), int(hits.wids[0]))
    assert top is not None and top["session"] == "s-db"
    assert np.all(np.diff(hits.cosines) <= 0) and np.all((hits.scores > 0) & (hits.scores < 1))
    only = np.array(
        [
            w
            for w in range(1, 7)
            if derived.window_record(store_of(topics), w)["session"] == "s-cook"
        ],
        dtype=np.uint32,
    )
    bread = semantic.query("baking bread", 1, only)
    assert int(bread.wids[0]) in set(only.tolist())


def test_disabled_semantic_retrieval_is_a_category(
    archive: Archive, monkeypatch: pytest.MonkeyPatch, cw_home: Path
) -> None:
    monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "false")
    with Archive.open(cw_home / "other", embedded=True) as other:
        semantic = semantic_of(other)
        with pytest.raises(ModelUnavailable) as info:
            semantic.query("anything", 5)
        assert errors.category(info.value) == errors.DISABLED
        assert semantic.embed_pending() == 0
        assert semantic.rerank("q", ["a"]) is None


def test_missing_model_is_reported_for_fallback(topics: Archive, tmp_path: Path) -> None:
    semantic = use_embedder(semantic_of(topics), Embedder(tmp_path / "no-model"))
    with pytest.raises(ModelUnavailable) as info:
        semantic.query("anything", 5, strict=True)
    assert errors.category(info.value) == errors.MODEL_MISSING
    assert info.value.code == "model-unavailable"
    assert semantic.rerank("q", ["a"]) is None  # no reranker installed: silent


def test_models_status_command_without_self_test() -> None:
    result = CliRunner().invoke(app, ["models", "status", "--no-self-test", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output.strip().splitlines()[-1])
    assert set(body) == {"embedder", "reranker", "semantic"}
    assert body["reranker"]["installed"] is False
    assert body["semantic"]["embedded"] == 0


def test_models_status_says_how_search_reaches_the_vectors() -> None:
    from cwtui.commands.models import vector_search_line

    assert vector_search_line(None, None) is None  # the index is not loaded yet
    assert vector_search_line(1200, 0) == "vector search: exact scan of 1,200 vector(s)"
    assert vector_search_line(99_724, 75_000) == (
        "vector search: graph over 75,000 of 99,724 vector(s)"
    )
    result = CliRunner().invoke(app, ["models", "status", "--no-self-test"])
    assert result.exit_code == 0, result.output
    assert "semantic index:" in result.output


def test_embed_pending_rejects_bad_limits(archive: Archive) -> None:
    from cwcore.errors import InvalidInput

    with pytest.raises(InvalidInput):
        archive.call("semantic.embed_pending", {"maxWindows": 0})


def _visible(archive: Archive, **request: object):
    from cwcore.contract.search import parse_request
    from cwcore.index import derived
    from cwcore.retrieve.candidates import Visible
    from cwcore.retrieve.scope import resolve

    engine = engine_of(archive)
    req = parse_request({"query": "q", **request})
    max_wid = int(derived.generation(engine.store)["maxWid"])
    return Visible(engine.store, engine.reader, resolve(engine.reader, req), max_wid)


def test_semantic_tier_policy_scope_and_fallback(
    topics: Archive, minilm: Embedder, tmp_path: Path
) -> None:
    from cwcore.retrieve.semantic import semantic_tier

    semantic = use_embedder(semantic_of(topics), minilm)
    topics.call("semantic.embed_pending", {})
    query = "how do I fix a blurry font"
    never = semantic_tier(semantic, _visible(topics), query, 3, policy="never", weak=True)
    auto_strong = semantic_tier(semantic, _visible(topics), query, 3, policy="auto", weak=False)
    assert not never.used and not auto_strong.used
    hits = semantic_tier(semantic, _visible(topics), query, 3, policy="auto", weak=True)
    assert hits.used and hits.failure is None and len(hits.candidates) == 3
    top = hits.candidates[0]
    assert top.mode == "semantic" and top.match_type == "semantic" and 0 < top.score < 1
    # Presented: the pooled calibration of the cosine; blended in fusion: the LongMemEval map.
    from cwcore.retrieve.semantic import confidence
    from cwcore.semantic.search import calibrate

    assert top.score == round(confidence(top.raw), 4)
    assert top.blend is not None and abs(top.blend - float(calibrate(top.raw))) < 1e-6
    scoped = semantic_tier(
        semantic, _visible(topics, sessions=["s-cook"]), query, 3, policy="always", weak=False
    )
    from cwcore.index import derived

    sessions = {
        derived.window_record(store_of(topics), c.wid)["session"] for c in scoped.candidates
    }
    assert sessions == {"s-cook"} and len(scoped.candidates) == 2
    use_embedder(semantic, Embedder(tmp_path / "no-model"))
    failed = semantic_tier(semantic, _visible(topics), query, 3, policy="always", weak=False)
    assert not failed.used and failed.failure == errors.MODEL_MISSING and not failed.candidates
    with pytest.raises(ModelUnavailable):
        semantic_tier(
            semantic, _visible(topics), query, 3, policy="always", weak=False, strict=True
        )


def test_a_failed_query_encoding_falls_back_to_lexical_and_says_why(
    topics: Archive, tmp_path: Path
) -> None:
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 16, embedder=FakeEmbedder())
    use_embedder(semantic_of(engine), Embedder(tmp_path / "no-model"))  # vectors, no model
    body = topics.search({"query": "sourdough bread", "semanticPolicy": "always"})
    assert body.retrieval_status == "lexical_fallback"
    assert body.semantic_search_used is False
    assert body.semantic_failure == errors.MODEL_MISSING
    assert body.results  # the lexical hits are kept
    with pytest.raises(ModelUnavailable):
        topics.search({"query": "sourdough bread", "semanticPolicy": "always", "strict": True})


def test_the_semantic_stage_reports_its_embedding_and_its_scan(topics: Archive) -> None:
    """``stages.semantic``: the stage's milliseconds split into the query's embedding and the
    scan with its re-scoring (what the scale bench reports for the default search); neither
    when the stage did not run."""

    class Querying(FakeEmbedder):
        def embed_query(self, text: str, **_: Any) -> np.ndarray:
            return self.vector(text)

    engine = engine_of(topics)
    fake = Querying()
    handler.embed_pending(engine.store, engine.reader, 16, embedder=fake)
    use_embedder(semantic_of(engine), fake)
    body = topics.search({"query": "sourdough bread", "semanticPolicy": "always"})
    stage = body.stages["semantic"]
    assert body.semantic_search_used and stage["used"]
    assert stage["embedMs"] >= 0 and stage["scanMs"] >= 0
    assert stage["embedMs"] + stage["scanMs"] <= stage["ms"] + 0.02  # each rounded to 0.01
    skipped = topics.search({"query": "sourdough bread", "semanticPolicy": "never"})
    assert "semantic" not in skipped.stages


class _Ahead(FakeEmbedder):
    """A fake whose queries can be started early: counts each way a query was embedded."""

    def __init__(self, fail: Exception | None = None) -> None:
        super().__init__()
        self.started: list[str] = []
        self.direct: list[str] = []
        self.error = fail

    def embed_query(self, text: str, **_: Any) -> np.ndarray:
        self.direct.append(text)
        return self.vector(text)

    def start_query(self, text: str) -> Future[np.ndarray]:
        self.started.append(text)
        done: Future[np.ndarray] = Future()
        if self.error is not None:
            done.set_exception(self.error)
        else:
            done.set_result(self.vector(text))
        return done


_A = TypeVar("_A", bound=_Ahead)


def _ahead(topics: Archive, fake: _A) -> _A:
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 16, embedder=fake)
    semantic = use_embedder(semantic_of(engine), fake)
    semantic.index()  # a daemon's first search opens the index; early starts come after it
    return fake


class _Querying(FakeEmbedder):
    """A fake that embeds queries only in the stage (no early start)."""

    def __init__(self) -> None:
        super().__init__()
        self.queries: list[str] = []

    def embed_query(self, text: str, **_: Any) -> np.ndarray:
        self.queries.append(text)
        return self.vector(text)


def test_the_query_is_embedded_once_started_before_the_lexical_pass(topics: Archive) -> None:
    """A search whose semantic stage may run starts the query's embedding before its lexical
    pass and the stage awaits that vector (``embedAhead``), with the same hits as embedding it
    in the stage; nothing is started for ``never`` or for exact-looking input."""
    fake = _ahead(topics, _Ahead())
    ask = {"query": "sourdough bread", "semanticPolicy": "always", "limit": 3}
    early = topics.search(ask)
    stage = early.stages["semantic"]
    assert fake.started == ["sourdough bread"] and fake.direct == []
    assert stage["used"] and stage["embedAhead"] is True
    fake.started.clear()
    topics.search({**ask, "semanticPolicy": "never"})
    topics.search({**ask, "query": "'config.toml'"})
    assert fake.started == []
    late = _Querying()  # no early start: the stage embeds the query itself
    use_embedder(semantic_of(topics), late)
    again = topics.search(ask)
    assert "embedAhead" not in again.stages["semantic"] and late.queries == ["sourdough bread"]
    assert [h.document_id for h in again.results] == [h.document_id for h in early.results]


def test_a_failed_early_embedding_falls_back_to_lexical_with_its_category(
    topics: Archive,
) -> None:
    _ahead(topics, _Ahead(fail=errors.unavailable(errors.TIMEOUT, "slow")))
    body = topics.search({"query": "sourdough bread", "semanticPolicy": "always"})
    assert body.retrieval_status == "lexical_fallback"
    assert body.semantic_failure == errors.TIMEOUT and body.results
    with pytest.raises(ModelUnavailable):
        topics.search({"query": "sourdough bread", "semanticPolicy": "always", "strict": True})


def test_an_unloaded_model_starts_nothing_early(tmp_path: Path) -> None:
    """The early start never loads a model (seconds): the stage does, if it runs."""
    assert Embedder(tmp_path / "no-model").start_query("anything") is None


def test_an_early_start_with_the_real_model_gives_the_query_vector(minilm: Embedder) -> None:
    minilm.load()
    ahead = minilm.start_query("tests fail because sqlite is locked")
    assert ahead is not None
    got = ahead.result(timeout=30)
    assert got.shape == (384,)
    assert np.allclose(got, minilm.embed_query("tests fail because sqlite is locked"), atol=1e-5)


class _Held(_Ahead):
    """Early starts whose vectors arrive only when the test says so."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[tuple[Future[np.ndarray], str]] = []

    def start_query(self, text: str) -> Future[np.ndarray]:
        self.started.append(text)
        held: Future[np.ndarray] = Future()
        self.pending.append((held, text))
        return held

    def release(self) -> None:
        while self.pending:
            held, text = self.pending.pop()
            held.set_result(self.vector(text))


def test_ahead_work_serves_its_own_round_and_a_deeper_one_from_the_vector(
    topics: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scan started ahead answers the round it was started for; a round asking for more
    windows (or another scope) scans again from the same vector, embedding nothing twice; a
    dropped start skips its scan and still serves the vector."""
    fake = _ahead(topics, _Held())
    semantic = semantic_of(topics)
    scans: list[int] = []
    nearest = semantic.nearest

    def counted(vector: np.ndarray, k: int, *rest: Any, **named: Any) -> Any:
        scans.append(k)
        return nearest(vector, k, *rest, **named)

    monkeypatch.setattr(semantic, "nearest", counted)
    ahead = semantic.start_query("sourdough bread", 50, None)
    assert ahead is not None
    fake.release()
    own = semantic.query("sourdough bread", 50, None, ahead=ahead)
    deeper = semantic.query("sourdough bread", 200, None, ahead=ahead)
    plain = semantic.query("sourdough bread", 200, None)
    assert own.ahead and deeper.ahead and not plain.ahead
    assert deeper.wids.tolist() == plain.wids.tolist()
    assert fake.started == ["sourdough bread"] and fake.direct == ["sourdough bread"]
    assert scans == [50, 200, 200]
    scans.clear()
    dropped = semantic.start_query("sourdough bread", 50, None)
    assert dropped is not None
    dropped.drop()  # before its vector arrives: the scan thread finds it dropped
    fake.release()
    again = semantic.query("sourdough bread", 50, None, ahead=dropped)
    assert again.wids.tolist() == own.wids.tolist()
    assert scans == [50]  # the stage's own scan only: the dropped one never ran


def test_closing_the_archive_waits_for_a_scan_begun_ahead(
    topics: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search whose ``auto`` stage did not fire has returned while its scan may still read the
    store: closing the archive waits for it instead of closing the store under it."""
    fake = _ahead(topics, _Held())
    semantic = semantic_of(topics)
    seen: list[bool] = []
    nearest = semantic.nearest

    def slow(*args: Any, **named: Any) -> Any:
        time.sleep(0.3)  # the store must still be open after this, however long it takes
        hits = nearest(*args, **named)  # raises if the store was closed meanwhile
        seen.append(len(hits) > 0)
        return hits

    monkeypatch.setattr(semantic, "nearest", slow)
    ahead = semantic.start_query("sourdough bread", 50, None)
    assert ahead is not None
    fake.release()  # the scan begins; nobody waits for it
    topics.close()
    assert seen == [True]

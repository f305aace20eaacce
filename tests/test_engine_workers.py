"""The daemon's background workers: embedding yields to service calls and backs off a missing
model; the index worker merges segments once idle."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.engine import INDEX_YIELD_S, WARM_QUIET_S, Engine
from cwcore.methods import TABLE, Method, MethodTable
from cwcore.semantic import errors
from cwcore.workers import Periodic
from tests.helpers import write_jsonl
from tests.support import engine_of, index_idle_for, semantic_of


def test_background_work_waits_for_service_calls_to_end(cw_home: Path) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(_engine: Any, _params: dict[str, Any], _emit: Any, _cancel: Any) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return {}

    engine = Engine(cw_home, MethodTable([*TABLE, Method("test.slow", slow)]))
    try:
        call = threading.Thread(
            target=engine.call, args=("test.slow", {}, lambda _e: None, threading.Event())
        )
        call.start()
        assert entered.wait(10)
        assert engine.wait_for_quiet(quiet_s=0.01, limit_s=0.05) is False  # a call is running
        release.set()
        call.join(10)
        started = time.monotonic()
        assert engine.wait_for_quiet(quiet_s=0.1, limit_s=5.0) is True
        assert time.monotonic() - started >= 0.05  # it waited out the quiet period
        assert engine.wait_for_quiet(quiet_s=0.0, limit_s=0.0) is True
    finally:
        release.set()
        engine.close()


def test_a_missing_model_backs_off_instead_of_failing_every_tick(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = engine_of(archive)
    semantic = semantic_of(engine)
    calls = []

    def missing(*_args: Any, **_kwargs: Any) -> int:
        calls.append(1)
        raise errors.unavailable(errors.MODEL_MISSING, "no embedding model here")

    monkeypatch.setattr(semantic, "embed_pending", missing)
    assert engine.semantic_step() == 0
    assert engine.semantic_step() == 0  # within the back-off: not attempted again
    assert len(calls) == 1
    assert engine.semantic_error is not None and "model-missing" in engine.semantic_error
    assert engine.status()["semantic_error"] == engine.semantic_error
    first = engine.semantic_backoff.delay
    assert first == 5.0
    engine.semantic_backoff.retry_at = 0.0  # as if the back-off elapsed
    engine.semantic_step()
    assert len(calls) == 2 and engine.semantic_backoff.delay == 2 * first

    monkeypatch.setattr(semantic, "embed_pending", lambda *_a, **_k: 0)
    engine.semantic_backoff.retry_at = 0.0
    assert engine.semantic_step() == 0
    assert engine.semantic_error is None and engine.semantic_backoff.delay == 0.0


def test_the_index_worker_merges_segments_once_idle(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cwcore.index import worker

    for i in range(3):  # three imports: three published pages, three segments
        rows = [{"session": f"s{i}", "id": "u", "role": "user", "text": f"alpha beta {i}"}]
        archive.import_paths([write_jsonl(tmp_path / f"{i}.jsonl", rows)], fmt="cw-jsonl")
    engine = engine_of(archive)
    bm25 = engine.indexer.bm25
    assert len(bm25.manifest().segments) == 3
    before = archive.search({"query": "alpha beta 1", "semanticPolicy": "never"}).results
    engine.index_step()  # not idle long enough: the segments stay
    assert len(bm25.manifest().segments) == 3
    monkeypatch.setattr(worker, "IDLE_MERGE_S", 0.0)
    engine.index_step()
    assert len(bm25.manifest().segments) == 1
    after = archive.search({"query": "alpha beta 1", "semanticPolicy": "never"}).results
    assert [(h.document_id, h.score) for h in after] == [(h.document_id, h.score) for h in before]


def test_the_idle_merge_waits_for_a_lull_between_requests_not_for_them_to_stop(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that searches every few seconds must not keep a bulk import's segments forever:
    once no indexing work arrived for IDLE_MERGE_S, the merge runs in the first lull of
    MERGE_QUIET_S between requests (not only after IDLE_MERGE_S without any)."""
    from cwcore.engine import MERGE_QUIET_S

    for i in range(3):
        rows = [{"session": f"s{i}", "id": "u", "role": "user", "text": f"alpha beta {i}"}]
        archive.import_paths([write_jsonl(tmp_path / f"{i}.jsonl", rows)], fmt="cw-jsonl")
    engine = engine_of(archive)
    bm25 = engine.indexer.bm25
    assert len(bm25.manifest().segments) == 3
    quiet = {"s": MERGE_QUIET_S}  # a lull since the last request, not a quiet half-minute
    monkeypatch.setattr(engine, "quiet_for", lambda: quiet["s"])
    index_idle_for(engine, 10.0)  # indexing settled, not long enough
    engine.index_step()
    assert len(bm25.manifest().segments) == 3
    index_idle_for(engine, 60.0)
    quiet["s"] = 0.5  # requests back to back: no lull yet
    engine.index_step()
    assert len(bm25.manifest().segments) == 3
    quiet["s"] = MERGE_QUIET_S
    engine.index_step()
    assert len(bm25.manifest().segments) == 1


@pytest.mark.skipif(not hasattr(os, "setpriority"), reason="per-thread nice is Linux-only")
def test_background_threads_run_at_the_lowest_priority(tmp_path: Path) -> None:
    from cwcore.semantic.embedder import Embedder
    from cwcore.workers import BACKGROUND_NICE

    def own_nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    embedder = Embedder(tmp_path / "no-model")
    try:
        assert embedder._batch_pool.submit(own_nice).result(10) == BACKGROUND_NICE
        assert embedder._pool.submit(own_nice).result(10) == own_nice()  # queries: unchanged
    finally:
        embedder.close()
    seen: list[int] = []
    worker = Periodic("probe", lambda: seen.append(own_nice()), 60.0, background=True)
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while not seen and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        worker.stop()
    assert seen == [BACKGROUND_NICE]


def test_an_idle_embedding_worker_warms_the_model_for_the_first_search(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = engine_of(archive)
    semantic = semantic_of(engine)
    warmed: list[bool] = []
    rested: list[bool] = []
    monkeypatch.setattr(semantic, "embed_pending", lambda *_a, **_k: 3)
    monkeypatch.setattr(semantic, "warm", lambda: warmed.append(True) or True)
    monkeypatch.setattr(semantic, "rest", lambda: rested.append(True) or True)
    idle = {"s": 60.0}
    monkeypatch.setattr(engine, "quiet_for", lambda: idle["s"])
    assert engine.semantic_step() == 3  # wakes the (never started) semantic worker
    assert warmed == [] and rested == []  # still embedding: the batch itself loads the model
    monkeypatch.setattr(semantic, "embed_pending", lambda *_a, **_k: 0)
    assert engine.semantic_step() == 0
    assert warmed == [True]
    assert rested == [True]  # nothing to embed: an idle batch session may be freed


def test_the_model_is_not_loaded_while_requests_arrive(
    archive: Archive, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Loading the model holds the GIL for long stretches, so the idle worker leaves it until
    no call has run for WARM_QUIET_S; a fresh open counts as a call (its client's request
    follows at once)."""
    engine = engine_of(archive)
    semantic = semantic_of(engine)
    warmed: list[bool] = []
    monkeypatch.setattr(semantic, "embed_pending", lambda *_a, **_k: 0)
    monkeypatch.setattr(semantic, "warm", lambda: warmed.append(True) or True)
    fresh = Engine(tmp_path / "fresh-home", TABLE)
    try:
        assert fresh.quiet_for() < WARM_QUIET_S  # the open itself is recent activity
    finally:
        fresh.close()
    engine.call("sessions", {}, lambda _e: None, threading.Event())
    assert engine.semantic_step() == 0
    assert warmed == []  # a call just ended: not idle long enough
    monkeypatch.setattr(engine, "quiet_for", lambda: WARM_QUIET_S + 0.1)
    assert engine.semantic_step() == 0
    assert warmed == [True]


def test_warm_loads_once_and_not_when_disabled(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    semantic = semantic_of(archive)
    loads: list[int] = []

    class Stub:
        loaded = False
        released_idle = False

        def load(self) -> None:
            loads.append(1)
            self.loaded = True

    stub = Stub()
    monkeypatch.setattr(semantic, "embedder", lambda: stub)
    assert semantic.warm() is True and semantic.warm() is False
    assert loads == [1]
    monkeypatch.setattr(
        semantic, "settings", dataclasses.replace(semantic.settings, semantic_retrieval=False)
    )
    stub.loaded = False
    assert semantic.warm() is False and loads == [1]


def test_status_polling_is_not_foreground_activity(archive: Archive) -> None:
    engine = engine_of(archive)
    engine.call("sessions", {}, lambda _e: None, threading.Event())
    time.sleep(0.05)
    before = engine.quiet_for()
    engine.call("index.status", {}, lambda _e: None, threading.Event())  # what a UI polls
    assert engine.quiet_for() >= before
    engine.call("sessions", {}, lambda _e: None, threading.Event())
    assert engine.quiet_for() < before


def _backing_off_index_worker(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, list[float], threading.Event]:
    """The engine's real index step on a worker whose every page fails with a 5 s backoff;
    returns the engine, the times steps ran and an event set after each (failed) step."""
    engine = engine_of(archive)
    steps: list[float] = []
    stepped = threading.Event()

    def failing_step() -> int:
        steps.append(time.monotonic())
        engine.indexer.backoff = 5.0  # the longest retry wait
        stepped.set()
        return 0

    monkeypatch.setattr(engine.indexer, "step", failing_step)
    engine.index_worker.start()  # the engine's own index worker, alone
    assert stepped.wait(10), "the worker never ran its step"
    return engine, steps, stepped


def test_an_admission_wakes_a_backing_off_index_worker(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, steps, stepped = _backing_off_index_worker(archive, monkeypatch)
    stepped.clear()
    woken = time.monotonic()
    engine.index_worker.wake()  # what an admission does
    try:
        assert stepped.wait(10)
        assert steps[1] - woken < 2.0  # well within the 5 s backoff
    finally:
        engine.index_worker.stop()


def test_shutdown_cancels_a_backoff_at_once(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine, steps, _ = _backing_off_index_worker(archive, monkeypatch)
    began = time.monotonic()
    engine.index_worker.stop(timeout=10)
    assert time.monotonic() - began < 2.0  # well within the 5 s backoff
    assert not engine.index_worker.alive
    assert len(steps) == 1


def test_a_batch_waits_between_groups_while_a_call_runs(
    cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(_engine: Any, _params: dict[str, Any], _emit: Any, _cancel: Any) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return {}

    engine = Engine(cw_home, MethodTable([*TABLE, Method("test.slow", slow)]))
    try:
        assert engine.wait_for_calls(limit_s=0.0) is True  # nothing runs: no wait
        call = threading.Thread(
            target=engine.call, args=("test.slow", {}, lambda _e: None, threading.Event())
        )
        call.start()
        assert entered.wait(10)
        assert engine.wait_for_calls(limit_s=0.05) is False  # bounded: gives up while it runs
        waited: list[bool] = []
        waiter = threading.Thread(target=lambda: waited.append(engine.wait_for_calls(10.0)))
        waiter.start()
        release.set()
        waiter.join(10)
        assert waited == [True]  # woken when the call ended, long before its limit
        call.join(10)
        given: list[Any] = []
        semantic = semantic_of(engine)
        monkeypatch.setattr(
            semantic, "embed_pending", lambda *_a, **k: given.append(k.get("between_groups")) or 1
        )
        engine.semantic_step()  # embedded: a step may run inside a call, so it never waits
        engine.background = True  # the daemon's worker: its batches wait for calls
        engine.semantic_step()
        assert given == [None, engine.wait_for_calls]
    finally:
        release.set()
        engine.close()


def test_a_background_index_page_waits_while_a_call_runs(
    cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's index worker publishes no page while a call (an import) runs, so admission
    does not share the interpreter with publication; it starts the moment the call ends."""
    entered, release = threading.Event(), threading.Event()

    def slow(_engine: Any, _params: dict[str, Any], _emit: Any, _cancel: Any) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return {}

    engine = Engine(cw_home, MethodTable([*TABLE, Method("test.slow", slow)]))
    limits: list[float] = []
    real_wait = engine.wait_for_calls

    def recorded(limit_s: float = 1.0) -> bool:
        limits.append(limit_s)
        return real_wait(limit_s)

    monkeypatch.setattr(engine, "wait_for_calls", recorded)
    stepped = threading.Event()
    monkeypatch.setattr(engine.indexer, "step", lambda: stepped.set() or 0)
    try:
        engine.index_step()  # embedded: a step may run inside a call, so it never waits
        assert stepped.is_set() and limits == []
        stepped.clear()
        engine.background = True
        call = threading.Thread(
            target=engine.call, args=("test.slow", {}, lambda _e: None, threading.Event())
        )
        call.start()
        assert entered.wait(10)
        page = threading.Thread(target=engine.index_step)
        page.start()
        assert not stepped.wait(0.2)  # held while the call runs
        release.set()
        assert stepped.wait(10)  # and published as soon as it ends
        page.join(10)
        call.join(10)
        assert limits == [INDEX_YIELD_S]
    finally:
        release.set()
        engine.close()


def test_bulk_indexing_merges_as_it_publishes(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A drain of many pages keeps at most MERGE_FACTOR - 1 segments a tier as it goes, not one
    segment a page (190k messages once left 41 segments, tripling a search's engine time)."""
    from cwcore.index import worker
    from cwcore.index.postings import tuning

    monkeypatch.setattr(worker, "PAGE_ENTRIES", 1)  # one document a page: one segment a page
    rows = [
        {"session": f"s{i}", "id": "u", "role": "user", "text": f"alpha beta gamma{i}"}
        for i in range(20)
    ]
    engine = engine_of(archive)
    # As in the daemon, the import leaves its entries to the worker (embedded, it drains).
    monkeypatch.setattr(engine, "after_admission", lambda imported: None)
    archive.import_paths([write_jsonl(tmp_path / "bulk.jsonl", rows)], fmt="cw-jsonl")
    bm25 = engine.indexer.bm25
    assert engine.indexer.depth() == 20 and not bm25.manifest().segments
    archive.index_run(wait=True)
    segments = bm25.manifest().segments
    # 20 one-document pages: two merges of 8 (tier 1) and 4 left in tier 0.
    assert sorted(s.docs for s in segments) == [1, 1, 1, 1, 8, 8]
    tiers: dict[int, int] = {}
    for segment in segments:
        tiers[segment.tier] = tiers.get(segment.tier, 0) + 1
    assert max(tiers.values()) < tuning.MERGE_FACTOR
    hits = archive.search({"query": "gamma7", "semanticPolicy": "never"}).results
    assert [h.source.session_id for h in hits][:1] == ["s7"]
    assert engine.index_step() == 0  # a worker step with nothing pending

"""The semantic index handler and its store: wid order, resumable cursor, rebuild, forget."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from cwcore.api import Archive
from cwcore.index import derived
from cwcore.semantic import index as handler
from cwcore.semantic import store as vstore
from cwcore.semantic.search import SemanticIndex, calibrate
from tests.semantic.conftest import FakeEmbedder, engine_of


def _embed_all(engine, embedder, mode: str = "window") -> int:
    total = 0
    while n := handler.embed_pending(engine.store, engine.reader, 2, embedder=embedder, mode=mode):
        total += n
    return total


def test_embeds_published_windows_in_wid_order(topics: Archive, fake_embedder) -> None:
    engine = engine_of(topics)
    max_wid = int(derived.generation(engine.store)["maxWid"])
    assert max_wid == 6
    assert handler.embed_pending(engine.store, engine.reader, 4, embedder=fake_embedder) == 4
    assert vstore.state(engine.store)["cursor"] == 4
    assert _embed_all(engine, fake_embedder) == 2
    status = handler.status(engine.store)
    assert (status.embedded, status.pending, status.cursor, status.mode) == (6, 0, 6, "window")
    assert [item.wid for item in vstore.scan(engine.store)] == list(range(1, 7))


def test_resumes_after_a_crash(topics: Archive, fake_embedder, cw_home) -> None:
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 2, embedder=fake_embedder)
    fake_embedder.fail = True
    with pytest.raises(RuntimeError):
        handler.embed_pending(engine.store, engine.reader, 2, embedder=fake_embedder)
    assert vstore.state(engine.store)["cursor"] == 2  # nothing of the failed batch committed
    topics.close()  # the process "dies" here; the store reopens from disk
    with Archive.open(cw_home, embedded=True) as again:
        engine = engine_of(again)
        assert vstore.state(engine.store)["cursor"] == 2
        fresh = FakeEmbedder()
        assert _embed_all(engine, fresh) == 4
        assert fresh.computed == 4  # the two committed windows were not embedded again
        assert handler.status(engine.store).embedded == 6


def test_identical_window_texts_share_one_content_entry(archive: Archive, tmp_path, fake_embedder):
    from tests.helpers import write_jsonl

    rows = [
        {"session": s, "id": "u0", "role": "user", "text": "the very same question text"}
        for s in ("s1", "s2", "s3")
    ]
    archive.import_paths([write_jsonl(tmp_path / "same.jsonl", rows)], fmt="cw-jsonl")
    engine = engine_of(archive)
    _embed_all(engine, fake_embedder)
    assert fake_embedder.computed == 1
    contents = list(engine.store.scan(vstore.FAMILY, vstore.CONTENT.prefix()))
    assert len(contents) == 1


def test_message_mode_one_row_per_message(topics: Archive, fake_embedder) -> None:
    engine = engine_of(topics)
    _embed_all(engine, fake_embedder, mode="message")
    rows = [len(item.digests) for item in vstore.scan(engine.store)]
    assert rows == [2] * 6
    # Switching mode clears and starts over.
    _embed_all(engine, fake_embedder, mode="window")
    assert [len(item.digests) for item in vstore.scan(engine.store)] == [1] * 6


def test_search_restricts_and_refreshes(topics: Archive, fake_embedder) -> None:
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 3, embedder=fake_embedder)
    index = SemanticIndex(engine.store)
    index.refresh()
    assert index.rows == 3
    _embed_all(engine, fake_embedder)
    assert index.refresh() == 3 and index.rows == 6
    target = vstore.get(engine.store, 5)
    assert target is not None
    wids, cos = index.search(target.rows[0].astype(np.float32), 3)
    assert int(wids[0]) == 5 and cos[0] > 0.99
    wids, _ = index.search(target.rows[0].astype(np.float32), 3, only_wids=np.array([1, 2]))
    assert sorted(int(w) for w in wids) == [1, 2]
    wids, _ = index.search(target.rows[0].astype(np.float32), 6, dead=np.array([5]))
    assert 5 not in set(int(w) for w in wids)
    f16 = SemanticIndex(engine.store, dtype=np.float16)
    assert int(f16.search(target.rows[0].astype(np.float32), 1)[0][0]) == 5
    assert f16.nbytes() < index.nbytes()


def test_forgotten_windows_are_masked_and_dropped(topics: Archive, fake_embedder) -> None:
    engine = engine_of(topics)
    _embed_all(engine, fake_embedder)
    index = SemanticIndex(engine.store)
    index.refresh()
    forgotten = {
        w for w in range(1, 7) if derived.window_record(engine.store, w)["session"] == "s-ui"
    }
    topics.forget("s-ui")
    engine.indexer.drain()
    wids, _ = index.search(np.ones(vstore.DIM, np.float32) / vstore.DIM**0.5, 6)
    assert not forgotten & {int(w) for w in wids}
    report = vstore.validate(engine.store)
    assert report["dropped"] == len(forgotten)
    assert all(vstore.get(engine.store, w) is None for w in forgotten)


def test_appended_rows_check_only_their_own_tombstones(
    topics: Archive, fake_embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search after each embedding batch reads the tombstones of the batch's rows, not of
    every loaded row; a new generation (a retirement) still rechecks them all."""
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 3, embedder=fake_embedder)
    index = SemanticIndex(engine.store)
    index.refresh()
    read: list[int] = []
    get_many = engine.store.get_many

    def counting(family: str, keys: list[bytes]) -> list[bytes | None]:
        if family == "ordinals":
            read.append(len(keys))
        return get_many(family, keys)

    monkeypatch.setattr(engine.store, "get_many", counting)
    index.refresh()
    assert read == []  # nothing new, same generation: no tombstone read
    _embed_all(engine, fake_embedder)
    read.clear()  # the handler's own reads
    index.refresh()
    loaded = {item.wid: item.ordinal for item in vstore.scan(engine.store)}
    assert read == [len({o for w, o in loaded.items() if w > 3})]
    forgotten = {
        w for w in range(1, 7) if derived.window_record(engine.store, w)["session"] == "s-ui"
    }
    topics.forget("s-ui")
    engine.indexer.drain()
    read.clear()
    wids, _ = index.search(np.ones(vstore.DIM, np.float32) / vstore.DIM**0.5, 6)
    assert len(set(loaded.values())) in read  # the full recheck of every loaded row
    assert not forgotten & {int(w) for w in wids}


def test_rebuild_renumbering_is_detected(topics: Archive, fake_embedder) -> None:
    engine = engine_of(topics)
    _embed_all(engine, fake_embedder)
    before = {item.wid: item.ordinal for item in vstore.scan(engine.store)}
    topics.forget("s-db")  # rebuild now packs the remaining windows into lower wids
    topics.index_rebuild(wait=True)
    _embed_all(engine, fake_embedder)
    after = {item.wid: item for item in vstore.scan(engine.store)}
    for wid, item in after.items():
        record = derived.window_record(engine.store, wid)
        assert vstore.matches(item, record), (wid, before.get(wid))
    assert handler.status(engine.store).pending == 0


def test_calibration_is_monotone_in_unit_interval() -> None:
    cos = np.linspace(-1, 1, 101)
    scores = calibrate(cos)
    assert np.all(np.diff(scores) > 0) and scores.min() > 0 and scores.max() < 1


def test_the_evaluation_embeds_everything_and_logs_its_progress(
    topics: Archive, fake_embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``make eval``'s embedding loop reads the handler's typed progress (it indexed the JSON
    body once and failed at its first progress line, 30 s into a cold embedding)."""
    from cwcore.semantic import embedder as embedder_module
    from eval import common

    monkeypatch.setattr(
        embedder_module.Embedder, "for_home", classmethod(lambda cls, *_a, **_k: fake_embedder)
    )
    ticks = itertools.count(0.0, 31.0)  # every reading 31 s after the last: each batch logs
    monkeypatch.setattr(common.time, "perf_counter", lambda: next(ticks))
    lines: list[str] = []
    monkeypatch.setattr(common, "log", lines.append)
    done = common.embed_all(engine_of(topics), None)
    assert done["windows"] > 0 and done["mode"] == "window"
    assert lines and all(line.startswith("embedding (window): ") for line in lines)

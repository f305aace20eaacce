"""The semantic index handler and its store: wid order, resumable cursor, rebuild, forget."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.index import derived
from cwcore.semantic import index as handler
from cwcore.semantic import store as vstore
from cwcore.semantic.search import SemanticIndex, calibrate
from tests.semantic.conftest import FakeEmbedder
from tests.support import engine_of


def _embed_all(engine, embedder, mode: str = "window") -> int:
    total = 0
    while n := handler.embed_pending(engine.store, engine.reader, 2, embedder=embedder, mode=mode):
        total += n
    return total


def test_embeds_published_windows_newest_first(topics: Archive, fake_embedder, tmp_path) -> None:
    """Recent history gains semantic search first: the newest windows are embedded first, and
    windows published later go before the older backlog."""
    from tests.helpers import write_jsonl

    engine = engine_of(topics)
    max_wid = int(derived.generation(engine.store)["maxWid"])
    assert max_wid == 6
    assert handler.embed_pending(engine.store, engine.reader, 4, embedder=fake_embedder) == 4
    assert vstore.done_ranges(vstore.state(engine.store)) == [(3, 6)]
    assert [item.wid for item in vstore.scan(engine.store)] == [3, 4, 5, 6]
    rows = [{"session": "s-new", "id": "u0", "role": "user", "text": "a brand new question"}]
    topics.import_paths([write_jsonl(tmp_path / "new.jsonl", rows)], fmt="cw-jsonl")
    assert int(derived.generation(engine.store)["maxWid"]) == 7
    assert handler.embed_pending(engine.store, engine.reader, 1, embedder=fake_embedder) == 1
    assert vstore.get(engine.store, 7) is not None  # the new window before the old backlog
    assert vstore.get(engine.store, 2) is None
    assert _embed_all(engine, fake_embedder) == 2
    status = handler.status(engine.store)
    assert (status.embedded, status.pending, status.cursor, status.mode) == (7, 0, 7, "window")
    assert [item.wid for item in vstore.scan(engine.store)] == list(range(1, 8))
    assert vstore.done_ranges(vstore.state(engine.store)) == [(1, 7)]


def test_resumes_after_a_crash(topics: Archive, fake_embedder, cw_home) -> None:
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 2, embedder=fake_embedder)
    fake_embedder.fail = True
    with pytest.raises(RuntimeError):
        handler.embed_pending(engine.store, engine.reader, 2, embedder=fake_embedder)
    # Nothing of the failed batch committed.
    assert vstore.done_ranges(vstore.state(engine.store)) == [(5, 6)]
    topics.close()  # the process "dies" here; the store reopens from disk
    with Archive.open(cw_home, embedded=True) as again:
        engine = engine_of(again)
        assert vstore.done_ranges(vstore.state(engine.store)) == [(5, 6)]
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
    again = SemanticIndex(engine.store)  # shares the file and its columns
    assert int(again.search(target.rows[0].astype(np.float32), 1)[0][0]) == 5
    assert again.rows == 6 and again.file_bytes() == 6 * 400  # one 400-byte record a row


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


def test_rebuild_keeps_the_vectors_of_unchanged_text(topics: Archive, fake_embedder) -> None:
    """``cw index rebuild`` renumbers windows; the vectors of texts that did not change are
    found again by their text's digest (nothing re-embedded), and the content of texts no
    window holds any more (a forgotten session's) is dropped: the table stays bounded."""
    engine = engine_of(topics)
    _embed_all(engine, fake_embedder)
    computed = fake_embedder.computed
    assert computed == 6
    forgotten_texts = {
        fake_embedder.digest(t)
        for w in range(1, 7)
        if derived.window_record(engine.store, w)["session"] == "s-db"
        for t in handler.window_texts(
            engine.reader, derived.window_record(engine.store, w), "window"
        )
    }
    topics.forget("s-db")  # the rebuild packs the remaining windows into other wids
    topics.index_rebuild(wait=True)
    assert handler.status(engine.store).state == "revalidating"
    _embed_all(engine, fake_embedder)
    assert fake_embedder.computed == computed  # every kept window reused its vector
    status = handler.status(engine.store)
    assert (status.state, status.pending, status.embedded) == ("complete", 0, 4)
    after = list(vstore.scan(engine.store))
    assert [item.wid for item in after] == [1, 2, 3, 4]
    for item in after:
        assert vstore.matches(item, derived.window_record(engine.store, item.wid))
        text = handler.window_texts(
            engine.reader, derived.window_record(engine.store, item.wid), "window"
        )[0]
        assert np.allclose(item.rows[0].astype(np.float32), fake_embedder.vector(text), atol=1e-3)
    contents = {
        bytes(vstore.CONTENT.decode(k)[0])
        for k, _ in engine.store.scan(vstore.FAMILY, vstore.CONTENT.prefix())
    }
    assert contents == {d for item in after for d in item.digests}
    assert not contents & forgotten_texts
    assert not vstore.state(engine.store).get("sweep")


def test_rebuild_without_changes_reembeds_nothing(topics: Archive, fake_embedder) -> None:
    engine = engine_of(topics)
    _embed_all(engine, fake_embedder)
    topics.index_rebuild(wait=True)
    _embed_all(engine, fake_embedder)
    assert fake_embedder.computed == 6
    assert handler.status(engine.store).state == "complete"


def test_another_model_embeds_every_window_again_and_keeps_no_old_row(
    topics: Archive, fake_embedder
) -> None:
    """Switching the model (``cw models install --int8`` and back) changes its identity: the
    next step drops the old vectors and content entries, so no query of the new model is ever
    scored against a vector of the old one, and every window is embedded afresh."""
    engine = engine_of(topics)
    _embed_all(engine, fake_embedder)
    old = {item.wid: item.rows.astype(np.float32) for item in vstore.scan(engine.store)}
    other = FakeEmbedder()
    other.model_id = "fake:2"
    other.vector = lambda text: -fake_embedder.vector(text)  # type: ignore[method-assign]
    assert handler.embed_pending(engine.store, engine.reader, 2, embedder=other) == 2
    assert vstore.state(engine.store)["model"] == "fake:2"
    assert [item.wid for item in vstore.scan(engine.store)] == [5, 6]  # the old rows are gone
    assert _embed_all(engine, other) == 4 and other.computed == 6
    for item in vstore.scan(engine.store):
        assert np.allclose(item.rows.astype(np.float32), -old[item.wid], atol=1e-2)
    assert handler.status(engine.store).state == "complete"


def test_a_store_of_an_older_cw_keeps_its_vectors(topics: Archive, fake_embedder) -> None:
    """An older cw recorded one ascending cursor (no ranges, no epoch): its vectors are kept,
    the windows after its cursor are embedded (newest first), and search loads every row."""
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 6, embedder=fake_embedder)
    # Rewrite the state as the older cw left it after embedding wids 1..3 only.
    state = vstore.state(engine.store)
    old = {k: state[k] for k in ("model", "mode")} | {"cursor": 3, "windows": 3, "rows": 3}
    batch = engine.store.batch()
    for wid in (4, 5, 6):
        batch.delete(vstore.FAMILY, vstore.VECTOR.encode(wid))
    vstore.put_state(batch, old)
    engine.store.commit(batch)
    status = handler.status(engine.store)
    assert (status.state, status.embedded, status.pending) == ("embedding", 3, 3)
    index = SemanticIndex(engine.store)
    assert index.refresh() == 3
    fresh = FakeEmbedder()
    assert _embed_all(engine, fresh) == 3
    assert fresh.computed == 0  # wids 4..6 found their texts' vectors in the content table
    assert index.refresh() == 3 and index.rows == 6
    assert handler.status(engine.store).state == "complete"


def test_status_reports_rate_and_time_left(topics: Archive, fake_embedder) -> None:
    engine = engine_of(topics)
    assert handler.status(engine.store).eta_s is None  # no pace known yet
    handler.embed_pending(engine.store, engine.reader, 2, embedder=fake_embedder)
    status = handler.status(engine.store)
    assert status.rate is not None and status.rate > 0
    assert status.eta_s is not None and status.eta_s == round(4 / status.rate, 1)
    assert status.to_json()["eta_s"] == status.eta_s
    _embed_all(engine, fake_embedder)
    assert handler.status(engine.store).eta_s is None  # nothing pending


@given(steps=st.lists(st.tuples(st.integers(0, 40), st.integers(1, 9)), min_size=1, max_size=60))
def test_passed_ranges_cover_every_window_once_newest_first(steps) -> None:
    """Windows published in any pattern between steps of any size: each step takes the
    newest window not passed yet (unless the range list is at its cap), no window is passed
    twice, the ranges stay few, and draining covers everything."""
    ranges: vstore.Ranges = []
    top = 0
    seen: set[int] = set()

    def step(n: int) -> bool:
        nonlocal ranges
        chunk = vstore.next_chunk(ranges, top, n)
        if chunk is None:
            assert vstore.passed(ranges, top) == top
            return False
        lo, hi = chunk
        assert 1 <= lo <= hi <= top and hi - lo + 1 <= n
        wids = set(range(lo, hi + 1))
        assert not wids & seen
        newest = max(set(range(1, top + 1)) - seen)
        assert hi == newest or len(ranges) >= vstore.MAX_RANGES
        seen.update(wids)
        ranges = vstore.add_range(ranges, lo, hi)
        assert len(ranges) <= vstore.MAX_RANGES + 1
        return True

    for published, n in steps:
        top += published
        step(n)
    while step(7):
        pass
    assert seen == set(range(1, top + 1))
    assert ranges == ([(1, top)] if top else [])

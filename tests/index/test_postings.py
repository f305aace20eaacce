"""The persisted posting layout: encodings, segments, statistics, merges, crash recovery."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.index import bm25, derived, postings
from cwcore.index.postings import (
    BLOCK,
    DOC,
    TERM,
    Manifest,
    ManifestChanged,
    PostingIndex,
    Postings,
    block_key,
    decode_block,
    decode_entry,
    doc_key,
    encode_block,
    encode_entry,
    term_digest,
    term_key,
    value_codec,
)
from cwcore.store import keys
from cwcore.store.keys import prefix_end
from cwcore.store.rocks import Store
from tests.helpers import examples


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "db") as db:
        yield db


def _index(store: Store, docs: dict[int, list[str]], max_docs: int = 1000) -> PostingIndex:
    index = PostingIndex(store)
    writer = index.writer(max_docs=max_docs)
    for ordinal, words in docs.items():
        writer.add(ordinal, Counter(words), len(words))
    writer.flush()
    return index


def _keys(store: Store, prefix: bytes) -> list[bytes]:
    return [k for k, _ in store.scan("postings", prefix)]


# --- encodings -----------------------------------------------------------------------------------


def test_fast_keys_match_the_key_layouts() -> None:
    digest = term_digest("parse")
    assert term_key(3, 7, digest) == TERM.encode(3, 7, digest)
    assert block_key(3, 7, digest, 2) == BLOCK.encode(3, 7, digest, 2)
    assert doc_key(3, 99) == DOC.encode(3, 99)
    assert all(0x90 <= layout.tag <= 0x9F for layout in (TERM, BLOCK, DOC, postings.MANIFEST))
    values = [0, 1, 255, 65_536, 2**32 - 1]
    for layout in (keys.WINDOW, keys.TOMBSTONE, keys.RECALL_FEEDBACK):
        assert derived.u32_keys(layout, values) == [layout.encode(v) for v in values]
    with pytest.raises(ValueError):
        derived.u32_keys(keys.SESSION_WIDS, [1])


def test_value_codec_picks_the_narrowest_exact_encoding() -> None:
    assert value_codec(np.array([1.0, 3.0, 255.0])) == 0x00  # uint8, scale 1
    assert value_codec(np.array([1.0, 300.0])) == 0x10  # uint16
    assert value_codec(np.array([0.5, 2.25])) == 0x02  # uint8, scale 4
    assert value_codec(np.array([70000.0])) == 0x20  # uint32
    assert value_codec(np.array([0.1])) == 0x40  # float64: 0.1 is not a float32
    assert value_codec(np.array([np.float32(0.1)], dtype=np.float64)) == 0x30


_ordinals = st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=300, unique=True).map(sorted)
_values = st.one_of(
    st.integers(1, 40).map(float),
    st.integers(1, 4000).map(lambda v: v / 8),
    st.floats(0.001, 1e6, allow_nan=False),
)


@settings(max_examples=examples(150), deadline=None)
@given(st.data())
def test_block_round_trip_is_exact(data: st.DataObject) -> None:
    ords = data.draw(_ordinals)
    if data.draw(st.booleans()):  # dense ordinals exercise the delta codecs
        start = data.draw(st.integers(0, 2**31))
        ords = sorted({start + v for v in data.draw(st.lists(st.integers(0, 5000), min_size=1))})
    n = len(ords)
    tf = np.array(data.draw(st.lists(_values, min_size=n, max_size=n)))
    dl = np.array(data.draw(st.lists(_values, min_size=n, max_size=n)))
    got = decode_block(encode_block(np.array(ords, dtype=np.uint32), tf, dl))
    assert got.ordinals.dtype == np.uint32 and got.ordinals.tolist() == ords
    assert np.array_equal(got.tf, tf) and np.array_equal(got.dl, dl)


def test_entries_round_trip_inline_and_with_a_directory() -> None:
    p = Postings(np.array([3, 9], np.uint32), np.array([1.0, 2.0]), np.array([5.0, 6.0]))
    entry = decode_entry(4, encode_entry((2, 2.0, 5.0), encode_block(*p), ()))
    assert entry.inline and (entry.df, entry.max_tf, entry.min_dl) == (2, 2.0, 5.0)
    assert entry.inline_postings().ordinals.tolist() == [3, 9]
    q = Postings(np.array([20, 30, 40], np.uint32), np.ones(3), np.ones(3))
    entry = decode_entry(4, encode_entry((5, 2.0, 1.0), None, [p, q]))
    assert not entry.inline
    assert entry.firsts.tolist() == [3, 20] and entry.lasts.tolist() == [9, 40]
    assert entry.counts.tolist() == [2, 3]


def test_small_unweighted_postings_cost_a_few_bytes() -> None:
    n = 5000
    ords = np.arange(0, 3 * n, 3, dtype=np.uint32)
    value = encode_block(ords, np.ones(n), np.full(n, 40.0))
    assert len(value) < 3.1 * n  # delta uint8 + tf uint8 + dl uint8


# --- writer, reader, statistics --------------------------------------------------------------


def test_flush_writes_one_segment_with_exact_statistics(store: Store) -> None:
    index = _index(store, {5: ["a", "b", "a"], 2: ["b"], 9: []})
    manifest = index.manifest()
    assert [s.docs for s in manifest.segments] == [3]
    assert manifest.live_docs == 3 and manifest.live_length == 4.0 and manifest.max_ordinal == 9
    got = index.reader().postings(["a", "b", "zzz"])
    assert got["a"].ordinals.tolist() == [5] and got["a"].tf.tolist() == [2.0]
    assert got["b"].ordinals.tolist() == [2, 5] and got["b"].dl.tolist() == [1.0, 3.0]
    assert len(got["zzz"].ordinals) == 0


def test_writer_flushes_in_bounded_batches_and_postings_span_segments(store: Store) -> None:
    docs = {o: ["common", f"rare{o}"] for o in range(25)}
    index = _index(store, docs, max_docs=10)
    assert [s.docs for s in index.manifest().segments] == [10, 10, 5]
    common = index.reader().postings(["common"])["common"]
    assert common.ordinals.tolist() == list(range(25))


def test_replayed_ordinals_are_skipped(store: Store) -> None:
    index = _index(store, {1: ["x"], 2: ["y"]})
    writer = index.writer()
    writer.add(2, {"y": 1}, 1)
    writer.add(3, {"x": 1}, 1)
    result = writer.flush()
    assert result is not None and result.skipped == 1 and result.docs == 1
    assert index.manifest().live_docs == 3
    assert index.reader().postings(["y"])["y"].ordinals.tolist() == [2]


def test_writer_rejects_bad_documents(store: Store) -> None:
    writer = PostingIndex(store).writer()
    writer.add(1, {"a": 1}, 1)
    with pytest.raises(ValueError):
        writer.add(1, {"a": 1}, 1)
    with pytest.raises(ValueError):
        writer.add(2, {"a": 0}, 1)
    with pytest.raises(ValueError):
        writer.add(3, {"a": float("nan")}, 1)
    with pytest.raises(ValueError):
        writer.add(4, {"a": 1}, 0)
    with pytest.raises(ValueError):
        writer.add(2**32, {"a": 1}, 1)


def test_long_lists_split_into_blocks_and_fetch_reads_only_what_is_asked(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postings, "BLOCK_POSTINGS", 10)
    monkeypatch.setattr(postings, "INLINE_POSTINGS", 4)
    index = _index(store, {o: ["t"] for o in range(0, 100, 2)})  # 50 postings: 5 blocks
    reader = index.reader()
    snap = reader.snapshot()
    (plan,) = reader.plan(snap, ["t"])
    (entry,) = plan.entries
    assert not entry.inline and entry.counts.tolist() == [10] * 5
    assert reader.fetch(plan).ordinals.tolist() == list(range(0, 100, 2))
    near = reader.fetch(plan, near=np.array([4, 41, 99], np.uint32)).ordinals.tolist()
    assert near == list(range(0, 20, 2)) + list(range(40, 60, 2))  # blocks 0 and 2; 99 is past
    newest = reader.fetch(plan, newest=15).ordinals.tolist()
    assert newest == list(range(60, 100, 2))  # the two newest blocks cover 15


def test_lookup_reads_covering_blocks_and_counts_retired_postings(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postings, "BLOCK_POSTINGS", 10)
    monkeypatch.setattr(postings, "INLINE_POSTINGS", 4)
    index = PostingIndex(store)
    writer = index.writer()
    for ordinal in range(0, 100, 2):
        writer.add(ordinal, {"t": ordinal + 1}, 2 * ordinal + 1)
    writer.flush()
    index.retire([10, 62])
    reader = index.reader()
    snap = reader.snapshot()
    (plan,) = reader.plan(snap, ["t"])
    asked = np.array([3, 4, 62, 98, 200], dtype=np.uint32)
    where, tf, dl, retired_seen = reader.lookup(plan, asked, snap.retired)
    assert sorted(where.tolist()) == [1, 2, 3]
    assert dict(zip(where.tolist(), tf.tolist(), strict=True)) == {1: 5.0, 2: 63.0, 3: 99.0}
    assert dict(zip(where.tolist(), dl.tolist(), strict=True)) == {1: 9.0, 2: 125.0, 3: 197.0}
    assert retired_seen == 2


def test_a_memo_reader_answers_as_a_plain_one_and_rereads_after_a_flush(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postings, "BLOCK_POSTINGS", 10)
    monkeypatch.setattr(postings, "INLINE_POSTINGS", 4)
    index = _index(store, {o: ["t"] + (["u"] if o % 3 else []) for o in range(0, 100, 2)})
    memo = index.reader(memo=True)
    reads: list[int] = []
    get_many = store.get_many
    monkeypatch.setattr(
        store, "get_many", lambda cf, keys: reads.append(len(keys)) or get_many(cf, keys)
    )

    def answer(reader: postings.PostingReader) -> list[tuple[list[int], list[float]]]:
        out = []
        for terms, only in ((["t", "u"], None), (["u", "t"], np.array([4, 8, 40], np.uint32))):
            hits = bm25.search(reader, terms, k=7, only=only)
            out.append((hits.ordinals.tolist(), hits.scores.tolist()))
        return out

    first = answer(memo)
    reads.clear()
    assert answer(memo) == first
    # The second round through the memo read only the manifest and the retired list (one
    # two-key read per query): no term entry, no block.
    assert reads == [2, 2]
    assert answer(index.reader()) == first
    writer = index.writer()
    writer.add(200, Counter(["t", "t"]), 2)
    writer.flush()  # a new segment: the memo must not answer from the old manifest
    again = answer(memo)
    assert again == answer(index.reader()) and again != first


def test_statistics_survive_reopening(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as db:
        _index(db, {1: ["a", "b"], 2: ["b"]})
    with Store(tmp_path / "db") as db:
        index = PostingIndex(db)
        assert index.manifest().live_docs == 2
        assert index.reader().postings(["b"])["b"].ordinals.tolist() == [1, 2]


# --- retirement and merges -------------------------------------------------------------------


def test_retire_updates_statistics_once_and_hides_postings(store: Store) -> None:
    index = _index(store, {1: ["a", "b"], 2: ["a"], 3: []})
    assert index.retire([2, 3, 77]) == 2  # 77 was never indexed
    assert index.retire([2]) == 0
    manifest = index.manifest()
    assert manifest.live_docs == 1 and manifest.live_length == 2.0
    assert index.snapshot().retired.tolist() == [2]  # 3 had no postings to hide
    assert index.reader().postings(["a"])["a"].ordinals.tolist() == [1]
    assert index.reader().postings(["a"], hide_retired=False)["a"].ordinals.tolist() == [1, 2]


def test_merge_policy_merges_a_full_tier(store: Store) -> None:
    index = _index(store, {o: ["w", f"u{o}"] for o in range(8)}, max_docs=1)
    assert len(index.manifest().segments) == 8
    assert index.merge() is not None
    (merged,) = index.manifest().segments
    assert merged.docs == 8 and merged.tier == 1
    assert index.merge() is None


def _top(index: PostingIndex, terms: list[str]) -> list[tuple[int, float]]:
    hits = bm25.search(index.reader(), terms, k=20)
    return list(zip(hits.ordinals.tolist(), np.round(hits.scores, 9).tolist(), strict=True))


def test_idle_merge_rewrites_only_the_recent_segments_of_a_large_base(store: Store) -> None:
    docs = {o: ["w", f"u{o % 7}"] for o in range(100)}
    index = _index(store, {o: d for o, d in docs.items() if o < 90}, max_docs=90)
    writer = index.writer(max_docs=4)
    for o in range(90, 100):
        writer.add(o, Counter(docs[o]), len(docs[o]))
    writer.flush()
    before = index.manifest().segments
    assert len(before) == 4 and before[0].docs == 90
    expected = _top(index, ["w", "u3"])
    assert index.idle_merge() is not None
    base, recent = sorted(index.manifest().segments, key=lambda s: s.id)
    assert base.id == before[0].id and recent.docs == 10  # the base was not rewritten
    assert index.idle_merge() is None  # nothing left to do
    assert _top(index, ["w", "u3"]) == expected


def test_idle_merge_makes_one_segment_once_the_recent_ones_grew(store: Store) -> None:
    index = _index(store, {o: ["w", f"u{o % 5}"] for o in range(40)}, max_docs=10)
    assert len(index.manifest().segments) == 4
    expected = _top(index, ["u1", "w"])
    assert index.idle_merge() is not None
    (only,) = index.manifest().segments
    assert only.docs == 40
    assert index.idle_merge() is None
    assert _top(index, ["u1", "w"]) == expected


def test_a_merge_pauses_every_few_terms(store: Store) -> None:
    """The daemon's merge waits every PAUSE_TERMS terms while a request runs: ``pause`` is
    called that often and the merged index answers the same."""
    from cwcore.index.postings import merge

    index = _index(store, {o: ["w", f"u{o % 50}", f"v{o}"] for o in range(400)}, max_docs=100)
    expected = _top(index, ["u7", "w"])
    pauses: list[int] = []
    assert index.idle_merge(pause=lambda: pauses.append(1)) is not None
    assert len(index.manifest().segments) == 1
    terms = 1 + 50 + 400
    assert len(pauses) == terms // merge.PAUSE_TERMS
    assert _top(index, ["u7", "w"]) == expected


def test_merge_drops_retired_postings_and_deletes_old_keys(store: Store) -> None:
    index = _index(store, {o: ["w", f"u{o}"] for o in range(30)}, max_docs=7)
    old = [s.id for s in index.manifest().segments]
    index.retire([3, 10])
    (result,) = index.force_merge()
    assert result.dropped_docs == 2 and result.dropped_postings == 4
    assert index.snapshot().retired.tolist() == []
    assert index.reader().postings(["w"])["w"].ordinals.tolist() == [
        o for o in range(30) if o not in (3, 10)
    ]
    for segment in old:
        assert _keys(store, TERM.prefix(0, segment)) == []
    assert index.manifest().live_docs == 28


@pytest.mark.parametrize("retire", [False, True])
def test_merges_keep_weighted_values_exact(store: Store, retire: bool) -> None:
    index = PostingIndex(store)
    writer = index.writer(max_docs=3)
    expected: dict[str, dict[int, tuple[float, float]]] = {}
    values = [0.5, 2.25, 1 / 3, 7.0, 1e-3, 300.0, 70000.0]
    for ordinal in range(40):
        tfs = {f"t{ordinal % 5}": values[ordinal % 7], "all": values[(ordinal + 3) % 7]}
        dl = 0.75 * ordinal + 1 / 7
        writer.add(ordinal, tfs, dl)
        for term, tf in tfs.items():
            expected.setdefault(term, {})[ordinal] = (tf, dl)
    writer.flush()
    if retire:
        index.retire([4, 5, 6])
        for postings_of in expected.values():
            for ordinal in (4, 5, 6):
                postings_of.pop(ordinal, None)
    index.force_merge()
    got = index.reader().postings(list(expected))
    for term, postings_of in expected.items():
        assert got[term].ordinals.tolist() == sorted(postings_of)
        assert got[term].tf.tolist() == [postings_of[o][0] for o in sorted(postings_of)]
        assert got[term].dl.tolist() == [postings_of[o][1] for o in sorted(postings_of)]


def test_a_crashed_merge_leaves_the_old_segments_and_recover_cleans_up(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _index(store, {o: ["w", f"u{o}"] for o in range(20)}, max_docs=5)
    before = bm25.search(index.reader(), ["w", "u3"], k=5)
    monkeypatch.setattr(postings, "MERGE_BATCH_BYTES", 1)  # commit the new segment term by term

    def crash(self: PostingIndex, ordinals: np.ndarray) -> float:
        raise KeyboardInterrupt("simulated crash before the switch")

    monkeypatch.setattr(PostingIndex, "_doc_lengths", crash)
    with pytest.raises(KeyboardInterrupt):
        index.force_merge()
    monkeypatch.undo()
    manifest = index.manifest()
    assert len(manifest.segments) == 4 and manifest.merging == [5]
    assert _keys(store, TERM.prefix(0, 5))  # orphan keys of the unfinished segment
    after = bm25.search(index.reader(), ["w", "u3"], k=5)
    assert after.ordinals.tolist() == before.ordinals.tolist()
    assert np.array_equal(after.scores, before.scores)
    assert index.recover() == 1
    assert _keys(store, TERM.prefix(0, 5)) == [] and index.manifest().merging == []
    index.force_merge()
    assert (
        bm25.search(index.reader(), ["w", "u3"], k=5).ordinals.tolist() == before.ordinals.tolist()
    )


def test_a_merge_during_a_query_makes_the_reader_retry(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = _index(store, {o: ["w", f"u{o}"] for o in range(40)}, max_docs=10)
    expected = bm25.search(index.reader(), ["w", "u7"], k=3)
    reader = index.reader()
    snap = reader.snapshot()
    plans = reader.plan(snap, ["w"])
    index.force_merge()
    with pytest.raises(ManifestChanged):
        reader.fetch(plans[0])
        reader.check(snap)

    calls = {"n": 0}
    original = reader.plan

    def plan_then_merge(
        snapshot: postings.Snapshot, terms: Sequence[str]
    ) -> list[postings.TermPlan]:
        result = original(snapshot, terms)
        calls["n"] += 1
        if calls["n"] == 1:  # a flush lands between planning and fetching
            writer = index.writer()
            writer.add(1000, {"zzz": 1}, 1)
            writer.flush()
        return result

    monkeypatch.setattr(reader, "plan", plan_then_merge)
    got = bm25.search(reader, ["w", "u7"], k=3)
    assert calls["n"] == 2
    assert got.ordinals.tolist() == expected.ordinals.tolist()


def test_drop_removes_the_generation(store: Store) -> None:
    index = _index(store, {1: ["a"], 2: ["b"]})
    other = PostingIndex(store, generation=1)
    writer = other.writer()
    writer.add(1, {"a": 1}, 1)
    writer.flush()
    index.drop()
    assert index.manifest() == Manifest()
    start = bytes((TERM.tag, TERM.version))
    end = prefix_end(start)
    assert end is not None
    assert [TERM.decode(k)[0] for k in _keys(store, start)] == [1]
    assert other.reader().postings(["a"])["a"].ordinals.tolist() == [1]

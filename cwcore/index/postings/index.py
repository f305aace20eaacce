"""The entry point: :class:`PostingIndex`, the BM25 postings of one generation in a store."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

import numpy as np

from cwcore.index.postings import tuning
from cwcore.index.postings.codec import _U32, U32Array
from cwcore.index.postings.layout import (
    _DOC_REC,
    _DOC_V1,
    _LIVE,
    _RETIRED,
    BLOCK,
    DOC,
    MANIFEST,
    POSTINGS_CF,
    RETIRED,
    STATS_CF,
    TERM,
    Manifest,
    MergeResult,
    Segment,
    Snapshot,
    doc_key,
)
from cwcore.index.postings.merge import merge_segments
from cwcore.index.postings.reader import MemoReader, PostingReader
from cwcore.index.postings.writer import PostingWriter
from cwcore.store.keys import prefix_end
from cwcore.store.rocks import Batch, Store


class PostingIndex:
    """The BM25 postings of one index ``generation`` in ``store``.

    A full rebuild writes generation n+1 beside n and :meth:`drop` removes n once n+1 is
    published; the per-publish generation of the worker is a separate counter.
    """

    def __init__(self, store: Store, generation: int = 0) -> None:
        self.store = store
        self.generation = generation
        self._manifest_key = MANIFEST.encode(generation)
        self._retired_key = RETIRED.encode(generation)
        self._merge_lock = threading.Lock()
        self._cache: tuple[bytes | None, Manifest] = (b"", Manifest())

    # -- state --------------------------------------------------------------------------------

    def manifest(self) -> Manifest:
        """The current manifest (decoded once per distinct value)."""
        return self._decode_manifest(self.store.get(STATS_CF, self._manifest_key))

    def _decode_manifest(self, raw: bytes | None) -> Manifest:
        cached_raw, cached = self._cache
        if raw is not None and raw == cached_raw:
            return cached
        manifest = Manifest.decode(raw)
        self._cache = (raw, manifest)
        return manifest

    def snapshot(self) -> Snapshot:
        raw, retired = self.store.get_many(STATS_CF, [self._manifest_key, self._retired_key])
        ordinals = np.frombuffer(retired, dtype=_U32) if retired else np.empty(0, dtype=np.uint32)
        return Snapshot(self._decode_manifest(raw), ordinals, raw)

    def manifest_raw(self) -> bytes | None:
        return self.store.get(STATS_CF, self._manifest_key)

    def _put_manifest(self, batch: Batch, manifest: Manifest) -> None:
        batch.put(STATS_CF, self._manifest_key, manifest.encode())

    def _put_retired(self, batch: Batch, retired: U32Array) -> None:
        if len(retired):
            batch.put(STATS_CF, self._retired_key, retired.astype(_U32).tobytes())
        else:
            batch.delete(STATS_CF, self._retired_key)

    def _segment_ranges(self, segment: int) -> list[tuple[bytes, bytes]]:
        ranges = []
        for layout in (TERM, BLOCK):
            start = layout.prefix(self.generation, segment)
            end = prefix_end(start)
            assert end is not None
            ranges.append((start, end))
        return ranges

    def _delete_segment(self, batch: Batch, segment: int) -> None:
        """Range-delete every key of ``segment`` (RocksDB range tombstones: O(1) per range)."""
        for start, end in self._segment_ranges(segment):
            batch.delete_range(POSTINGS_CF, start, end)

    # -- writing ------------------------------------------------------------------------------

    def writer(
        self, *, max_docs: int = tuning.FLUSH_DOCS, max_postings: int = tuning.FLUSH_POSTINGS
    ) -> PostingWriter:
        return PostingWriter(self, max_docs=max_docs, max_postings=max_postings)

    def reader(self, *, memo: bool = False) -> PostingReader:
        """A reader; ``memo``: one that keeps what it read for the next query of the same
        search (:class:`~cwcore.index.postings.reader.MemoReader`)."""
        return MemoReader(self) if memo else PostingReader(self)

    def retire(self, ordinals: Iterable[int]) -> int:
        """Retire indexed, live ``ordinals``: subtract them from N and the total length, and hide
        their postings until a merge drops them. Idempotent; returns how many changed state."""
        wanted = sorted({int(o) for o in ordinals})
        if not wanted:
            return 0
        keys = [doc_key(self.generation, o) for o in wanted]
        with self.store.lock:
            snap = self.snapshot()
            manifest = Manifest.decode(snap.raw)
            batch = self.store.batch()
            changed, length, with_postings = 0, 0.0, []
            for ordinal, key, raw in zip(
                wanted, keys, self.store.get_many(STATS_CF, keys), strict=True
            ):
                if raw is None:
                    continue
                _, state, dl, nterms = _DOC_REC.unpack(raw)
                if state != _LIVE:
                    continue
                batch.put(STATS_CF, key, _DOC_REC.pack(_DOC_V1, _RETIRED, dl, nterms))
                changed += 1
                length += dl
                if nterms:
                    with_postings.append(ordinal)
            if not changed:
                return 0
            manifest.live_docs -= changed
            manifest.live_length = (
                max(0.0, manifest.live_length - length) if manifest.live_docs else 0.0
            )
            self._put_manifest(batch, manifest)
            if with_postings:
                self._put_retired(
                    batch, np.union1d(snap.retired, np.array(with_postings, dtype=np.uint32))
                )
            self.store.commit(batch)
        return changed

    def recover(self) -> int:
        """Delete the keys of merges a crash interrupted (segments listed as ``merging``).

        Call once at start-up, before writing; returns the number of segments cleaned.
        """
        with self._merge_lock, self.store.lock:
            manifest = Manifest.decode(self.manifest_raw())
            if not manifest.merging:
                return 0
            batch = self.store.batch()
            for segment in manifest.merging:
                self._delete_segment(batch, segment)
            cleaned = len(manifest.merging)
            manifest.merging = []
            self._put_manifest(batch, manifest)
            self.store.commit(batch)
            return cleaned

    # -- merging ------------------------------------------------------------------------------

    def pick_merge(self, manifest: Manifest | None = None) -> list[Segment]:
        """The oldest MERGE_FACTOR segments of the lowest tier holding that many, or []."""
        manifest = manifest or self.manifest()
        tiers: dict[int, list[Segment]] = {}
        for segment in manifest.segments:
            tiers.setdefault(segment.tier, []).append(segment)
        factor = tuning.MERGE_FACTOR
        for tier in sorted(tiers):
            members = sorted(tiers[tier], key=lambda s: s.id)
            if len(members) >= factor:
                return members[:factor]
        return []

    def merge(self, pause: Callable[[], object] | None = None) -> MergeResult | None:
        """Run one tiered merge if the policy asks for one (the background worker's step);
        ``pause`` as in :func:`merge_segments`."""
        with self._merge_lock:
            inputs = self.pick_merge()
            return merge_segments(self, inputs, pause) if len(inputs) > 1 else None

    def idle_merge(self, pause: Callable[[], object] | None = None) -> MergeResult | None:
        """The quiet-time merge, for an index that has been idle a while: a query looks each
        term up once per segment, so fewer segments make every search cheaper.

        With more than one segment: when the oldest holds at least ``MERGE_FACTOR`` times the
        documents of all the others, only the others are merged (a cheap rewrite of the recent
        ones); otherwise everything becomes one segment. A full rewrite therefore comes once
        the archive has grown by about 1/``MERGE_FACTOR`` since the last one. ``pause`` as in
        :func:`merge_segments`. None when there is nothing to do (or another merge took the
        inputs)."""
        with self._merge_lock:
            segments = sorted(self.manifest().segments, key=lambda s: s.id)
            if len(segments) < 2:
                return None
            oldest, rest = segments[0], segments[1:]
            if oldest.docs >= tuning.MERGE_FACTOR * sum(s.docs for s in rest):
                return merge_segments(self, rest, pause) if len(rest) > 1 else None
            return merge_segments(self, segments, pause)

    def force_merge(self, max_segments: int = 1) -> list[MergeResult]:
        """Merge until at most ``max_segments`` remain (rebuilds and benchmarks)."""
        results: list[MergeResult] = []
        with self._merge_lock:
            while True:
                segments = sorted(self.manifest().segments, key=lambda s: s.id)
                if len(segments) <= max_segments:
                    return results
                take = len(segments) - max_segments + 1
                result = merge_segments(self, segments[:take])
                if result is not None:
                    results.append(result)

    def _doc_lengths(self, ordinals: U32Array) -> float:
        """The summed weighted length of ``ordinals`` (a merge's retired documents)."""
        if not len(ordinals):
            return 0.0
        keys = [doc_key(self.generation, o) for o in ordinals.tolist()]
        total = 0.0
        for raw in self.store.get_many(STATS_CF, keys):
            if raw is not None:
                total += _DOC_REC.unpack(raw)[2]
        return total

    def drop(self) -> None:
        """Delete every key of this generation (after a newer generation is published)."""
        with self.store.lock:
            batch = self.store.batch()
            for layout, family in ((TERM, POSTINGS_CF), (BLOCK, POSTINGS_CF), (DOC, STATS_CF)):
                start = layout.prefix(self.generation)
                end = prefix_end(start)
                assert end is not None
                batch.delete_range(family, start, end)
            batch.delete(STATS_CF, self._manifest_key)
            batch.delete(STATS_CF, self._retired_key)
            self.store.commit(batch)
            self._cache = (b"", Manifest())

"""Tiered merges: several segments become one, dropping the postings of retired ordinals.

Crash safety: the new segment's id is first reserved in the manifest's ``merging`` list; its keys
are written in batches no manifest lists; one last WriteBatch switches the manifest and
range-deletes the inputs. :meth:`PostingIndex.recover` cleans up after a crash in between.
Short lists are merged without numpy: a term present in one input is copied verbatim, inline
entries with the same codecs are spliced byte-wise, others go through the ``array`` module.
"""

from __future__ import annotations

import heapq
import itertools
import struct
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from cwcore.errors import CorruptRecord
from cwcore.index.postings import tuning
from cwcore.index.postings.codec import (
    _BLOCK_HEAD,
    _BLOCK_V1,
    _ENTRY_HEAD,
    _ENTRY_V1,
    _INLINE,
    _KIND_DTYPES,
    _ORD_RAW,
    Postings,
    TermEntry,
    U32Array,
    _inline_block,
    _inline_lists,
    _pad4,
    _padded,
    decode_block,
    decode_entry,
    encode_entry,
)
from cwcore.index.postings.layout import (
    _BE32,
    _BLOCK_HEAD_KEY,
    POSTINGS_CF,
    TERM,
    Manifest,
    MergeResult,
    Segment,
    block_key,
)
from cwcore.index.postings.writer import _write_term
from cwcore.store.rocks import Batch

if TYPE_CHECKING:
    from cwcore.index.postings.index import PostingIndex

_U32_LE = struct.Struct("<I")
#: Terms merged between two calls of a merge's ``pause`` (a few milliseconds of work).
PAUSE_TERMS = 64


def merge_segments(
    index: PostingIndex, inputs: list[Segment], pause: Callable[[], object] | None = None
) -> MergeResult | None:
    """Merge the segments ``inputs`` into a new one (the steps are in ``docs/postings.md``).

    ``pause`` is called every :data:`PAUSE_TERMS` terms and may block: a daemon's background
    merge waits there while a request runs, so a search that arrives mid-merge does not share
    the interpreter with it for more than a few milliseconds. None if one of the inputs is no
    longer live (another merge took it).
    """
    ids = tuple(s.id for s in inputs)
    with index.store.lock:
        snap = index.snapshot()
        manifest = Manifest.decode(snap.raw)
        live_ids = {s.id for s in manifest.segments}
        if not set(ids) <= live_ids:
            return None
        new_id = manifest.next_segment
        manifest.next_segment += 1
        manifest.merging = [*manifest.merging, new_id]
        batch = index.store.batch()
        index._put_manifest(batch, manifest)
        index.store.commit(batch)
    retired = snap.retired
    retired_set = set(retired.tolist())
    # Without retired ordinals inside the inputs, a term found in one input is copied as is.
    clean = not any(np.any((retired >= s.min_ordinal) & (retired <= s.max_ordinal)) for s in inputs)
    prefix = TERM.prefix(index.generation, new_id)
    block_prefix = _BLOCK_HEAD_KEY + prefix[2:]
    batch = index.store.batch()
    inline_max, batch_bytes = tuning.INLINE_POSTINGS, tuning.MERGE_BATCH_BYTES
    postings_out = 0
    dropped_postings = 0
    dropped: list[U32Array] = []
    for number, (digest, entries) in enumerate(_merged_entries(index, ids), start=1):
        if pause is not None and number % PAUSE_TERMS == 0:
            pause()
        total = sum(e.df for e in entries)
        if clean and len(entries) == 1:
            _copy_entry(index, batch, entries[0], prefix, block_prefix, digest)
            postings_out += total
        elif total <= inline_max and all(e.inline for e in entries):
            spliced = _splice_inline(entries) if clean else None
            if spliced is not None:
                batch.put(POSTINGS_CF, prefix + digest, spliced)
                postings_out += total
                continue
            value, gone = _merge_small(entries, retired_set)
            if gone:
                dropped.append(np.array(gone, dtype=np.uint32))
                dropped_postings += len(gone)
            if value is not None:
                batch.put(POSTINGS_CF, prefix + digest, value)
                postings_out += total - len(gone)
        else:
            merged = _concat([_entry_postings(index, entry, digest) for entry in entries])
            if len(retired):
                gone_mask = np.isin(merged.ordinals, retired)
                if gone_mask.any():
                    dropped.append(merged.ordinals[gone_mask])
                    dropped_postings += int(gone_mask.sum())
                    keep = ~gone_mask
                    merged = Postings(merged.ordinals[keep], merged.tf[keep], merged.dl[keep])
            if len(merged.ordinals):
                _write_term(batch, prefix, digest, merged)
                postings_out += len(merged.ordinals)
        if batch.bytes >= batch_bytes:
            index.store.commit(batch)
            batch = index.store.batch()
    index.store.commit(batch)
    gone_ordinals = np.unique(np.concatenate(dropped)) if dropped else np.empty(0, dtype=np.uint32)
    with index.store.lock:
        snap = index.snapshot()
        manifest = Manifest.decode(snap.raw)
        kept = [s for s in manifest.segments if s.id not in ids]
        docs = sum(s.docs for s in inputs) - len(gone_ordinals)
        gone_length = index._doc_lengths(gone_ordinals)
        merged_segment = Segment(
            new_id,
            docs,
            postings_out,
            max(0.0, sum(s.length for s in inputs) - gone_length),
            min(s.min_ordinal for s in inputs),
            max(s.max_ordinal for s in inputs),
        )
        batch = index.store.batch()
        manifest.segments = (
            sorted([*kept, merged_segment], key=lambda s: s.id)
            if docs > 0 or postings_out
            else kept
        )
        manifest.merging = [m for m in manifest.merging if m != new_id]
        for segment in ids:
            index._delete_segment(batch, segment)
        if len(gone_ordinals):
            index._put_retired(batch, np.setdiff1d(snap.retired, gone_ordinals, assume_unique=True))
        index._put_manifest(batch, manifest)
        index.store.commit(batch)
    return MergeResult(new_id, ids, docs, postings_out, dropped_postings, len(gone_ordinals))


def _copy_entry(
    index: PostingIndex,
    batch: Batch,
    entry: TermEntry,
    prefix: bytes,
    block_prefix: bytes,
    digest: bytes,
) -> None:
    """Copy a term's entry (and blocks) verbatim into the segment being built."""
    if not entry.inline:
        gen = index.generation
        keys = [block_key(gen, entry.segment, digest, n) for n in range(len(entry.counts))]
        for number, value in enumerate(index.store.get_many(POSTINGS_CF, keys)):
            if value is None:
                raise CorruptRecord(f"bm25: segment {entry.segment} lost a block")
            batch.put(POSTINGS_CF, block_prefix + digest + _BE32.pack(number), value)
    batch.put(POSTINGS_CF, prefix + digest, entry.raw)


def _merged_entries(
    index: PostingIndex, ids: tuple[int, ...]
) -> Iterator[tuple[bytes, list[TermEntry]]]:
    """Yield ``(digest, entries)`` over the union of the segments' terms, in digest order."""

    def scan(segment: int) -> Iterator[tuple[bytes, int, bytes]]:
        prefix = TERM.prefix(index.generation, segment)
        for key, value in index.store.scan(POSTINGS_CF, prefix):
            yield key[len(prefix) :], segment, value

    group: list[TermEntry] = []
    current: bytes | None = None
    for digest, segment, value in heapq.merge(*(scan(s) for s in ids)):
        if digest != current:
            if current is not None:
                yield current, group
            current, group = digest, []
        group.append(decode_entry(segment, value))
    if current is not None:
        yield current, group


def _entry_postings(index: PostingIndex, entry: TermEntry, digest: bytes) -> Postings:
    if entry.inline:
        return entry.inline_postings()
    gen = index.generation
    keys = [block_key(gen, entry.segment, digest, n) for n in range(len(entry.counts))]
    values = index.store.get_many(POSTINGS_CF, keys)
    if any(v is None for v in values):
        raise CorruptRecord(f"bm25: segment {entry.segment} lost a block")
    return _concat([decode_block(v) for v in values if v is not None])


def _splice_inline(entries: list[TermEntry]) -> bytes | None:
    """Concatenate inline entries without decoding them, when their columns share codecs and
    their ordinals do not interleave (the common case); None when that does not hold."""
    heads = [_BLOCK_HEAD.unpack_from(e.raw, _ENTRY_HEAD.size) for e in entries]
    _, ord_codec, tf_codec, dl_codec, _, _ = heads[0]
    if any(h[1:4] != (ord_codec, tf_codec, dl_codec) for h in heads) or ord_codec != _ORD_RAW:
        return None
    tf_size = _KIND_DTYPES[tf_codec >> 4].itemsize
    dl_size = _KIND_DTYPES[dl_codec >> 4].itemsize
    pieces = []
    for entry, head in zip(entries, heads, strict=True):
        count, first = head[4], head[5]
        ords = _ENTRY_HEAD.size + _BLOCK_HEAD.size
        (last,) = _U32_LE.unpack_from(entry.raw, ords + 4 * (count - 1))
        tfs = ords + 4 * count
        dls = tfs + _pad4(tf_size * count)
        raw = entry.raw
        pieces.append(
            (
                first,
                last,
                raw[ords:tfs],
                raw[tfs : tfs + tf_size * count],
                raw[dls : dls + dl_size * count],
            )
        )
    pieces.sort()
    if any(a[1] >= b[0] for a, b in itertools.pairwise(pieces)):
        return None
    count = sum(e.df for e in entries)
    return b"".join(
        (
            _ENTRY_HEAD.pack(
                _ENTRY_V1,
                _INLINE,
                0,
                count,
                max(e.max_tf for e in entries),
                min(e.min_dl for e in entries),
            ),
            _BLOCK_HEAD.pack(_BLOCK_V1, _ORD_RAW, tf_codec, dl_codec, count, pieces[0][0]),
            b"".join(p[2] for p in pieces),
            _padded(b"".join(p[3] for p in pieces)),
            _padded(b"".join(p[4] for p in pieces)),
        )
    )


def _merge_small(entries: list[TermEntry], retired: set[int]) -> tuple[bytes | None, list[int]]:
    """Merge inline entries in pure Python: ``(new entry or None if all dropped, dropped ords)``."""
    ords: list[int] = []
    tf: list[float] = []
    dl: list[float] = []
    for entry in entries:
        o, t, d = _inline_lists(entry.raw)
        ords += o
        tf += t
        dl += d
    gone: list[int] = []
    if retired and not retired.isdisjoint(ords):
        gone = [o for o in ords if o in retired]
        rows = [(o, t, d) for o, t, d in zip(ords, tf, dl, strict=True) if o not in retired]
        ords, tf, dl = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    if not ords:
        return None, gone
    if any(a >= b for a, b in itertools.pairwise(ords)):
        rows = sorted(zip(ords, tf, dl, strict=True))
        ords, tf, dl = [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]
    block, stats = _inline_block(ords, tf, dl)
    return encode_entry(stats, block, ()), gone


def _concat(parts: Sequence[Postings]) -> Postings:
    """Concatenate postings parts into one list sorted by ordinal."""
    if len(parts) == 1:
        return parts[0]
    if not parts:
        empty = np.empty(0, dtype=np.float64)
        return Postings(np.empty(0, dtype=np.uint32), empty, empty)
    ordered = sorted((p for p in parts if len(p.ordinals)), key=lambda p: int(p.ordinals[0]))
    if not ordered:
        return _concat([])
    ordinals = np.concatenate([p.ordinals for p in ordered])
    tf = np.concatenate([p.tf for p in ordered])
    dl = np.concatenate([p.dl for p in ordered])
    overlapping = any(
        int(a.ordinals[-1]) >= int(b.ordinals[0]) for a, b in itertools.pairwise(ordered)
    )
    if overlapping:  # segments written out of ordinal order (reindexing): sort once
        order = np.argsort(ordinals, kind="stable")
        ordinals, tf, dl = ordinals[order], tf[order], dl[order]
    return Postings(ordinals, tf, dl)

"""Persisted BM25 postings: immutable segments of per-term blocks, a manifest, tiered merges.

Layout (see ``docs/postings.md`` for the full description and the measured numbers):

* A **segment** is a batch of indexed documents written once and never changed. For each term it
  holds one *term entry* ``TERM(generation, segment, digest)`` whose value starts with the term's
  segment statistics (df, max tf, min document length) and then either carries the postings
  inline (df ≤ :data:`INLINE_POSTINGS`) or a directory of blocks ``BLOCK(generation, segment,
  digest, n)`` of at most :data:`BLOCK_POSTINGS` postings each.
* A **posting** is ``(ordinal, tf, dl)``: the document's uint32 ordinal, its BM25F-weighted term
  frequency and its weighted length. Carrying ``dl`` in every posting (1–2 bytes in practice)
  spares a per-document length lookup at query time.
* Block values are columnar: sorted ordinals (raw uint32, or uint8/uint16 deltas), then tf, then
  dl, each in the narrowest exact encoding (uint8/uint16/uint32 fixed point with a power-of-two
  scale, else float32/float64). Decoding is ``np.frombuffer`` plus at most a cumulative sum and a
  cast — never a per-posting Python loop. RocksDB compresses the SST blocks with zstd.
* The **manifest** ``MANIFEST(generation)`` lists the live segments and the corpus statistics
  BM25 needs: live document count and live total length. It is switched atomically, in the same
  WriteBatch as the segment it publishes (flush) or the segments it replaces (merge).
* ``DOC(generation, ordinal)`` records each indexed document (weighted length, state, number of
  terms): flushes skip ordinals already indexed (idempotent replay) and :meth:`PostingIndex.retire`
  subtracts a retired document from the statistics exactly once.
* ``RETIRED(generation)`` is the sorted uint32 array of retired ordinals whose postings are still
  physically present; readers hide them and merges drop them.

Document frequency is the sum of per-segment df over the live segments minus the retired ordinals
found in the term's postings, so after :meth:`PostingIndex.retire` the statistics are exact. A
query-time ``dead`` mask (tombstones not yet retired, scope filters) only hides hits; it does not
change N, avgdl or df, the way Lucene counts deleted documents until a merge.

One :class:`PostingIndex` per store and generation per process: writers and the merger serialize
on ``store.lock``; readers take no lock and retry when the manifest changes under them.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import math
import struct
import sys
import threading
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from cwcore.errors import CorruptRecord
from cwcore.store import codec
from cwcore.store.keys import KeyLayout, prefix_end
from cwcore.store.rocks import Batch, Store

# --- Layouts (tags 0x90-0x9F belong to this module). ---------------------------------------------

#: postings CF: generation, segment, term digest -> term entry.
TERM = KeyLayout("bm25-term", 0x90, ("u32", "u64", "h16"))
#: postings CF: generation, segment, term digest, block number -> block of postings.
BLOCK = KeyLayout("bm25-block", 0x91, ("u32", "u64", "h16", "u32"))
#: stats CF: generation -> manifest (segments, live statistics).
MANIFEST = KeyLayout("bm25-manifest", 0x92, ("u32",))
#: stats CF: generation, ordinal -> indexed document record.
DOC = KeyLayout("bm25-doc", 0x93, ("u32", "u32"))
#: stats CF: generation -> sorted uint32 ordinals retired but still present in segments.
RETIRED = KeyLayout("bm25-retired", 0x94, ("u32",))

POSTINGS_CF = "postings"
STATS_CF = "stats"

# --- Tuning (documented in docs/postings.md). -----------------------------------------------------

#: Postings per block: a common term's list is split so values stay well below a MiB and a
#: budgeted query can read only the newest blocks.
BLOCK_POSTINGS = 16384
#: A term with at most this many postings in a segment is stored inside its term entry.
INLINE_POSTINGS = 64
#: A flush happens when the writer buffers this many documents or postings (bounded memory).
FLUSH_DOCS = 8192
FLUSH_POSTINGS = 262_144
#: Segments of one tier merged together; tier = floor(log_MERGE_FACTOR(docs)).
MERGE_FACTOR = 8
#: A merge commits its new segment in WriteBatches of about this many bytes.
MERGE_BATCH_BYTES = 4 << 20

_U32 = np.dtype("<u4")
_F64 = np.dtype("<f8")
_MAX_ORDINAL = (1 << 32) - 1

# --- Value encodings. -----------------------------------------------------------------------------

_BLOCK_V1 = 1
_BLOCK_HEAD = struct.Struct(
    "<BBBBII"
)  # version, ord codec, tf codec, dl codec, count, first ordinal
_ORD_RAW, _ORD_D8, _ORD_D16 = 0, 1, 2
# Value codec byte: kind << 4 | scale exponent (stored = value * 2**exp, exact).
_KIND_DTYPES = (np.dtype("u1"), np.dtype("<u2"), np.dtype("<u4"), np.dtype("<f4"), np.dtype("<f8"))
_KIND_LIMITS = (255, 65535, _MAX_ORDINAL)
_F32, _F64_KIND = 3, 4
_MAX_EXP = 6

_ENTRY_V1 = 1
_ENTRY_HEAD = struct.Struct("<BBHIdd")  # version, flags, blocks, df, max tf, min dl
_INLINE = 1

_DOC_V1 = 1
_DOC_REC = struct.Struct("<BBdI")  # version, state, weighted length, number of terms
_LIVE, _RETIRED = 0, 1

U32Array = npt.NDArray[np.uint32]
F64Array = npt.NDArray[np.float64]


class Postings(NamedTuple):
    """One term's postings: ``ordinals`` sorted ascending (uint32), ``tf`` and ``dl`` (float64)."""

    ordinals: U32Array
    tf: F64Array
    dl: F64Array


def term_digest(term: str) -> bytes:
    """The 16-byte key field naming ``term`` (BLAKE2b-128 of its UTF-8 bytes)."""
    return hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def value_codec(values: F64Array) -> int:
    """The narrowest exact codec byte for non-negative ``values``."""
    if len(values) == 0:
        return 0
    for exp in range(_MAX_EXP + 1):
        scaled = values * float(1 << exp)
        if np.array_equal(scaled, np.floor(scaled)):
            top = float(scaled.max())
            for kind, limit in enumerate(_KIND_LIMITS):
                if top <= limit:
                    return kind << 4 | exp
            break
    if np.array_equal(values.astype(np.float32).astype(np.float64), values):
        return _F32 << 4
    return _F64_KIND << 4


def _encode_values(values: F64Array, codec_byte: int) -> bytes:
    kind, exp = codec_byte >> 4, codec_byte & 0xF
    dtype = _KIND_DTYPES[kind]
    if kind < _F32:
        return (values * float(1 << exp)).astype(dtype).tobytes()
    return values.astype(dtype).tobytes()


def _pad4(size: int) -> int:
    return (size + 3) & ~3


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (_pad4(len(data)) - len(data))


def encode_block(
    ordinals: U32Array,
    tf: F64Array,
    dl: F64Array,
    tf_codec: int | None = None,
    dl_codec: int | None = None,
) -> bytes:
    """Encode sorted, distinct ``ordinals`` with their ``tf`` and ``dl`` as one block value."""
    count = len(ordinals)
    first = int(ordinals[0]) if count else 0
    ord_codec, ord_bytes = _ORD_RAW, b""
    if count > 16:
        deltas = np.diff(ordinals)
        top = int(deltas.max())
        if top <= 255:
            ord_codec, ord_bytes = _ORD_D8, deltas.astype(np.uint8).tobytes()
        elif top <= 65535:
            ord_codec, ord_bytes = _ORD_D16, deltas.astype("<u2").tobytes()
    if ord_codec == _ORD_RAW:
        ord_bytes = ordinals.astype(_U32).tobytes()
    tf_codec = value_codec(tf) if tf_codec is None else tf_codec
    dl_codec = value_codec(dl) if dl_codec is None else dl_codec
    return b"".join(
        (
            _BLOCK_HEAD.pack(_BLOCK_V1, ord_codec, tf_codec, dl_codec, count, first),
            _padded(ord_bytes),
            _padded(_encode_values(tf, tf_codec)),
            _padded(_encode_values(dl, dl_codec)),
        )
    )


class BlockView(NamedTuple):
    """A block with decoded ordinals and its tf/dl columns still in their stored dtype."""

    ordinals: U32Array
    tf_raw: npt.NDArray[Any]
    tf_scale: float
    dl_raw: npt.NDArray[Any]
    dl_scale: float

    def tf_at(self, positions: npt.NDArray[np.intp]) -> F64Array:
        return _scaled(self.tf_raw[positions], self.tf_scale)

    def dl_at(self, positions: npt.NDArray[np.intp]) -> F64Array:
        return _scaled(self.dl_raw[positions], self.dl_scale)

    def postings(self) -> Postings:
        return Postings(
            self.ordinals, _scaled(self.tf_raw, self.tf_scale), _scaled(self.dl_raw, self.dl_scale)
        )


def _scaled(raw: npt.NDArray[Any], scale: float) -> F64Array:
    values = raw.astype(np.float64)
    if scale != 1.0:
        values *= scale  # a power of two: exact
    return values


def _column(
    buf: bytes, pos: int, count: int, codec_byte: int
) -> tuple[npt.NDArray[Any], float, int]:
    kind, exp = codec_byte >> 4, codec_byte & 0xF
    if kind >= len(_KIND_DTYPES):
        raise CorruptRecord(f"bm25 block: unknown value codec {codec_byte:#x}")
    dtype = _KIND_DTYPES[kind]
    raw = np.frombuffer(buf, dtype=dtype, count=count, offset=pos)
    return raw, 1.0 / (1 << exp), pos + _pad4(count * dtype.itemsize)


def view_block(buf: bytes, offset: int = 0) -> BlockView:
    """Decode a block's ordinals; tf and dl stay zero-copy views until asked for."""
    try:
        version, ord_codec, tf_codec, dl_codec, count, first = _BLOCK_HEAD.unpack_from(buf, offset)
    except struct.error:
        raise CorruptRecord("bm25 block: truncated header") from None
    if version != _BLOCK_V1:
        raise CorruptRecord(f"bm25 block: unknown version {version}")
    pos = offset + _BLOCK_HEAD.size
    try:
        if ord_codec == _ORD_RAW:
            ordinals = np.frombuffer(buf, dtype=_U32, count=count, offset=pos)
            pos += 4 * count
        elif ord_codec in (_ORD_D8, _ORD_D16):
            width = 1 if ord_codec == _ORD_D8 else 2
            deltas = np.frombuffer(
                buf, dtype="u1" if width == 1 else "<u2", count=count - 1, offset=pos
            )
            ordinals = np.empty(count, dtype=np.uint32)
            ordinals[0] = first
            np.cumsum(deltas, dtype=np.uint32, out=ordinals[1:])
            ordinals[1:] += np.uint32(first)
            pos += _pad4(width * (count - 1))
        else:
            raise CorruptRecord(f"bm25 block: unknown ordinal codec {ord_codec}")
        tf_raw, tf_scale, pos = _column(buf, pos, count, tf_codec)
        dl_raw, dl_scale, pos = _column(buf, pos, count, dl_codec)
    except ValueError as exc:
        raise CorruptRecord(f"bm25 block: {exc}") from None
    return BlockView(ordinals, tf_raw, tf_scale, dl_raw, dl_scale)


def decode_block(buf: bytes, offset: int = 0) -> Postings:
    """Decode a block value (or the inline payload of a term entry starting at ``offset``)."""
    return view_block(buf, offset).postings()


# Short lists (inline entries) go through the same format with the ``array`` module: numpy's
# per-call overhead dominates below a few dozen postings, and merges handle tens of thousands.
_ARRAY_CODES = ("B", "H", "I", "f", "d")
_LITTLE = sys.byteorder == "little"


def _array(code: str, values: Iterable[float]) -> array[Any]:
    out = array(code, values)
    if not _LITTLE:
        out.byteswap()
    return out


def _list_codec(values: list[float]) -> int:
    """:func:`value_codec` for a short Python list (same choice)."""
    for exp in range(_MAX_EXP + 1):
        scale = float(1 << exp)
        if all((v * scale).is_integer() for v in values):
            top = max(values) * scale
            for kind, limit in enumerate(_KIND_LIMITS):
                if top <= limit:
                    return kind << 4 | exp
            break
    try:
        if _array("f", values).tolist() == values:
            return _F32 << 4
    except OverflowError:
        pass
    return _F64_KIND << 4


def _list_values(values: list[float], codec_byte: int) -> bytes:
    kind, exp = codec_byte >> 4, codec_byte & 0xF
    if kind < _F32:
        scale = float(1 << exp)
        return _array(_ARRAY_CODES[kind], [int(v * scale) for v in values]).tobytes()
    return _array(_ARRAY_CODES[kind], values).tobytes()


def _inline_block(
    ordinals: list[int], tf: list[float], dl: list[float]
) -> tuple[bytes, tuple[int, float, float]]:
    """Encode a short sorted list as an inline block; returns it with ``(df, max tf, min dl)``."""
    tf_codec, dl_codec = _list_codec(tf), _list_codec(dl)
    block = b"".join(
        (
            _BLOCK_HEAD.pack(_BLOCK_V1, _ORD_RAW, tf_codec, dl_codec, len(ordinals), ordinals[0]),
            _array("I", ordinals).tobytes(),
            _padded(_list_values(tf, tf_codec)),
            _padded(_list_values(dl, dl_codec)),
        )
    )
    return block, (len(ordinals), max(tf), min(dl))


def _inline_lists(buf: bytes) -> tuple[list[int], list[float], list[float]]:
    """Decode an inline entry's postings into Python lists (the merge's small-term path)."""
    _, ord_codec, tf_codec, dl_codec, count, _ = _BLOCK_HEAD.unpack_from(buf, _ENTRY_HEAD.size)
    if ord_codec != _ORD_RAW:  # inline lists are written raw; anything else takes numpy
        p = decode_block(buf, _ENTRY_HEAD.size)
        return p.ordinals.tolist(), p.tf.tolist(), p.dl.tolist()
    pos = _ENTRY_HEAD.size + _BLOCK_HEAD.size
    ords = _read_array("I", buf, pos, count)
    pos += 4 * count
    columns: list[list[float]] = []
    for codec_byte in (tf_codec, dl_codec):
        kind, exp = codec_byte >> 4, codec_byte & 0xF
        if kind >= len(_ARRAY_CODES):
            raise CorruptRecord(f"bm25 block: unknown value codec {codec_byte:#x}")
        values = _read_array(_ARRAY_CODES[kind], buf, pos, count)
        scale = float(1 << exp)
        columns.append([v / scale for v in values])
        pos += _pad4(count * _KIND_DTYPES[kind].itemsize)
    return ords, columns[0], columns[1]


def _read_array(code: str, buf: bytes, pos: int, count: int) -> list[Any]:
    out = array(code)
    size = out.itemsize * count
    if pos + size > len(buf):
        raise CorruptRecord("bm25 block: truncated column")
    out.frombytes(buf[pos : pos + size])
    if not _LITTLE:
        out.byteswap()
    return out.tolist()


class TermEntry(NamedTuple):
    """One term in one segment: statistics plus inline postings or a block directory.

    Inline postings stay encoded in ``raw`` until :meth:`inline_postings`: planning a query
    needs only the statistics. (A NamedTuple: merges build hundreds of thousands of these.)
    """

    segment: int
    df: int
    max_tf: float
    min_dl: float
    raw: bytes
    inline: bool
    firsts: U32Array  # first ordinal of each block
    lasts: U32Array  # last ordinal of each block
    counts: U32Array  # postings in each block

    def inline_postings(self) -> Postings:
        return decode_block(self.raw, _ENTRY_HEAD.size)


def encode_entry(
    stats: tuple[int, float, float], inline: bytes | None, blocks: Sequence[Postings]
) -> bytes:
    """Term entry value: header, then the inline block or the block directory."""
    df, max_tf, min_dl = stats
    if inline is not None:
        return _ENTRY_HEAD.pack(_ENTRY_V1, _INLINE, 0, df, max_tf, min_dl) + inline
    directory = np.array(
        [(int(b.ordinals[0]), int(b.ordinals[-1]), len(b.ordinals)) for b in blocks], dtype=_U32
    )
    return _ENTRY_HEAD.pack(_ENTRY_V1, 0, len(blocks), df, max_tf, min_dl) + directory.T.tobytes()


_NO_BLOCKS = np.empty(0, dtype=np.uint32)


def decode_entry(segment: int, buf: bytes) -> TermEntry:
    try:
        version, flags, nblocks, df, max_tf, min_dl = _ENTRY_HEAD.unpack_from(buf, 0)
    except struct.error:
        raise CorruptRecord("bm25 term entry: truncated") from None
    if version != _ENTRY_V1:
        raise CorruptRecord(f"bm25 term entry: unknown version {version}")
    if flags & _INLINE:
        return TermEntry(segment, df, max_tf, min_dl, buf, True, _NO_BLOCKS, _NO_BLOCKS, _NO_BLOCKS)
    try:
        directory = np.frombuffer(buf, dtype=_U32, count=3 * nblocks, offset=_ENTRY_HEAD.size)
    except ValueError:
        raise CorruptRecord("bm25 term entry: truncated directory") from None
    firsts, lasts, counts = directory.reshape(3, nblocks)
    return TermEntry(segment, df, max_tf, min_dl, buf, False, firsts, lasts, counts)


def term_key(generation: int, segment: int, digest: bytes) -> bytes:
    """``TERM.encode(generation, segment, digest)`` without the generic encoder's overhead."""
    return _TERM_HEAD + _GEN_SEG.pack(generation, segment) + digest


def block_key(generation: int, segment: int, digest: bytes, number: int) -> bytes:
    """``BLOCK.encode(generation, segment, digest, number)``, fast."""
    return _BLOCK_HEAD_KEY + _GEN_SEG.pack(generation, segment) + digest + _BE32.pack(number)


def doc_key(generation: int, ordinal: int) -> bytes:
    """``DOC.encode(generation, ordinal)``, fast."""
    return _DOC_HEAD_KEY + _BE32.pack(generation) + _BE32.pack(ordinal)


_TERM_HEAD = bytes((TERM.tag, TERM.version))
_BLOCK_HEAD_KEY = bytes((BLOCK.tag, BLOCK.version))
_DOC_HEAD_KEY = bytes((DOC.tag, DOC.version))
_GEN_SEG = struct.Struct(">IQ")
_BE32 = struct.Struct(">I")
_U32_LE = struct.Struct("<I")


def _write_term(
    batch: Batch,
    key_prefix: bytes,
    digest: bytes,
    postings: Postings,
    codecs: tuple[int, int] | None = None,
) -> None:
    """Write one term's postings in one segment (``key_prefix`` = ``TERM.prefix(gen, seg)``)."""
    ordinals, tf, dl = postings
    stats = (len(ordinals), float(tf.max()), float(dl.min()))
    tf_codec, dl_codec = codecs if codecs is not None else (None, None)
    if len(ordinals) <= INLINE_POSTINGS:
        batch.put(
            POSTINGS_CF,
            key_prefix + digest,
            encode_entry(stats, encode_block(*postings, tf_codec, dl_codec), ()),
        )
        return
    blocks = [
        Postings(
            ordinals[i : i + BLOCK_POSTINGS], tf[i : i + BLOCK_POSTINGS], dl[i : i + BLOCK_POSTINGS]
        )
        for i in range(0, len(ordinals), BLOCK_POSTINGS)
    ]
    block_prefix = _BLOCK_HEAD_KEY + key_prefix[2:] + digest
    for number, block in enumerate(blocks):
        batch.put(POSTINGS_CF, block_prefix + _BE32.pack(number), encode_block(*block))
    batch.put(POSTINGS_CF, key_prefix + digest, encode_entry(stats, None, blocks))


# --- Manifest. ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """A live segment: ``docs`` indexed documents (retired ones included until merged away)."""

    id: int
    docs: int
    postings: int
    length: float
    min_ordinal: int
    max_ordinal: int

    @property
    def tier(self) -> int:
        """floor(log_MERGE_FACTOR(docs)): segments of one tier are merged together."""
        return 0 if self.docs < MERGE_FACTOR else int(math.log(self.docs, MERGE_FACTOR) + 1e-9)


@dataclass
class Manifest:
    """The switchable state of one generation (``live_length``: sum of live weighted lengths)."""

    segments: list[Segment] = field(default_factory=list)
    next_segment: int = 1
    live_docs: int = 0
    live_length: float = 0.0
    max_ordinal: int = -1
    merging: list[int] = field(default_factory=list)  # segment ids being built by a merge

    def encode(self) -> bytes:
        return codec.encode_record(
            {
                "segments": [
                    [s.id, s.docs, s.postings, s.length, s.min_ordinal, s.max_ordinal]
                    for s in self.segments
                ],
                "next_segment": self.next_segment,
                "live_docs": self.live_docs,
                "live_length": self.live_length,
                "max_ordinal": self.max_ordinal,
                "merging": self.merging,
            }
        )

    @classmethod
    def decode(cls, raw: bytes | None) -> Manifest:
        if raw is None:
            return cls()
        body = codec.decode_record(raw, "bm25 manifest")
        try:
            return cls(
                segments=[
                    Segment(int(a), int(b), int(c), float(d), int(e), int(f))
                    for a, b, c, d, e, f in body["segments"]
                ],
                next_segment=int(body["next_segment"]),
                live_docs=int(body["live_docs"]),
                live_length=float(body["live_length"]),
                max_ordinal=int(body["max_ordinal"]),
                merging=[int(x) for x in body["merging"]],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptRecord(f"bm25 manifest: {exc}") from None

    @property
    def avgdl(self) -> float:
        return self.live_length / self.live_docs if self.live_docs else 0.0


@dataclass(frozen=True)
class Snapshot:
    """What one query reads: the manifest, the retired ordinals, and the raw manifest bytes."""

    manifest: Manifest
    retired: U32Array
    raw: bytes | None


@dataclass(frozen=True)
class FlushResult:
    segment: int | None
    docs: int
    postings: int
    skipped: int  # ordinals already indexed (an idempotent replay)


@dataclass(frozen=True)
class MergeResult:
    segment: int
    inputs: tuple[int, ...]
    docs: int
    postings: int
    dropped_postings: int
    dropped_docs: int


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
        # Batch has no delete_range of its own yet; the underlying WriteBatch does.
        for start, end in self._segment_ranges(segment):
            batch._wb.delete_range(start, end, self.store.handle(POSTINGS_CF))
            batch.mutations += 1

    # -- writing ------------------------------------------------------------------------------

    def writer(
        self, *, max_docs: int = FLUSH_DOCS, max_postings: int = FLUSH_POSTINGS
    ) -> PostingWriter:
        return PostingWriter(self, max_docs=max_docs, max_postings=max_postings)

    def reader(self) -> PostingReader:
        return PostingReader(self)

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
        for tier in sorted(tiers):
            members = sorted(tiers[tier], key=lambda s: s.id)
            if len(members) >= MERGE_FACTOR:
                return members[:MERGE_FACTOR]
        return []

    def merge(self) -> MergeResult | None:
        """Run one tiered merge if the policy asks for one (the background worker's step)."""
        with self._merge_lock:
            inputs = self.pick_merge()
            return self._merge(inputs) if len(inputs) > 1 else None

    def force_merge(self, max_segments: int = 1) -> list[MergeResult]:
        """Merge until at most ``max_segments`` remain (rebuilds and benchmarks)."""
        results: list[MergeResult] = []
        with self._merge_lock:
            while True:
                segments = sorted(self.manifest().segments, key=lambda s: s.id)
                if len(segments) <= max_segments:
                    return results
                take = len(segments) - max_segments + 1
                result = self._merge(segments[:take])
                if result is not None:
                    results.append(result)

    def _merge(self, inputs: list[Segment]) -> MergeResult | None:
        ids = tuple(s.id for s in inputs)
        with self.store.lock:
            snap = self.snapshot()
            manifest = Manifest.decode(snap.raw)
            live_ids = {s.id for s in manifest.segments}
            if not set(ids) <= live_ids:
                return None
            new_id = manifest.next_segment
            manifest.next_segment += 1
            manifest.merging = [*manifest.merging, new_id]
            batch = self.store.batch()
            self._put_manifest(batch, manifest)
            self.store.commit(batch)
        retired = snap.retired
        retired_set = set(retired.tolist())
        # Without retired ordinals inside the inputs, a term found in one input is copied as is.
        clean = not any(
            np.any((retired >= s.min_ordinal) & (retired <= s.max_ordinal)) for s in inputs
        )
        prefix = TERM.prefix(self.generation, new_id)
        block_prefix = _BLOCK_HEAD_KEY + prefix[2:]
        batch = self.store.batch()
        postings_out = 0
        dropped_postings = 0
        dropped: list[U32Array] = []
        for digest, entries in self._merged_entries(ids):
            total = sum(e.df for e in entries)
            if clean and len(entries) == 1:
                self._copy_entry(batch, entries[0], prefix, block_prefix, digest)
                postings_out += total
            elif total <= INLINE_POSTINGS and all(e.inline for e in entries):
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
                merged = _concat([self._entry_postings(entry, digest) for entry in entries])
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
            if batch.bytes >= MERGE_BATCH_BYTES:
                self.store.commit(batch)
                batch = self.store.batch()
        self.store.commit(batch)
        gone_ordinals = (
            np.unique(np.concatenate(dropped)) if dropped else np.empty(0, dtype=np.uint32)
        )
        with self.store.lock:
            snap = self.snapshot()
            manifest = Manifest.decode(snap.raw)
            kept = [s for s in manifest.segments if s.id not in ids]
            docs = sum(s.docs for s in inputs) - len(gone_ordinals)
            gone_length = self._doc_lengths(gone_ordinals)
            merged_segment = Segment(
                new_id,
                docs,
                postings_out,
                max(0.0, sum(s.length for s in inputs) - gone_length),
                min(s.min_ordinal for s in inputs),
                max(s.max_ordinal for s in inputs),
            )
            batch = self.store.batch()
            manifest.segments = (
                sorted([*kept, merged_segment], key=lambda s: s.id)
                if docs > 0 or postings_out
                else kept
            )
            manifest.merging = [m for m in manifest.merging if m != new_id]
            for segment in ids:
                self._delete_segment(batch, segment)
            if len(gone_ordinals):
                self._put_retired(
                    batch, np.setdiff1d(snap.retired, gone_ordinals, assume_unique=True)
                )
            self._put_manifest(batch, manifest)
            self.store.commit(batch)
        return MergeResult(new_id, ids, docs, postings_out, dropped_postings, len(gone_ordinals))

    def _copy_entry(
        self, batch: Batch, entry: TermEntry, prefix: bytes, block_prefix: bytes, digest: bytes
    ) -> None:
        """Copy a term's entry (and blocks) verbatim into the segment being built."""
        if not entry.inline:
            gen = self.generation
            keys = [block_key(gen, entry.segment, digest, n) for n in range(len(entry.counts))]
            for number, value in enumerate(self.store.get_many(POSTINGS_CF, keys)):
                if value is None:
                    raise CorruptRecord(f"bm25: segment {entry.segment} lost a block")
                batch.put(POSTINGS_CF, block_prefix + digest + _BE32.pack(number), value)
        batch.put(POSTINGS_CF, prefix + digest, entry.raw)

    def _doc_lengths(self, ordinals: U32Array) -> float:
        if not len(ordinals):
            return 0.0
        keys = [doc_key(self.generation, o) for o in ordinals.tolist()]
        total = 0.0
        for raw in self.store.get_many(STATS_CF, keys):
            if raw is not None:
                total += _DOC_REC.unpack(raw)[2]
        return total

    def _merged_entries(self, ids: tuple[int, ...]) -> Iterator[tuple[bytes, list[TermEntry]]]:
        """Yield ``(digest, entries)`` over the union of the segments' terms, in digest order."""

        def scan(segment: int) -> Iterator[tuple[bytes, int, bytes]]:
            prefix = TERM.prefix(self.generation, segment)
            for key, value in self.store.scan(POSTINGS_CF, prefix):
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

    def _entry_postings(self, entry: TermEntry, digest: bytes) -> Postings:
        if entry.inline:
            return entry.inline_postings()
        gen = self.generation
        keys = [block_key(gen, entry.segment, digest, n) for n in range(len(entry.counts))]
        values = self.store.get_many(POSTINGS_CF, keys)
        if any(v is None for v in values):
            raise CorruptRecord(f"bm25: segment {entry.segment} lost a block")
        return _concat([decode_block(v) for v in values if v is not None])

    def drop(self) -> None:
        """Delete every key of this generation (after a newer generation is published)."""
        with self.store.lock:
            batch = self.store.batch()
            for layout, family in ((TERM, POSTINGS_CF), (BLOCK, POSTINGS_CF), (DOC, STATS_CF)):
                start = layout.prefix(self.generation)
                end = prefix_end(start)
                assert end is not None
                batch._wb.delete_range(start, end, self.store.handle(family))
            batch.delete(STATS_CF, self._manifest_key)
            batch.delete(STATS_CF, self._retired_key)
            self.store.commit(batch)
            self._cache = (b"", Manifest())


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


def _gather(views: list[BlockView]) -> Postings:
    """Decode block views into one list sorted by ordinal, writing each column once."""
    views = sorted((v for v in views if len(v.ordinals)), key=lambda v: int(v.ordinals[0]))
    total = sum(len(v.ordinals) for v in views)
    ordinals = np.empty(total, dtype=np.uint32)
    tf = np.empty(total, dtype=np.float64)
    dl = np.empty(total, dtype=np.float64)
    pos = 0
    for view in views:
        end = pos + len(view.ordinals)
        ordinals[pos:end] = view.ordinals
        tf[pos:end] = view.tf_raw
        dl[pos:end] = view.dl_raw
        if view.tf_scale != 1.0:
            tf[pos:end] *= view.tf_scale
        if view.dl_scale != 1.0:
            dl[pos:end] *= view.dl_scale
        pos = end
    if any(int(a.ordinals[-1]) >= int(b.ordinals[0]) for a, b in itertools.pairwise(views)):
        order = np.argsort(ordinals, kind="stable")  # segments out of ordinal order: sort once
        ordinals, tf, dl = ordinals[order], tf[order], dl[order]
    return Postings(ordinals, tf, dl)


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


# --- Writer. --------------------------------------------------------------------------------------


class PostingWriter:
    """Buffers documents and flushes them as one segment, in bounded memory.

    ``add`` takes a document's ordinal, its ``{term: weighted tf}`` and its weighted length; a
    flush happens automatically past ``max_docs`` documents or ``max_postings`` postings, and
    :meth:`flush` publishes what is buffered. Buffered documents are not searchable until flushed.
    """

    def __init__(
        self, index: PostingIndex, *, max_docs: int = FLUSH_DOCS, max_postings: int = FLUSH_POSTINGS
    ) -> None:
        self.index = index
        self.max_docs = max_docs
        self.max_postings = max_postings
        self.flushed: list[FlushResult] = []
        self._reset()

    def _reset(self) -> None:
        self._vocab: dict[str, int] = {}
        self._terms: list[str] = []
        self._tids = array("I")
        self._tfs = array("d")
        self._doc_ords = array("I")
        self._doc_lens = array("d")
        self._doc_terms = array("I")
        self._seen: set[int] = set()

    @property
    def pending_docs(self) -> int:
        return len(self._doc_ords)

    def add(self, ordinal: int, tfs: Mapping[str, float], doc_len: float) -> None:
        """Buffer one document. ``tfs`` values must be finite and > 0; ``doc_len`` finite, > 0
        when there are terms, and ≥ 0 otherwise (an empty document still counts in N).
        Raises ValueError on a bad document and on an ordinal already buffered."""
        if not 0 <= ordinal <= _MAX_ORDINAL:
            raise ValueError(f"ordinal {ordinal} is not a uint32")
        if ordinal in self._seen:
            raise ValueError(f"ordinal {ordinal} is already buffered")
        values = tfs.values()
        if tfs and not (min(values) > 0 and math.isfinite(sum(values))):
            raise ValueError(f"ordinal {ordinal}: term frequencies must be finite and > 0")
        if not math.isfinite(doc_len) or doc_len < 0 or (tfs and doc_len <= 0):
            raise ValueError(f"ordinal {ordinal}: bad document length {doc_len}")
        vocab = self._vocab
        try:
            ids = [vocab[term] for term in tfs]
        except KeyError:  # new terms: give them ids, then map again
            terms = self._terms
            for term in tfs:
                if term not in vocab:
                    vocab[term] = len(terms)
                    terms.append(term)
            ids = [vocab[term] for term in tfs]
        self._tids.extend(ids)
        self._tfs.extend(values)
        self._seen.add(ordinal)
        self._doc_ords.append(ordinal)
        self._doc_lens.append(float(doc_len))
        self._doc_terms.append(len(tfs))
        if len(self._doc_ords) >= self.max_docs or len(self._tids) >= self.max_postings:
            self.flush()

    def flush(self) -> FlushResult | None:
        """Write the buffered documents as one segment in one WriteBatch; None if empty."""
        if not self._doc_ords:
            return None
        index, store = self.index, self.index.store
        doc_ords = np.frombuffer(self._doc_ords, dtype=np.uint32)
        doc_lens = np.frombuffer(self._doc_lens, dtype=np.float64)
        doc_terms = np.frombuffer(self._doc_terms, dtype=np.uint32)
        tids = np.frombuffer(self._tids, dtype=np.uint32)
        tfs = np.frombuffer(self._tfs, dtype=np.float64)
        doc_keys = [doc_key(index.generation, o) for o in doc_ords.tolist()]
        with store.lock:
            manifest = Manifest.decode(index.manifest_raw())
            fresh = np.array(
                [raw is None for raw in store.get_many(STATS_CF, doc_keys)], dtype=bool
            )
            skipped = int((~fresh).sum())
            post_fresh = np.repeat(fresh, doc_terms)
            ords = np.repeat(doc_ords, doc_terms)[post_fresh]
            dls = np.repeat(doc_lens, doc_terms)[post_fresh]
            tids, tfs = tids[post_fresh], tfs[post_fresh]
            batch = store.batch()
            segment_id = None
            if len(ords):
                segment_id = manifest.next_segment
                manifest.next_segment += 1
                self._write_segment(batch, segment_id, ords, tids, tfs, dls)
            n_docs = int(fresh.sum())
            length = float(doc_lens[fresh].sum())
            for key, dl, nterms, ok in zip(
                doc_keys, doc_lens.tolist(), doc_terms.tolist(), fresh.tolist(), strict=True
            ):
                if ok:
                    batch.put(STATS_CF, key, _DOC_REC.pack(_DOC_V1, _LIVE, dl, nterms))
            if n_docs:
                kept = doc_ords[fresh]
                if segment_id is not None:
                    manifest.segments.append(
                        Segment(
                            segment_id, n_docs, len(ords), length, int(kept.min()), int(kept.max())
                        )
                    )
                manifest.live_docs += n_docs
                manifest.live_length += length
                manifest.max_ordinal = max(manifest.max_ordinal, int(kept.max()))
                index._put_manifest(batch, manifest)
                store.commit(batch)
        result = FlushResult(segment_id, n_docs, len(ords), skipped)
        self.flushed.append(result)
        self._reset()
        return result

    def _write_segment(
        self,
        batch: Batch,
        segment_id: int,
        ords: U32Array,
        tids: U32Array,
        tfs: F64Array,
        dls: F64Array,
    ) -> None:
        order = np.lexsort((ords, tids))
        ords, tids, tfs, dls = ords[order], tids[order], tfs[order], dls[order]
        starts = np.flatnonzero(np.concatenate(([True], tids[1:] != tids[:-1])))
        ends = np.append(starts[1:], len(tids))
        # Inline entries are sliced out of segment-wide encoded columns: one numpy pass for the
        # whole segment instead of several per term (most terms of a segment are short).
        tf_codec, dl_codec = value_codec(tfs), value_codec(dls)
        ord_bytes = ords.astype(_U32).tobytes()
        tf_bytes = _encode_values(tfs, tf_codec)
        dl_bytes = _encode_values(dls, dl_codec)
        tf_size = _KIND_DTYPES[tf_codec >> 4].itemsize
        dl_size = _KIND_DTYPES[dl_codec >> 4].itemsize
        max_tf = np.maximum.reduceat(tfs, starts).tolist()
        min_dl = np.minimum.reduceat(dls, starts).tolist()
        firsts = ords[starts].tolist()
        prefix = TERM.prefix(self.index.generation, segment_id)
        terms = self._terms
        put = batch.put
        entry_head, block_head = _ENTRY_HEAD.pack, _BLOCK_HEAD.pack
        rows = zip(
            tids[starts].tolist(),
            starts.tolist(),
            ends.tolist(),
            max_tf,
            min_dl,
            firsts,
            strict=True,
        )
        for tid, start, end, top_tf, low_dl, first in rows:
            digest = term_digest(terms[tid])
            n = end - start
            if n > INLINE_POSTINGS:
                postings = Postings(ords[start:end], tfs[start:end], dls[start:end])
                _write_term(batch, prefix, digest, postings)
                continue
            value = b"".join(
                (
                    entry_head(_ENTRY_V1, _INLINE, 0, n, top_tf, low_dl),
                    block_head(_BLOCK_V1, _ORD_RAW, tf_codec, dl_codec, n, first),
                    ord_bytes[4 * start : 4 * end],
                    _padded(tf_bytes[tf_size * start : tf_size * end]),
                    _padded(dl_bytes[dl_size * start : dl_size * end]),
                )
            )
            put(POSTINGS_CF, prefix + digest, value)


# --- Reader. --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TermPlan:
    """A query term's entries in the live segments, with its summed statistics."""

    term: str
    digest: bytes
    entries: tuple[TermEntry, ...]

    @property
    def df(self) -> int:
        """Postings over the live segments, retired documents included."""
        return sum(e.df for e in self.entries)

    @property
    def max_tf(self) -> float:
        return max((e.max_tf for e in self.entries), default=0.0)

    @property
    def min_dl(self) -> float:
        return min((e.min_dl for e in self.entries), default=0.0)


class ManifestChanged(Exception):
    """A merge or flush switched the manifest during a read: the reader retries."""


class PostingReader:
    """Reads postings for query terms: one ``get_many`` for the term entries of every live
    segment, one per term for its blocks, numpy decoding."""

    def __init__(self, index: PostingIndex) -> None:
        self.index = index
        self.store = index.store
        self.generation = index.generation

    def snapshot(self) -> Snapshot:
        return self.index.snapshot()

    def check(self, snap: Snapshot) -> None:
        """Raise :class:`ManifestChanged` if the manifest moved since ``snap`` was taken."""
        if self.index.manifest_raw() != snap.raw:
            raise ManifestChanged

    def plan(self, snap: Snapshot, terms: Sequence[str]) -> list[TermPlan]:
        """Term entries of ``terms`` in every live segment (missing terms get empty plans)."""
        segments = [s.id for s in snap.manifest.segments]
        digests = [term_digest(t) for t in terms]
        gen = self.generation
        keys = [term_key(gen, s, d) for d in digests for s in segments]
        values = self.store.get_many(POSTINGS_CF, keys) if keys else []
        plans = []
        for i, (term, digest) in enumerate(zip(terms, digests, strict=True)):
            row = values[i * len(segments) : (i + 1) * len(segments)]
            entries = tuple(
                decode_entry(s, v) for s, v in zip(segments, row, strict=True) if v is not None
            )
            plans.append(TermPlan(term, digest, entries))
        return plans

    def _blocks(
        self, plan: TermPlan, near: U32Array | None, newest: int | None
    ) -> tuple[list[TermEntry], list[bytes]]:
        """The inline entries and the block values of ``plan`` that :meth:`fetch` describes."""
        inline: list[TermEntry] = []
        wanted: list[tuple[int, int]] = []  # (segment, block number)
        by_last: list[tuple[int, int, int, int]] = []  # (last ordinal, segment, block, count)
        for entry in plan.entries:
            if entry.inline:
                inline.append(entry)
                continue
            nblocks = len(entry.counts)
            if near is None and newest is None:
                wanted.extend((entry.segment, n) for n in range(nblocks))
                continue
            if near is not None and len(near):
                idx = np.searchsorted(entry.lasts, near)
                inside = idx < nblocks
                idx = idx[inside]
                covered = idx[entry.firsts[idx] <= near[inside]]
                wanted.extend((entry.segment, n) for n in np.unique(covered).tolist())
            if newest is not None:
                by_last.extend(
                    (last, entry.segment, n, count)
                    for n, (last, count) in enumerate(
                        zip(entry.lasts.tolist(), entry.counts.tolist(), strict=True)
                    )
                )
        if newest is not None:
            have = sum(e.df for e in inline)
            for _, segment, n, count in sorted(by_last, reverse=True):
                if have >= newest:
                    break
                wanted.append((segment, n))
                have += count
        values: list[bytes] = []
        if wanted:
            gen = self.generation
            keys = [block_key(gen, s, plan.digest, n) for s, n in sorted(set(wanted))]
            for value in self.store.get_many(POSTINGS_CF, keys):
                if value is None:
                    raise ManifestChanged
                values.append(value)
        return inline, values

    def fetch(
        self, plan: TermPlan, *, near: U32Array | None = None, newest: int | None = None
    ) -> Postings:
        """Decode ``plan``'s postings, sorted by ordinal.

        With neither argument: every posting. ``near`` (sorted ordinals): only the blocks whose
        ordinal range covers one of them. ``newest``: the blocks holding the highest ordinals
        until at least ``newest`` postings are covered (plus the ``near`` blocks). Inline
        postings always come whole. Raises :class:`ManifestChanged` if a block vanished.
        """
        inline, values = self._blocks(plan, near, newest)
        views = [view_block(e.raw, _ENTRY_HEAD.size) for e in inline]
        return _gather([*views, *(view_block(v) for v in values)])

    def views(self, plan: TermPlan, ordinals: U32Array, retired: U32Array) -> list[BlockView]:
        """Zero-copy views of the inline lists and of the blocks covering ``ordinals`` or
        ``retired`` (both sorted): what scoring existing candidates needs, and no more."""
        near = np.union1d(ordinals, retired) if len(retired) else ordinals
        inline, values = self._blocks(plan, near, None)
        return [view_block(e.raw, _ENTRY_HEAD.size) for e in inline] + [
            view_block(v) for v in values
        ]

    def lookup(
        self, plan: TermPlan, ordinals: U32Array, retired: U32Array
    ) -> tuple[npt.NDArray[np.intp], F64Array, F64Array, int]:
        """``plan``'s postings at the sorted ``ordinals`` only: ``(where, tf, dl, retired_seen)``.

        ``where`` indexes ``ordinals`` (the ones the term occurs in); ``retired_seen`` counts the
        term's postings of ``retired`` ordinals (exact: their blocks are read too). Only the
        needed blocks are read, and tf/dl are converted at the hits only (MaxScore's cheap path).
        """
        where: list[npt.NDArray[np.intp]] = []
        tfs: list[F64Array] = []
        dls: list[F64Array] = []
        retired_seen = 0
        for view in self.views(plan, ordinals, retired):
            ords = view.ordinals
            if not len(ords):
                continue
            lo = int(np.searchsorted(ordinals, ords[0], side="left"))
            hi = int(np.searchsorted(ordinals, ords[-1], side="right"))
            if hi > lo:
                wanted = ordinals[lo:hi]
                pos = np.searchsorted(ords, wanted)  # wanted <= ords[-1]: pos is in range
                hit = ords[pos] == wanted
                at = pos[hit]
                where.append(lo + np.flatnonzero(hit))
                tfs.append(view.tf_at(at))
                dls.append(view.dl_at(at))
            retired_seen += retired_in(ords, retired)
        if not where:
            empty = np.empty(0, dtype=np.float64)
            return np.empty(0, dtype=np.intp), empty, empty, retired_seen
        return np.concatenate(where), np.concatenate(tfs), np.concatenate(dls), retired_seen

    def postings(self, terms: Sequence[str], *, hide_retired: bool = True) -> dict[str, Postings]:
        """Every posting of each term (tests, verification, RM3 statistics). Retired ordinals are
        left out unless ``hide_retired`` is False."""
        for _ in range(5):
            snap = self.snapshot()
            try:
                out = {}
                for plan in self.plan(snap, terms):
                    found = self.fetch(plan)
                    if hide_retired and len(snap.retired) and len(found.ordinals):
                        keep = ~np.isin(found.ordinals, snap.retired)
                        found = Postings(found.ordinals[keep], found.tf[keep], found.dl[keep])
                    out[plan.term] = found
                self.check(snap)
                return out
            except ManifestChanged:
                continue
        raise CorruptRecord("bm25: the manifest kept changing during a read")


def retired_in(ordinals: U32Array, retired: U32Array) -> int:
    """How many of the sorted ``retired`` ordinals occur in the sorted ``ordinals``."""
    if not len(retired) or not len(ordinals):
        return 0
    lo = int(np.searchsorted(retired, ordinals[0], side="left"))
    hi = int(np.searchsorted(retired, ordinals[-1], side="right"))
    if hi <= lo:
        return 0
    gone = retired[lo:hi]
    return int((ordinals[np.searchsorted(ordinals, gone)] == gone).sum())


def stats_of(manifest: Manifest) -> dict[str, Any]:
    """A JSON-ready summary for ``cw index status`` and benchmarks."""
    return {
        "segments": len(manifest.segments),
        "tiers": sorted({s.tier for s in manifest.segments}),
        "live_docs": manifest.live_docs,
        "avgdl": round(manifest.avgdl, 3),
        "postings": sum(s.postings for s in manifest.segments),
    }

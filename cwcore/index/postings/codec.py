"""Value encodings of the posting layout: posting blocks, term entries, their decoded forms.

A **block** is columnar: sorted ordinals (raw uint32, or uint8/uint16 deltas), then tf, then dl,
each in the narrowest exact encoding (uint8/uint16/uint32 fixed point with a power-of-two scale,
else float32/float64). Decoding is ``np.frombuffer`` plus at most a cumulative sum and a cast —
never a per-posting Python loop. A **term entry** carries a term's statistics in one segment and
then either its postings inline (a block) or the directory of its blocks. Short lists also have
a pure-Python path (the ``array`` module) for merges, which handle tens of thousands of them.
"""

from __future__ import annotations

import struct
import sys
from array import array
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from cwcore.errors import CorruptRecord

_U32 = np.dtype("<u4")
_MAX_ORDINAL = (1 << 32) - 1

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


U32Array = npt.NDArray[np.uint32]
F64Array = npt.NDArray[np.float64]


class Postings(NamedTuple):
    """One term's postings: ``ordinals`` sorted ascending (uint32), ``tf`` and ``dl`` (float64)."""

    ordinals: U32Array
    tf: F64Array
    dl: F64Array


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

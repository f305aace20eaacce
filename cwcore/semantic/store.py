"""Vectors in RocksDB (family ``vectors``): per-window rows, a content table, a resumable cursor.

| layout | tag | fields -> value |
|---|---|---|
| ``vector`` | 0xE0 | wid -> :class:`WindowVectors` (identity of the window + one or more rows) |
| ``vector-content`` | 0xE1 | digest(model, text) -> one float16 row (texts embedded once) |
| ``vector-state`` | 0xE2 | ``"state"`` -> ``{"cursor", "model", "mode", "windows", "rows"}`` |

A window's record carries the identity of what was embedded (ordinal, byte range), so vectors
left behind by ``cw index rebuild`` (which renumbers windows) or a forget are detected and
dropped (:func:`validate`). Each batch of new rows, their content entries and the advanced cursor
commit in one WriteBatch: after a crash the work resumes at the cursor, never with a gap.
Rows are stored as float16 (half the bytes; cosine error < 1e-3, below the int8 model's own).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cwcore.index import derived
from cwcore.store import codec, keys
from cwcore.store.rocks import Batch, Store

FAMILY = "vectors"
VECTOR = keys.VECTOR
CONTENT = keys.VECTOR_CONTENT
STATE = keys.VECTOR_STATE
DIM = 384
_HEAD = struct.Struct(">BHIII")  # format, rows, ordinal, byte start, byte end
_FORMAT = 1
_ROW_BYTES = DIM * 2


@dataclass
class WindowVectors:
    """The rows of one window (one row in window mode, one per message in message mode)."""

    wid: int
    ordinal: int
    byte_start: int
    byte_end: int
    digests: list[bytes]
    rows: np.ndarray  # (n, DIM) float16; n may be 0 (nothing embeddable in the window)

    def pack(self) -> bytes:
        n = len(self.digests)
        head = _HEAD.pack(_FORMAT, n, self.ordinal, self.byte_start, self.byte_end)
        body = np.ascontiguousarray(self.rows, dtype="<f2").tobytes()
        return head + b"".join(self.digests) + body

    @classmethod
    def unpack(cls, wid: int, raw: bytes) -> WindowVectors:
        fmt, n, ordinal, start, end = _HEAD.unpack_from(raw, 0)
        if fmt != _FORMAT:
            raise ValueError(f"vector record format {fmt}")
        pos = _HEAD.size
        digests = [raw[pos + 16 * i : pos + 16 * (i + 1)] for i in range(n)]
        pos += 16 * n
        rows = np.frombuffer(raw, dtype="<f2", count=n * DIM, offset=pos).reshape(n, DIM)
        return cls(wid, ordinal, start, end, digests, rows)


def state(store: Store) -> dict[str, Any]:
    raw = store.get(FAMILY, STATE.encode("state"))
    if raw is None:
        return {"cursor": 0, "model": None, "mode": None, "windows": 0, "rows": 0}
    return codec.decode_record(raw, "vector-state")


def put_state(batch: Batch, body: dict[str, Any]) -> None:
    batch.put(FAMILY, STATE.encode("state"), codec.encode_record(body))


class ContentTable:
    """The store's content-digest -> vector table, usable as an embedder cache."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pending: list[tuple[bytes, np.ndarray]] = []

    def get_many(self, digests: Sequence[bytes]) -> list[np.ndarray | None]:
        raws = self.store.get_many(FAMILY, [CONTENT.encode(d) for d in digests])
        return [
            None if r is None else np.frombuffer(r, dtype="<f2").astype(np.float32) for r in raws
        ]

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        """Staged: written by the next :func:`commit_windows` in the same batch."""
        self.pending.extend(items)

    def stage(self, batch: Batch) -> None:
        for digest, vec in self.pending:
            batch.put(FAMILY, CONTENT.encode(digest), np.asarray(vec, dtype="<f2").tobytes())
        self.pending = []


def commit_windows(
    store: Store,
    items: Sequence[WindowVectors],
    new_state: dict[str, Any],
    content: ContentTable | None = None,
) -> None:
    """One batch: the windows' rows, staged content entries, and the advanced state."""
    batch = store.batch()
    for item in items:
        batch.put(FAMILY, VECTOR.encode(item.wid), item.pack())
    if content is not None:
        content.stage(batch)
    put_state(batch, new_state)
    store.commit(batch)


def scan(store: Store, after: int = 0) -> Iterator[WindowVectors]:
    """Every stored window's vectors with ``wid > after``, in wid order."""
    start = VECTOR.encode(after + 1) if after + 1 < 1 << 32 else None
    for key, value in store.scan(FAMILY, VECTOR.prefix(), start=start):
        wid = int(VECTOR.decode(key)[0])
        yield WindowVectors.unpack(wid, value)


def get(store: Store, wid: int) -> WindowVectors | None:
    raw = store.get(FAMILY, VECTOR.encode(wid))
    return None if raw is None else WindowVectors.unpack(wid, raw)


def matches(item: WindowVectors, record: dict[str, Any] | None) -> bool:
    """Whether stored vectors still describe the window record now at their wid."""
    return (
        record is not None
        and int(record["ordinal"]) == item.ordinal
        and int(record["byteStart"]) == item.byte_start
        and int(record["byteEnd"]) == item.byte_end
    )


def clear(store: Store, *, model: str | None, mode: str | None) -> None:
    """Drop every vector and the content table (a model or mode change); cursor back to 0."""
    batch = store.batch()
    batch.delete_range(FAMILY, VECTOR.prefix(), CONTENT.prefix())
    batch.delete_range(FAMILY, CONTENT.prefix(), STATE.prefix())
    put_state(batch, {"cursor": 0, "model": model, "mode": mode, "windows": 0, "rows": 0})
    store.commit(batch)


def validate(store: Store, page: int = 4096) -> dict[str, int]:
    """Drop vectors whose window changed (rebuild) or vanished (forget), and their content
    entries; move the cursor back before the first renumbered window so it is embedded again.

    Windows of a forgotten document lose their vector and content entries: a forget removes
    derived data too. Returns counts of what was checked and dropped.
    """
    st = state(store)
    checked = dropped = kept_rows = 0
    first_bad: int | None = None
    chunk: list[WindowVectors] = []

    def flush() -> None:
        nonlocal dropped, first_bad, kept_rows
        if not chunk:
            return
        records = derived.window_records(store, [c.wid for c in chunk])
        batch = store.batch()
        for item, record in zip(chunk, records, strict=True):
            if matches(item, record):
                kept_rows += len(item.digests)
                continue
            dropped += 1
            if first_bad is None:
                first_bad = item.wid  # from here on, wids are looked at again
            batch.delete(FAMILY, VECTOR.encode(item.wid))
            for digest in item.digests:
                batch.delete(FAMILY, CONTENT.encode(digest))
        if batch.mutations:
            store.commit(batch)
        chunk.clear()

    for item in scan(store):
        checked += 1
        chunk.append(item)
        if len(chunk) >= page:
            flush()
    flush()
    if dropped:
        cursor = int(st.get("cursor", 0))
        if first_bad is not None:
            cursor = min(cursor, first_bad - 1)
        batch = store.batch()
        put_state(batch, {**st, "cursor": cursor, "windows": checked - dropped, "rows": kept_rows})
        store.commit(batch)
    return {"checked": checked, "dropped": dropped}

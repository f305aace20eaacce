"""Vectors in RocksDB (family ``vectors``): per-window rows, a content table, a resumable cursor.

| layout | tag | fields -> value |
|---|---|---|
| ``vector`` | 0xE0 | wid -> :class:`WindowVectors` (identity of the window + one or more rows) |
| ``vector-content`` | 0xE1 | digest(model, text) -> one float16 row (texts embedded once) |
| ``vector-state`` | 0xE2 | ``"state"`` -> ``{"cursor", "done", "epoch", "model", "mode", ...}`` |

The state also holds ``windows``, ``rows``, ``rate`` (the handler's smoothed windows/s) and
``sweep`` (content entries may be unreferenced: sweep once every window is passed).

The content table is keyed by a digest of the exact text the model reads (clipped) and the
model identity (weights, token cap, clipping), so a text is embedded once however many windows
hold it, and the vectors of a window whose text did not change survive ``cw index rebuild``
(which renumbers windows). A window's record carries the identity of what was embedded (ordinal,
byte range), so rows left behind by a rebuild or a forget are detected and dropped
(:func:`validate`): a forgotten window's content entries go with it, a renumbered one's stay for
the handler to find again, and content no window references any more is swept once the handler
has passed every window (:func:`sweep`), so the table stays bounded by the live texts.

``done`` lists the wid ranges the handler has passed (inclusive, sorted, disjoint): it works
newest first, from the top of the highest gap down, so the ranges are few (a new one opens only
when windows are published above the others). A store written before this field has only
``cursor`` (every wid up to it passed): :func:`done_ranges` reads it as one range, so an old store
keeps its vectors and carries on. ``epoch`` changes whenever passed windows are taken back (a
clear, a validation that dropped rows), so an in-memory index knows to reload. Each batch of new
rows, their content entries and the new ranges commit in one WriteBatch: after a crash the work
resumes where it stopped, never with a gap. Rows are stored as float16 (half the bytes; cosine
error < 1e-3, below the int8 model's own).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cwcore.index import derived
from cwcore.index.derived import StoredWindow
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


Ranges = list[tuple[int, int]]


def done_ranges(st: dict[str, Any]) -> Ranges:
    """The wid ranges passed (inclusive, sorted, disjoint). A state of an older cw has only its
    ascending ``cursor``: everything up to it was passed."""
    if "done" in st:
        return [(int(lo), int(hi)) for lo, hi in st["done"]]
    cursor = int(st.get("cursor", 0))
    return [(1, cursor)] if cursor > 0 else []


def add_range(ranges: Ranges, lo: int, hi: int) -> Ranges:
    """``ranges`` with ``lo..hi`` added, merged with its neighbours."""
    out: Ranges = []
    for a, b in sorted([*ranges, (lo, hi)]):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def clip_ranges(ranges: Ranges, top: int) -> Ranges:
    """The part of ``ranges`` at or below wid ``top``."""
    return [(lo, min(hi, top)) for lo, hi in ranges if lo <= top]


def passed(ranges: Ranges, top: int) -> int:
    """How many wids at or below ``top`` the ranges cover."""
    return sum(hi - lo + 1 for lo, hi in clip_ranges(ranges, top))


#: More passed ranges than this and the handler fills the top gap from below (merging) instead
#: of opening another range above: the state record stays small whatever the publication pattern.
MAX_RANGES = 16


def next_chunk(ranges: Ranges, top: int, n: int) -> tuple[int, int] | None:
    """The next wids to pass (inclusive), at most ``n``: the top of the highest gap at or below
    ``top``, so the newest windows are embedded first; None when nothing below ``top`` is left."""
    ranges = clip_ranges(ranges, top)
    upper = top
    gap: tuple[int, int] | None = None
    for lo, hi in reversed(ranges):
        if hi < upper:
            gap = (hi + 1, upper)
            break
        upper = lo - 1
    if gap is None:
        if upper < 1:
            return None
        gap = (1, upper)
    lo, hi = gap
    opens_range = hi == top and not any(a == hi + 1 for a, _ in ranges)
    if opens_range and len(ranges) >= MAX_RANGES:
        return lo, min(hi, lo + n - 1)  # grow the range below instead of opening one
    return max(lo, hi - n + 1), hi


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


def scan(store: Store, after: int = 0, until: int | None = None) -> Iterator[WindowVectors]:
    """Every stored window's vectors with ``after < wid <= until``, in wid order."""
    if after + 1 >= 1 << 32:
        return
    for key, value in store.scan(FAMILY, VECTOR.prefix(), start=VECTOR.encode(after + 1)):
        wid = int(VECTOR.decode(key)[0])
        if until is not None and wid > until:
            return
        yield WindowVectors.unpack(wid, value)


def get(store: Store, wid: int) -> WindowVectors | None:
    raw = store.get(FAMILY, VECTOR.encode(wid))
    return None if raw is None else WindowVectors.unpack(wid, raw)


def matches(item: WindowVectors, record: StoredWindow | None) -> bool:
    """Whether stored vectors still describe the window record now at their wid."""
    return (
        record is not None
        and int(record["ordinal"]) == item.ordinal
        and int(record["byteStart"]) == item.byte_start
        and int(record["byteEnd"]) == item.byte_end
    )


def clear(store: Store, *, model: str | None, mode: str | None) -> None:
    """Drop every vector and the content table (a model or mode change); nothing passed."""
    epoch = int(state(store).get("epoch", 0)) + 1
    batch = store.batch()
    batch.delete_range(FAMILY, VECTOR.prefix(), CONTENT.prefix())
    batch.delete_range(FAMILY, CONTENT.prefix(), STATE.prefix())
    body = {"cursor": 0, "done": [], "epoch": epoch, "model": model, "mode": mode}
    put_state(batch, {**body, "windows": 0, "rows": 0})
    store.commit(batch)


def validate(store: Store, page: int = 4096) -> dict[str, int]:
    """Drop vectors whose window changed (rebuild) or vanished (forget); take back the passed
    wids from the first such window up, so they are looked at again (newest first).

    A forgotten document's windows lose their content entries too (a forget removes derived
    data). A renumbered window's content entries stay: when the handler reaches the window's
    new wid it finds its text's vector there and embeds nothing (``kept`` counts them); what no
    window claims again is dropped by :func:`sweep` once every window has been passed. Returns
    counts of what was checked, dropped and kept for reuse.
    """
    st = state(store)
    checked = dropped = kept_rows = reusable = 0
    first_bad: int | None = None
    chunk: list[WindowVectors] = []

    def flush() -> None:
        nonlocal dropped, first_bad, kept_rows, reusable
        if not chunk:
            return
        records = derived.window_records(store, [c.wid for c in chunk])
        stale = [
            item for item, record in zip(chunk, records, strict=True) if not matches(item, record)
        ]
        kept_rows += sum(len(c.digests) for c in chunk) - sum(len(c.digests) for c in stale)
        ordinals = sorted({item.ordinal for item in stale})
        live = store.get_many("ordinals", [keys.ORDINAL.encode(o) for o in ordinals])
        forgotten = {o for o, raw in zip(ordinals, live, strict=True) if raw is None}
        batch = store.batch()
        for item in stale:
            dropped += 1
            if first_bad is None:
                first_bad = item.wid  # from here on, wids are looked at again
            batch.delete(FAMILY, VECTOR.encode(item.wid))
            if item.ordinal in forgotten:
                for digest in item.digests:
                    batch.delete(FAMILY, CONTENT.encode(digest))
            else:
                reusable += len(item.digests)
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
        ranges = done_ranges(st)
        if first_bad is not None:
            ranges = clip_ranges(ranges, first_bad - 1)
        body = {
            **st,
            "cursor": ranges[-1][1] if ranges else 0,
            "done": [list(r) for r in ranges],
            "epoch": int(st.get("epoch", 0)) + 1,
            "windows": checked - dropped,
            "rows": kept_rows,
            "sweep": bool(st.get("sweep")) or reusable > 0,
        }
        batch = store.batch()
        put_state(batch, body)
        store.commit(batch)
    return {"checked": checked, "dropped": dropped, "kept": reusable}


def sweep(store: Store, page: int = 4096) -> int:
    """Drop content entries no stored window references (left by a rebuild's renumbering once
    the handler has passed every window again, or by forgotten duplicates); returns how many.

    Bounded memory: the referenced digests are held as one sorted array of 16-byte values
    (16 MB per million rows), the content table is read in key order."""
    refs = [d for item in scan(store) for d in item.digests]
    referenced = np.sort(np.array(refs, dtype="S16")) if refs else np.zeros(0, dtype="S16")
    removed = 0
    batch = store.batch()
    for key, _ in store.scan(FAMILY, CONTENT.prefix()):
        digest = key[-16:]  # the layout's one field: 16 raw bytes
        i = int(np.searchsorted(referenced, np.bytes_(digest)))
        # An S16 element drops trailing zero bytes when read back: pad before comparing.
        if i < len(referenced) and bytes(referenced[i]).ljust(16, b"\0") == digest:
            continue
        batch.delete(FAMILY, key)
        removed += 1
        if batch.mutations >= page:
            store.commit(batch)
            batch = store.batch()
    if batch.mutations:
        store.commit(batch)
    return removed

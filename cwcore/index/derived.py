"""Key layouts and records of the derived namespaces the indexer writes (rebuildable).

Windows get a global uint32 id (``wid``) in outbox order, so "``wid`` <= the published
generation's ``maxWid``" is exactly the set a search may see: everything staged for a later
generation stays invisible until that generation is published.

| family | layout | fields -> value |
|---|---|---|
| windows | ``window`` (0xA0) | wid -> window record (ordinal, document, offsets, keys) |
| windows | ``doc-windows`` (0xA1) | ordinal -> applied marker (wids, outcomes, generation) |
| exact | ``exact`` (0xA2) | digest(anchor), wid, char start -> anchor posting |
| relations | ``relation`` (0xA3) | relation, wid, char start -> span with byte coordinates |
| importance | ``importance`` (0xA4) | namespace ("v1"), ordinal -> prior |
| windows | ``session-wids`` (0xA5) | session, first wid -> window count (scope filters) |
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from typing import Any, NotRequired, TypedDict, cast

from cwcore.store import codec, keys
from cwcore.store.keys import digest16
from cwcore.store.rocks import Store

WINDOW = keys.WINDOW
DOC_WINDOWS = keys.DOC_WINDOWS
EXACT = keys.EXACT
RELATION = keys.RELATION
IMPORTANCE = keys.IMPORTANCE
SESSION_WIDS = keys.SESSION_WIDS  # session, first wid -> count

IMPORTANCE_NAMESPACE = "v1"
HANDLERS = ("exact", "bm25", "structural", "importance")

#: The ``index-state`` field saying every window of the index has its prose words' stem terms
#: (:mod:`cwcore.text.stems`): set when indexing starts from an empty index.
STEMS_KEY = "stems"

_F64 = struct.Struct(">d")
_SPAN = struct.Struct(">BIIII")  # kind code, char start, char end, byte start, byte end
ANCHOR_KINDS = ("error", "path", "symbol", "quoted", "commit", "flag", "value")


def stems_indexed(store: Store) -> bool:
    """Whether every window has stem terms: the index was built from empty by a version of cw
    that indexes them. An index begun before that has none until ``cw index rebuild``."""
    state = store.meta_get("index-state") or {}
    return bool(state.get(STEMS_KEY))


def pack_span(kind: str, start: int, end: int, byte_start: int, byte_end: int) -> bytes:
    """An exact posting's value: compact, since documents publish up to 1,000 of them."""
    return _SPAN.pack(ANCHOR_KINDS.index(kind), start, end, byte_start, byte_end)


def unpack_span(raw: bytes) -> tuple[str, int, int, int, int]:
    code, start, end, byte_start, byte_end = _SPAN.unpack(raw)
    return ANCHOR_KINDS[code], start, end, byte_start, byte_end


_U32 = struct.Struct(">I")


def pack_count(n: int) -> bytes:
    return _U32.pack(n)


def session_wid_ranges(store: Store, session: str) -> list[tuple[int, int]]:
    """``(first wid, count)`` of every indexed document version of a session (binary keys only:
    a scope filter reads no JSON)."""
    return sessions_wid_ranges(store, [session])


def sessions_wid_ranges(store: Store, sessions: list[str]) -> list[tuple[int, int]]:
    """:func:`session_wid_ranges` of each of ``sessions`` in turn, concatenated, read through
    one iterator."""
    out = []
    prefixes = [SESSION_WIDS.prefix(session) for session in sessions]
    for prefix, found in zip(prefixes, store.scan_prefixes("windows", prefixes), strict=True):
        size = len(prefix) + _U32.size  # the first wid is the key's last field: 4 bytes
        for key, value in found:
            first = (
                int.from_bytes(key[-4:], "big") if len(key) == size else SESSION_WIDS.decode(key)[1]
            )
            out.append((int(first), int(_U32.unpack(value)[0])))
    return out


def anchor_digest(value: str) -> bytes:
    """Exact anchors match case-sensitively: the digest is over the literal value."""
    return digest16("exact", value)


def pack_float(value: float) -> bytes:
    return _F64.pack(value)


def unpack_float(raw: bytes) -> float:
    return float(_F64.unpack(raw)[0])


class StoredWindow(TypedDict):
    """A search window's stored record (family ``windows``, key ``WINDOW`` wid), as the index
    worker writes it: its document version and index in it, its range as characters and as
    UTF-8 bytes of the document text, its postings keys, the filter fields copied from the
    manifest (so a search filters candidates without reading manifests), its turn, the digest
    of its text, and ``alias`` when it is another document's window reused."""

    ordinal: int
    documentId: str
    version: int
    index: int
    start: int
    end: int
    byteStart: int
    byteEnd: int
    keys: list[str]
    session: str
    project: str
    agent: str
    kind: str
    created: str
    turn: str | None
    textDigest: str
    alias: NotRequired[bool]


class HandlerCounts(TypedDict, total=False):
    """One index handler's outcomes over the live documents."""

    complete: int
    partial: int
    skipped: int


class Generation(TypedDict):
    """The published index generation (meta ``index-generation``): its number ``n``, the outbox
    ``cursor`` it covers, the highest visible window id, whether the view is complete, each
    handler's outcomes (None right after a rebuild queued everything), and once published its
    time and live document count."""

    n: int
    cursor: int
    maxWid: int
    complete: bool
    handlers: dict[str, HandlerCounts] | None
    published: NotRequired[str]
    documents: NotRequired[int]


def window_record(store: Store, wid: int) -> StoredWindow | None:
    raw = store.get("windows", WINDOW.encode(wid))
    return None if raw is None else cast(StoredWindow, codec.decode_record(raw, "window"))


def u32_keys(layout: keys.KeyLayout, values: Iterable[int]) -> list[bytes]:
    """``[layout.encode(v) for v in values]`` for a layout of one u32 field: its two head bytes
    and each value as 4 big-endian bytes, without the generic encoder's per-key checks (a
    search multi-gets a few hundred such keys)."""
    if layout.fields != ("u32",):
        raise ValueError(f"{layout.name} is not a one-u32 layout")
    head = bytes((layout.tag, layout.version))
    return [head + v.to_bytes(4, "big") for v in values]


def window_records(store: Store, wids: list[int]) -> list[StoredWindow | None]:
    raws = store.get_many("windows", u32_keys(WINDOW, wids))
    return [
        None if r is None else cast(StoredWindow, codec.decode_record(r, "window")) for r in raws
    ]


def marker(store: Store, ordinal: int) -> dict[str, Any] | None:
    raw = store.get("windows", DOC_WINDOWS.encode(ordinal))
    return None if raw is None else codec.decode_record(raw, "doc-windows")


def generation(store: Store) -> Generation:
    """The published index generation (``n`` 0 before the first publication)."""
    stored = cast("Generation | None", store.meta_get("index-generation"))
    return stored or {
        "n": 0,
        "cursor": 0,
        "maxWid": 0,
        "complete": True,
        "handlers": {h: {"complete": 0, "partial": 0, "skipped": 0} for h in HANDLERS},
    }

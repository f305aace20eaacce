"""Branch-isolated rows: the windows of a session's verified lineage, filtered before any limit.

Automatic retrieval may only return rows of the current session and its verified ancestors
(the archive holds every branch, automatic context only the current one), and the filters
apply *before* candidate limits so sibling rows cannot starve authorized hits.
:class:`RowCache` keeps, per session, the search windows of its
documents (wid, creation time, kind, message keys) — read from the session's membership records
and the indexer's per-document markers, never from a whole-archive scan — and refreshes them
incrementally when a new index generation is published. :func:`allowed_rows` turns the lineage's
rows into the sorted ``only`` array that BM25 and exact lookups are restricted to, after the
eligibility filters that need no text: source age, durable kinds and already-visible keys.

The cache is per open store and bounded (:data:`MAX_SESSIONS` sessions, least recently used
first out). A rebuild of the derived indexes replaces the posting index object, which drops the
cache (window ids are reassigned by a rebuild).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from cwcore.clock import parse_time
from cwcore.index import derived
from cwcore.store import codec, keys
from cwcore.store.rocks import Store

MAX_SESSIONS = 256
#: Kinds admitted manually or durable: never inserted automatically; explicit search finds them.
DURABLE_KINDS = frozenset({"note", "markdown", "decision"})
TOOL_KINDS = frozenset({"tool-result"})

U32 = npt.NDArray[np.uint32]


@dataclass
class SessionRows:
    """The indexed windows of one session's documents, in admission order."""

    session: str
    generation: int = -1
    last_ordinal: int = 0
    pending: list[int] = field(default_factory=list)
    wids: list[int] = field(default_factory=list)
    created: list[float] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)
    keys: list[frozenset[str]] = field(default_factory=list)
    _arrays: tuple[U32, npt.NDArray[np.float64], npt.NDArray[np.int8]] | None = None

    def arrays(self) -> tuple[U32, npt.NDArray[np.float64], npt.NDArray[np.int8]]:
        """``(wids, created epoch seconds, kind code)``; code 1 tool payload, 2 durable."""
        if self._arrays is None:
            codes = [2 if k in DURABLE_KINDS else 1 if k in TOOL_KINDS else 0 for k in self.kinds]
            self._arrays = (
                np.asarray(self.wids, dtype=np.uint32),
                np.asarray(self.created, dtype=np.float64),
                np.asarray(codes, dtype=np.int8),
            )
        return self._arrays


class RowCache:
    """Per-store cache of :class:`SessionRows`; thread-safe."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.index_ref: Any = None
        self.sessions: OrderedDict[str, SessionRows] = OrderedDict()

    def rows(self, store: Store, index: Any, session: str, generation: int) -> SessionRows:
        with self.lock:
            if self.index_ref is not index:
                self.sessions.clear()
                self.index_ref = index
            rows = self.sessions.get(session)
            if rows is None:
                rows = SessionRows(session)
                self.sessions[session] = rows
            self.sessions.move_to_end(session)
            while len(self.sessions) > MAX_SESSIONS:
                self.sessions.popitem(last=False)
            if rows.generation != generation:
                _refresh(store, rows)
                rows.generation = generation
            return rows


_CACHES: weakref.WeakKeyDictionary[Store, RowCache] = weakref.WeakKeyDictionary()
_CACHES_LOCK = threading.Lock()


def cache_for(store: Store) -> RowCache:
    with _CACHES_LOCK:
        cache = _CACHES.get(store)
        if cache is None:
            cache = _CACHES[store] = RowCache()
        return cache


def _refresh(store: Store, rows: SessionRows) -> None:
    """Read the session's documents admitted since the last refresh (and those not yet
    indexed then) and append their windows."""
    prefix = keys.SESSION_DOC.prefix(rows.session)
    start = None
    if rows.last_ordinal:
        start = keys.SESSION_DOC.encode(rows.session, rows.last_ordinal + 1)
    ordinals = list(rows.pending)
    for key, _ in store.scan("scopes", prefix, start=start):
        ordinal = int(keys.SESSION_DOC.decode(key)[1])
        ordinals.append(ordinal)
        rows.last_ordinal = max(rows.last_ordinal, ordinal)
    if not ordinals:
        return
    markers = store.get_many("windows", [derived.DOC_WINDOWS.encode(o) for o in ordinals])
    pending: list[int] = []
    wanted: list[int] = []
    for ordinal, raw in zip(ordinals, markers, strict=True):
        if raw is None:
            pending.append(ordinal)
            continue
        mark = codec.decode_record(raw, "doc-windows")
        if mark.get("forgotten"):
            continue
        first, n = int(mark["firstWid"]), int(mark["windows"])
        wanted.extend(range(first, first + n))
    rows.pending = pending[-10_000:]
    if not wanted:
        return
    for wid, record in zip(wanted, derived.window_records(store, wanted), strict=True):
        if record is None:
            continue
        rows.wids.append(wid)
        rows.created.append(parse_time(record["created"]).timestamp())
        rows.kinds.append(str(record["kind"]))
        rows.keys.append(frozenset(record["keys"]))
    rows._arrays = None


@dataclass
class Allowed:
    """The rows preflight may search, and how many each filter removed."""

    wids: U32
    branch: int = 0  # windows on the verified lineage
    stale: int = 0
    durable: int = 0
    visible: int = 0

    def ranges(self) -> list[tuple[int, int]]:
        """Contiguous ``[lo, hi]`` runs of the allowed wids."""
        out: list[tuple[int, int]] = []
        for wid in self.wids.tolist():
            if out and wid == out[-1][1] + 1:
                out[-1] = (out[-1][0], wid)
            else:
                out.append((wid, wid))
        return out


def allowed_rows(
    store: Store,
    index: Any,
    lineage: list[str],
    generation: int,
    *,
    now: float,
    conversation_max_s: float,
    tool_max_s: float,
    visible: frozenset[str],
) -> Allowed:
    """The sorted wids of ``lineage`` that pass age, kind and visibility filters."""
    cache = cache_for(store)
    parts: list[U32] = []
    counts = {"branch": 0, "stale": 0, "durable": 0, "visible": 0}
    for session in lineage:
        rows = cache.rows(store, index, session, generation)
        wids, created, codes = rows.arrays()
        if not len(wids):
            continue
        counts["branch"] += len(wids)
        durable = codes == 2
        limit = np.where(codes == 1, tool_max_s, conversation_max_s)
        stale = ~durable & (created < now - limit)
        keep = ~durable & ~stale
        counts["durable"] += int(durable.sum())
        counts["stale"] += int(stale.sum())
        if visible:
            seen = np.fromiter(
                (bool(k) and k <= visible for k in rows.keys), dtype=bool, count=len(rows.keys)
            )
            counts["visible"] += int((seen & keep).sum())
            keep &= ~seen
        parts.append(wids[keep])
    merged = np.unique(np.concatenate(parts)) if parts else np.empty(0, np.uint32)
    return Allowed(merged.astype(np.uint32, copy=False), **counts)


#: Above this many contiguous runs of allowed wids, an anchor's postings are scanned instead
#: of seeking each run.
MAX_SEEK_RUNS = 64
_WID = slice(18, 22)  # exact key: tag, version, 16-byte digest, u32 wid, u32 char start


def exact_wids(store: Store, value: str, allowed: Allowed, scan_limit: int = 2_048) -> list[int]:
    """Wids (newest first) holding the literal anchor ``value`` among the allowed rows.

    Complete whatever the anchor's frequency elsewhere (filters before limits): with few runs
    of allowed wids, each run is sought in the anchor's postings; otherwise the anchor's
    postings are read newest first and, when there are more than ``scan_limit`` of them, the
    lookup falls back to seeking every run, so other sessions can never hide the lineage's."""
    if not len(allowed.wids):
        return []
    digest = derived.anchor_digest(value)
    prefix = derived.EXACT.prefix(digest)
    ranges = allowed.ranges()
    if len(ranges) > MAX_SEEK_RUNS:
        found: list[int] = []
        complete = True
        for count, (key, _) in enumerate(store.scan("exact", prefix, reverse=True), start=1):
            if count > scan_limit:
                complete = False
                break
            found.append(int.from_bytes(key[_WID], "big"))
        if complete:
            wids = np.asarray(found, dtype=np.uint32)
            hit = wids[np.isin(wids, allowed.wids)]
            return list(dict.fromkeys(int(w) for w in hit))
    out: set[int] = set()
    for lo, hi in ranges:
        for key, _ in store.scan("exact", prefix, start=derived.EXACT.prefix(digest, lo)):
            wid = int.from_bytes(key[_WID], "big")
            if wid > hi:
                break
            out.add(wid)
    return sorted(out, reverse=True)

"""Cosine search over the stored window vectors, and the calibrated score.

:class:`SemanticIndex` searches the int8 matrix file (:mod:`cwcore.semantic.matrix`): a derived,
memory-mapped copy of the ``vectors`` family kept under the store folder, so a daemon restart
maps it instead of reading every vector again, and 1M rows cost 400 MB of file-backed pages, not
1.5 GB of anonymous memory. Rows are appended as the handler commits them
(:meth:`SemanticIndex.refresh`); the file is rebuilt (a new file swapped in atomically) when the
handler takes rows back. Rows of retired windows (tombstoned ordinals) are masked: every row when
the published generation changes (retirements publish one), and each appended row once.

A search is one compiled int8 dot product per row (or per row of ``only_wids``), the best
candidate rows re-scored from their canonical float16 rows in RocksDB, a per-window max over its
rows, and a sort: the results and cosines are those of an exact scan over the float16 rows (an
int8 error, about 1e-3 of cosine, can only matter for a row at the edge of the candidate set,
4× k rows). Measured in docs/semantic.md.

**Calibrated score.** Cosine is not a probability and is not comparable with BM25's score.
:func:`calibrate` is ``sigmoid(SLOPE × (cosine − MIDPOINT))``, a logistic fit of "the hit's session
is an evidence session" on the cosine of the semantic top-10 hits over the LongMemEval_S dev
questions. Fusion blends it with a semantic hit's rank, and memory ranking thresholds it. Search
presents another, flatter fit over all dev sets pooled
(:func:`cwcore.retrieve.semantic.confidence`): LongMemEval's session-level relevance is far more
lenient than the agent logs' line-level one, and the bands must hold on both.
"""

from __future__ import annotations

import contextlib
import math
import mmap
import threading
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from cwcore.index import derived
from cwcore.semantic import graph as vgraph
from cwcore.semantic import matrix as vmatrix
from cwcore.semantic import store as vstore
from cwcore.store import keys
from cwcore.store.rocks import Store

#: Logistic map cosine -> [0, 1]: fit on the 950 semantic top-10 hits of the 95 non-abstention
#: LongMemEval_S dev questions (make eval: eval/results/calibration.json, slope 10.4, midpoint
#: 0.279), rounded.
SLOPE = 10.3
MIDPOINT = 0.277


def calibrate(cosine: float | np.ndarray) -> Any:
    """The presented semantic score of a cosine (monotone, in (0, 1))."""
    if isinstance(cosine, np.ndarray):
        return 1.0 / (1.0 + np.exp(-SLOPE * (cosine.astype(np.float64) - MIDPOINT)))
    return 1.0 / (1.0 + math.exp(-SLOPE * (float(cosine) - MIDPOINT)))


def _minus(ranges: vstore.Ranges, loaded: vstore.Ranges) -> vstore.Ranges:
    """The parts of ``ranges`` not covered by ``loaded`` (both sorted, inclusive)."""
    out: vstore.Ranges = []
    for lo, hi in ranges:
        cur = lo
        for a, b in loaded:
            if b < cur or a > hi:
                continue
            if a > cur:
                out.append((cur, a - 1))
            cur = max(cur, b + 1)
        if cur <= hi:
            out.append((cur, hi))
    return out


class _Rows:
    """One store's matrix file and the in-memory columns beside it (wids, ordinals, scales,
    row index within the window, alive): 15 bytes a row of anonymous memory. Shared by every
    :class:`SemanticIndex` of the same store folder in a process (the file has one writer)."""

    def __init__(self, directory: Path) -> None:
        self.lock = threading.RLock()
        self.file = vmatrix.MatrixFile(directory)
        self.opened = False
        self.view: np.ndarray = np.zeros(0, vmatrix.RECORD)
        self._empty(0)
        self.done: vstore.Ranges = []  # the handler's passed wid ranges, loaded
        self.epoch = -1  # the handler's epoch at the last load (a change means reload)
        self.model: str | None = None
        self.mask_generation = -1
        self.masked_to = 0  # rows checked against the tombstones at ``mask_generation``
        self.graph: vgraph.Graph | None = None
        self.graph_stamp: tuple[int, int, str] | None = None  # graph.json's mtime, size; data

    def _empty(self, cap: int) -> None:
        """Fresh columns (never reused in place: a search may still read the old ones)."""
        self.wids = np.zeros(cap, np.uint32)
        self.ordinals = np.zeros(cap, np.uint32)
        self.scales = np.zeros(cap, np.float32)
        self.subs = np.zeros(cap, np.uint16)
        self.alive = np.zeros(cap, bool)
        self.size = 0

    def grow(self, extra: int) -> None:
        need = self.size + extra
        if need <= len(self.wids):
            return
        cap = max(need, int(len(self.wids) * 1.25) + 1024)
        for name in ("wids", "ordinals", "scales", "subs", "alive"):
            old = getattr(self, name)
            arr = np.zeros(cap, old.dtype)
            arr[: self.size] = old[: self.size]
            setattr(self, name, arr)

    def take(self, recs: np.ndarray) -> None:
        """Append the columns of ``recs`` (records already in the file at ``size``)."""
        n = len(recs)
        self.grow(n)
        pos = self.size
        self.wids[pos : pos + n] = recs["wid"]
        self.ordinals[pos : pos + n] = recs["ordinal"]
        self.scales[pos : pos + n] = recs["scale"]
        self.subs[pos : pos + n] = recs["sub"]
        self.alive[pos : pos + n] = True
        self.size = pos + n

    def open(self, model: str | None, epoch: int, done: vstore.Ranges) -> None:
        """Map the file left by an earlier run when it matches the handler's state (same model
        and epoch, ranges the handler still has); else start a new one (a rebuild)."""
        self.opened = True
        meta = self.file.read_meta()
        if (
            meta is not None
            and meta.get("model") == model
            and int(meta.get("epoch", -2)) == epoch
            and not _minus(meta["done"], done)
        ):
            view = self.file.adopt(meta)
            self._empty(int(meta["rows"]))
            for lo in range(0, len(view), 65536):
                self.take(view[lo : lo + 65536])
            self.view = view
            self.done = list(meta["done"])
            self.model, self.epoch = model, epoch
        else:
            self.restart(model, epoch)

    def restart(self, model: str | None, epoch: int) -> None:
        self.file.start(model, epoch)
        self._empty(0)
        self.view = np.zeros(0, vmatrix.RECORD)
        self.done = []
        self.mask_generation = -1
        self.masked_to = 0
        self.model, self.epoch = model, epoch

    def append(self, items: list[vstore.WindowVectors]) -> int:
        rows = [item.rows for item in items if len(item.digests)]
        if not rows:
            return 0
        counts = [len(item.digests) for item in items if len(item.digests)]
        kept = [item for item in items if len(item.digests)]
        recs = vmatrix.records(
            np.concatenate(rows),
            np.repeat([i.wid for i in kept], counts),
            np.repeat([i.ordinal for i in kept], counts),
            np.concatenate([np.arange(c) for c in counts]),
        )
        self.file.append(recs, self.size)
        self.take(recs)
        return len(recs)

    def commit(self, done: vstore.Ranges) -> None:
        self.file.commit(self.size, done)
        self.done = list(done)
        self.view = self.file.view()

    def current_graph(self, rows: int) -> vgraph.Graph | None:
        """The committed graph of the current data file when the matrix has enough rows for
        one and the graph covers no more than its ``rows`` (one ``stat`` of ``graph.json`` when
        nothing changed; the graph is opened again only when that file or the data file
        changes). Caller holds the lock."""
        meta = self.file.meta
        if rows < vgraph.GRAPH_MIN_ROWS or meta is None or meta.get("new"):
            return None
        try:
            st = (self.file.dir / vgraph.META).stat()
        except OSError:
            self.graph, self.graph_stamp = None, None
            return None
        data = str(meta["data"])
        stamp = (st.st_mtime_ns, st.st_size, data)
        if stamp != self.graph_stamp:
            self.graph, self.graph_stamp = vgraph.Graph.open(self.file.dir, data), stamp
        graph = self.graph
        return graph if graph is not None and graph.meta.rows <= rows else None

    def close_graph(self) -> None:
        self.graph, self.graph_stamp = None, None


#: Windows re-scored exactly beyond the k returned (their refined scores' error is about 5e-4).
MARGIN = 16
#: Rows asked of the graph (nearest by sign bits) per candidate row wanted (best by int8 score):
#: 3 kept the exact top 10 of every question at 190k, for 50 and for 120 windows
#: (docs/semantic.md).
GRAPH_FETCH = 3.0
#: More ordinals than this to check and the tombstones are scanned instead of point-read.
TOMBSTONE_SCAN_FROM = 4096

_SHARED: weakref.WeakValueDictionary[str, _Rows] = weakref.WeakValueDictionary()
_SHARED_LOCK = threading.Lock()


def _rows_of(store: Store) -> _Rows:
    directory = Path(store.path) / vmatrix.DIRNAME
    key = str(directory.resolve())
    with _SHARED_LOCK:
        rows = _SHARED.get(key)
        if rows is None:
            rows = _Rows(directory)
            _SHARED[key] = rows
        return rows


def _scan_rows(
    view: np.ndarray, scales: np.ndarray, select: np.ndarray, qi: np.ndarray, take: int
) -> np.ndarray | None:
    """The ``take`` selected rows (indices into ``view``) with the best int8 score, by a scan of
    every selected row; None when none is selected."""
    n = len(select)
    idx: np.ndarray | None = None
    if select.all():
        approx = vmatrix.dots(view["v"], qi) * scales
    else:
        idx = np.flatnonzero(select)
        if not len(idx):
            return None
        if len(idx) * 4 > n:  # most rows: one sequential scan, the rest masked out
            approx = (vmatrix.dots(view["v"], qi) * scales)[idx]
        else:  # a scope: gather its rows (a bounded copy) and scan them
            approx = vmatrix.dots(view["v"][idx], qi) * scales[idx]
    take = min(len(approx), take)
    if take < len(approx):
        top = np.argpartition(-approx, take - 1)[:take]
    else:
        top = np.arange(len(approx))
    return top if idx is None else idx[top]


class SemanticIndex:
    """Search over one store's window vectors through the int8 matrix file. Thread-safe;
    instances on the same store folder share the file and its columns."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._m = _rows_of(store)
        self.loaded = False

    @property
    def model(self) -> str | None:
        return self._m.model

    # -- loading ------------------------------------------------------------------------------

    def refresh(self) -> int:
        """Load rows committed since the last call (the first call maps the file an earlier
        run left, or builds it); returns rows added. Cheap when nothing changed (one state
        read). The handler works newest first, so new rows arrive below loaded ones: what is
        loaded is tracked as the handler's passed ranges, and only the ranges it has passed
        since are read. A model change or a new epoch (rows taken back) rebuilds the file."""
        st = vstore.state(self.store)
        done = vstore.done_ranges(st)
        epoch = int(st.get("epoch", 0))
        model = st.get("model")
        m = self._m
        with m.lock:
            if not m.opened:
                m.open(model, epoch, done)
            if model != m.model or epoch != m.epoch:
                m.restart(model, epoch)  # model change, clear or validation: rebuild
            added = 0
            if done != m.done:
                # Size the columns once from the handler's row count (no regrowth copies).
                m.grow(max(0, int(st.get("rows", 0)) - m.size))
                for lo, hi in _minus(done, m.done):
                    pending: list[vstore.WindowVectors] = []
                    for item in vstore.scan(self.store, lo - 1, hi):
                        pending.append(item)
                        if len(pending) >= 4096:
                            added += m.append(pending)
                            pending = []
                    added += m.append(pending)
                m.commit(done)
            self.loaded = True
            self._refresh_mask()
            return added

    def _refresh_mask(self) -> None:
        """Mask the rows of tombstoned ordinals. A new published generation (retirements publish
        one) rechecks every row; otherwise only the rows appended since the last check are
        checked, so a search after each embedding batch reads the new rows' tombstones, not
        every loaded ordinal's."""
        m = self._m
        gen = int(derived.generation(self.store).get("n", 0))
        start = 0 if gen != m.mask_generation else m.masked_to
        if start >= m.size:
            m.mask_generation = gen
            return
        rows = m.ordinals[start : m.size]
        ordinals = np.unique(rows)
        dead = self._tombstoned(ordinals)
        m.alive[start : m.size] = ~np.isin(rows, dead)
        m.mask_generation = gen
        m.masked_to = m.size

    def _tombstoned(self, ordinals: np.ndarray) -> np.ndarray:
        """Which of ``ordinals`` (sorted, unique) are retired. Many ordinals (a daemon's first
        search: every row) read the tombstones in one scan, as long as there are fewer of them
        than ordinals asked about (retirements are rare); a few ordinals (an embedding batch's)
        are point reads."""
        if len(ordinals) > TOMBSTONE_SCAN_FROM:
            found: list[int] = []
            for key, _ in self.store.scan("ordinals", keys.TOMBSTONE.prefix()):
                found.append(int(keys.TOMBSTONE.decode(key)[0]))
                if len(found) > len(ordinals):
                    break
            else:
                return np.intersect1d(ordinals, np.array(found, np.uint32))
        got = self.store.get_many("ordinals", [keys.TOMBSTONE.encode(int(o)) for o in ordinals])
        return np.array(
            [int(o) for o, t in zip(ordinals, got, strict=True) if t is not None], dtype=np.uint32
        )

    # -- search -------------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        return self._m.size

    def nbytes(self) -> int:
        """Anonymous memory held for the rows (the columns beside the file), in bytes."""
        m = self._m
        return int(sum(a.nbytes for a in (m.wids, m.ordinals, m.scales, m.subs, m.alive)))

    def drop_pages(self) -> None:
        """Drop the mapped matrix file's pages from this process's resident set
        (``MADV_DONTNEED`` on a read-only file mapping: the pages stay in the kernel's page cache
        and the next scan maps them back; nothing is lost). A no-op where the platform or the
        mapping does not allow it."""
        with self._m.lock:
            self._m.close_graph()  # unmapped; the next search maps it again
        base = getattr(self._m.view, "base", None)
        if isinstance(base, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):
            with contextlib.suppress(OSError, ValueError):  # closed, or refused by the platform
                base.madvise(mmap.MADV_DONTNEED)

    @property
    def directory(self) -> Path:
        """The folder of the matrix file and its graph."""
        return self._m.file.dir

    def graph_due(self) -> bool:
        """Whether a graph should be built for the matrix file now (:func:`vgraph.wanted`),
        after loading the rows committed since the last call."""
        self.refresh()
        return vgraph.wanted(self.rows, self.graph_rows())

    def graph_rows(self) -> int:
        """Rows the committed graph of the current matrix file covers (0: none)."""
        m = self._m
        with m.lock:
            meta = m.file.meta
            data = None if meta is None else meta.get("data")
        built = vgraph.read_meta(m.file.dir)
        return built.rows if built is not None and built.data == data else 0

    def file_bytes(self) -> int:
        """Bytes of the mapped matrix file's committed rows."""
        return int(self._m.size * vmatrix.RECORD.itemsize)

    def search(
        self,
        query_vector: np.ndarray,
        k: int,
        only_wids: np.ndarray | None = None,
        *,
        dead: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best windows by cosine: ``(wids uint32, cosines float32)``, best first.

        ``only_wids`` restricts the search to those windows; ``dead`` (wids) excludes more.
        A window with several rows (message mode) scores its best row. Rows committed since
        the last call are loaded first, and retired windows are masked. Cosines are computed
        from the stored float16 rows (the int8 file only chooses the candidates).
        """
        self.refresh()  # new rows, retirements: two point reads when nothing changed
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        m = self._m
        with m.lock:
            view = m.view
            n = min(m.size, len(view))  # rows not committed to the file (a failed write): unused
            wids = m.wids[:n]
            scales = m.scales[:n]
            select = m.alive[:n].copy()
            graph = m.current_graph(n)
        if only_wids is not None:
            select &= np.isin(wids, np.asarray(only_wids, dtype=np.uint32))
        if dead is not None and len(dead):
            select &= ~np.isin(wids, np.asarray(dead, dtype=np.uint32))
        none = np.zeros(0, np.uint32), np.zeros(0, np.float32)
        if k <= 0 or not n:
            return none
        peak = float(np.abs(q).max()) if len(q) else 0.0
        qscale = peak / 127.0 if peak > 0 else 1.0
        qi = np.clip(np.rint(q / qscale), -127, 127).astype(np.int8)
        # Candidates in three steps, each on fewer rows: the int8 score (row and query
        # quantized, error about 1e-3 of cosine) picks 4k rows — from every row, or from the
        # graph's nearest rows and the rows committed after it; their int8 rows times the float
        # query (half the error) pick k + MARGIN windows; those windows' float16 rows in
        # RocksDB give the exact cosines (a window's best row's) that rank and score the k
        # returned.
        take = max(k * 4, k + 16)
        rows = self._graph_rows(graph, view, scales, select, qi, take) if graph else None
        if rows is None:
            rows = _scan_rows(view, scales, select, qi, take)
            if rows is None:
                return none
        refined = (view["v"][rows].astype(np.float32) @ q) * scales[rows]
        best: dict[int, int] = {}  # wid -> its best candidate row, best windows first
        for i in np.argsort(-refined, kind="stable"):
            w = int(wids[rows[i]])
            if w not in best:
                best[w] = int(rows[i])
                if len(best) >= k + MARGIN:
                    break
        chosen = np.array(list(best.values()), dtype=np.int64)
        exact = self._exact(wids[chosen], q)
        order = [i for i in np.argsort(-exact, kind="stable") if np.isfinite(exact[i])][:k]
        return (
            wids[chosen[order]].astype(np.uint32),
            exact[order].astype(np.float32),
        )

    @staticmethod
    def _graph_rows(
        graph: vgraph.Graph,
        view: np.ndarray,
        scales: np.ndarray,
        select: np.ndarray,
        qi: np.ndarray,
        take: int,
    ) -> np.ndarray | None:
        """Up to ``take`` candidate rows from the graph's nearest selected rows and an exact
        scan of the rows committed after the graph was built; None when the search should scan
        every row instead: a scope of under a quarter of the rows (gathering them is cheaper
        and exact), or a selection that hides so many of the graph's nearest rows that fewer
        than ``take`` are left while more exist."""
        n = len(select)
        covered = graph.meta.rows
        if int(np.count_nonzero(select)) * 4 <= n:
            return None
        shown = int(np.count_nonzero(select[:covered]))
        # Ask for more rows than wanted (the graph's nearest are approximate), and for enough
        # that ``take`` remain once the hidden ones are dropped.
        count = math.ceil(take * GRAPH_FETCH * covered / max(shown, 1))
        found = graph.search(qi, count)
        found = found[select[found]]
        if len(found) < min(take, shown):
            return None
        if len(found) > take:  # the best by int8 score
            approx = vmatrix.dots(view["v"][found], qi) * scales[found]
            found = found[np.argpartition(-approx, take - 1)[:take]]
        if covered >= n:
            return found
        tail = _scan_rows(view[covered:n], scales[covered:n], select[covered:n], qi, take)
        if tail is None:
            return found
        return np.concatenate([found, tail + covered])

    def _exact(self, wids: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Each window's cosine, its best row's, from its canonical float16 rows (-inf for a
        window no longer stored: a validation dropped it meanwhile)."""
        raws = self.store.get_many(vstore.FAMILY, [vstore.VECTOR.encode(int(w)) for w in wids])
        out = np.full(len(wids), -np.inf, np.float32)
        for i, (w, raw) in enumerate(zip(wids, raws, strict=True)):
            if raw is not None:
                block = vstore.WindowVectors.unpack(int(w), raw).rows
                if len(block):
                    out[i] = float((block.astype(np.float32) @ q).max())
        return out

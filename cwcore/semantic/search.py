"""Brute-force cosine search over the stored window vectors, and the calibrated score.

:class:`SemanticIndex` loads the ``vectors`` family lazily into one matrix (float32 by default,
float16 with ``dtype=np.float16`` to halve RSS; see docs/semantic.md for both measured), keeps a
parallel array of each row's wid, and appends new rows as the handler commits them
(:meth:`SemanticIndex.refresh`). Rows of retired windows (tombstoned ordinals) are masked:
every row when the published generation changes (retirements publish one), and each appended
row once. A search is
one matrix-vector product over the rows (or over the rows of ``only_wids``), a per-window max
over its rows, and a partial sort.

**Calibrated score.** Cosine is not a probability and is not comparable with BM25's score.
:func:`calibrate` is ``sigmoid(SLOPE × (cosine − MIDPOINT))``, a logistic fit of "the hit's session
is an evidence session" on the cosine of the semantic top-10 hits over the LongMemEval_S dev
questions. Fusion blends it with a semantic hit's rank, and memory ranking thresholds it. Search
presents another, flatter fit over all dev sets pooled
(:func:`cwcore.retrieve.semantic.confidence`): LongMemEval's session-level relevance is far more
lenient than the agent logs' line-level one, and the bands must hold on both.
"""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from cwcore.index import derived
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


class SemanticIndex:
    """The in-memory matrix of one store's window vectors. Thread-safe."""

    def __init__(self, store: Store, *, dtype: Any = np.float32) -> None:
        self.store = store
        self.dtype = np.dtype(dtype)
        self._lock = threading.RLock()
        self._matrix = np.zeros((0, vstore.DIM), dtype=self.dtype)
        self._wids = np.zeros(0, dtype=np.uint32)
        self._ordinals = np.zeros(0, dtype=np.uint32)
        self._alive = np.zeros(0, dtype=bool)
        self._size = 0
        self._done: vstore.Ranges = []  # the handler's passed wid ranges, loaded
        self._epoch = -1  # the handler's epoch at the last load (a change means reload)
        self._mask_generation = -1
        self._masked_to = 0  # rows checked against the tombstones at ``_mask_generation``
        self.model: str | None = None
        self.loaded = False

    # -- loading ------------------------------------------------------------------------------

    def _grow(self, extra: int) -> None:
        need = self._size + extra
        if need <= len(self._matrix):
            return
        cap = max(need, int(len(self._matrix) * 1.25) + 1024)
        matrix = np.zeros((cap, vstore.DIM), dtype=self.dtype)
        matrix[: self._size] = self._matrix[: self._size]
        self._matrix = matrix
        for name in ("_wids", "_ordinals"):
            arr = np.zeros(cap, dtype=np.uint32)
            arr[: self._size] = getattr(self, name)[: self._size]
            setattr(self, name, arr)
        alive = np.zeros(cap, dtype=bool)
        alive[: self._size] = self._alive[: self._size]
        self._alive = alive

    def refresh(self) -> int:
        """Load rows committed since the last call (all of them the first time); returns rows
        added. Cheap when nothing changed (one state read). The handler works newest first, so
        new rows arrive below loaded ones: what is loaded is tracked as the handler's passed
        ranges, and only the ranges it has passed since are read."""
        st = vstore.state(self.store)
        done = vstore.done_ranges(st)
        epoch = int(st.get("epoch", 0))
        with self._lock:
            if st.get("model") != self.model or epoch != self._epoch:
                self._reset(st.get("model"))  # model change, clear or validation: reload
                self._epoch = epoch
            added = 0
            if done != self._done:
                # Size the matrix once from the handler's row count (no regrowth copies).
                self._grow(max(0, int(st.get("rows", 0)) - self._size))
                for lo, hi in _minus(done, self._done):
                    pending: list[vstore.WindowVectors] = []
                    for item in vstore.scan(self.store, lo - 1, hi):
                        pending.append(item)
                        if len(pending) >= 4096:
                            added += self._append(pending)
                            pending = []
                    added += self._append(pending)
                self._done = done
            self.loaded = True
            self._refresh_mask()
            return added

    def _reset(self, model: str | None) -> None:
        self._size = 0
        self._done = []
        self._mask_generation = -1
        self._masked_to = 0
        self.model = model

    def _append(self, items: list[vstore.WindowVectors]) -> int:
        rows = sum(len(i.digests) for i in items)
        if not items:
            return 0
        self._grow(rows)
        pos = self._size
        for item in items:
            n = len(item.digests)
            if n:
                self._matrix[pos : pos + n] = item.rows
                self._wids[pos : pos + n] = item.wid
                self._ordinals[pos : pos + n] = item.ordinal
                self._alive[pos : pos + n] = True
                pos += n
        self._size = pos  # the new rows' tombstones are checked by the next _refresh_mask
        return rows

    def _refresh_mask(self) -> None:
        """Mask the rows of tombstoned ordinals. A new published generation (retirements publish
        one) rechecks every row; otherwise only the rows appended since the last check are
        checked, so a search after each embedding batch reads the new rows' tombstones, not
        every loaded ordinal's."""
        gen = int(derived.generation(self.store).get("n", 0))
        start = 0 if gen != self._mask_generation else self._masked_to
        if start >= self._size:
            self._mask_generation = gen
            return
        rows = self._ordinals[start : self._size]
        ordinals = np.unique(rows)
        found = self.store.get_many("ordinals", [keys.TOMBSTONE.encode(int(o)) for o in ordinals])
        dead = np.array(
            [int(o) for o, t in zip(ordinals, found, strict=True) if t is not None], dtype=np.uint32
        )
        self._alive[start : self._size] = ~np.isin(rows, dead)
        self._mask_generation = gen
        self._masked_to = self._size

    # -- search -------------------------------------------------------------------------------

    @property
    def rows(self) -> int:
        return self._size

    def nbytes(self) -> int:
        return int(self._matrix.nbytes + self._wids.nbytes + self._ordinals.nbytes)

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
        the last call are loaded first, and retired windows are masked.
        """
        self.refresh()  # new rows, retirements: two point reads when nothing changed
        q = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        with self._lock:
            n = self._size
            wids = self._wids[:n]
            select = self._alive[:n].copy()
            if only_wids is not None:
                select &= np.isin(wids, np.asarray(only_wids, dtype=np.uint32))
            if dead is not None and len(dead):
                select &= ~np.isin(wids, np.asarray(dead, dtype=np.uint32))
            if select.all():
                idx = None
                sims = self._matrix[:n] @ q.astype(self.dtype)
            else:
                idx = np.flatnonzero(select)
                if not len(idx):
                    return np.zeros(0, np.uint32), np.zeros(0, np.float32)
                sims = self._matrix[idx] @ q.astype(self.dtype)
            row_wids = wids if idx is None else wids[idx]
        sims = sims.astype(np.float32, copy=False)
        if k <= 0 or not len(sims):
            return np.zeros(0, np.uint32), np.zeros(0, np.float32)
        # Best row per window: take more rows than k, then dedupe by wid.
        take = min(len(sims), max(k * 4, k + 16))
        top = np.argpartition(-sims, take - 1)[:take] if take < len(sims) else np.arange(len(sims))
        top = top[np.argsort(-sims[top], kind="stable")]
        out_w: list[int] = []
        out_s: list[float] = []
        seen: set[int] = set()
        for i in top:
            w = int(row_wids[i])
            if w in seen:
                continue
            seen.add(w)
            out_w.append(w)
            out_s.append(float(sims[i]))
            if len(out_w) >= k:
                break
        return np.array(out_w, dtype=np.uint32), np.array(out_s, dtype=np.float32)

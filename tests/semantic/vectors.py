"""Stored window vectors for the matrix and graph tests: random unit rows committed as the
semantic handler commits them, and the exact float32 scan the searches are checked against."""

from __future__ import annotations

import gc

import numpy as np

from cwcore.semantic import search as vsearch
from cwcore.semantic import store as vstore
from cwcore.store.rocks import Store


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    x = rng.standard_normal((n, vstore.DIM)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def fill(
    store: Store,
    lo: int,
    hi: int,
    seed: int,
    *,
    rows_per: int = 1,
    epoch: int = 0,
    vectors: np.ndarray | None = None,
) -> None:
    """Windows ``lo..hi`` with random unit rows (or ``vectors``' rows, ``rows_per`` a window, in
    order), committed as the handler would (passed ranges merged into the state)."""
    rng = np.random.default_rng(seed)
    st_ = vstore.state(store)
    if vectors is not None:
        given = iter(np.asarray(vectors, np.float32).reshape(-1, rows_per, vstore.DIM))
    items = [
        vstore.WindowVectors(
            w,
            w,
            0,
            100,
            [bytes(16)] * rows_per,
            (unit(rng, rows_per) if vectors is None else next(given)).astype(np.float16),
        )
        for w in range(lo, hi + 1)
    ]
    done = vstore.add_range(vstore.done_ranges(st_), lo, hi)
    body = {
        **st_,
        "model": "test",
        "mode": "window",
        "epoch": epoch,
        "cursor": done[-1][1],
        "done": [list(r) for r in done],
        "windows": int(st_.get("windows", 0)) + len(items),
        "rows": int(st_.get("rows", 0)) + len(items) * rows_per,
    }
    vstore.commit_windows(store, items, body)


def exact(store: Store, q: np.ndarray, k: int, only: set[int] | None = None):
    """The reference: every stored row as float32, best row per window, top k."""
    best: dict[int, float] = {}
    for item in vstore.scan(store):
        if only is not None and item.wid not in only:
            continue
        for row in item.rows.astype(np.float32):
            best[item.wid] = max(best.get(item.wid, -2.0), float(row @ q))
    ranked = sorted(best.items(), key=lambda kv: -kv[1])[:k]
    return [w for w, _ in ranked], np.array([s for _, s in ranked], np.float32)


def forget_shared() -> None:
    """What a new process sees: no index of this store in memory."""
    gc.collect()
    vsearch._SHARED.clear()

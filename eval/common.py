"""What every evaluation set shares: logging, the fixed clock, the run's retrieval parameters
(:func:`open_archive`), embedding a store's windows (vectors cached by content digest in
``eval/.cache/``), cw's semantic mode on its own, band statistics and latency percentiles."""

from __future__ import annotations

import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent
CACHE = ROOT / ".cache"
RESULTS = ROOT / "results"
#: Every set runs at this instant, so recency and age limits never depend on the day it ran.
NOW = "2026-11-20T12:00:00Z"
#: The run's retrieval parameters (``--param NAME=VALUE``, a
#: :class:`cwcore.retrieve.params.RetrievalParams`); None: the shipped defaults.
PARAMS: Any = None


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def fix_clock() -> None:
    os.environ.setdefault("CW_NOW", NOW)


def open_archive(home: Path) -> Any:
    """An embedded archive at ``home`` whose explicit searches use the run's :data:`PARAMS`
    (set on its engine's search context; without ``--param`` the context is left as the engine
    builds it)."""
    from cwcore.api import Archive

    archive = Archive.open(home, embedded=True)
    if PARAMS is not None:
        archive.engine.search_context().params = PARAMS
    return archive


def vector_cache() -> Any:
    from eval.cache import SqliteVectorCache

    return SqliteVectorCache(CACHE / "vectors.sqlite")


#: An offline eval waits for each embedding batch as long as it takes: the daemon's 300 s bound
#: on one batch is a liveness check, and under load 16 a 256-window batch ran past it and ended
#: a LongMemEval run.
EMBED_TIMEOUT_S = 24 * 3600.0


def embed_all(engine: Any, cache: Any, mode: str | None = None) -> dict[str, Any]:
    """Run cw's semantic index handler until every published window has its vectors."""
    from cwcore.semantic.embedder import Embedder
    from cwcore.semantic.index import DEFAULT_MODE, embed_pending, prepare, status

    mode = mode or DEFAULT_MODE
    embedder = Embedder.for_home(engine.home, background=False)
    prepare(engine.store, embedder, mode)
    started = last = time.perf_counter()
    done = 0
    while True:
        n = embed_pending(
            engine.store,
            engine.reader,
            256,
            embedder=embedder,
            mode=mode,
            cache=cache,
            timeout=EMBED_TIMEOUT_S,
        )
        if n == 0:
            break
        done += n
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            st = status(engine.store)
            log(f"embedding ({mode}): {st.cursor}/{st.max_wid} windows")
    return {
        "mode": mode,
        "windows": done,
        "computed": embedder.computed,
        "seconds": round(time.perf_counter() - started, 1),
        "model": embedder.model_id,
    }


class SemanticOnly:
    """cw's semantic mode alone: the query embedding against the window vectors, one hit (the
    best window) per document, the window's calibrated cosine as its score."""

    def __init__(self, engine: Any) -> None:
        from cwcore.semantic.embedder import Embedder
        from cwcore.semantic.search import SemanticIndex

        self.index = SemanticIndex(engine.store)
        self.index.refresh()
        self.embedder = Embedder.for_home(engine.home)
        self.store = engine.store

    def search(self, query: str, k: int, only_wids: np.ndarray | None = None) -> list[int]:
        """Best window ids, one per document."""
        return [w for w, _ in self.search_scored(query, k, only_wids)]

    def search_scored(
        self, query: str, k: int, only_wids: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """``(window id, cosine)`` of the best window of each of the ``k`` best documents."""
        from cwcore.index import derived

        qvec = self.embedder.embed_query(query)
        wids, cosines = self.index.search(qvec, 8 * k, only_wids)
        out: list[tuple[int, float]] = []
        docs: set[str] = set()
        records = derived.window_records(self.store, [int(w) for w in wids])
        for wid, cos, rec in zip(wids, cosines, records, strict=True):
            if rec is None or rec["documentId"] in docs:
                continue
            docs.add(rec["documentId"])
            out.append((int(wid), float(cos)))
            if len(out) >= k:
                break
        return out


def fit_logistic(xs: list[float], ys: list[int]) -> dict[str, float]:
    """P(relevant | x) = sigmoid(slope · (x − midpoint)), fit by Newton's method."""
    x = np.array(xs, dtype=np.float64)
    y = np.array(ys, dtype=np.float64)
    w = np.zeros(2)
    design = np.stack([x, np.ones_like(x)], axis=1)
    for _ in range(50):
        p = 1 / (1 + np.exp(-(design @ w)))
        grad = design.T @ (y - p)
        hess = design.T @ (design * (p * (1 - p))[:, None]) + 1e-6 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w += step
        if np.abs(step).max() < 1e-8:
            break
    a, b = float(w[0]), float(w[1])
    return {"slope": round(a, 3), "midpoint": round(-b / a, 4) if a else float("nan"), "n": len(xs)}


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    if not ordered:
        return {}
    return {
        "p50_ms": round(statistics.median(ordered), 2),
        "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
    }


class BandStats:
    """Per band: hits seen in the top 10 and how many were relevant (the band's precision),
    for each system and, under ``<system>/<mode>``, for each mode (exact, structural,
    lexical, semantic) of the hits."""

    def __init__(self) -> None:
        self.cells: dict[str, dict[str, list[int]]] = defaultdict(
            lambda: defaultdict(lambda: [0, 0])
        )

    def add(self, system: str, band: str, relevant: bool, match_type: str = "") -> None:
        names = [system]
        if match_type:
            names.append(f"{system}/{match_type.split('-')[0]}")
        for name in names:
            cell = self.cells[name][band]
            cell[0] += 1
            cell[1] += int(relevant)

    def to_json(self) -> dict[str, Any]:
        return {
            system: {
                band: {"hits": c[0], "relevant": c[1], "precision": round(c[1] / c[0], 3)}
                for band, c in sorted(cells.items())
                if c[0]
            }
            for system, cells in self.cells.items()
        }


def trigger_of(resp: Any) -> dict[str, Any]:
    """What a cw search answer says about the ``auto`` semantic rescue: ``fired`` (the
    semantic mode ran: ``semantic_search_used``) and ``trigger``, the first lexical pass's
    evidence (``stages.semantic.trigger``; absent when the semantic stage was not reached)."""
    sem = (resp.stages or {}).get("semantic") or {}
    return {"fired": bool(resp.semantic_search_used), "trigger": sem.get("trigger")}


def rescue_rates(per_q: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    """How often the semantic mode ran, per cw system, overall and per query kind:
    ``{"overall": {system: {"fired": n, "of": N, "rate": r}}, "by_kind": {kind: {...}}}``."""

    def rate(rows: list[dict[str, Any]], system: str) -> dict[str, Any] | None:
        seen = [r["rescue"][system]["fired"] for r in rows if system in r.get("rescue", {})]
        if not seen:
            return None
        fired = sum(seen)
        return {"fired": fired, "of": len(seen), "rate": round(fired / len(seen), 3)}

    kinds = sorted({r["kind"] for r in per_q})
    overall = {s: v for s in systems if (v := rate(per_q, s)) is not None}
    by_kind = {
        k: {s: v for s in systems if (v := rate([r for r in per_q if r["kind"] == k], s))}
        for k in kinds
    }
    return {"overall": overall, "by_kind": by_kind}

"""Semantic tier: embedding throughput, and the vector index's memory and search latency.

* Embedding throughput of the real MiniLM (int8 ONNX, 256-token cap) on distinct texts: short
  (about 12 words, a typical user message) and window-length (about 300 words: truncated to the
  model's 256 tokens, as every full window is).
* The :class:`SemanticIndex` (int8 matrix file, memory-mapped; cosines re-scored from the
  stored float16 rows) over synthetic unit vectors written through the vectors family, at 50k,
  200k and 1M windows (random vectors: labelled synthetic): the file's build and its reopen
  (what a daemon restart does), anonymous memory (``RssAnon``) before and after loading and
  after the searches, search p50/p95 unscoped and within a 5,000-window scope, recall@10
  against an exact float32 scan of the same rows, and beside it the former design (one float32
  matrix in memory, one matrix-vector product). End to end with the query embedding at 50k.
  Target: p50 <= 150 ms end to end; anonymous memory bounded whatever the number of rows.
"""

from __future__ import annotations

import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import percentiles, print_table, write_result

VECTORS = 50_000
SIZES = (50_000, 200_000, 1_000_000)
QUERIES = 100
RECALL_QUERIES = 100
WORDS = [
    "the",
    "build",
    "failed",
    "because",
    "database",
    "locked",
    "migration",
    "index",
    "config",
    "parser",
    "token",
    "error",
    "value",
    "session",
    "window",
    "search",
    "memory",
    "daemon",
    "socket",
    "retry",
    "timeout",
    "cache",
    "vector",
    "model",
    "query",
    "answer",
    "decision",
    "branch",
    "commit",
    "merge",
    "review",
    "test",
    "suite",
    "fixture",
    "import",
    "export",
    "format",
    "schema",
    "table",
]


def _texts(n: int, words: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(words)) + f" #{seed}-{i}" for i in range(n)]


def throughput(home: Path) -> dict[str, Any]:
    from cwcore.semantic.embedder import Embedder

    embedder = Embedder.for_home(home)
    started = time.perf_counter()
    embedder.load()
    load_s = time.perf_counter() - started
    out: dict[str, Any] = {"load_s": round(load_s, 2)}
    for name, n, words in (("short", 128, 12), ("window", 32, 300)):
        texts = _texts(n, words, seed=words)
        started = time.perf_counter()
        embedder.embed(texts)
        seconds = time.perf_counter() - started
        out[name] = {"texts": n, "words": words, "texts_per_s": round(n / seconds, 1)}
    samples = []
    for i, text in enumerate(_texts(30, 8, seed=99)):
        started = time.perf_counter()
        embedder.embed_query(text + str(i))
        samples.append((time.perf_counter() - started) * 1000)
    out["query_embed"] = percentiles(samples)
    embedder.close()
    return out


CHUNK = 5000


def _rss_anon_mb() -> float:
    """Anonymous resident memory of this process (mapped file pages excluded), MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _chunks(n: int) -> Any:
    """The synthetic rows, chunk by chunk, as stored (float16), seeded: the same every run."""
    from cwcore.semantic import store as vstore

    rng = np.random.default_rng(7)
    for lo in range(1, n + 1, CHUNK):
        hi = min(n, lo + CHUNK - 1)
        rows = rng.standard_normal((hi - lo + 1, vstore.DIM)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        yield lo, hi, rows.astype(np.float16)


def _fill(store: Any, n: int) -> None:
    from cwcore.semantic import store as vstore

    st: dict[str, Any] = {"cursor": 0, "model": "bench", "mode": "window", "windows": 0}
    for lo, hi, rows in _chunks(n):
        items = [
            vstore.WindowVectors(w, w // 2 + 1, 0, 100, [bytes(16)], rows[w - lo : w - lo + 1])
            for w in range(lo, hi + 1)
        ]
        st = {**st, "cursor": hi, "done": [[1, hi]], "windows": hi, "rows": hi}
        vstore.commit_windows(store, items, st)


def _exact_top(n: int, queries: np.ndarray, k: int) -> list[set[int]]:
    """Top-k wids of each query by an exact float32 scan of the stored rows (chunked)."""
    best = np.zeros((len(queries), 0), np.float32)
    ids = np.zeros((len(queries), 0), np.int64)
    for lo, _hi, rows in _chunks(n):
        sims = queries @ rows.astype(np.float32).T  # (queries, chunk)
        wids = np.broadcast_to(np.arange(lo, lo + len(rows)), sims.shape)
        best = np.concatenate([best, sims], axis=1)
        ids = np.concatenate([ids, wids], axis=1)
        keep = np.argsort(-best, axis=1)[:, :k]
        best = np.take_along_axis(best, keep, axis=1)
        ids = np.take_along_axis(ids, keep, axis=1)
    return [{int(w) for w in row} for row in ids]


def _float32_in_memory(n: int, queries: np.ndarray) -> dict[str, Any]:
    """The former design: every row in one float32 matrix (anonymous memory), one gemv."""
    before = _rss_anon_mb()
    matrix = np.empty((n, 384), np.float32)
    for lo, hi, rows in _chunks(n):
        matrix[lo - 1 : hi] = rows
    anon = _rss_anon_mb() - before
    samples = []
    for q in queries:
        t = time.perf_counter()
        sims = matrix @ q
        np.argpartition(-sims, 199)[:200]
        samples.append((time.perf_counter() - t) * 1000)
    del matrix
    return {"anon_mb": round(anon, 1), "scan": percentiles(samples)}


def index_bench(home: Path, n: int, *, e2e: bool = False) -> dict[str, Any]:
    import gc

    from cwcore.semantic import search as vsearch
    from cwcore.semantic.search import SemanticIndex
    from cwcore.store.rocks import Store

    out: dict[str, Any] = {"vectors": n, "synthetic": True}
    rng = np.random.default_rng(11)
    queries = rng.standard_normal((QUERIES, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scope = np.sort(rng.choice(np.arange(1, n + 1), 5000, replace=False)).astype(np.uint32)
    store = Store(home / f"store-{n}")
    try:
        started = time.perf_counter()
        _fill(store, n)
        out["fill_s"] = round(time.perf_counter() - started, 1)
        anon0 = _rss_anon_mb()
        started = time.perf_counter()
        index = SemanticIndex(store)
        index.refresh()
        out["build_s"] = round(time.perf_counter() - started, 2)
        out["anon_mb_after_build"] = round(_rss_anon_mb() - anon0, 1)
        # What a daemon restart does: map the file the last run left.
        del index
        gc.collect()
        vsearch._SHARED.clear()
        anon1 = _rss_anon_mb()
        started = time.perf_counter()
        index = SemanticIndex(store)
        index.refresh()
        out["open_s"] = round(time.perf_counter() - started, 3)
        out["anon_mb_before_load"] = round(anon1, 1)
        out["anon_mb_after_load"] = round(_rss_anon_mb(), 1)
        out["anon_mb_columns"] = round(index.nbytes() / 1e6, 1)
        out["file_mb"] = round(index.file_bytes() / 1e6, 1)
        full, scoped, found = [], [], []
        for q in queries:
            t = time.perf_counter()
            wids, _ = index.search(q, 50)
            full.append((time.perf_counter() - t) * 1000)
            found.append({int(w) for w in wids[:10]})
            t = time.perf_counter()
            index.search(q, 50, scope)
            scoped.append((time.perf_counter() - t) * 1000)
        out["anon_mb_after_searches"] = round(_rss_anon_mb(), 1)
        out["search"] = percentiles(full)
        out["search_5k_scope"] = percentiles(scoped)
        truth = _exact_top(n, queries[:RECALL_QUERIES], 10)
        out["recall_at_10"] = round(
            float(np.mean([len(a & b) / 10 for a, b in zip(found, truth, strict=False)])), 4
        )
        out["float32_in_memory"] = _float32_in_memory(n, queries[:30])
        if e2e:
            from cwcore.semantic.embedder import Embedder

            embedder = Embedder.for_home(home)
            embedder.load()
            samples = []
            for i, text in enumerate(_texts(QUERIES, 10, seed=5)):
                t = time.perf_counter()
                index.search(embedder.embed_query(text + str(i)), 50)
                samples.append((time.perf_counter() - t) * 1000)
            out["end_to_end"] = percentiles(samples)
            embedder.close()
        del index
        gc.collect()
        vsearch._SHARED.clear()
    finally:
        store.close()
    return out


def run(quick: bool = False) -> dict[str, Any]:
    sizes = (VECTORS,) if quick else SIZES
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="cw-bench-semantic-") as tmp:
        home = Path(tmp)
        tp = throughput(home)
        ix = {str(n): index_bench(home, n, e2e=n == VECTORS) for n in sizes}
    load = [round(x, 2) for x in (*load_before, *os.getloadavg())]
    body = {"throughput": tp, "index": ix, "target_p50_ms": 150, "loadavg_before_after": load}
    print(f"load average before: {load[:3]}, after: {load[3:]}")
    print_table(
        "semantic: embedding throughput (MiniLM int8, 256-token cap)",
        [
            ("short (12 words)", str(tp["short"]["texts_per_s"])),
            ("window-length (300 words -> 256 tokens)", str(tp["window"]["texts_per_s"])),
            ("query embedding p50 ms", str(tp["query_embed"]["p50_ms"])),
            ("model load s", str(tp["load_s"])),
        ],
        ("what", "texts/s or value"),
    )
    rows: list[tuple[str, ...]] = []
    for r in ix.values():
        old = r["float32_in_memory"]
        rows.append(
            (
                f"{r['vectors']:,} (synthetic)",
                f"{r['build_s']} / {r['open_s']}",
                f"{r['file_mb']}",
                f"{r['anon_mb_before_load']} -> {r['anon_mb_after_load']} -> "
                f"{r['anon_mb_after_searches']}",
                f"{r['search']['p50_ms']} / {r['search']['p95_ms']}",
                f"{r['search_5k_scope']['p50_ms']} / {r['search_5k_scope']['p95_ms']}",
                str(r["recall_at_10"]),
                f"{old['anon_mb']} MB, {old['scan']['p50_ms']} / {old['scan']['p95_ms']}",
            )
        )
    print_table(
        "semantic index: int8 matrix file, memory-mapped (cosines from the float16 rows)",
        rows,
        (
            "windows",
            "build / reopen s",
            "file MB",
            "RssAnon MB before -> loaded -> after searches",
            "search p50/p95 ms",
            "5k-scope p50/p95 ms",
            "recall@10",
            "former float32 in memory: anon, p50/p95 ms",
        ),
    )
    if str(VECTORS) in ix:
        e2e = ix[str(VECTORS)]["end_to_end"]
        print(f"query embedding + search over {VECTORS:,}: p50 {e2e['p50_ms']} ms", end="")
        print(f" / p95 {e2e['p95_ms']} ms")
    write_result("semantic", body)
    return body


if __name__ == "__main__":
    run()

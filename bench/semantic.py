"""Semantic tier: embedding throughput, vector index RSS and search latency at 50k vectors.

* Embedding throughput of the real MiniLM (int8 ONNX, 256-token cap) on distinct texts: short
  (about 12 words, a typical user message) and window-length (about 300 words: truncated to the
  model's 256 tokens, as every full window is).
* The :class:`SemanticIndex` over 50,000 synthetic unit vectors written through the vectors
  family: load time, resident memory of the matrix (float32 and float16), and search p50/p95 —
  the matrix product alone, restricted to a 5,000-window scope, and end to end with the query
  embedding. Target: p50 <= 150 ms end to end.
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
QUERIES = 100
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


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1e6


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


def _fill(store: Any, n: int) -> None:
    from cwcore.semantic import store as vstore

    rng = np.random.default_rng(7)
    st = {"cursor": 0, "model": "bench", "mode": "window", "windows": 0, "rows": 0}
    for lo in range(1, n + 1, 5000):
        hi = min(n, lo + 4999)
        rows = rng.standard_normal((hi - lo + 1, vstore.DIM)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        items = [
            vstore.WindowVectors(w, w // 2 + 1, 0, 100, [bytes(16)], rows[w - lo : w - lo + 1])
            for w in range(lo, hi + 1)
        ]
        st = {**st, "cursor": hi, "windows": hi, "rows": hi}
        vstore.commit_windows(store, items, st)


def index_bench(home: Path) -> dict[str, Any]:
    from cwcore.semantic.embedder import Embedder
    from cwcore.semantic.search import SemanticIndex
    from cwcore.store.rocks import Store

    out: dict[str, Any] = {"vectors": VECTORS}
    rng = np.random.default_rng(11)
    queries = rng.standard_normal((QUERIES, 384)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    scope = np.sort(rng.choice(np.arange(1, VECTORS + 1), 5000, replace=False)).astype(np.uint32)
    store = Store(home / "store")
    try:
        _fill(store, VECTORS)
        for dtype in (np.float32, np.float16):
            name = np.dtype(dtype).name
            before = _rss_mb()
            started = time.perf_counter()
            index = SemanticIndex(store, dtype=dtype)
            index.refresh()
            load_s = time.perf_counter() - started
            rss = _rss_mb() - before
            full = []
            scoped = []
            for q in queries:
                t = time.perf_counter()
                index.search(q, 50)
                full.append((time.perf_counter() - t) * 1000)
                t = time.perf_counter()
                index.search(q, 50, scope)
                scoped.append((time.perf_counter() - t) * 1000)
            out[name] = {
                "load_s": round(load_s, 2),
                "rss_mb": round(rss, 1),
                "matrix_mb": round(index.nbytes() / 1e6, 1),
                "search": percentiles(full),
                "search_5k_scope": percentiles(scoped),
            }
            del index
        embedder = Embedder.for_home(home)
        embedder.load()
        index = SemanticIndex(store)
        index.refresh()
        e2e = []
        for i, text in enumerate(_texts(QUERIES, 10, seed=5)):
            t = time.perf_counter()
            index.search(embedder.embed_query(text + str(i)), 50)
            e2e.append((time.perf_counter() - t) * 1000)
        out["end_to_end_float32"] = percentiles(e2e)
        embedder.close()
    finally:
        store.close()
    return out


def run() -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="cw-bench-semantic-") as tmp:
        home = Path(tmp)
        tp = throughput(home)
        ix = index_bench(home)
    body = {"throughput": tp, "index": ix, "target_p50_ms": 150}
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
    rows = []
    for name in ("float32", "float16"):
        r = ix[name]
        rows.append(
            (
                name,
                str(r["rss_mb"]),
                str(r["load_s"]),
                f"{r['search']['p50_ms']} / {r['search']['p95_ms']}",
                f"{r['search_5k_scope']['p50_ms']} / {r['search_5k_scope']['p95_ms']}",
            )
        )
    e2e = ix["end_to_end_float32"]
    rows.append(("query embed + search", "", "", f"{e2e['p50_ms']} / {e2e['p95_ms']}", ""))
    print_table(
        f"semantic index: {VECTORS:,} vectors",
        rows,
        ("matrix", "RSS MB", "load s", "search p50/p95 ms", "5k-scope p50/p95 ms"),
    )
    write_result("semantic", body)
    return body


if __name__ == "__main__":
    run()

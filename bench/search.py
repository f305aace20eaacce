"""SCALE ONLY, synthetic text: explicit lexical search at 200k generated messages (``python -m
bench.search 1000000`` for 1M, written to ``search-1000000.json``), cw in-process and through
the daemon socket, beside SQLite FTS5, bm25s and rank-bm25 over the same text, in the same run.

The corpus is made-up Zipfian words and the queries three terms each, so it says how cw scales
with archive size, not how fast it is on real conversations: those figures, the claims beside
FTS5, come from :mod:`bench.realtext` (LongMemEval conversations and their natural-language
questions), where the ranking of the systems differs.

Run: ``.venv/bin/python -m bench search`` (or ``make bench``). The corpus is the spike's
synthetic Zipfian chat (``bench.spike_postings.messages``: 50k-word vocabulary, 20–80 words a
message), admitted as cw-jsonl sessions of 40 messages (so cw indexes 100k turn windows of two
messages each) and indexed by the real worker; queries are the spike's three-term mixes of
common, mid and rare words. Every cw search is a full explicit search: exact lookup, BM25F,
snippets, locators and a lease write.

The built archive is timed once on the segments bulk indexing left, then merged as an idle daemon
merges it (``PostingIndex.idle_merge``, 30 s after the last work) and kept under
``CW_BENCH_CACHE`` (default ``/tmp/cw-bench-search``); later runs reuse it. The daemon used for
the socket timing runs as users run it (its background workers included). Both cw paths are
timed on a second pass over the queries: the first warms the process (RocksDB's block cache and,
in a daemon just started, its start-up work such as loading the embedding model).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import cached_build, peak_rss_mb, percentiles, print_table, timed, write_result
from bench.spike_postings import messages, query_terms

SESSION = 40
QUERIES = 200


def write_archive(path: Path, n: int) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for i, text in enumerate(messages(n)):
            session, index = divmod(i, SESSION)
            role = "user" if index % 2 == 0 else "assistant"
            row = {
                "session": f"b{session:06d}",
                "id": f"m{index}",
                "role": role,
                "text": text,
                "timestamp": f"2026-11-{1 + session % 28:02d}T10:{index:02d}:00Z",
                "project": f"p{session % 10}",
            }
            fh.write(json.dumps(row) + "\n")


def time_calls(fn: Any, queries: list[str], warm: int = 10) -> dict[str, float]:
    """Percentiles of ``fn`` over ``queries`` after ``warm`` untimed calls."""
    for q in queries[:warm]:
        fn(q)
    samples = []
    for q in queries:
        t0 = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - t0) * 1000)
    return percentiles(samples)


def baselines(n: int, queries: list[list[str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE m USING fts5(body)")
    db.executemany("INSERT INTO m(rowid, body) VALUES (?, ?)", enumerate(messages(n)))
    db.commit()
    sql = "SELECT rowid FROM m WHERE m MATCH ? ORDER BY bm25(m) LIMIT 10"
    out["fts5"] = time_calls(
        lambda q: db.execute(sql, (" OR ".join(q.split()),)).fetchall(),
        [" ".join(q) for q in queries],
    )
    db.close()
    try:
        import bm25s

        corpus = [t.split() for t in messages(n)]
        retriever = bm25s.BM25()
        retriever.index(corpus, show_progress=False)
        out["bm25s"] = time_calls(
            lambda q: retriever.retrieve([q.split()], k=10, show_progress=False),
            [" ".join(q) for q in queries],
        )
    except ImportError:
        out["bm25s"] = None
    try:
        from rank_bm25 import BM25Okapi

        # Same corpus size as cw; it scores every document per query, so 30 queries suffice.
        docs = [t.split() for t in messages(n)]
        okapi = BM25Okapi(docs)
        out["rank_bm25"] = time_calls(
            lambda q: okapi.get_top_n(q.split(), docs, n=10), [" ".join(q) for q in queries[:30]]
        )
    except ImportError:
        out["rank_bm25"] = None
    return out


def _texts() -> list[str]:
    return [" ".join(q) for q in query_terms(QUERIES)]


_REQUEST = {"limit": 10, "semanticPolicy": "never"}
_NEVER = threading.Event()


def _search(engine: Any, query: str) -> Any:
    return engine.call("search", {"query": query, **_REQUEST}, lambda e: None, _NEVER)


def _idle_merges(engine: Any) -> None:
    while engine.indexer.bm25.idle_merge() is not None:
        pass


def build(home: Path, n: int) -> dict[str, Any]:
    """Import and index an ``n``-message archive into ``home``, or reuse one already built there
    (``bench-built.json`` marks a finished build)."""
    return cached_build(home, lambda home: _make(home, n))


def _make(home: Path, n: int) -> dict[str, Any]:
    from cwcore.api import Archive

    src = home / "archive.jsonl"
    write_archive(src, n)
    with Archive.open(home, embedded=True) as archive:
        _, admit_s = timed(lambda: archive.import_paths([src], fmt="cw-jsonl"))
        engine = archive.engine
        segments = len(engine.indexer.bm25.manifest().segments)
        # Timed once, on the segments bulk indexing left, then merged as an idle daemon does.
        as_built = time_calls(lambda q: _search(engine, q), _texts())
        _, merge_s = timed(lambda: _idle_merges(engine))
    src.unlink()
    return {
        "messages": n,
        "import_and_index_s": round(admit_s, 1),
        "segments_as_built": segments,
        "cw_in_process_as_built": as_built,
        "idle_merge_s": round(merge_s, 1),
    }


def run(n: int = 200_000) -> dict[str, Any]:
    """Built archives are cached under ``CW_BENCH_CACHE`` (default ``/tmp/cw-bench-search``)."""
    from cwcore.api import Archive
    from cwcore.daemon import control
    from cwcore.daemon.client import connect

    queries = query_terms(QUERIES)
    texts = _texts()
    home = Path(os.environ.get("CW_BENCH_CACHE", "/tmp/cw-bench-search")) / f"search-{n}"
    os.environ["CW_HOME"] = str(home)
    facts = build(home, n)
    with Archive.open(home, embedded=True) as archive:
        engine = archive.engine
        in_process = time_calls(lambda q: _search(engine, q), texts, warm=len(texts))
        windows = int(engine.indexer.bm25.manifest().live_docs)
    rss = peak_rss_mb()
    client = connect(home)
    server_ms: list[float] = []  # the daemon's own timing_ms of each answer

    def via_socket(query: str) -> None:
        server_ms.append(float(client.call("search", {"query": query, **_REQUEST})["timing_ms"]))

    try:
        socket = time_calls(via_socket, texts, warm=len(texts))
    finally:
        client.close()
        control.stop(home)
    in_daemon = percentiles(server_ms[len(texts) :])  # the timed pass only
    base = baselines(n, queries)
    result = {
        "corpus": "synthetic Zipfian (scale only; real-text figures: bench realtext)",
        "messages": n,
        "windows": windows,
        **facts,
        "cw_in_process": in_process,
        "cw_in_daemon": in_daemon,
        "cw_socket": socket,
        "peak_rss_mb": round(rss, 1),
        "baselines": base,
        "targets": {"p50_ms": 10, "p95_ms": 30, "vs_rank_bm25": 10},
        "load_average": os.getloadavg()[0],
    }
    if base.get("rank_bm25"):
        result["speedup_vs_rank_bm25_p50"] = round(
            base["rank_bm25"]["p50_ms"] / max(in_process["p50_ms"], 1e-9), 1
        )
    rows = [
        (
            f"cw search, in process, as built ({facts['segments_as_built']} segments)",
            facts["cw_in_process_as_built"],
        ),
        ("cw search, in process, after the idle merge", in_process),
        ("cw search, inside the daemon (its timing_ms)", in_daemon),
        ("cw search, through the daemon socket", socket),
    ]
    rows += [(f"baseline {name}", v) for name, v in base.items() if v]
    print_table(
        f"SYNTHETIC (scale only; real text: bench realtext) explicit lexical search, {n:,} "
        f"generated messages ({windows:,} windows), {QUERIES} three-term queries",
        [(name, f"{v['p50_ms']:.2f}", f"{v['p95_ms']:.2f}") for name, v in rows],
        ("system", "p50 ms", "p95 ms"),
    )
    path = write_result("search" if n == 200_000 else f"search-{n}", result)
    print(
        f"import+index {facts['import_and_index_s']:.0f}s, peak RSS {rss:.0f} MB, "
        f"{result.get('speedup_vs_rank_bm25_p50', '?')}x rank-bm25 at p50; written {path}"
    )
    return result


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)

"""Spike: persisted BM25 postings at 200k messages, beside SQLite FTS5 on the same text.

``python -m bench.spike_postings [N_MESSAGES]`` (default 200,000). A synthetic corpus (Zipfian
vocabulary of 50k terms, 20–80 tokens per message, fixed seed) is tokenized and indexed into a
temporary store through :class:`PostingWriter`, with the tiered merge policy run after every
flush (as the background worker would); 200 three-term queries (common, mid and rare terms mixed)
are timed on the tiered segments and again after a full merge. The same messages go into an
in-memory FTS5 table queried with the same terms (OR, ranked by ``bm25()``). Prints a table and
writes ``bench/results/spike_postings.json``.
"""

from __future__ import annotations

import sqlite3
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import peak_rss_mb, percentiles, print_table, write_result
from cwcore.index import bm25
from cwcore.index.postings import PostingIndex, stats_of
from cwcore.store.rocks import Store
from cwcore.text.tokenize import tokens

SEED = 20261129
VOCAB = 50_000
ZIPF_S = 1.0
QUERIES = 200
CHUNK = 10_000


def _words() -> list[str]:
    # Letters only, so FTS5's unicode61 and cw's tokenizer see the same single tokens.
    letters = "abcdefghijklmnopqrstuvwxyz"
    out = []
    for i in range(VOCAB):
        word, n = "", i
        while True:
            word += letters[n % 26]
            n //= 26
            if n == 0:
                break
        out.append("t" + word)
    return out


def messages(n: int) -> Iterator[str]:
    """The synthetic corpus, generated in chunks (deterministic for a given ``n``)."""
    rng = np.random.default_rng(SEED)
    words = np.array(_words())
    p = 1.0 / np.arange(1, VOCAB + 1) ** ZIPF_S
    p /= p.sum()
    for start in range(0, n, CHUNK):
        size = min(CHUNK, n - start)
        lengths = rng.integers(20, 81, size)
        ids = rng.choice(VOCAB, size=int(lengths.sum()), p=p)
        cut = np.concatenate(([0], np.cumsum(lengths)))
        for i in range(size):
            yield " ".join(words[ids[cut[i] : cut[i + 1]]].tolist())


def query_terms(n_queries: int) -> list[list[str]]:
    """Three-term queries mixing rank bands: common (top 100), mid (100–5k), rare (5k–50k)."""
    rng = np.random.default_rng(SEED + 1)
    words = _words()
    bands = {"common": (0, 100), "mid": (100, 5000), "rare": (5000, VOCAB)}
    mixes = [("common", "mid", "rare")] * 10 + [("mid", "mid", "rare")] * 5
    mixes += [("common", "common", "mid")] * 3 + [("common", "common", "common")] * 2
    out = []
    for q in range(n_queries):
        mix = mixes[q % len(mixes)]
        out.append([words[int(rng.integers(*bands[band]))] for band in mix])
    return out


def index_corpus(store: Store, n: int) -> dict[str, Any]:
    index = PostingIndex(store)
    writer = index.writer()
    merge_s = 0.0
    merges = 0
    rss_before = peak_rss_mb()
    start = time.perf_counter()
    cpu = time.process_time()
    flushed = 0
    for ordinal, text in enumerate(messages(n)):
        terms = tokens(text)
        writer.add(ordinal, Counter(terms), len(terms))
        if len(writer.flushed) != flushed:  # a flush happened: let the merge policy run
            flushed = len(writer.flushed)
            t0 = time.perf_counter()
            while index.merge() is not None:
                merges += 1
            merge_s += time.perf_counter() - t0
    writer.flush()
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    return {
        "index": index,
        "seconds": elapsed,
        "docs_per_s": n / elapsed,
        "docs_per_cpu_s": n / cpu,
        "merge_seconds_inline": merge_s,
        "merges": merges,
        "rss_before_mb": rss_before,
    }


def time_queries(index: PostingIndex, queries: list[list[str]]) -> dict[str, Any]:
    reader = index.reader()
    for q in queries[:10]:  # warm the block cache and the code paths
        bm25.search(reader, q, k=10)
    samples = []
    truncated = 0
    scored = []
    for q in queries:
        t0 = time.perf_counter()
        hits = bm25.search(reader, tokens(" ".join(q)), k=10)
        samples.append((time.perf_counter() - t0) * 1000)
        truncated += hits.truncated
        scored.append(hits.postings_scored)
    return {
        **percentiles(samples),
        "truncated": truncated,
        "postings_scored_p50": int(np.median(scored)),
    }


def top10(index: PostingIndex, queries: list[list[str]]) -> list[list[int]]:
    reader = index.reader()
    return [bm25.search(reader, q, k=10).ordinals.tolist() for q in queries]


def fts5(n: int, queries: list[list[str]]) -> dict[str, Any]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE m USING fts5(body)")
    start = time.perf_counter()
    db.executemany(
        "INSERT INTO m(rowid, body) VALUES (?, ?)",
        ((ordinal, text) for ordinal, text in enumerate(messages(n))),
    )
    db.commit()
    insert_s = time.perf_counter() - start
    sql = "SELECT rowid FROM m WHERE m MATCH ? ORDER BY bm25(m), rowid LIMIT 10"
    for q in queries[:10]:
        db.execute(sql, (" OR ".join(q),)).fetchall()
    samples = []
    results = []
    for q in queries:
        t0 = time.perf_counter()
        rows = db.execute(sql, (" OR ".join(q),)).fetchall()
        samples.append((time.perf_counter() - t0) * 1000)
        results.append([r[0] for r in rows])
    db.close()
    return {"docs_per_s": n / insert_s, **percentiles(samples), "top10": results}


def run(n: int = 200_000) -> dict[str, Any]:
    queries = query_terms(QUERIES)
    with tempfile.TemporaryDirectory(prefix="cw-spike-") as tmp:
        store = Store(Path(tmp) / "db")
        built = index_corpus(store, n)
        index: PostingIndex = built.pop("index")
        rss_after_index = peak_rss_mb()
        # Most of the growth is RocksDB's own memory (memtables), not the writer's bounded buffer.
        memtables = sum(
            store.property_int("rocksdb.cur-size-all-mem-tables", family)
            for family in ("postings", "stats")
        )
        tiered_stats = stats_of(index.manifest())
        tiered = time_queries(index, queries)
        t0 = time.perf_counter()
        index.force_merge()
        force_merge_s = time.perf_counter() - t0
        merged = time_queries(index, queries)
        ours = top10(index, queries)
        postings_bytes = sum(len(k) + len(v) for k, v in store.scan("postings", b""))
        store.flush()
        # Range tombstones of merged-away segments are reclaimed by compaction; measure after it
        # (Store has no compaction call of its own, so the bench reaches the column family).
        store._families["postings"].compact_range(None, None)
        sst = store.property_int("rocksdb.total-sst-files-size", "postings")
        stats = stats_of(index.manifest())
        store.close()
    rss_ours = peak_rss_mb()
    lite = fts5(n, queries)
    overlap = np.mean(
        [len(set(a) & set(b)) / 10 for a, b in zip(ours, lite.pop("top10"), strict=True)]
    )
    body = {
        "messages": n,
        "vocab": VOCAB,
        "zipf_s": ZIPF_S,
        "queries": QUERIES,
        "indexing": {
            "docs_per_s": round(built["docs_per_s"]),
            "docs_per_cpu_s": round(built["docs_per_cpu_s"]),
            "seconds": round(built["seconds"], 2),
            "merge_seconds_inline": round(built["merge_seconds_inline"], 2),
            "merges": built["merges"],
            "force_merge_seconds": round(force_merge_s, 2),
            "what": "tokenize + count + PostingWriter.add/flush + tiered merges, one thread",
        },
        "bytes_per_message": {
            "postings_values_and_keys": round(postings_bytes / n, 1),
            "postings_sst_zstd": round(sst / n, 1),
        },
        "rss_mb": {
            "before_indexing": round(built["rss_before_mb"], 1),
            "after_indexing": round(rss_after_index, 1),
            "after_queries": round(rss_ours, 1),
            "rocksdb_memtables_after_indexing": round(memtables / 2**20, 1),
        },
        "tiered": {"index": tiered_stats, **tiered},
        "merged": {"index": stats, **merged},
        "fts5": {k: round(v, 3) if isinstance(v, float) else v for k, v in lite.items()},
        "top10_overlap_with_fts5": round(float(overlap), 3),
    }
    rows = [
        (
            "cw postings, tiered",
            f"{tiered['p50_ms']:.2f}",
            f"{tiered['p95_ms']:.2f}",
            f"{tiered_stats['segments']} segments",
        ),
        (
            "cw postings, merged",
            f"{merged['p50_ms']:.2f}",
            f"{merged['p95_ms']:.2f}",
            f"{stats['segments']} segment",
        ),
        (
            "SQLite FTS5 (memory)",
            f"{lite['p50_ms']:.2f}",
            f"{lite['p95_ms']:.2f}",
            "OR query, bm25()",
        ),
    ]
    print_table(
        f"three-term BM25 top-10 at {n:,} messages", rows, ("engine", "p50 ms", "p95 ms", "state")
    )
    indexing, sizes = body["indexing"], body["bytes_per_message"]
    print(
        f"\nindexing {indexing['docs_per_s']:,} msg/s wall,"
        f" {indexing['docs_per_cpu_s']:,} per CPU-s"
        f" (FTS5 insert {lite['docs_per_s']:,.0f}/s); postings"
        f" {sizes['postings_values_and_keys']} B/msg raw,"
        f" {sizes['postings_sst_zstd']} B/msg in SST;"
        f" peak RSS {rss_after_index:.0f} MB (before indexing {built['rss_before_mb']:.0f} MB);"
        f" top-10 overlap with FTS5 {overlap:.2f}"
    )
    path = write_result("spike_postings", body)
    print(f"wrote {path}")
    return body


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else 200_000)

"""Admission throughput: a generated 50k-message cw-jsonl archive through the import pipeline.

Synthetic text (a 46-word vocabulary); admission of real conversations (LongMemEval, agent logs)
is measured by :mod:`bench.realtext`, the figures the targets are judged on.

Run: ``make bench`` (all benches) or ``.venv/bin/python -m bench admission``.
Reports messages/s, documents/s, disk bytes per message and peak RSS, beside a baseline of
inserting the same messages into an SQLite table in the same process.
"""

from __future__ import annotations

import json
import random
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from bench.common import peak_rss_mb, print_table, timed, write_result
from cwcore.config import Settings
from cwcore.importers.pipeline import import_paths
from cwcore.store.admission import Admission
from cwcore.store.rocks import Store

WORDS = [
    "parse",
    "config",
    "daemon",
    "socket",
    "retry",
    "timeout",
    "error",
    "index",
    "window",
    "chunk",
    "token",
    "session",
    "project",
    "rocksdb",
    "import",
    "export",
    "search",
    "recall",
    "hint",
    "lease",
    "cursor",
    "merge",
    "segment",
    "posting",
    "fix",
    "test",
    "bench",
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "that",
    "it",
    "for",
    "with",
    "as",
    "on",
    "this",
    "be",
    "we",
    "should",
    "could",
    "would",
]


def generate(path: Path, messages: int, seed: int = 7) -> int:
    """Write a cw-jsonl archive of ``messages`` messages in sessions of 40; returns bytes."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for n in range(messages):
            session, index = divmod(n, 40)
            role = "user" if index % 2 == 0 else "assistant"
            length = rng.randint(8, 30) if role == "user" else rng.randint(30, 160)
            text = " ".join(rng.choice(WORDS) for _ in range(length))
            if rng.random() < 0.1:
                text += f" ERR_{rng.randint(0, 999):03d} in src/mod_{rng.randint(0, 99)}/file.py"
            minute = index
            row = {
                "session": f"bench-{session:05d}",
                "id": f"m{index}",
                "role": role,
                "text": text,
                "timestamp": f"2026-10-{1 + session % 28:02d}T"
                f"{10 + minute // 60:02d}:{minute % 60:02d}:00Z",
                "project": f"proj-{session % 7}",
            }
            fh.write(json.dumps(row) + "\n")
    return path.stat().st_size


def run(messages: int = 50_000, scrub: bool = True) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "archive.jsonl"
        source_bytes = generate(src, messages)
        store = Store(Path(tmp) / "store")
        settings = Settings(scrub_secrets=scrub)
        summary, seconds = timed(
            lambda: import_paths(Admission(store), [src], fmt="cw-jsonl", settings=settings)
        )
        store.flush()
        disk = store.size_on_disk()
        store.close()
        # Baseline: the same rows into SQLite (one transaction, WAL), in this process.
        db = sqlite3.connect(Path(tmp) / "baseline.sqlite")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            "CREATE TABLE m (session TEXT, id TEXT, role TEXT, text TEXT, ts TEXT, "
            "PRIMARY KEY (session, id))"
        )

        def sqlite_insert() -> None:
            with src.open() as fh, db:
                db.executemany(
                    "INSERT INTO m VALUES (?, ?, ?, ?, ?)",
                    (
                        (r["session"], r["id"], r["role"], r["text"], r["timestamp"])
                        for r in map(json.loads, fh)
                    ),
                )

        _, sqlite_seconds = timed(sqlite_insert)
        db.close()
        sqlite_bytes = (Path(tmp) / "baseline.sqlite").stat().st_size
    result = {
        "messages": messages,
        "documents": summary.imported,
        "seconds": round(seconds, 3),
        "messages_per_s": round(messages / seconds),
        "documents_per_s": round(summary.imported / seconds),
        "source_bytes": source_bytes,
        "disk_bytes": disk,
        "disk_bytes_per_message": round(disk / messages, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "target_messages_per_s": 2000,
        "baseline_sqlite": {
            "seconds": round(sqlite_seconds, 3),
            "messages_per_s": round(messages / sqlite_seconds),
            "disk_bytes_per_message": round(sqlite_bytes / messages, 1),
        },
    }
    print_table(
        f"admission: {messages:,} cw-jsonl messages",
        [
            (
                "cw import (events+manifests+chunks+outbox)",
                f"{result['messages_per_s']:,}",
                f"{result['disk_bytes_per_message']}",
            ),
            (
                "sqlite plain insert (baseline, no ids/chunks)",
                f"{result['baseline_sqlite']['messages_per_s']:,}",
                f"{result['baseline_sqlite']['disk_bytes_per_message']}",
            ),
        ],
        ("system", "messages/s", "disk bytes/message"),
    )
    print(f"peak RSS {result['peak_rss_mb']} MB; written {write_result('admission', result)}")
    return result

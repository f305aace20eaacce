"""A persistent content-digest -> vector cache for evaluations (SQLite, in ``eval/.cache/``).

Digests cover the model identity and the exact text (:meth:`Embedder.digest`), so a re-run of
the evaluation embeds nothing it embedded before, and a model change never reuses a vector.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np


class SqliteVectorCache:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (digest BLOB PRIMARY KEY, vec BLOB NOT NULL)"
        )
        self._lock = threading.Lock()

    def get_many(self, digests: Sequence[bytes]) -> list[np.ndarray | None]:
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for i in range(0, len(digests), 500):
                part = list(digests[i : i + 500])
                marks = ",".join("?" * len(part))
                rows = self._db.execute(
                    f"SELECT digest, vec FROM vectors WHERE digest IN ({marks})", part
                ).fetchall()
                for d, v in rows:
                    found[bytes(d)] = np.frombuffer(v, dtype="<f4").copy()
        return [found.get(d) for d in digests]

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors VALUES (?, ?)",
                [(d, np.asarray(v, dtype="<f4").tobytes()) for d, v in items],
            )
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])

    def close(self) -> None:
        self._db.close()

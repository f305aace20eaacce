"""Reading the SQLite databases some agents keep their sessions in: read-only, never modified.

:func:`open_readonly` opens ``file:<path>?mode=ro``; when the host holds a lock (or the folder
does not allow the read-only WAL index), the database and its ``-wal``/``-shm`` companions are
copied to a temporary folder and the copy is read, so a live host is never blocked or changed.
:func:`schema` is the cheap check sniffers use: the table names and their columns.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cwcore.errors import CwError, InvalidInput

MAGIC = b"SQLite format 3\x00"


def looks_like_sqlite(head: list[bytes]) -> bool:
    """True when the file's first bytes are SQLite's header."""
    return bool(head) and head[0].startswith(MAGIC)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True, timeout=1.0)
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # fails now if locked
    return conn


@contextmanager
def open_readonly(path: Path) -> Iterator[sqlite3.Connection]:
    """A read-only connection to ``path`` (or to a private copy when it cannot be read in
    place). Raises :class:`~cwcore.errors.CwError` when it is not a readable database."""
    try:
        conn = _connect(path)
    except sqlite3.Error:
        with tempfile.TemporaryDirectory(prefix="cw-sqlite-") as tmp:
            copy = Path(tmp) / path.name
            try:
                shutil.copyfile(path, copy)
                for suffix in ("-wal", "-shm"):
                    companion = path.with_name(path.name + suffix)
                    if companion.exists():
                        shutil.copyfile(companion, copy.with_name(copy.name + suffix))
                conn = sqlite3.connect(str(copy), timeout=1.0)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            except (OSError, sqlite3.Error) as exc:
                raise InvalidInput(f"cannot read the SQLite database: {exc}") from None
            try:
                yield conn
            finally:
                conn.close()
        return
    try:
        yield conn
    finally:
        conn.close()


def schema(path: Path) -> dict[str, set[str]]:
    """Table name -> column names; empty when the file is not a readable database."""
    try:
        with open_readonly(path) as conn:
            names = [
                r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            ]
            return {
                name: {r[1] for r in conn.execute(f'PRAGMA table_info("{name}")')}
                for name in names
                if '"' not in name
            }
    except (CwError, sqlite3.Error):
        return {}


def has_tables(path: Path, head: list[bytes], wanted: dict[str, set[str]]) -> bool:
    """The sniff of a SQLite format: the header, then each wanted table with its columns."""
    if not looks_like_sqlite(head):
        return False
    tables = schema(path)
    return all(name in tables and cols <= tables[name] for name, cols in wanted.items())


def rows(conn: sqlite3.Connection, sql: str) -> Iterator[dict[str, Any]]:
    """The rows of ``sql`` as dicts keyed by column name, streamed."""
    cur = conn.execute(sql)
    names = [d[0] for d in cur.description]
    for values in cur:
        yield dict(zip(names, values, strict=True))

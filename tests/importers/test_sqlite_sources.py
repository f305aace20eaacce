"""SQLite sources are read, never written: opened ``mode=ro``, and read from a private copy
while the host holds a lock."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from pathlib import Path

from cwcore.importers import base
from tests.importers.golden_support import FIXTURES

DB = FIXTURES / "opencode" / "opencode.db"


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_parsing_leaves_the_database_and_its_folder_untouched(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(DB, db)
    before = _digest(db)
    parsed = base.get("opencode").parse(db)
    assert len(parsed.sessions) == 2
    assert _digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opencode.db"]  # no journal left


def test_a_database_the_host_has_locked_is_read_from_a_copy(tmp_path: Path) -> None:
    db = tmp_path / "opencode.db"
    shutil.copy(DB, db)
    host = sqlite3.connect(db, isolation_level=None)
    host.execute("BEGIN EXCLUSIVE")  # the host is mid-write: readers in place would block
    try:
        parsed = base.get("opencode").parse(db)
    finally:
        host.execute("ROLLBACK")
        host.close()
    assert [s.session_id for s in parsed.sessions] == [
        s.session_id for s in base.get("opencode").parse(DB).sessions
    ]


def test_a_database_of_another_schema_is_not_detected(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE session (id TEXT)")
    conn.commit()
    conn.close()
    assert base.detect(db) is None

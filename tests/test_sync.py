"""cw sync: standard locations under a home, unchanged files skipped, touched files re-read."""

from __future__ import annotations

import shutil
from pathlib import Path

from cwcore.api import Archive

FIXTURES = Path(__file__).parent / "importers" / "fixtures"


def _place(home: Path) -> Path:
    claude = sorted((FIXTURES / "claude_code").glob("*.jsonl"))[0]
    target = home / ".claude" / "projects" / "-home-dev-app" / claude.name
    target.parent.mkdir(parents=True)
    shutil.copy(claude, target)
    return target


def test_sync_imports_then_skips_unchanged(tmp_path: Path, archive: Archive) -> None:
    home = tmp_path / "user"
    target = _place(home)
    first = archive.sync(home=str(home))
    assert first.files == 1 and first.imported > 0
    assert all(e.line for e in first.errors)  # the fixture's deliberate bad lines only
    again = archive.sync(home=str(home))
    assert again.files == 0  # unchanged size and mtime: not even read
    target.write_text(target.read_text() + "\n")  # touched: read again, nothing new
    touched = archive.sync(home=str(home))
    assert (touched.files, touched.imported) == (1, 0)


def test_sync_without_locations_is_empty(tmp_path: Path, archive: Archive) -> None:
    summary = archive.sync(home=str(tmp_path / "nobody"))
    assert (summary.files, summary.imported, summary.errors) == (0, 0, [])

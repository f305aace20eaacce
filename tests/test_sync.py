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


def test_watch_follows_the_project_folders_the_setting_lists(tmp_path: Path) -> None:
    import time

    from cwcore.config import Settings
    from cwcore.importers import sync
    from cwcore.importers.summary import ImportSummary

    project = tmp_path / "repo"
    project.mkdir()
    history = project / ".aider.chat.history.md"
    history.write_text("# aider chat started at 2026-03-10 09:15:02\n\n#### hello\n")
    settings = Settings(sync_projects=str(project))
    assert (("aider", project)) in sync.roots(tmp_path / "user", settings)
    runs: list[int] = []
    deadline = time.monotonic() + 60

    def stop() -> bool:
        if len(runs) == 1 and history.stat().st_size < 100:  # watching: the log grows
            with history.open("a") as fh:
                fh.write("\nHi! What shall we change? Tell me which file to look at first.\n")
        return len(runs) >= 2 or time.monotonic() > deadline

    sync.watch(
        ImportSummary,
        home=tmp_path / "user",
        settings=settings,
        interval=0.01,
        settle=0.01,
        on_sync=lambda summary: runs.append(1),
        stop=stop,
    )
    assert len(runs) == 2

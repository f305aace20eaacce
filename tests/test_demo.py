"""The bundled demo archive (``cwcore/demo/``) imports cleanly and ``make run`` shows it.

The demo is what a new user sees first (``python -m cwtui.demo``), so an importer change that
starts rejecting one of its lines, or drops a format from it, should fail here rather than on
someone's first run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from cwcore.api import Archive
from cwtui.demo import DEMO_DIR, DEMO_QUERY

ROOT = Path(__file__).resolve().parent.parent


def test_demo_archive_imports_without_errors(cw_home: Path) -> None:
    with Archive.open(embedded=True) as archive:
        summary = archive.import_paths([DEMO_DIR])
        assert summary.errors == []
        # The README explains the folder; it is not a session log and must be skipped, visibly.
        assert any("README.txt" in n and "not a session log" in n for n in summary.notices)
        rows, _ = archive.sessions(limit=100)
        assert len(rows) >= 4
        assert len({r.agent for r in rows}) >= 3
        assert {r.project for r in rows} == {"orbit-api"}
        # The story's first session is the ERR_LEASE_EXPIRED debugging one.
        first = min(rows, key=lambda r: r.started or "")
        body = archive.show(first.sessionId)
        assert any(DEMO_QUERY in m.text for m in body.messages)


def test_demo_sessions_are_modest_and_complete(cw_home: Path) -> None:
    # Each session is a readable conversation: a handful of turns, tool calls with results.
    with Archive.open(embedded=True) as archive:
        archive.import_paths([DEMO_DIR])
        rows, _ = archive.sessions(limit=100)
        for row in rows:
            assert 10 <= row.messages <= 40, row
            assert row.toolCalls >= 1, row
            body = archive.show(row.sessionId)
            calls = sum(m.kind == "tool-call" for m in body.messages)
            results = sum(m.kind == "tool-result" for m in body.messages)
            assert results >= calls, row  # every call answered (pi adds a user !command)


def test_demo_import_is_idempotent(cw_home: Path) -> None:
    with Archive.open(embedded=True) as archive:
        first = archive.import_paths([DEMO_DIR])
        again = archive.import_paths([DEMO_DIR])
    assert first.imported > 0
    assert again.imported == 0
    assert again.skipped == first.imported


def test_make_run_lists_the_demo_sessions(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "CW_HOME": str(tmp_path / "demo-home"),
        "CW_EMBEDDED": "1",  # never start a daemon from a test
        "COLUMNS": "200",  # rich wraps table cells in a narrow pipe
    }
    proc = subprocess.run(
        [sys.executable, "-m", "cwtui.demo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "$ cw sessions" in out
    assert "orbit-api" in out
    for agent in ("claude-code", "codex", "pi", "gemini"):
        assert agent in out
    assert "$ cw show" in out

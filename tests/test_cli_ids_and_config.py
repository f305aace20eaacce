"""Issue 34, CLI: the short sub-agent id a table shows is accepted back, and a broken
``config.toml`` is one line on stderr and exit code 2 from every command (no traceback)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cwtui.cli import app
from cwtui.output import short_session
from tests.helpers import write_jsonl

runner = CliRunner()
PARENT = "170cebcc-4cb1-4aaa-bbbb-cccccccccccc"
CHILDREN = (f"{PARENT}/agent-a325871", f"{PARENT}/agent-b000001")


def _rows(session: str) -> list[dict[str, str]]:
    return [
        {
            "session": session,
            "id": f"m{i}",
            "role": role,
            "text": f"turn {i} of {session}",
            "timestamp": f"2026-11-19T10:00:0{i}Z",
            "project": "p",
            "agent": "claude-code",
        }
        for i, role in enumerate(("user", "assistant"))
    ]


@pytest.fixture
def subagents(tmp_path: Path) -> None:
    rows = [row for session in (PARENT, *CHILDREN) for row in _rows(session)]
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    assert runner.invoke(app, ["import", str(src)]).exit_code == 0


@pytest.mark.usefixtures("subagents")
def test_the_shortened_sub_agent_id_a_table_shows_is_accepted() -> None:
    """On a terminal ``cw sessions`` (and the TUI) show a sub-agent as
    ``170cebcc…/agent-a325871``; ``cw show`` used to reject what it was shown."""
    for child in CHILDREN:
        shown = short_session(child, PARENT)
        assert "…" in shown and shown != child
        for typed in (shown, shown.replace("…", "...")):
            result = runner.invoke(app, ["show", typed])
            assert result.exit_code == 0, result.stderr
            assert result.stdout.startswith(child + " ")
        exported = runner.invoke(app, ["export", shown])
        assert exported.exit_code == 0 and f"# Session {child}" in exported.stdout
    # The parent's own prefix still names the parent, not one of its sub-agents.
    parent = runner.invoke(app, ["show", PARENT[:8]])
    assert parent.exit_code == 0 and parent.stdout.startswith(PARENT + " ")
    # A short form that names nothing is an error naming it (one line).
    none = runner.invoke(app, ["show", "170cebcc…/agent-zz"])
    assert none.exit_code == 3 and none.stderr == "cw: no session '170cebcc…/agent-zz'\n"


@pytest.mark.parametrize("columns", [None, "80"])
def test_pipes_get_whole_ids(subagents: None, columns: str | None) -> None:
    """``cw sessions | cat`` as a user runs it (a real process whose stdout is a pipe): the ids
    are whole, so ``cw show`` takes what it printed. With no ``COLUMNS`` nothing is cut; when
    the reader asks for 80 columns (xdist workers and some CI shells set it) a title may be,
    an id never."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = columns
    code = "import sys; from cwtui.launch import main; sys.argv = ['cw', 'sessions']; main()"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    for session in (PARENT, *CHILDREN):
        assert session in done.stdout
    assert re.search(r"170cebcc[^\s│]*…", done.stdout) is None
    if columns is None:
        assert "…" not in done.stdout


COMMANDS = [
    ["sessions"],
    ["sessions", "--json"],
    ["search", "queue"],
    ["show", "abcd"],
    ["export", "abcd"],
    ["recall", "abcd"],
    ["gather", "queue"],
    ["import", "."],
    ["sync"],
    ["index"],
    ["index", "status"],
    ["doctor"],
    ["config"],
    ["sources"],
    ["hints"],
    ["forget", "--yes", "abcd"],
    ["supersede", "abcd", "--reason", "x"],
    ["read-entry", "abcd"],
    ["daemon", "status"],
    ["daemon", "start"],
    ["tui"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_a_broken_config_toml_is_reported_by_every_command(args: list[str], cw_home: Path) -> None:
    cw_home.mkdir(parents=True, exist_ok=True)
    (cw_home / "config.toml").write_text("[search\n")
    result = runner.invoke(app, args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert isinstance(result.exception, SystemExit)  # no traceback
    if "--json" in args:
        assert "config.toml" in result.stdout and result.stderr == ""
        return
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("cw: ") and "config.toml" in result.stderr

"""``--since`` / ``--until`` take what the inline filters take: a span back from now (``7d``,
``24h``) as well as a date or an instant (the TUI and ``since:7d`` accepted spans while the CLI
refused them with "not an ISO-8601 date or time")."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cwcore import clock
from cwcore.retrieve.filters import resolve_span
from cwtui.cli import app
from tests.helpers import write_jsonl

runner = CliRunner()


def _rows(session: str, when: str) -> list[dict[str, str]]:
    return [
        {
            "session": session,
            "id": f"{session}-{i}",
            "role": role,
            "text": f"{role} talks about the lease deadline {i}",
            "timestamp": when,
            "project": "orbit",
            "agent": "claude-code",
        }
        for i, role in enumerate(("user", "assistant"))
    ]


@pytest.fixture
def two_ages(tmp_path: Path) -> None:
    # CW_NOW is fixed by conftest: one session two days before it, one forty days before.
    rows = _rows("recent-session", _days_ago(2)) + _rows("old-session", _days_ago(40))
    src = write_jsonl(tmp_path / "s.jsonl", rows)
    assert runner.invoke(app, ["import", str(src)]).exit_code == 0


def _days_ago(days: int) -> str:
    return clock.iso(clock.now() - timedelta(days=days))


def test_resolve_span_turns_only_spans_into_instants() -> None:
    now = datetime(2026, 12, 5, 12, 0, tzinfo=clock.now().tzinfo)
    assert resolve_span("7d", now) == "2026-11-28T12:00:00.000Z"
    assert resolve_span(" 24H ", now) == "2026-12-04T12:00:00.000Z"
    for unchanged in (None, "2026-11-01", "2026-11-01T00:00:00Z", "7x", ""):
        assert resolve_span(unchanged, now) == unchanged


@pytest.mark.usefixtures("two_ages")
def test_sessions_search_and_facets_take_a_span() -> None:
    listed = runner.invoke(app, ["sessions", "--since", "7d", "--json"])
    assert listed.exit_code == 0, listed.output
    ids = [row["sessionId"] for row in json.loads(listed.stdout)["sessions"]]
    assert ids == ["recent-session"]

    found = runner.invoke(app, ["search", "lease deadline", "--since", "7d", "--json"])
    assert found.exit_code == 0, found.output
    sessions = {hit["source"]["sessionId"] for hit in json.loads(found.stdout)["results"]}
    assert sessions == {"recent-session"}

    counted = runner.invoke(app, ["facets", "--since", "30d", "--json"])
    assert counted.exit_code == 0, counted.output
    assert json.loads(counted.stdout)["sessions"] == 1


def test_a_bad_span_is_one_line() -> None:
    done = runner.invoke(app, ["sessions", "--since", "7x"])
    assert done.exit_code == 2
    assert done.stderr.count("\n") == 1 and "7x" in done.stderr

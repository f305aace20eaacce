"""Text the host puts in the user's place is shown as the host's, never as the user's, and never
titles a session (agentsview's Claude fixtures: command caveats, IDE context, hook feedback)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cwtui.cli import app
from tests.helpers import REPO

runner = CliRunner()
CLAUDE = REPO / "tests" / "fixtures" / "peers" / "claude-code"


def test_show_labels_host_text_and_titles_skip_it(cw_home: Path) -> None:
    path = CLAUDE / "agentsview-system_injected.jsonl"
    assert runner.invoke(app, ["import", str(path), "--json"]).exit_code == 0
    body = json.loads(runner.invoke(app, ["sessions", "--json"]).stdout)
    (row,) = body["sessions"]
    assert row["title"] == "real user message"
    shown = runner.invoke(app, ["show", row["sessionId"]])
    assert shown.exit_code == 0
    labels = [line.split()[0] for line in shown.stdout.splitlines() if line[:1].isalpha()]
    heads = [ln for ln in labels if ln in ("host", "user")]
    assert heads[-1] == "user" and set(heads[:-1]) == {"host"}, shown.stdout


def test_a_session_of_host_text_only_has_no_title(cw_home: Path) -> None:
    path = CLAUDE / "agentsview-usage_probe.jsonl"
    assert runner.invoke(app, ["import", str(path), "--json"]).exit_code == 0
    (row,) = json.loads(runner.invoke(app, ["sessions", "--json"]).stdout)["sessions"]
    assert row["title"] is None

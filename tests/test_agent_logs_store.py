"""The real agent logs through the store and the CLI (skipped when shared/data is absent).

`cw import <agent-logs> --format auto` imports the 7 logs with no error and a notice for
SOURCES.md; `cw sessions --json` lists their 7 sessions and the 5 sub-agent sessions they carry,
whose counts equal an independent count of each file; importing again adds nothing; a log
imported without its last exchange and then in full adds exactly that exchange.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cwtui.cli import app
from tests.helpers import HomeCache
from tests.importers.test_agent_logs import COUNTERS, LOGS, count_claude_agents, rows

pytestmark = pytest.mark.skipif(not LOGS.is_dir(), reason="shared/data/agent-logs is absent")
runner = CliRunner()


def cw(*args: str) -> list[dict]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def test_import_all_seven_with_counts_and_idempotence() -> None:
    summary = cw("import", str(LOGS), "--format", "auto")[-1]
    assert summary["errors"] == []
    assert summary["files"] == 7
    assert any("SOURCES.md" in n for n in summary["notices"])
    sessions = cw("sessions", "--limit", "100")[0]["sessions"]
    # the seven logs, and the five sub-agents four Claude Code logs carry in progress lines
    assert len(sessions) == 12
    want = []
    for path in sorted(LOGS.glob("*/*.jsonl")):
        fmt = {"claude_code": "claude-code", "codex": "codex", "pi": "pi"}[path.parent.name]
        counts = [COUNTERS[fmt](rows(path))]
        if fmt == "claude-code":
            counts += count_claude_agents(rows(path)).values()
        want += [(fmt, c["messages"], c["turns"], c["toolCalls"]) for c in counts]
    got = sorted((s["agent"], s["messages"], s["turns"], s["toolCalls"]) for s in sessions)
    assert got == sorted(want)
    again = cw("import", str(LOGS))[-1]
    assert (again["imported"], again["errors"]) == (0, [])


def test_appended_exchange_adds_exactly_that(tmp_path: Path) -> None:
    source = next(LOGS.glob("codex/*.jsonl"))
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    # Cut before the last real user prompt: the cut-off tail is the final exchange.
    cut = max(
        i
        for i, line in enumerate(lines)
        if json.loads(line).get("type") == "response_item"
        and json.loads(line)["payload"].get("role") == "user"
        and "<environment_context>" not in line
    )
    partial = tmp_path / "partial" / source.name
    partial.parent.mkdir()
    partial.write_text("".join(lines[:cut]), encoding="utf-8")
    cw("import", str(partial))
    before = cw("sessions")[0]["sessions"][0]
    full = tmp_path / "full" / source.name
    full.parent.mkdir()
    shutil.copy(source, full)
    summary = cw("import", str(full))[-1]
    after = cw("sessions")[0]["sessions"][0]
    whole = COUNTERS["codex"](rows(source))
    part = COUNTERS["codex"]([json.loads(x) for x in lines[:cut]])
    assert after["messages"] - before["messages"] == whole["messages"] - part["messages"] > 0
    assert after["turns"] - before["turns"] == whole["turns"] - part["turns"] == 1
    assert summary["imported"] >= 1 and summary["errors"] == []


def _import_logs(home: Path) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CW_HOME", str(home))
        cw("import", str(LOGS))
        cw("search", "checkDisabledGuard")  # the index is built, as after any first search


@pytest.fixture
def logs_home(cw_home: Path, home_cache: HomeCache) -> Path:
    """``CW_HOME`` with the seven logs imported: a copy of one import per test process."""
    return home_cache.clone("agent-logs", _import_logs, cw_home)


def test_exact_error_and_path_come_first_and_recall_is_exact(logs_home: Path) -> None:
    # A Go compiler error line and a file path, both copied from the logs.
    for query, literal, match_type in (
        ("undefined: checkDisabledGuard", "checkDisabledGuard", "exact-"),
        ("cmd/entire/cli/explain.go", "cmd/entire/cli/explain.go", "exact-path"),
    ):
        body = cw("search", query)[0]
        top = body["results"][0]
        assert top["matchType"].startswith(match_type), (query, top["matchType"])
        recalled = cw("recall", top["locator"])[0]
        assert recalled["status"] == "resolved"
        assert literal in recalled["text"]


def test_a_search_finds_what_only_a_sub_agent_saw(logs_home: Path) -> None:
    body = cw("search", "undefined: checkDisabledGuard (typecheck)")[0]
    top = body["results"][0]["source"]
    assert top["sessionId"] == "70c88cff-cb35-404f-a974-2a08bab4e4bc/agent-ae66507"
    shown = cw("show", top["sessionId"])[0]["messages"]
    lines = {n for m in shown if m["messageKey"] in top["messageKeys"] for n in m["lines"]}
    assert 123 in lines

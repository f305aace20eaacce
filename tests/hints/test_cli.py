"""``cw preflight``, ``cw hints``, ``cw hints rotate`` through Typer's runner (embedded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cwcore.api import Archive
from cwtui.cli import app
from tests.hints.helpers import load, row

runner = CliRunner()


def _json(args: list[str]) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_preflight_hints_and_rotate(tmp_path: Path, archive: Archive) -> None:
    load(archive, tmp_path, [row("s", "u1", "user", "REAP_DRAIN keeps the reaper from draining")])
    archive.close()
    body = _json(["preflight", "remember REAP_DRAIN?", "--session", "s", "--message-key", "u:1"])
    assert set(body) >= {"outcome", "hint", "messageKey", "queryHash", "generation", "diagnostics"}
    assert body["outcome"] == "excerpt" and body["messageKey"] == "u:1"
    again = _json(["preflight", "remember REAP_DRAIN?", "--session", "s", "--message-key", "u:1"])
    assert again["hint"] == body["hint"] and again["frozen"]
    plain = runner.invoke(app, ["preflight", "ok thanks", "--session", "s"])
    assert plain.exit_code == 0 and "no-query" in plain.stdout
    listed = _json(["hints", "--session", "s"])
    assert {h["messageKey"] for h in listed["hints"]} >= {"u:1"}
    entry = next(h for h in listed["hints"] if h["messageKey"] == "u:1")
    assert entry["bytes"] == len(body["hint"].encode()) and entry["tokens"] == body["tokens"]
    assert entry["queryHash"] == body["queryHash"] and entry["generation"] == body["generation"]
    table = runner.invoke(app, ["hints"])
    assert table.exit_code == 0 and "excerpt" in table.stdout
    rotated = _json(["hints", "rotate", "--session", "s", "--active", "nothing"])
    assert "u:1" in rotated["dropped"] and rotated["activeTokens"] == 0
    bad = runner.invoke(app, ["preflight", "x", "--session", "s", "--max-results", "0", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout)["error"]["code"] == "invalid-input"

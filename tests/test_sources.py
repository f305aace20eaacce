"""``cw sources``: every registered location, found or not, with what the last sync saw."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.importers import sources
from cwtui.cli import app

FIXTURES = Path(__file__).parent / "importers" / "fixtures"
ROW_FIELDS = {
    "format",
    "companions",
    "location",
    "path",
    "found",
    "files",
    "sessions",
    "messages",
    "skipped",
    "skippedReasons",
    "skippedFiles",
    "lastSync",
}


def _row(body: dict[str, Any], fmt: str) -> dict[str, Any]:
    return next(r for r in body["sources"] if r["format"] == fmt)


def _claude_home(home: Path) -> Path:
    project = home / ".claude" / "projects" / "-home-dev-app"
    project.mkdir(parents=True)
    shutil.copy(FIXTURES / "claude_code" / "c1a0de00-0000-4000-8000-000000000001.jsonl", project)
    (project / "notes.jsonl").write_text('{"hello": "world"}\n')
    return project


def test_never_synced_lists_every_location_not_found(tmp_path: Path, archive: Archive) -> None:
    body = archive.sources(home=str(tmp_path / "nobody")).to_json()
    assert body["sources"] and all(set(r) == ROW_FIELDS for r in body["sources"])
    assert all(not r["found"] and r["lastSync"] is None for r in body["sources"])
    assert {"claude-code", "codex", "pi", "gemini"} <= {r["format"] for r in body["sources"]}
    assert body["summary"] == {
        "locations": len(body["sources"]),
        "found": 0,
        "files": 0,
        "sessions": 0,
        "messages": 0,
        "skipped": 0,
        "lastSync": None,
    }


def test_after_sync_a_location_shows_files_counts_and_skips(
    tmp_path: Path, archive: Archive
) -> None:
    home = tmp_path / "user"
    project = _claude_home(home)
    first = archive.sync(home=str(home))
    body = archive.sources(home=str(home)).to_json()
    # the typed rows carry skips and counts back exactly as the engine answered them
    assert json.dumps(body) == json.dumps(archive.call("sources", {"home": str(home)}))
    claude = _row(body, "claude-code")
    assert claude["found"] and claude["files"] == 2
    assert (claude["sessions"], claude["messages"]) == (first.sessions, first.messages)
    assert claude["messages"] > 0
    assert claude["skipped"] == 1
    assert claude["skippedReasons"] == {"not a claude-code file": 1}
    assert claude["skippedFiles"] == [
        {"path": str(project / "notes.jsonl"), "reason": "not a claude-code file"}
    ]
    assert claude["lastSync"] == "2026-11-20T12:00:00.000Z"
    assert not _row(body, "codex")["found"]
    # a second sync reads nothing, and the counts stay those of the files' last import
    again = archive.sync(home=str(home))
    assert again.files == 0
    assert _row(archive.sources(home=str(home)).to_json(), "claude-code") == claude
    assert body["summary"]["found"] == 1 and body["summary"]["messages"] == claude["messages"]


def test_a_record_is_bounded_however_many_files_are_skipped(tmp_path: Path) -> None:
    report = sources.Report("codex", "~/.codex/sessions/**/*.jsonl", "/h/.codex/sessions", True)
    for n in range(100):
        report.files.append(f"/h/{n}.jsonl")
        report.skip(f"/h/{n}.jsonl", "not a codex file")
    record = sources.records([report], {}, "2026-11-20T12:00:00Z")[
        sources.key("codex", report.path)
    ]
    assert record["skipped"] == 100 and len(record["skippedFiles"]) == sources.MAX_SKIPPED_LISTED
    many = {f"k{n}": {"lastSync": f"2026-01-{n % 28 + 1:02d}"} for n in range(1000)}
    assert len(sources.merge(many, {})) == sources.MAX_RECORDS


def test_cli_json_and_text(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "user"
    _claude_home(home)
    monkeypatch.setenv("HOME", str(home))
    runner = CliRunner()
    synced = runner.invoke(app, ["sync", "--json"])
    assert json.loads(synced.output.splitlines()[-1])["files"] == 1, synced.output
    result = runner.invoke(app, ["sources", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert set(body) == {"sources", "summary"} and _row(body, "claude-code")["files"] == 2
    text = runner.invoke(app, ["sources"], env={"COLUMNS": "200"})
    assert text.exit_code == 0
    assert "not a claude-code file" in text.output and "locations found" in text.output

"""A new user's first step, on files other tools wrote: ``cw import`` of a folder holding every
peer-written fixture and every format's own fixtures prints one summary, says in words why it
could not use each file it skipped, and creates no empty session and no merged one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cwtui.cli import app
from tests.helpers import REPO
from tests.importers.golden_support import FIXTURES

runner = CliRunner()
PEERS = REPO / "tests" / "fixtures" / "peers"


def test_every_fixture_in_one_folder_import(tmp_path: Path, cw_home: Path) -> None:
    folder = tmp_path / "everything"
    shutil.copytree(PEERS, folder / "peers")
    shutil.copytree(FIXTURES, folder / "formats")
    result = runner.invoke(app, ["import", str(folder), "--json"])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    summary = lines[-1]
    assert "files" in summary and all("documentId" in line for line in lines[:-1])
    assert summary["sessions"] > 100 and summary["imported"] > 0
    # Every file it could not use is named with a reason in words; companions only counted.
    assert summary["companions"] > 0
    for note in summary["notices"]:
        assert ": " in note and note.split(": ", 1)[1].strip()
    skipped = {n.split(": ", 1)[0].removeprefix("skipped ") for n in summary["notices"]}
    assert not [s for s in skipped if s.endswith(("ui_messages.json", ".settings.json"))]
    assert summary["empty"] == sum("has no messages" in n for n in summary["notices"])
    # No session without messages, and no two agents in one session.
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        args = ["sessions", "--json", "--limit", "500"] + (["--cursor", cursor] if cursor else [])
        page = runner.invoke(app, args)
        assert page.exit_code == 0, page.stdout + page.stderr
        body = json.loads(page.stdout)
        rows += body["sessions"]
        cursor = body.get("next_cursor")
        if not cursor:
            break
    # Peers reuse ids across their tests ("test-session"): one agent's files that share a
    # session id are one session (identity is the agent and the id), so rows can be fewer.
    assert 150 < len(rows) <= summary["sessions"]
    assert all(row["messages"] > 0 for row in rows), [r for r in rows if not r["messages"]]
    ids = [row["sessionId"] for row in rows]
    assert len(ids) == len(set(ids))
    # A second import of the same folder admits nothing new, but where two files of one agent
    # give one session id different content (peers' tests reuse ids), each import brings the
    # other file's version back.
    again = runner.invoke(app, ["import", str(folder), "--json"])
    acks = [json.loads(line) for line in again.stdout.splitlines()[:-1]]
    assert {ack["sessionId"] for ack in acks} <= _shared_ids(folder)
    assert json.loads(again.stdout.splitlines()[-1])["imported"] == len(acks)


def _shared_ids(folder: Path) -> set[str]:
    """Session ids that two or more files of the folder give one agent's sessions (bare, and
    as ``<agent>:<id>`` where another agent had the id first)."""
    from cwcore.importers import base
    from cwcore.importers.pipeline import _walk

    files: dict[tuple[str, str], set[Path]] = {}
    for path in _walk(folder):
        importer = base.detect(path)
        if importer is None or importer.name == "markdown":
            continue
        for parsed in importer.parse(path).sessions:
            files.setdefault((parsed.agent, parsed.session_id), set()).add(path)
    shared = [(agent, sid) for (agent, sid), paths in files.items() if len(paths) > 1]
    return {sid for _, sid in shared} | {f"{agent}:{sid}" for agent, sid in shared}

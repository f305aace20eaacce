"""Paths that are not plain files never stop or hang an import (issue 32): a symlink loop, a
FIFO named explicitly (its reader would block a daemon worker forever), a file name that is not
UTF-8. Each is a one-line problem or imports; the other paths still import."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from cwtui.cli import app
from tests.helpers import REPO

runner = CliRunner()
GOOD = REPO / "tests" / "fixtures" / "peers" / "claude-code" / "agentsview-valid_session.jsonl"


def summary_of(*paths: str) -> dict[str, object]:
    result = runner.invoke(app, ["import", *paths, "--json"])
    assert result.exit_code in (0, 2), result.stdout + result.stderr
    body: dict[str, object] = json.loads(result.stdout.splitlines()[-1])
    return body


def test_a_symlink_loop_is_a_problem_and_the_rest_imports(tmp_path: Path, cw_home: Path) -> None:
    loop = tmp_path / "loop.jsonl"
    os.symlink(loop, loop)
    good = tmp_path / "good.jsonl"
    shutil.copy(GOOD, good)
    body = summary_of(str(loop), str(good))
    assert body["sessions"] == 1
    assert body["errors"] == [
        {
            "path": str(loop),
            "line": None,
            "reason": "a symbolic link that leads nowhere (a loop, or a missing target)",
        }
    ]


def test_a_fifo_named_explicitly_is_refused_without_blocking(tmp_path: Path, cw_home: Path) -> None:
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": str(REPO), "CW_HOME": str(cw_home), "CW_EMBEDDED": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "cwtui.cli", "import", str(fifo), "--json"],
        env=env,
        capture_output=True,
        timeout=120,  # a failure guard: the fixed import answers at once
    )
    body = json.loads(run.stdout.decode().splitlines()[-1])
    assert body["errors"] == [
        {
            "path": str(fifo),
            "line": None,
            "reason": "not a regular file (a FIFO, socket or device): nothing was read",
        }
    ]


def test_a_file_name_that_is_not_utf8_imports(tmp_path: Path, cw_home: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    odd = os.path.join(os.fsencode(folder), b"bad\xff.jsonl")
    with open(odd, "wb") as fh:
        fh.write(GOOD.read_bytes())
    body = summary_of(str(folder))
    assert body["sessions"] == 1 and body["errors"] == []
    assert body["notices"] == []  # the name is no text of the file: nothing replaced in it


def test_a_forced_format_reads_past_a_damaged_head(tmp_path: Path, cw_home: Path) -> None:
    """The first 25 lines are not JSON: `--format claude-code` still imports the valid lines
    after them and names each bad one (it refused the file, so they could never import)."""
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes(b"garbage {\n" * 25 + GOOD.read_bytes())
    result = runner.invoke(app, ["import", str(damaged), "--format", "claude-code", "--json"])
    body = json.loads(result.stdout.splitlines()[-1])
    assert body["sessions"] == 1 and body["imported"] > 0
    assert [e["line"] for e in body["errors"]] == list(range(1, 26))


def test_a_project_name_with_nul_or_of_100_kb_is_refused(tmp_path: Path, cw_home: Path) -> None:
    good = tmp_path / "good.jsonl"
    shutil.copy(GOOD, good)
    for name, why in (("a\x00b", "contains NUL"), ("p" * 100_000, "the limit is 512")):
        result = runner.invoke(app, ["import", str(good), "--project", name, "--json"])
        body = json.loads(result.stdout.splitlines()[-1])
        assert (body["sessions"], body["imported"]) == (0, 0)
        reasons = [e["reason"] for e in body.get("errors", [])] + [
            str(body.get("error", {}).get("message", ""))
        ]
        assert any(why in r and "project name" in r for r in reasons), body
    rows = json.loads(runner.invoke(app, ["sessions", "--json"]).stdout)["sessions"]
    assert rows == []

"""A reader that closes the pipe early (``cw show S | head -1``) is not an error: exit 0, nothing on
stderr, with or without ``--json``. Real ``cw`` processes whose stdout is a pipe closed before
they write, so every write meets EPIPE (no dependence on sizes or timing).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.faults.helpers import cw_env, run_cw
from tests.helpers import HomeCache, conversation, write_jsonl


def into_a_closed_pipe(*args: str) -> tuple[int, str]:
    """Run ``cw ARGS`` with stdout a pipe whose reader has gone; its exit status and stderr."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cwtui.cli", *args],
        env=cw_env(COLUMNS="120"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before anything is written
    err = proc.stderr.read().decode("utf-8", "replace")
    proc.stderr.close()
    return proc.wait(timeout=300), err


def _import_piped(home: Path) -> None:
    source = write_jsonl(home.parent / "s.jsonl", conversation("piped", 40))
    done = run_cw("import", source, env=cw_env(CW_HOME=str(home)))
    assert done.returncode == 0, done.stderr


@pytest.fixture
def archived(cw_home: Path, home_cache: HomeCache) -> str:
    """The session "piped" in CW_HOME: a copy of one ``cw import`` per test process."""
    home_cache.clone("piped", _import_piped, cw_home)
    return "piped"


@pytest.mark.parametrize(
    "args",
    [
        ("show", "piped"),
        ("show", "piped", "--json"),
        ("sessions",),
        ("search", "parseConfig"),
        ("export", "piped"),
        ("doctor",),
        ("--help",),
        ("search", "--help"),
    ],
)
def test_a_closed_pipe_exits_0_quietly(archived: str, args: tuple[str, ...]) -> None:
    status, err = into_a_closed_pipe(*args)
    assert (status, err) == (0, ""), args


def _import_long_ids(home: Path) -> None:
    for name in ("019f8c04-f6b1-7a3e-9d4c-2b8e5f0a1c77", "019f8c04-aaaa-7a3e-9d4c-2b8e5f0a1c77"):
        source = write_jsonl(home.parent / f"{name}.jsonl", conversation(name, 4))
        done = run_cw("import", source, env=cw_env(CW_HOME=str(home)))
        assert done.returncode == 0, done.stderr


def test_a_listing_through_a_pipe_shows_whole_ids(cw_home: Path, home_cache: HomeCache) -> None:
    """Issue 34: ``cw sessions | …`` cut ids to ``019f8c04-f…`` (Rich's 80 columns when stdout
    is not a terminal), which ``cw show`` then rejected. Without ``COLUMNS`` a pipe gets whole
    ids, one row a line, and each listed id opens its session."""
    home_cache.clone("long-ids", _import_long_ids, cw_home)
    env = cw_env(CW_HOME=str(cw_home))
    env.pop("COLUMNS", None)
    listed = subprocess.run(
        [sys.executable, "-m", "cwtui.cli", "sessions"],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert listed.returncode == 0, listed.stderr
    rows = [line for line in listed.stdout.splitlines() if "019f8c04" in line]
    assert len(rows) == 2, listed.stdout
    for row in rows:
        session = row.split()[1]
        assert len(session) == 36, row
        shown = run_cw("show", session, env=env)
        assert shown.returncode == 0, shown.stderr

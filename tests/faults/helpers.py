"""Running ``cw`` as a user's shell does (the test's CW_HOME and clock come through the
environment the root conftest sets).

:func:`run_cw` runs the command in this process through the CLI's root command, with stdin empty
and not a terminal and stdout and stderr captured apart, which is what these tests check (exit
codes, the one-line errors, the JSON streams); starting a Python process per call would cost
about 0.4 s of CPU each, mostly importing typer, rich and cwcore. :func:`run_cw_process` runs
the real ``cw`` in a subprocess, for the cases that are about the process itself (signals, a
closed pipe, a command line with no Python around it, a daemon started by a client).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from tests.helpers import REPO


def cw_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def _invoke(args: tuple[str | Path, ...], env: dict[str, str] | None) -> Result:
    from cwtui import output
    from cwtui.cli import app

    changes: dict[str, str | None] = {}
    if env is not None:
        changes = {k: None for k in os.environ if k not in env}
        changes.update({k: v for k, v in env.items() if os.environ.get(k) != v})
    columns = (os.environ if env is None else env).get("COLUMNS", "")
    with pytest.MonkeyPatch.context() as mp:
        if columns.isdigit():
            # Rich fixes a console's width from COLUMNS when the console is made (when
            # cwtui.output is first imported in this process), where a new process would read
            # it afresh; set it for this call and put back exactly what was there.
            for stream in (output.console, output.err_console):
                mp.setattr(stream, "_width", int(columns))
        result = CliRunner().invoke(app, list(map(str, args)), env=changes)
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def run_cw(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``cw ARGS`` in this process with ``env`` (a whole environment, as :func:`cw_env` builds
    it) in place of ``os.environ`` for the call; stdout and stderr captured as text.

    An exception that escapes the command is raised here rather than turned into exit 1: in a
    subprocess it would be a traceback, which no test accepts as an answer.
    """
    result = _invoke(args, env)
    argv = [sys.executable, "-m", "cwtui.cli", *map(str, args)]
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout, result.stderr)


def run_cw_bytes(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    """:func:`run_cw` with stdout and stderr as the bytes written, for tests about exactly
    which bytes reach a terminal."""
    result = _invoke(args, env)
    argv = [sys.executable, "-m", "cwtui.cli", *map(str, args)]
    return subprocess.CompletedProcess(
        argv, result.exit_code, result.stdout_bytes, result.stderr_bytes
    )


def run_cw_process(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``cw ARGS`` in a subprocess with stdin not a terminal; stdout and stderr captured as
    text."""
    return subprocess.run(
        [sys.executable, "-m", "cwtui.cli", *map(str, args)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env or cw_env(),
        timeout=timeout,
        check=False,
    )


def json_lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]

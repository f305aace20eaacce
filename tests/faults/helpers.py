"""Running the real ``cw`` in a subprocess, as a user's shell does (the test's CW_HOME and clock
come through the environment the root conftest sets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers import REPO


def cw_env(base: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["PYTHONPATH"] = str(REPO)
    env.update(extra)
    return env


def run_cw(
    *args: str | Path, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``cw ARGS`` with stdin not a terminal; stdout and stderr captured as text."""
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

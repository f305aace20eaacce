"""Real daemon processes on a temporary CW_HOME, with a short private runtime dir for the socket.

Every test gets a fresh ``XDG_RUNTIME_DIR`` under /tmp (pytest's tmp_path can be too long for a
Unix socket path), the fake service as the default factory, a short idle grace, and a teardown
that kills whatever daemon the test left behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from daemon_helpers import HERE, REPO, DaemonEnv, alive

from cwcore.daemon.client import wait_for_exit


@pytest.fixture
def env(cw_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonEnv]:
    runtime = Path(tempfile.mkdtemp(prefix="cwd", dir="/tmp"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("CW_DAEMON_GRACE_SECONDS", "3")
    monkeypatch.setenv("CW_DAEMON_SERVICE", "fake_service:make_service")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO), str(HERE)]))
    monkeypatch.delenv("CW_HANDSHAKE_TIMEOUT_S", raising=False)
    cw_home.mkdir(parents=True, exist_ok=True)
    daemon_env = DaemonEnv(home=cw_home, runtime=runtime)
    yield daemon_env
    pid = None
    with contextlib.suppress(Exception):
        pid = daemon_env.pid()
    if pid and alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        wait_for_exit(pid, 5)
    shutil.rmtree(runtime, ignore_errors=True)

"""Daemon faults with real daemon subprocesses: the idle grace, slow readers, stale settings."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.daemon.client import Client, connect, wait_for_exit
from tests.helpers import REPO, conversation, real_daemon_env, write_jsonl

SLOW_ENGINE = "tests.faults.slow_engine:make_service"


def _until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``check`` until it returns something truthy (generous timeouts, never a speed test)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _daemon_settings(monkeypatch: pytest.MonkeyPatch, **extra: str) -> None:
    """What a daemon this process autostarts runs with: the slow engine, ``extra``."""
    monkeypatch.setenv("CW_DAEMON_SERVICE", SLOW_ENGINE)
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    for name, value in extra.items():
        monkeypatch.setenv(name, value)


def _semantic(client: Client) -> dict[str, Any]:
    return dict(client.call("index.status")["semantic"])


def test_idle_grace_is_kept_while_embedding_is_pending(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An archive indexed in-process: every window published, none embedded yet.
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", conversation("s1", 400))])
    with real_daemon_env(cw_home, monkeypatch):
        _daemon_settings(monkeypatch, CW_DAEMON_GRACE_SECONDS="1")
        with connect(cw_home) as client:
            pid = client.pid
            assert pid is not None
            _until(lambda: _semantic(client)["cursor"] > 0, 60, "embedding to start")
        # No client any more: the daemon exits after its grace, embedding or not.
        assert wait_for_exit(pid, 15), "the daemon outlived its grace while embedding"
        with Archive.open(cw_home, embedded=True) as archive:
            left = archive.index_status()["semantic"]
        assert left["pending"] > 0, left  # it did stop with work pending
        with connect(cw_home) as client:  # the next start carries on from the cursor
            assert client.pid != pid
            _until(lambda: _semantic(client)["cursor"] > left["cursor"], 60, "embedding to resume")

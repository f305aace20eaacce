"""Pending background work keeps an idle daemon past its grace until the work is done, and
``cw daemon stop`` still stops it (issue 35: an archive imported and left alone was never fully
embedded, since the daemon exited 300 s after the last client). Real daemon processes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from daemon_helpers import DaemonEnv, alive

from cwcore.daemon import control
from cwcore.daemon.client import connect, wait_for_exit


def _asked(home: Path) -> int:
    path = home / "background-asked"
    return int(path.read_text()) if path.exists() else 0


def _wait_until_asked(home: Path, times: int, pid: int, limit_s: float = 30.0) -> None:
    """Until the daemon, idle past its grace, has asked about background work ``times`` times
    (it asks once a tick): a condition, not a duration."""
    deadline = time.monotonic() + limit_s
    while _asked(home) < times:
        assert alive(pid), "the daemon exited with background work pending"
        assert time.monotonic() < deadline, "the daemon never asked about background work"
        time.sleep(0.05)


def test_pending_background_work_holds_the_daemon_past_its_grace(
    env: DaemonEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_DAEMON_GRACE_SECONDS", "1")
    (env.home / "background").write_text("embedding 42 windows")
    with connect(env.home) as client:
        pid = client.pid
        assert pid is not None
    # Past its grace several times over (asked on every tick after it), it still runs.
    _wait_until_asked(env.home, 5, pid)
    assert alive(pid)
    status = control.status(env.home)  # a client: the grace starts again after it
    assert status is not None and status.pid == pid
    assert status.background == "embedding 42 windows"
    assert status.to_json()["background"] == "embedding 42 windows"
    (env.home / "background").unlink()  # the work is done
    assert wait_for_exit(pid, 30), "the daemon outlived its grace once the work was done"
    assert (env.home / "closed").read_text() == str(pid)
    log = env.paths.log.read_text()
    assert "staying for background work: embedding 42 windows" in log
    assert "(background work done)" in log


def test_daemon_stop_stops_it_while_background_work_is_pending(
    env: DaemonEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_DAEMON_GRACE_SECONDS", "1")
    (env.home / "background").write_text("embedding 7 windows")
    with connect(env.home) as client:
        pid = client.pid
        assert pid is not None
    _wait_until_asked(env.home, 2, pid)
    assert control.stop(env.home) is True
    assert not alive(pid)
    assert control.status(env.home) is None


def test_without_background_work_the_grace_still_ends_it(
    env: DaemonEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_DAEMON_GRACE_SECONDS", "1")
    with connect(env.home) as client:
        pid = client.pid
        status = control.status(env.home)
        assert status is not None and status.background is None
    assert pid is not None
    assert wait_for_exit(pid, 30)
    assert _asked(env.home) >= 1


def test_cw_daemon_status_says_what_holds_the_daemon(
    env: DaemonEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cwtui.commands.daemon import status_rows

    (env.home / "background").write_text("embedding 42 windows")
    with connect(env.home):
        status = control.status(env.home)
    assert status is not None
    rows = dict(status_rows(status))
    assert rows["idle grace"].endswith(
        "without clients, then it exits once background work is done (now embedding 42 windows)"
    )
    (env.home / "background").unlink()
    assert control.stop(env.home) is True

"""Daemon lifecycle: idle grace, stop/drain, restart --force, kill -9 recovery, replacement."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
from typing import Any

import pytest
from daemon_helpers import DaemonEnv, alive, wait_until

from cwcore.daemon import control
from cwcore.daemon.client import connect, wait_for_exit
from cwcore.errors import DaemonError, StoreLocked


def test_grace_expiry_exits_and_a_reconnect_cancels_it(
    env: DaemonEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Held open, the daemon outlives its grace; once idle past the grace it stays only for
    background work; a reconnect starts the grace again from the last close; then it exits.

    Load can only make each wait longer: every sleep here is a lower bound (at least the grace
    has passed), and the daemon cannot leave between the two connections because the service
    names background work until the test has reconnected. Each bound is a hang's fail-safe."""
    grace = 1.0
    monkeypatch.setenv("CW_DAEMON_GRACE_SECONDS", f"{grace:g}")
    with connect(env.home) as client:
        pid = client.pid
        assert pid is not None
        time.sleep(grace + 0.4)  # longer than the grace: held open, the daemon stays
        assert client.call("daemon.ping")["pid"] == pid
        (env.home / "background").write_text("held by the test")
    asked = env.home / "background-asked"
    # Idle past the grace: the daemon asks for background work (and stays) instead of leaving.
    wait_until(asked.exists, "the daemon to ask for background work past its grace")
    with connect(env.home, autostart=False) as again:  # a reconnect finds the same daemon
        assert again.pid == pid
        (env.home / "background").unlink()
        closed_at = time.monotonic()
    assert wait_for_exit(pid, 60), "the daemon outlived its grace"
    # The reconnect restarted the grace: the daemon left no sooner than a grace after the last
    # close (long past the first grace, so a daemon that kept counting from it left at once).
    assert time.monotonic() - closed_at >= grace
    assert not env.paths.socket.exists()
    assert (env.home / "closed").read_text() == str(pid)  # service closed before exit
    assert control.status(env.home) is None


def test_stop_drains_in_flight_requests(env: DaemonEnv) -> None:
    """``daemon.stop`` lets a running call finish: the call holds until the test sees the
    daemon stopping (its socket removed) and only then releases it."""
    client = connect(env.home)
    pid = client.pid
    assert pid is not None
    outcome: dict[str, Any] = {}
    stopped: dict[str, bool] = {}
    worker = threading.Thread(
        target=lambda: outcome.update(client.call("hold", {"seconds": 120}, timeout=120))
    )
    worker.start()
    stopper = threading.Thread(target=lambda: stopped.update(done=control.stop(env.home)))
    try:
        wait_until(lambda: _in_flight(env) == 1, "the held call to be running")
        stopper.start()
        wait_until(lambda: not env.paths.socket.exists(), "the daemon to begin stopping")
        assert alive(pid) and worker.is_alive(), "the daemon left before its call finished"
    finally:
        (env.home / "release").touch()
        worker.join(60)
    if stopper.ident is not None:  # started
        stopper.join(60)
    client.close()
    assert outcome == {"held": True, "released": True}  # finished, not cut off
    assert stopped == {"done": True}
    assert not alive(pid)
    assert control.stop(env.home) is False
    assert control.status(env.home) is None


def _in_flight(env: DaemonEnv) -> int:
    status = control.status(env.home)
    return -1 if status is None else status.in_flight


def test_restart_requires_force_and_force_replaces_the_pid(env: DaemonEnv) -> None:
    first = control.start(env.home)
    warning = control.restart(env.home, force=False)
    assert isinstance(warning, str) and "disconnect" in warning
    running = control.status(env.home)
    assert running is not None and running.pid == first.pid
    long_lived = connect(env.home)
    replaced = control.restart(env.home, force=True)
    assert not isinstance(replaced, str)
    assert replaced.pid != first.pid
    assert replaced.factory == "fake_service:make_service"
    assert not alive(first.pid)
    # a connected client reconnects to the replacement on its next call
    assert long_lived.call("daemon.ping")["pid"] == replaced.pid
    long_lived.close()


def test_kill_9_during_a_stream_reconnects_and_retries_the_same_id(env: DaemonEnv) -> None:
    client = connect(env.home)
    old_pid = client.pid
    assert old_pid is not None
    events: list[dict[str, Any]] = []

    def on_event(event: dict[str, Any]) -> None:
        events.append(event)
        if len(events) == 3:
            os.kill(old_pid, signal.SIGKILL)

    result = client.call(
        "stream", {"count": 10, "delay": 0.05}, on_event=on_event, request_id="stream-1"
    )
    assert result == {"count": 10}
    assert client.pid != old_pid and not alive(old_pid)
    assert events[-10:] == [{"i": i} for i in range(10)]  # the retry streamed from the start
    client.close()


def test_kill_9_then_retried_write_is_not_duplicated(env: DaemonEnv) -> None:
    with connect(env.home) as client:
        first = client.call("write", request_id="w-1")
        pid = client.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        assert wait_for_exit(pid, 5)
        # a fresh daemon: no replay cache, the service deduplicates by request id
        assert client.call("write", request_id="w-1") == first == {"count": 1, "request_id": "w-1"}
        assert client.pid != pid


def test_missing_capability_replaces_the_daemon_but_a_new_build_does_not(
    env: DaemonEnv,
) -> None:
    with connect(env.home) as v1:
        pid1 = v1.pid
    other = connect(env.home, service="fake_service:make_other_build", required={"test/1"})
    assert other.pid == pid1 and other.build == "fake-1"  # capability-compatible: kept
    other.close()
    v2 = connect(env.home, service="fake_service:make_service_v2", required={"test/2"})
    assert v2.pid != pid1 and "test/2" in v2.capabilities
    assert pid1 is not None and not alive(pid1)
    v2.close()
    with pytest.raises(DaemonError, match="lacks required capabilities: test/3"):
        connect(env.home, service="fake_service:make_service_v2", required={"test/3"})


def test_second_daemon_exits_quietly_and_stale_sockets_are_removed(env: DaemonEnv) -> None:
    with connect(env.home) as client:
        pid = client.pid
        again = subprocess.run(env.daemon_cmd(), capture_output=True, text=True, timeout=20)
        assert again.returncode == 0 and again.stderr == ""
        assert client.call("daemon.ping")["pid"] == pid
    assert control.stop(env.home)
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(env.paths.socket))  # a socket file nobody listens on
    stale.close()
    with connect(env.home) as fresh:
        assert fresh.call("daemon.ping")["pong"]


def test_start_failure_reports_the_daemons_own_error_in_one_line(
    env: DaemonEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The service's own error comes back as itself: a store error stays a store error.
    with pytest.raises(StoreLocked) as failure:
        connect(env.home, service="fake_service:make_failing")
    assert failure.value.message == f"{env.home}/store is locked by another process"
    with pytest.raises(DaemonError, match=r"^the cw daemon failed to start: cannot load service"):
        connect(env.home, service="no_such_module:factory")
    monkeypatch.setenv("CW_DEBUG", "1")  # the log's tail, for whoever asks
    with pytest.raises(StoreLocked) as debug:
        connect(env.home, service="fake_service:make_failing")
    assert "daemon.log (tail)" in debug.value.message

"""Requests through a real daemon: results, typed errors, events, output bounds, replay."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from daemon_helpers import DaemonEnv, wait_until

from cwcore.daemon import control, protocol
from cwcore.daemon.client import Client, connect
from cwcore.errors import CwError, InvalidInput, LimitExceeded


def test_autostart_echo_and_status_fields(env: DaemonEnv) -> None:
    with connect(env.home) as client:
        assert client.capabilities == {"test/1"}
        assert client.build == "fake-1"
        answer = client.call("echo", {"a": [1, "é"]}, request_id="req-1")
        assert answer == {"echo": {"a": [1, "é"]}, "request_id": "req-1"}
        assert client.call("daemon.ping")["pong"] is True
        status = client.call("daemon.status")
    assert status["pid"] == client.pid == env.pid()
    assert status["store"] == str(env.home.resolve())
    assert status["socket"] == str(env.paths.socket)
    assert status["socket"].startswith(str(env.runtime))
    assert status["capabilities"] == ["test/1"]
    assert status["build"] == "fake-1"
    assert status["connections"] == 1
    assert status["in_flight"] == 0
    assert status["uptime_s"] >= 0
    assert status["service"]["fake_calls"] >= 1
    assert (env.home / "workers").read_text() == "started"
    # the socket directory is private, the socket itself 0600
    assert env.paths.socket_dir.stat().st_mode & 0o777 == 0o700
    assert env.paths.socket.stat().st_mode & 0o777 == 0o600


def test_errors_are_typed_and_the_daemon_keeps_serving(env: DaemonEnv) -> None:
    with connect(env.home) as client:
        with pytest.raises(InvalidInput) as bad:
            client.call("invalid")
        assert bad.value.details == {"field": "x"}
        with pytest.raises(CwError) as bug:
            client.call("fail")
        assert bug.value.code == "internal" and "boom" in bug.value.message
        assert client.call("echo", {"ok": 1})["echo"] == {"ok": 1}


def test_events_stream_before_the_result(env: DaemonEnv) -> None:
    events: list[dict[str, Any]] = []
    with connect(env.home) as client:
        result = client.call("stream", {"count": 50}, on_event=events.append)
    assert result == {"count": 50}
    assert events == [{"i": i} for i in range(50)]


def test_output_bound_is_enforced(env: DaemonEnv) -> None:
    with connect(env.home) as client:
        assert len(client.call("big", {"bytes": 3_000_000})["data"]) == 3_000_000
        with pytest.raises(LimitExceeded):
            client.call("big", {"bytes": 100_000, "bound": 10_000})
        with pytest.raises(LimitExceeded):  # no result may exceed one 16 MiB frame
            client.call("big", {"bytes": 17 * 1024 * 1024})
        assert client.call("daemon.ping")["pong"]


def test_request_too_large_for_a_frame_is_refused_locally(env: DaemonEnv) -> None:
    with connect(env.home) as client, pytest.raises(LimitExceeded):
        client.call("echo", {"blob": "x" * (16 * 1024 * 1024)})


def test_long_lived_client_and_short_calls_at_the_same_time(env: DaemonEnv) -> None:
    """Short calls are answered while a long-lived client's stream is still running.

    The stream stops after its first event until the test creates the release file, so it is
    running for as long as the test needs, however loaded the machine: a short call that waited
    for it would time out (30 s) instead of the test measuring how long the calls took."""
    long_lived = connect(env.home)
    events: list[dict[str, Any]] = []
    first_event = threading.Event()
    outcome: dict[str, Any] = {}

    def on_event(event: dict[str, Any]) -> None:
        events.append(event)
        first_event.set()

    def stream() -> None:
        outcome["result"] = long_lived.call(
            "stream", {"count": 20, "hold_at": 1}, on_event=on_event, timeout=120
        )

    worker = threading.Thread(target=stream)
    worker.start()
    try:
        assert first_event.wait(60), "the stream never started"
        for i in range(5):  # short CLI-style calls: one connection each
            with connect(env.home) as short:
                assert short.call("echo", {"i": i}, timeout=30)["echo"] == {"i": i}
        assert control.status(env.home) is not None
        assert worker.is_alive() and events == [{"i": 0}], "the stream is held until released"
        # the same long-lived client is usable from another thread (calls serialize)
        other: dict[str, Any] = {}
        t2 = threading.Thread(target=lambda: other.update(long_lived.call("echo", {"t": 2})))
        t2.start()
        (env.home / "release").touch()
        t2.join(60)
        worker.join(60)
        assert other["echo"] == {"t": 2}
    finally:
        (env.home / "release").touch()
        long_lived.close()
    assert outcome["result"] == {"count": 20} and events == [{"i": i} for i in range(20)]


def test_same_request_id_is_replayed_not_rerun(env: DaemonEnv) -> None:
    with connect(env.home) as client:
        first = client.call("write", request_id="write-1")
    with connect(env.home) as again:
        assert again.call("write", request_id="write-1") == first
        assert again.call("write", request_id="write-2")["count"] == 2
        with pytest.raises(InvalidInput, match="already used"):
            again.call("echo", request_id="write-1")
    assert first == {"count": 1, "request_id": "write-1"}
    assert (env.home / "executions").read_text() == "2"  # write-1 ran once, write-2 once


def test_retry_joins_a_request_still_running(env: DaemonEnv) -> None:
    """A retry (same id) of a write still running joins it instead of running it again.

    The first write holds until the release file exists, and the retry is known to have joined
    before the release: it is sent on a raw connection followed by a ``daemon.status``, and the
    daemon starts each frame's task in the order the frames arrive, so by the time the status is
    answered the retry has found the running write (its task reaches the join without waiting on
    anything). Nothing depends on how quickly either process runs."""
    first = Client.connect(env.home)
    outcome: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: outcome.update(
            first.call("write", {"hold": True}, request_id="slow-write", timeout=120)
        )
    )
    thread.start()
    retry = env.raw(timeout=60)
    try:
        wait_until((env.home / "write-started").exists, "the first write to start")
        protocol.send(retry, protocol.request("slow-write", "write", {"hold": True}))
        protocol.send(retry, protocol.request("barrier", "daemon.status", {}))
        status = protocol.recv(retry)
        assert status["id"] == "barrier", "the held write answered before its release"
        assert status["result"]["in_flight"] == 1  # the retry started no second call
        (env.home / "release").touch()
        answer = protocol.recv(retry)
    finally:
        (env.home / "release").touch()
        retry.close()
        thread.join(60)
        first.close()
    assert answer == {
        "type": "result",
        "id": "slow-write",
        "result": {"count": 1, "request_id": "slow-write"},
    }
    assert outcome == {"count": 1, "request_id": "slow-write"}
    assert (env.home / "executions").read_text() == "1"


def test_call_timeout_cancels(env: DaemonEnv) -> None:
    from cwcore.errors import DaemonError

    with connect(env.home) as client:
        started = time.monotonic()
        with pytest.raises(DaemonError, match="no answer"):
            client.call("sleep", {"seconds": 30}, timeout=0.3)
        # Far below the 30 s the call would take: the client gave up (a loaded machine may be
        # late by seconds, so the bound is not tight).
        assert time.monotonic() - started < 20
        assert client.call("daemon.ping")["pong"]  # reconnects transparently

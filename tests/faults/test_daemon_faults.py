"""Daemon faults with real daemon subprocesses: the idle grace, slow readers, stale settings."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cwcore import large_results
from cwcore.api import Archive
from cwcore.daemon import protocol
from cwcore.daemon.client import Client, connect, wait_for_exit
from cwcore.daemon.paths import daemon_paths
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


def test_idle_grace_waits_for_pending_embedding_and_stop_still_ends_it(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 35: a daemon left alone with windows waiting for a vector used to exit at the end
    of its grace, so an imported archive was never fully embedded. Now it stays (niced) while
    the work is pending; ``cw daemon stop`` still ends it at once, and the next start resumes."""
    from cwcore.daemon import control

    # An archive indexed in-process: every window published, none embedded yet.
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", conversation("s1", 400))])
    with real_daemon_env(cw_home, monkeypatch):
        _daemon_settings(monkeypatch, CW_DAEMON_GRACE_SECONDS="1")
        with connect(cw_home) as client:
            pid = client.pid
            assert pid is not None
            _until(lambda: _semantic(client)["cursor"] > 0, 60, "embedding to start")
        # No client any more: past its grace, the daemon stays for the pending embedding.
        log = daemon_paths(cw_home).log
        _until(
            lambda: "staying for background work: embedding" in log.read_text(),
            60,
            "the daemon to stay past its grace for the embedding",
        )
        assert not wait_for_exit(pid, 0), "the daemon left with embedding pending"
        assert control.stop(cw_home) is True  # stop ends it at once, work pending or not
        with Archive.open(cw_home, embedded=True) as archive:
            left = archive.index_status().to_json()["semantic"]
        assert left["pending"] > 0, left  # it did stop with work pending
        with connect(cw_home) as client:  # the next start carries on where it stopped
            assert client.pid != pid
            _until(lambda: _semantic(client)["cursor"] > left["cursor"], 60, "embedding to resume")


def _big_session(path: Path, turns: int = 12, chars: int = 700_000) -> Path:
    """One session whose transcript (``show``) is about ``turns * chars`` bytes."""
    rows = []
    for i in range(turns):
        words = " ".join(f"w{(i * 7919 + j) % 5000}" for j in range(chars // 6))
        rows.append({"session": "big", "id": f"u{i}", "role": "user", "text": words})
        rows.append({"session": "big", "id": f"a{i}", "role": "assistant", "text": f"ok {i}"})
    return write_jsonl(path, rows)


def _stalled_reader(home: Path, method: str, params: dict[str, Any]) -> socket.socket:
    """A raw client that sends one request for a large result and never reads the answer. The
    request is padded to a full frame, so two of them fill the daemon-wide input budget too."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect(str(daemon_paths(home).socket))
    protocol.send(sock, protocol.hello(frozenset(), frozenset()))
    assert protocol.recv(sock)["type"] == "welcome"
    rid = f"stall-{id(sock)}"
    bare = len(protocol.encode(protocol.request(rid, method, {**params, "pad": ""})))
    pad = "p" * (protocol.MAX_FRAME + protocol.HEADER_BYTES - bare)
    frame = protocol.encode(protocol.request(rid, method, {**params, "pad": pad}))
    assert len(frame) == protocol.MAX_FRAME + protocol.HEADER_BYTES
    sock.sendall(frame)
    return sock


def test_two_readers_that_stop_reading_do_not_stall_the_others(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([_big_session(tmp_path / "big.jsonl")])
    with real_daemon_env(cw_home, monkeypatch):
        monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "false")  # nothing else competes
        with connect(cw_home) as probe:
            stalled = [_stalled_reader(cw_home, "show", {"session": "big"}) for _ in range(2)]
            try:
                # Both large answers stream their parts to silent peers and wait on them.
                _until(
                    lambda: (
                        probe.call("daemon.status", timeout=10)["running_requests"] >= 2
                        and probe.call("daemon.status", timeout=10)["output_reserved_bytes"]
                        >= 2 * large_results.MAX_INLINE_BYTES
                    ),
                    60,
                    "both large answers to be waiting on their readers",
                )
                began = time.monotonic()
                with connect(cw_home, autostart=False) as third:
                    assert third.call("daemon.ping", timeout=10)["pong"]
                    status = third.call("daemon.status", timeout=10)
                    listed = third.call("sessions", {"limit": 5}, timeout=10)
                assert time.monotonic() - began < 5.0
                assert status["connections"] >= 3
                assert [s["sessionId"] for s in listed["sessions"]] == ["big"]
            finally:
                for sock in stalled:
                    sock.close()


def _cw(env: dict[str, str], *args: str, stdin: bytes = b"", module: str = "cwtui.cli") -> str:
    """Run a client process; returns its stderr (it must succeed)."""
    done = subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        input=stdin,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr.decode()


WARNING = "cw: the running daemon uses other settings ({}): cw daemon restart"


def test_a_client_with_other_settings_is_told_once(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = write_jsonl(tmp_path / "s.jsonl", conversation("s1", 2))
    with real_daemon_env(cw_home, monkeypatch, CW_DAEMON_GRACE_SECONDS="60") as env:
        # The first client starts the daemon with its settings (the fixed test clock).
        assert _cw(env, "import", str(source), "--json") == ""
        assert _cw(env, "sessions") == ""  # the same settings: no line
        other_clock = {**env, "CW_NOW": "2027-01-01T00:00:00Z"}
        assert _cw(other_clock, "sessions").splitlines() == [WARNING.format("now")]
        # One line per process, however many connections it opens.
        assert _cw(other_clock, "search", "parseConfig", "--json").splitlines() == [
            WARNING.format("now")
        ]
        both = {**other_clock, "CW_LEASE_MINUTES": "5"}
        assert _cw(both, "sessions").splitlines() == [WARNING.format("leaseMinutes, now")]
        # Hooks stay silent: a host may show their stderr to the user.
        prompt = json.dumps({"session": "s1", "message": "where is parseConfig?"}).encode()
        assert _cw(other_clock, stdin=prompt, module="cwcore.hosts.hook_client") == ""
        payload = json.dumps({"transcript_path": str(source)}).encode()
        assert _cw(other_clock, "session-end", stdin=payload, module="cwcore.hosts.hooks") == ""

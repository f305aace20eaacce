"""A client that does not read, or does not send, costs only its own connection (spec 003).

Real daemon subprocesses. Silent readers ask for large answers (``show`` of a long session, which
streams its parts from a worker thread) and never read; announcers send a 16 MiB frame header
and then nothing. A normal client's search, recall and import must still be served, and the bad
connections are dropped (or left alone), never the good ones. Timeouts here are failure guards
(a stalled daemon used to hold the others for about 30 s), not speed claims.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.daemon import protocol
from cwcore.daemon.client import connect
from cwcore.daemon.paths import daemon_paths
from tests.helpers import conversation, real_daemon_env, write_jsonl

#: A call that a stalled daemon would hold for ~30 s (its write timeout) must answer within this.
GUARD_S = 20.0


def _until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _big_session(path: Path, turns: int = 12, chars: int = 700_000) -> Path:
    rows = []
    for i in range(turns):
        words = " ".join(f"w{(i * 7919 + j) % 5000}" for j in range(chars // 6))
        rows.append({"session": "big", "id": f"u{i}", "role": "user", "text": words})
        rows.append({"session": "big", "id": f"a{i}", "role": "assistant", "text": f"ok {i}"})
    return write_jsonl(path, rows)


def _raw(home: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(30)
    sock.connect(str(daemon_paths(home).socket))
    protocol.send(sock, protocol.hello(frozenset(), frozenset()))
    assert protocol.recv(sock)["type"] == "welcome"
    return sock


def _silent_reader(home: Path, n: int) -> socket.socket:
    """Asks for a transcript of several MiB (streamed in parts) and never reads a byte of it."""
    sock = _raw(home)
    protocol.send(sock, protocol.request(f"silent-{n}", "show", {"session": "big"}))
    return sock


def _announcer(home: Path) -> socket.socket:
    """Announces a full 16 MiB frame and sends nothing of its body."""
    sock = _raw(home)
    sock.sendall(protocol.HEADER.pack(protocol.MAX_FRAME))
    return sock


def _closed_by_daemon(sock: socket.socket) -> bool:
    """True once the daemon closed ``sock`` (drains whatever it had sent first)."""
    sock.settimeout(0)
    try:
        while True:
            chunk = sock.recv(1 << 20)
            if not chunk:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.settimeout(30)


@pytest.fixture
def archive_home(cw_home: Path, tmp_path: Path) -> Path:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths(
            [
                _big_session(tmp_path / "big.jsonl"),
                write_jsonl(tmp_path / "small.jsonl", conversation("s1", 20)),
            ]
        )
    return cw_home


@pytest.fixture
def bad_peers() -> Iterator[list[socket.socket]]:
    socks: list[socket.socket] = []
    yield socks
    for sock in socks:
        sock.close()


@pytest.mark.slow
def test_silent_readers_and_announcers_cost_only_their_own_connections(
    archive_home: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    bad_peers: list[socket.socket],
) -> None:
    home = archive_home
    more = write_jsonl(tmp_path / "more.jsonl", conversation("s2", 3))
    with real_daemon_env(home, monkeypatch):
        monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "false")
        with connect(home) as probe:
            bad_peers.extend(_silent_reader(home, n) for n in range(5))
            silent = list(bad_peers)
            # All five transcripts are being written to peers that do not read: before the fix
            # their reservations (6 MiB each) filled the daemon-wide output budget.
            _until(
                lambda: probe.call("daemon.status", timeout=10)["running_requests"] >= 5,
                60,
                "the five large answers to wait on their readers",
            )
            announcers = [_announcer(home) for _ in range(2)]
            bad_peers.extend(announcers)
            with connect(home, autostart=False) as good:
                found = good.call("search", {"query": "parseConfig"}, timeout=GUARD_S)
                locator = found["results"][0]["locator"]
                recalled = good.call("recall", {"locator": locator}, timeout=GUARD_S)
                imported = good.call(
                    "import", {"paths": [str(more)], "format": "cw-jsonl"}, timeout=GUARD_S
                )
                listed = good.call("sessions", {"limit": 10}, timeout=GUARD_S)
            assert recalled["status"] == "resolved", recalled
            assert imported, imported
            assert {s["sessionId"] for s in listed["sessions"]} >= {"big", "s1", "s2"}
            # The good client's recall (16 MiB declared) needed room the silent readers held:
            # they were dropped, and the status shows none of their output left reserved.
            assert any(_closed_by_daemon(s) for s in silent)
            status = probe.call("daemon.status", timeout=GUARD_S)
            assert status["stalled_dropped"] >= 1, status
            assert status["output_reserved_bytes"] < 2 * (protocol.MAX_FRAME + 4)


@pytest.mark.slow
def test_announcers_of_full_frames_do_not_lock_out_other_clients(
    archive_home: Path, monkeypatch: pytest.MonkeyPatch, bad_peers: list[socket.socket]
) -> None:
    home = archive_home
    with real_daemon_env(home, monkeypatch):
        monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "false")
        with connect(home) as probe:
            probe.call("daemon.ping")
            bad_peers.extend(_announcer(home) for _ in range(4))
            _until(
                lambda: probe.call("daemon.status", timeout=10)["connections"] >= 5,
                30,
                "the announcers to be connected",
            )
            # A header alone retains nothing: the announced bodies do not hold the input budget.
            assert (
                probe.call("daemon.status", timeout=10)["input_reserved_bytes"] < protocol.MAX_FRAME
            )
            # A request as large as a whole frame still gets its input budget.
            full = _raw(home)
            bad_peers.append(full)
            bare = len(protocol.encode(protocol.request("full", "daemon.ping", {"pad": ""})))
            pad = "p" * (protocol.MAX_FRAME + protocol.HEADER_BYTES - bare)
            full.sendall(protocol.encode(protocol.request("full", "daemon.ping", {"pad": pad})))
            full.settimeout(GUARD_S)
            answer = protocol.recv(full)
            assert answer["type"] == "result" and answer["result"]["pong"], answer
            with connect(home, autostart=False) as good:
                found = good.call("search", {"query": "parseConfig"}, timeout=GUARD_S)
                assert found["results"]
                assert good.call("sessions", {"limit": 5}, timeout=GUARD_S)["sessions"]
            # The announcers are left alone (their frame deadline closes them later).
            assert not any(_closed_by_daemon(s) for s in bad_peers[:4])

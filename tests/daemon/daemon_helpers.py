"""Helpers shared by the daemon tests (imported by name: this folder is on sys.path)."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cwcore.daemon import protocol
from cwcore.daemon.client import wait_for_exit
from cwcore.daemon.paths import DaemonPaths, daemon_paths
from cwcore.daemon.runner import read_pid

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent


@dataclass
class DaemonEnv:
    home: Path
    runtime: Path

    @property
    def paths(self) -> DaemonPaths:
        return daemon_paths(self.home)

    def pid(self) -> int | None:
        return read_pid(self.paths.pidfile)

    def raw(self, hello: bool = True, timeout: float = 5.0) -> socket.socket:
        """A raw connection to the running daemon, optionally past the handshake."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(str(self.paths.socket))
        if hello:
            protocol.send(sock, protocol.hello(frozenset(), frozenset()))
            assert protocol.recv(sock)["type"] == "welcome"
        return sock

    def daemon_cmd(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "cwcore.daemon", "--home", str(self.home), *extra]


def read_error_then_eof(sock: socket.socket) -> dict[str, Any]:
    """The connection-level error frame the daemon sends before closing, then EOF."""
    message = protocol.recv(sock)
    assert message["type"] == "error" and message["id"] is None, message
    assert sock.recv(1) == b""
    return dict(message["error"])


def alive(pid: int) -> bool:
    return not wait_for_exit(pid, 0)


def wait_until(condition: Callable[[], object], what: str, timeout: float = 60.0) -> None:
    """Poll ``condition`` until it is true; fail after ``timeout`` seconds, which only a hang
    reaches (the bound is a fail-safe, never the thing tested: no timing under load)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)

"""The lean hook client: ``python -m cwcore.hosts.hook_client`` (agent hosts run it per prompt).

It reads the host's hook payload (JSON) on stdin, asks the daemon for the preflight hint of that
user message and prints the hint — or nothing. It always exits 0: any problem (no payload, no
daemon, a timeout, an error answer) means no hint, never a blocked prompt (fail-open).

Payloads understood:

* Claude Code ``UserPromptSubmit``: ``{"session_id", "prompt", "transcript_path", "cwd",
  "hook_event_name"}`` (the message key defaults to the session plus a hash of the prompt);
* cw's own: ``{"session", "message", "messageKey"?}``.

To stay fast (Python start-up included, well under 100 ms against a warm daemon) it imports
only :mod:`cwcore.daemon.protocol` and :mod:`cwcore.daemon.paths` — never typer, rich, textual,
numpy or the engine — and speaks the socket protocol itself: one hello, one ``preflight``
request. When no daemon listens it starts one (``python -m cwcore.daemon``, as the full client
does) and retries once. ``CW_HOOK_TIMEOUT_S`` bounds the whole exchange (default 10 s);
``CW_DEBUG=1`` reports swallowed errors on stderr.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any

from cwcore.daemon import protocol
from cwcore.daemon.paths import DaemonPaths, check_private_dir, daemon_paths

#: Largest payload read from stdin.
MAX_PAYLOAD = 2 * 1024 * 1024
DEFAULT_TIMEOUT_S = 10.0


def parse_payload(raw: bytes) -> dict[str, str] | None:
    """``{"session", "message", "messageKey"?}`` from a host payload, or None if unusable."""
    try:
        body = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    session = body.get("session") or body.get("session_id") or body.get("sessionId")
    message = body.get("message")
    if message is None:
        message = body.get("prompt")
    if not isinstance(session, str) or not session or not isinstance(message, str):
        return None
    if not message.strip():
        return None
    out = {"session": session, "message": message}
    key = body.get("messageKey") or body.get("message_key")
    if isinstance(key, str) and key:
        out["messageKey"] = key
    return out


def _timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("CW_HOOK_TIMEOUT_S", DEFAULT_TIMEOUT_S)))
    except ValueError:
        return DEFAULT_TIMEOUT_S


def _dial(paths: DaemonPaths, timeout: float) -> socket.socket | None:
    check_private_dir(paths.socket_dir)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(str(paths.socket))
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    return sock


def _spawn(paths: DaemonPaths, timeout: float) -> None:
    """Start the daemon and wait for its launcher to report (it exits once the daemon listens)."""
    import subprocess

    from cwcore.daemon.service import DEFAULT_SERVICE

    service = os.environ.get("CW_DAEMON_SERVICE") or DEFAULT_SERVICE
    cmd = [sys.executable, "-m", "cwcore.daemon", "--home", str(paths.home), "--service", service]
    subprocess.run(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        timeout=timeout,
        check=False,
    )


def _connect(paths: DaemonPaths, deadline: float) -> socket.socket:
    sock = _dial(paths, max(0.05, deadline - time.monotonic()))
    if sock is None:
        _spawn(paths, max(0.1, deadline - time.monotonic()))
        sock = _dial(paths, max(0.05, deadline - time.monotonic()))
        if sock is None:
            raise ConnectionError("the cw daemon did not start")
    return sock


def request_hint(params: dict[str, Any], timeout: float | None = None) -> str | None:
    """The preflight hint for ``params`` from the daemon (None: no hint). Raises on failure."""
    deadline = time.monotonic() + (timeout if timeout is not None else _timeout())
    paths = daemon_paths()
    sock = _connect(paths, deadline)
    try:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        protocol.send(sock, protocol.hello(frozenset(), frozenset()))
        welcome = protocol.recv(sock)
        if welcome.get("type") != "welcome":
            raise ConnectionError(f"handshake refused: {welcome.get('type')}")
        rid = "hook-" + os.urandom(8).hex()
        protocol.send(sock, protocol.request(rid, "preflight", params))
        while True:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            message = protocol.recv(sock)
            if message.get("id") not in (rid, None):
                continue
            if message["type"] == "result":
                hint = (message.get("result") or {}).get("hint")
                return hint if isinstance(hint, str) and hint else None
            if message["type"] == "error":
                raise ConnectionError(str((message.get("error") or {}).get("code")))
    finally:
        sock.close()


def main() -> int:
    try:
        payload = parse_payload(sys.stdin.buffer.read(MAX_PAYLOAD))
        if payload is None:
            return 0
        hint = request_hint(payload)
        if hint:
            sys.stdout.write(hint)
            sys.stdout.flush()
    except BaseException as exc:  # fail open: no hint, never a failed prompt
        if os.environ.get("CW_DEBUG"):
            sys.stderr.write(f"cw hook: {type(exc).__name__}: {exc}\n")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown: the host waits for the process to end

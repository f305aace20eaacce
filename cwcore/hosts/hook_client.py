"""The lean hook client: ``python -m cwcore.hosts.hook_client`` (agent hosts run it per prompt).

It reads the host's hook payload (JSON) on stdin, asks the daemon (engine method ``hook.turn``,
one round trip) for the preflight hint of that user message and the per-turn memory block, and
prints them — the hint's frozen bytes first, then a blank line and the memory block — or
nothing. It always exits 0: any problem (no payload, no daemon, a timeout, an error answer)
means no output, never a blocked prompt (fail-open).

Payloads understood:

* Claude Code and Codex ``UserPromptSubmit``: ``{"session_id", "prompt", "transcript_path",
  "cwd", "hook_event_name"}`` (the message key defaults to a hash of the prompt);
* Claude Code and Codex ``SessionStart``: ``{"session_id", "hook_event_name": "SessionStart",
  "cwd", …}`` — no prompt: the session-start memory block only;
* cw's own: ``{"session", "message", "messageKey"?, "cwd"?}``.

Start-up is most of this process's life (it runs on every user prompt), so on the common path it
imports only the standard library's C-backed modules (``json``, ``struct``, ``stat``,
``_socket``) and nothing from cwcore: the socket location (:func:`socket_path`) and the framing
(:func:`frame`, :func:`read_frame`) are restated here from :mod:`cwcore.daemon.paths` and
:mod:`cwcore.daemon.protocol`, and ``tests/hints/test_hook_client.py`` checks that both
agree with those modules; without ``CW_HOME`` the home comes from ``platformdirs``, as
:func:`cwcore.config.default_home` gets it. The rare paths — no ``XDG_RUNTIME_DIR`` in the
environment, a socket directory failing the safety check, no daemon listening — defer to the full
modules (the last one tries the socket ``CW_HOME/daemon.json`` advertises, then starts the daemon
as the full client does and retries once).
``CW_HOOK_TIMEOUT_S`` bounds the whole exchange (default 10 s); ``CW_DEBUG=1`` reports
swallowed errors on stderr.
"""

from __future__ import annotations

# ``socket`` pulls in ``selectors`` and ``enum`` wrappers this client never uses; the C module
# has the same socket type.
import _socket
import json
import os
import stat
import struct
import sys
import time

#: Largest payload read from stdin.
MAX_PAYLOAD = 2 * 1024 * 1024
DEFAULT_TIMEOUT_S = 10.0
#: Must equal ``cwcore.daemon.protocol.PROTOCOL_VERSION`` and ``MAX_FRAME`` (tested).
PROTOCOL_VERSION = 1
MAX_FRAME = 16 * 1024 * 1024
_HEADER = struct.Struct(">I")


#: The host events that start a session (no prompt yet).
SESSION_START_EVENTS = ("SessionStart", "session_start")


def parse_payload(raw: bytes) -> dict[str, str] | None:
    """The ``hook.turn`` request of a host payload — ``{"session", "event", "message"?,
    "messageKey"?, "cwd"?}`` — or None if unusable."""
    try:
        body = json.loads(raw.decode("utf-8")) if raw.strip() else None
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(body, dict):
        return None
    session = body.get("session") or body.get("session_id") or body.get("sessionId")
    if not isinstance(session, str) or not session:
        return None
    out = {"session": session}
    cwd = body.get("cwd")
    if isinstance(cwd, str) and cwd:
        out["cwd"] = cwd
    if body.get("hook_event_name") in SESSION_START_EVENTS:
        out["event"] = "session-start"
        return out
    message = body.get("message")
    if message is None:
        message = body.get("prompt")
    if not isinstance(message, str) or not message.strip():
        return None
    out.update(event="prompt", message=message)
    key = body.get("messageKey") or body.get("message_key")
    if isinstance(key, str) and key:
        out["messageKey"] = key
    return out


def _timeout() -> float:
    try:
        return max(0.1, float(os.environ.get("CW_HOOK_TIMEOUT_S", DEFAULT_TIMEOUT_S)))
    except ValueError:
        return DEFAULT_TIMEOUT_S


def _sha256_hex(data: bytes) -> str:
    try:  # the builtin module avoids loading OpenSSL through hashlib
        from _sha256 import sha256  # Python 3.11
    except ImportError:
        try:
            from _sha2 import sha256  # Python 3.12+
        except ImportError:
            from hashlib import sha256
    return sha256(data).hexdigest()


def _private_dir(path: str) -> bool:
    """The quick form of ``paths.check_private_dir``: a 0700 directory of ours, not a link."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077


def _default_home() -> str:
    """The home without ``CW_HOME``: the same call as :func:`cwcore.config.default_home`,
    without importing cwcore.config (TOML, dataclasses), which costs more than the rest."""
    import platformdirs

    return str(platformdirs.user_data_dir("cw", appauthor=False))


def socket_path() -> str:
    """The daemon socket of ``CW_HOME``, as :func:`cwcore.daemon.paths.daemon_paths` names it.

    Raises :class:`~cwcore.errors.UnsafeSocket` (through the full module) when the socket
    directory fails the safety check.
    """
    home = os.environ.get("CW_HOME") or _default_home()
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        resolved = os.path.realpath(os.path.expanduser(home))
        directory = os.path.join(runtime, f"cw-{os.getuid()}")
        if _private_dir(directory):
            name = _sha256_hex(os.fsencode(resolved))[:16]
            return os.path.join(directory, f"{name}.sock")
    from cwcore.daemon.paths import daemon_paths  # creates or refuses the directory

    return str(daemon_paths().socket)


def frame(message: dict[str, object]) -> bytes:
    """One protocol frame: a 4-byte big-endian length, then compact UTF-8 JSON (JSON's ``\\u``
    escapes when a string holds a lone surrogate, as the daemon's own encoder does: a prompt
    cut inside an emoji still reaches preflight)."""
    try:
        body = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        body = json.dumps(message, separators=(",", ":")).encode("ascii")
    return _HEADER.pack(len(body)) + body


def _recv_exactly(sock: _socket.socket, n: int) -> bytes:
    chunks: list[bytes] = []
    while n:
        chunk = sock.recv(min(n, 1024 * 1024))
        if not chunk:
            raise ConnectionResetError("connection closed by the daemon")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: _socket.socket) -> dict[str, object]:
    (length,) = _HEADER.unpack(_recv_exactly(sock, _HEADER.size))
    if length > MAX_FRAME:
        raise ConnectionError(f"frame of {length} bytes exceeds the protocol limit")
    message = json.loads(_recv_exactly(sock, length).decode("utf-8"))
    if not isinstance(message, dict):
        raise ConnectionError("frame body is not an object")
    return message


def _dial(path: str, timeout: float) -> _socket.socket | None:
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(path)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except BaseException:
        sock.close()
        raise
    return sock


def _spawn(timeout: float) -> str:
    """Start the daemon and wait for its launcher to report (it exits once the daemon listens);
    returns the socket path, computed by the full module (which creates the directory)."""
    import subprocess

    from cwcore.daemon.paths import daemon_paths
    from cwcore.daemon.service import DEFAULT_SERVICE

    paths = daemon_paths()
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
    return str(paths.socket)


def _advertised(deadline: float) -> _socket.socket | None:
    """A connection to the socket ``CW_HOME/daemon.json`` advertises (a daemon started with
    another ``XDG_RUNTIME_DIR``), after the full module's checks; None when there is none."""
    from cwcore.daemon.paths import advertised_socket, resolve_home

    other = advertised_socket(resolve_home())
    return None if other is None else _dial(str(other), max(0.05, deadline - time.monotonic()))


def _connect(deadline: float) -> _socket.socket:
    sock = _dial(socket_path(), max(0.05, deadline - time.monotonic()))
    if sock is None:
        sock = _advertised(deadline)
    if sock is None:
        path = _spawn(max(0.1, deadline - time.monotonic()))
        sock = _dial(path, max(0.05, deadline - time.monotonic())) or _advertised(deadline)
        if sock is None:
            raise ConnectionError("the cw daemon did not start")
    return sock


def request_turn(params: dict[str, str], timeout: float | None = None) -> str | None:
    """What the hook prints for ``params`` (the hint, the memory block, both or None), from the
    daemon's ``hook.turn``. Raises on failure."""
    deadline = time.monotonic() + (timeout if timeout is not None else _timeout())
    sock = _connect(deadline)
    try:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        hello: dict[str, object] = {
            "type": "hello",
            "protocol": PROTOCOL_VERSION,
            "capabilities": [],
            "required": [],
        }
        sock.sendall(frame(hello))
        welcome = read_frame(sock)
        if welcome.get("type") != "welcome":
            raise ConnectionError(f"handshake refused: {welcome.get('type')}")
        rid = "hook-" + os.urandom(8).hex()
        request: dict[str, object] = {
            "type": "request",
            "id": rid,
            "method": "hook.turn",
            "params": params,
        }
        sock.sendall(frame(request))
        while True:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            message = read_frame(sock)
            if message.get("id") not in (rid, None):
                continue
            if message["type"] == "result":
                result = message.get("result")
                return combined(result if isinstance(result, dict) else {})
            if message["type"] == "error":
                error = message.get("error")
                code = error.get("code") if isinstance(error, dict) else None
                raise ConnectionError(str(code))
    finally:
        sock.close()


def combined(result: dict[str, object]) -> str | None:
    """The hint's exact bytes, then (after a blank line) the memory block; None: neither.
    The hint comes first and unchanged, so its frozen bytes stay a fixed prefix of the turn's
    context whatever the memory block holds."""
    parts = [result.get(name) for name in ("hint", "memory")]
    texts = [p for p in parts if isinstance(p, str) and p.strip()]
    if not texts:
        return None
    out = texts[0]
    for text in texts[1:]:
        out += ("\n" if out.endswith("\n") else "\n\n") + text
    return out


def main() -> int:
    try:
        payload = parse_payload(sys.stdin.buffer.read(MAX_PAYLOAD))
        if payload is None:
            return 0
        text = request_turn(payload)
        if text:
            sys.stdout.write(text)
            sys.stdout.flush()
    except BaseException as exc:  # fail open: no output, never a failed prompt
        if os.environ.get("CW_DEBUG"):
            sys.stderr.write(f"cw hook: {type(exc).__name__}: {exc}\n")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)  # skip interpreter teardown: the host waits for the process to end

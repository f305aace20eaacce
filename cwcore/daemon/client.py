"""The client side of the daemon socket: connect (starting the daemon on demand), call, retry.

Contract:

* :func:`connect` checks the socket directory (:class:`~cwcore.errors.UnsafeSocket`) before it
  touches the socket. When nothing listens there it tries the socket ``CW_HOME/daemon.json``
  advertises (a daemon started with another ``XDG_RUNTIME_DIR``; same directory checks). When
  nothing listens and ``autostart`` is on, it runs
  ``python -m cwcore.daemon --home H --service S --report json`` and waits (at most
  ``start_timeout`` seconds) for it to report that it listens. A daemon that fails to start
  gives the daemon's own error, one line, same code and exit status (a store newer than this cw
  is ``store-version``; a failure of the daemon itself is :class:`~cwcore.errors.DaemonError`);
  ``CW_DEBUG=1`` appends the tail of ``daemon.log``.
* The handshake sends the client's required capabilities. A daemon missing any of them is asked
  to stop and a new one is started once; a daemon of a different build with the required
  capabilities keeps serving.
* The handshake also sends the fingerprint of the settings this client would run with
  (:func:`cwcore.config.fingerprint`: ``config.toml``, ``CW_*``, ``CW_NOW``). A running daemon
  keeps the settings it started with; when they differ the welcome names them and the client
  reports it through :data:`settings_notice` — by default one line on stderr, once per process
  (``cw: the running daemon uses other settings (NAMES): cw daemon restart``) — and carries on.
  Hooks set it to None: a host may show a hook's stderr to the user.
* :meth:`Client.call` sends one request and returns its result, passing each intermediate event
  to ``on_event``. Errors come back as typed :class:`~cwcore.errors.CwError`. When the connection
  is lost (daemon killed, restarted, stopping) the client reconnects — autostarting if needed —
  and retries the *same request id* up to :data:`RETRIES` times, so a retried write is answered
  from the daemon's replay cache or deduplicated by the service. Events may repeat on a retry;
  the result is authoritative.
* A :class:`Client` is thread-safe: one lock serializes its calls on its one connection. Threads
  that need calls to overlap (a long import beside quick lookups) use one Client each.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from cwcore import config, errors
from cwcore.daemon import protocol
from cwcore.daemon.paths import DaemonPaths, advertised_socket, check_private_dir, daemon_paths
from cwcore.daemon.service import DEFAULT_SERVICE
from cwcore.errors import CwError, DaemonError, ProtocolError

#: Seconds allowed for connecting and completing the handshake.
CONNECT_TIMEOUT_S = 10.0
#: Seconds a started daemon may take to listen: a predecessor's drain (10 s) plus opening.
START_TIMEOUT_S = 30.0
#: Retries of one request (same id) after a lost connection.
RETRIES = 2
#: Seconds to wait for a stopped daemon's process to exit.
STOP_WAIT_S = 20.0

OnEvent = Callable[[dict[str, Any]], None]


def warn_settings_once(names: list[str]) -> None:
    """The default :data:`settings_notice`: one line on stderr, once per process."""
    global _settings_warned
    if _settings_warned:
        return
    _settings_warned = True
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(
            f"cw: the running daemon uses other settings ({', '.join(names)}): cw daemon restart\n"
        )
        sys.stderr.flush()


_settings_warned = False
#: Called with the names of the settings the running daemon does not share with this client
#: (None: say nothing). Faces that must stay silent on stderr (hooks) set it to None.
settings_notice: Callable[[list[str]], None] | None = warn_settings_once


def _fingerprint(home: Path) -> dict[str, str] | None:
    """The settings fingerprint of this client for ``home``; None when they cannot be read
    (the command reports a broken config.toml itself)."""
    try:
        settings, _ = config.load(home)
    except CwError:
        return None
    return config.fingerprint(settings)


class DaemonNotRunning(DaemonError):
    """Nothing listens on the store's socket and the caller asked not to start a daemon."""


class _Lost(Exception):
    """The connection broke (or the daemon asked for a retry); the request may be retried."""


def default_service() -> str:
    """The factory an autostarted daemon loads: ``CW_DAEMON_SERVICE`` or the engine's."""
    return os.environ.get("CW_DAEMON_SERVICE") or DEFAULT_SERVICE


def wait_for_exit(pid: int, timeout: float) -> bool:
    """True once process ``pid`` has exited (waits at most ``timeout`` seconds, no polling on
    Linux: a pidfd becomes readable at exit)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
            time.sleep(0.05)
        return False
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(int(timeout * 1000)))
    finally:
        os.close(fd)


def log_tail(path: Path, lines: int = 15) -> str:
    """The last lines of the daemon log (for error messages); empty when unreadable."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 8192))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Client:
    """One connection to the daemon of one store. See the module docstring for the contract."""

    def __init__(
        self,
        home: Path | None = None,
        *,
        autostart: bool = True,
        service: str | None = None,
        required: AbstractSet[str] = frozenset(),
        timeout: float = CONNECT_TIMEOUT_S,
        start_timeout: float = START_TIMEOUT_S,
    ) -> None:
        self.paths: DaemonPaths = daemon_paths(home)
        self.autostart = autostart
        self.service = service or default_service()
        self.required = frozenset(required)
        self.timeout = timeout
        self.start_timeout = start_timeout
        self.welcome: dict[str, Any] | None = None
        #: Notices of a daemon this client started (permissions it tightened), for the face.
        self.notices: list[str] = []
        self._sock: socket.socket | None = None
        self._lock = threading.RLock()
        self._settings = _fingerprint(self.paths.home)

    @classmethod
    def connect(
        cls,
        home: Path | None = None,
        *,
        autostart: bool = True,
        service: str | None = None,
        required: AbstractSet[str] = frozenset(),
        timeout: float = CONNECT_TIMEOUT_S,
    ) -> Client:
        client = cls(home, autostart=autostart, service=service, required=required, timeout=timeout)
        client.open()
        return client

    # -- properties of the daemon we are connected to --------------------------------------------

    @property
    def pid(self) -> int | None:
        return int(self.welcome["pid"]) if self.welcome else None

    @property
    def build(self) -> str | None:
        return str(self.welcome["build"]) if self.welcome else None

    @property
    def capabilities(self) -> frozenset[str]:
        return frozenset(self.welcome["capabilities"]) if self.welcome else frozenset()

    # -- connection -----------------------------------------------------------------------------

    def open(self) -> None:
        """Connect (and handshake) unless already connected."""
        with self._lock:
            if self._sock is None:
                self._open()

    def close(self) -> None:
        """Close this connection; the daemon keeps running for its grace period."""
        with self._lock:
            self._drop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _drop(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
        self._sock = None

    def _open(self) -> None:
        spawned = replaced = False
        for _attempt in range(6):
            sock = self._dial()
            if sock is None:
                if not self.autostart:
                    raise DaemonNotRunning(f"no cw daemon is running for {self.paths.home}")
                if spawned:
                    raise DaemonError(
                        "the daemon reported ready but its socket does not answer" + self._see_log()
                    )
                self._spawn()
                spawned = True
                continue
            try:
                welcome = self._handshake(sock)
            except _Lost:
                # The daemon was stopping while we connected: its successor comes up shortly.
                sock.close()
                time.sleep(0.1)
                continue
            except BaseException:
                sock.close()
                raise
            missing = self.required - frozenset(welcome.get("capabilities") or ())
            if missing:
                if replaced or not self.autostart:
                    sock.close()
                    raise DaemonError(
                        f"the cw daemon (pid {welcome.get('pid')}) lacks required capabilities: "
                        + ", ".join(sorted(missing)),
                        missing=sorted(missing),
                    )
                self._replace(sock, welcome)
                replaced, spawned = True, False
                continue
            self._sock = sock
            self.welcome = welcome
            differ = welcome.get("settingsDiffer")
            if differ and isinstance(differ, list) and settings_notice is not None:
                settings_notice([str(name)[:64] for name in differ[:16]])
            return
        raise DaemonError(f"could not connect to the cw daemon at {self.paths.socket}")

    def _dial(self) -> socket.socket | None:
        """A connected socket, or None when nothing listens (no file, or a stale one): at the
        computed path first, then at the one ``CW_HOME/daemon.json`` advertises (a daemon
        started with another ``XDG_RUNTIME_DIR`` or ``TMPDIR``)."""
        sock = self._dial_at(self.paths.socket)
        if sock is None:
            other = advertised_socket(self.paths.home)
            if other is not None and other != self.paths.socket:
                sock = self._dial_at(other)
        return sock

    def _dial_at(self, path: Path) -> socket.socket | None:
        check_private_dir(path.parent)  # again: the directory may have been swapped
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(str(path))
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            return None
        except OSError as exc:
            sock.close()
            raise DaemonError(f"cannot connect to {path}: {exc}") from None
        return sock

    def _handshake(self, sock: socket.socket) -> dict[str, Any]:
        hello = protocol.hello(frozenset(), self.required, self._settings)
        try:
            protocol.send(sock, hello)
        except TimeoutError:
            raise DaemonError(
                f"the daemon did not complete the handshake within {self.timeout:g} s"
            ) from None
        except OSError:
            # A daemon that refuses (busy, stopping) sends its error frame and closes without
            # reading the hello; if it closed first, the hello fails but the refusal is still
            # waiting to be read, and it, not the broken pipe, is the answer.
            pass
        try:
            reply = protocol.recv(sock)
        except TimeoutError:
            raise DaemonError(
                f"the daemon did not complete the handshake within {self.timeout:g} s"
            ) from None
        except OSError as exc:
            raise _Lost(str(exc)) from None
        if reply["type"] == "error":
            err = errors.from_json(reply.get("error") or {})
            if err.details.get("retry"):
                raise _Lost(err.message)
            raise err
        if reply["type"] != "welcome" or reply.get("protocol") != protocol.PROTOCOL_VERSION:
            raise ProtocolError(
                f"unexpected handshake reply from the daemon: {reply.get('type')!r}"
            )
        return reply

    def _spawn(self) -> None:
        """Start a daemon and wait for its launcher to report (see ``cwcore.daemon.__main__``)."""
        from cwcore.config import check_home

        check_home(self.paths.home)  # a CW_HOME that is a file: say so, not the launcher's errno
        cmd = [
            sys.executable, "-m", "cwcore.daemon",
            "--home", str(self.paths.home), "--service", self.service, "--report", "json",
        ]  # fmt: skip
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            _, err = proc.communicate(timeout=self.start_timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise DaemonError(
                f"the cw daemon did not start within {self.start_timeout:g} s" + self._see_log()
            ) from None
        lines = [line for line in err.decode("utf-8", "replace").splitlines() if line.strip()]
        if proc.returncode != 0:
            raise self._start_failure(lines, proc.returncode)
        # A started daemon's launcher prints only the notices of its open (see cwcore.daemon).
        self.notices += lines

    def _start_failure(self, lines: list[str], status: int) -> CwError:
        """The error a daemon that failed to start reported, as its own type: a store error
        stays a store error (same code, same exit status). Other failures say the daemon did
        not start. One line, unless ``CW_DEBUG`` asks for the log's tail."""
        err: CwError | None = None
        if lines and lines[-1].startswith("{"):
            try:
                body = json.loads(lines[-1])["error"]
                err = errors.from_json({"code": body["code"], "message": body["message"]})
            except (ValueError, KeyError, TypeError):
                err = None
        if err is None:
            shown = " ".join(lines[-1].split())[:300] if lines else f"exit status {status}"
            err = DaemonError(f"the cw daemon failed to start: {shown}")
        elif isinstance(err, DaemonError) or type(err) is CwError:
            kind = type(err) if isinstance(err, DaemonError) else DaemonError
            err = kind(f"the cw daemon failed to start: {err.message}", **err.details)
        debug = self._tail()
        if debug:
            err = type(err)(err.message + debug, **err.details)
        return err

    def _replace(self, sock: socket.socket, welcome: dict[str, Any]) -> None:
        """Ask a daemon lacking capabilities to drain and exit; a new one is started after."""
        try:
            protocol.send(sock, protocol.request(uuid.uuid4().hex, "daemon.stop", {}))
            protocol.recv(sock)
        except (OSError, CwError):
            pass
        finally:
            sock.close()
        pid = welcome.get("pid")
        if isinstance(pid, int) and not wait_for_exit(pid, STOP_WAIT_S):
            raise DaemonError(f"the cw daemon (pid {pid}) did not exit within {STOP_WAIT_S:g} s")

    def _tail(self) -> str:
        """The log's last lines for an error message, only under ``CW_DEBUG`` (errors are one
        line otherwise; ``cw daemon status`` shows the tail too)."""
        if not os.environ.get("CW_DEBUG"):
            return ""
        tail = log_tail(self.paths.log)
        return f"\n--- {self.paths.log} (tail) ---\n{tail}" if tail else ""

    def _see_log(self) -> str:
        return f" (see {self.paths.log})" + self._tail()

    # -- requests -------------------------------------------------------------------------------

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        on_event: OnEvent | None = None,
        request_id: str | None = None,
        timeout: float | None = None,
    ) -> dict[str, Any]:
        """Run ``method`` in the daemon and return its result (see the module contract).

        ``timeout`` bounds the wait for the answer in seconds (None: no bound); on expiry the
        request is cancelled, the connection dropped and a :class:`DaemonError` raised.
        """
        rid = request_id or uuid.uuid4().hex
        if not protocol.valid_request_id(rid):
            raise errors.InvalidInput(f"request id {rid!r} is not a valid request id")
        frame = protocol.encode(protocol.request(rid, method, params or {}))
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            failures = 0
            while True:
                try:
                    if self._sock is None:
                        self._open()
                    return self._exchange(frame, rid, method, on_event, deadline, timeout)
                except _Lost as lost:
                    self._drop()
                    failures += 1
                    if failures > RETRIES:
                        raise DaemonError(
                            f"lost the connection to the cw daemon {failures} times "
                            f"during {method}: {lost}"
                        ) from None
                    time.sleep(0.05 * failures)

    def _exchange(
        self,
        frame: bytes,
        rid: str,
        method: str,
        on_event: OnEvent | None,
        deadline: float | None,
        timeout: float | None,
    ) -> dict[str, Any]:
        sock = self._sock
        assert sock is not None
        try:
            sock.settimeout(self._remaining(deadline))
            sock.sendall(frame)
            while True:
                sock.settimeout(self._remaining(deadline))
                message = protocol.recv(sock)
                kind, mid = message["type"], message.get("id")
                if kind == "event" and mid == rid:
                    if on_event is not None:
                        try:
                            on_event(message.get("event") or {})
                        except BaseException:
                            self._drop()  # mid-stream: this connection cannot be reused
                            raise
                elif kind == "result" and mid == rid:
                    result: dict[str, Any] = message.get("result") or {}
                    return result
                elif kind == "error" and mid in (rid, None):
                    err = errors.from_json(message.get("error") or {})
                    if err.details.get("retry"):
                        raise _Lost(err.message)
                    if mid is None:
                        self._drop()  # a connection-level error: the daemon closes it
                    raise err
        except TimeoutError:
            self._cancel(rid)
            raise DaemonError(
                f"no answer to {method} within {timeout:g} s", timeout=timeout
            ) from None
        except ProtocolError:
            self._drop()
            raise
        except OSError as exc:
            raise _Lost(f"{type(exc).__name__}: {exc}") from None

    @staticmethod
    def _remaining(deadline: float | None) -> float | None:
        if deadline is None:
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    def _cancel(self, rid: str) -> None:
        """Best effort: ask the daemon to cancel ``rid``, then drop the connection."""
        if self._sock is not None:
            with contextlib.suppress(OSError, CwError):
                self._sock.settimeout(1.0)
                protocol.send(self._sock, {"type": "cancel", "id": rid})
        self._drop()


def connect(
    home: Path | None = None,
    *,
    autostart: bool = True,
    service: str | None = None,
    required: AbstractSet[str] = frozenset(),
    timeout: float = CONNECT_TIMEOUT_S,
) -> Client:
    """A connected :class:`Client` for the store at ``home`` (default ``CW_HOME``)."""
    return Client.connect(
        home, autostart=autostart, service=service, required=required, timeout=timeout
    )

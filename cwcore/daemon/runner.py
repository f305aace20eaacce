"""One daemon process from start to exit: lock, stale socket, service, listen, serve, clean up.

Order matters and is the contract:

1. check the socket directory (:func:`~cwcore.daemon.paths.daemon_paths`) — before any storage;
2. take the pid/lock file's ``flock``. If another process holds it and its socket answers, a
   daemon already serves this store: report "running" and exit 0. If it holds it without
   serving (a predecessor still draining, or a sibling starting), wait up to
   :data:`LOCK_WAIT_S` for it;
3. take the home lock, ``CW_HOME/daemon.json``, the same way: a daemon started with another
   socket directory (another ``XDG_RUNTIME_DIR``) holds it, and when the socket it advertises
   there answers, this store is served already: report "running" (the client then finds that
   socket through the file) instead of failing on the store's lock;
4. remove a stale socket file (one no process listens on);
5. open the service through its factory, bind the socket (``0600``), write the pid, advertise
   the socket in ``daemon.json``, start the service's workers, report readiness and serve until
   stopped;
6. close the service, then empty and release the home lock and the pid lock (so a successor
   never opens a store still held).

The lock file is truncated, not removed, at exit: removing a locked path races with the next
daemon opening it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from cwcore import config, heap
from cwcore.daemon.paths import DaemonPaths, advert_body, advertised_socket, daemon_paths
from cwcore.daemon.server import Limits, Server
from cwcore.daemon.service import load_factory
from cwcore.errors import DaemonError

log = logging.getLogger("cwcore.daemon")

#: How long a starting daemon waits for the lock held by a predecessor that does not serve, s.
LOCK_WAIT_S = 20.0
#: Poll interval while waiting for that lock, s (flock has no timed wait).
LOCK_POLL_S = 0.1
#: The log is rotated (one previous file kept) when it grows past this many bytes at start.
LOG_ROTATE_BYTES = 1024 * 1024


class Reporter(Protocol):
    """How a starting daemon tells its launcher the outcome (once)."""

    def notice(self, text: str) -> None: ...

    def ok(self) -> None: ...

    def already_running(self) -> None: ...


class PidLock:
    """The pid file beside the socket, doubling as the daemon's exclusive ``flock``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        self.held = False

    def try_lock(self) -> bool:
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                return False
            raise
        self.held = True
        return True

    def acquire(self, wait_s: float, served: Callable[[], bool]) -> bool:
        """Take the lock (True), or return False as soon as another holder is seen serving."""
        deadline = time.monotonic() + wait_s
        while not self.try_lock():
            if served():
                return False
            if time.monotonic() >= deadline:
                raise DaemonError(
                    f"another cw daemon holds {self.path} but does not serve; "
                    f"gave up after {wait_s:g} s"
                )
            time.sleep(LOCK_POLL_S)
        return True

    def write_pid(self) -> None:
        self.write(f"{os.getpid()}\n".encode())

    def write(self, body: bytes) -> None:
        os.ftruncate(self.fd, 0)
        os.pwrite(self.fd, body, 0)

    def release(self) -> None:
        with contextlib.suppress(OSError):
            if self.held:
                os.ftruncate(self.fd, 0)
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
        self.held = False


def read_pid(path: Path) -> int | None:
    """The pid recorded in a pid file, or None (missing, empty or garbage)."""
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def socket_alive(path: Path, timeout: float = 1.0) -> bool:
    """True when some process accepts connections on the socket file ``path``."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(timeout)
    try:
        probe.connect(str(path))
    except OSError:
        return False
    finally:
        probe.close()
    return True


def advertised_alive(paths: DaemonPaths) -> bool:
    """True when ``CW_HOME/daemon.json`` names a socket (not ours) that a daemon answers on."""
    sock = advertised_socket(paths.home)
    return sock is not None and sock != paths.socket and socket_alive(sock)


def bind_socket(path: Path) -> socket.socket:
    """A listening, non-blocking Unix socket at ``path`` with mode 0600."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)  # no window where the socket file is wider than 0600
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    os.chmod(path, 0o600)
    sock.listen(64)
    sock.setblocking(False)
    return sock


def open_log(path: Path) -> int:
    """Open (rotating when large) the daemon log for appending; returns the file descriptor."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        if path.stat().st_size > LOG_ROTATE_BYTES:
            os.replace(path, path.with_name(path.name + ".1"))
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)


def configure_logging(fd: int, also_stderr: bool) -> None:
    """Log lines with timestamps to the log fd (and stderr in the foreground)."""
    fmt = logging.Formatter("%(asctime)s %(process)d %(levelname)s %(message)s")
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    handler = logging.StreamHandler(os.fdopen(os.dup(fd), "a", buffering=1, encoding="utf-8"))
    handler.setFormatter(fmt)
    root.addHandler(handler)
    if also_stderr:
        err = logging.StreamHandler()
        err.setFormatter(fmt)
        root.addHandler(err)


def run_daemon(home: Path, factory_spec: str, reporter: Reporter) -> int:
    """Serve the store at ``home`` until stopped; returns the exit status.

    Raises :class:`~cwcore.errors.CwError` when the daemon cannot start (unsafe socket
    directory, bad settings, service factory failure, lock held without serving).
    """
    # Before the store and its threads allocate: large buffers are unmapped when freed.
    heap.fix_mmap_threshold(heap.DAEMON_MMAP_THRESHOLD)
    paths = daemon_paths(home)
    settings, _ = config.load(paths.home)
    limits = Limits.from_settings(settings)
    lock = PidLock(paths.pidfile)
    home_lock: PidLock | None = None
    try:
        if not lock.acquire(LOCK_WAIT_S, lambda: socket_alive(paths.socket)):
            log.info("a daemon already serves %s; exiting", paths.socket)
            reporter.already_running()
            return 0
        home_lock = PidLock(paths.advert)
        if not home_lock.acquire(LOCK_WAIT_S, lambda: advertised_alive(paths)):
            log.info("a daemon already serves %s from another socket directory", paths.home)
            reporter.already_running()
            return 0
        if os.path.lexists(paths.socket):
            if socket_alive(paths.socket):  # a daemon that does not use the lock (other build)
                reporter.already_running()
                return 0
            log.info("removing stale socket %s", paths.socket)
            os.unlink(paths.socket)
        factory = load_factory(factory_spec)
        log.info("opening service %s for %s", factory_spec, paths.home)
        service = factory(paths.home)
        for text in getattr(service, "notices", ()):
            reporter.notice(text)
        try:
            sock = bind_socket(paths.socket)
            st = os.stat(paths.socket)
            try:
                lock.write_pid()
                home_lock.write(advert_body(paths.socket, os.getpid()))
                service.start_workers()
                fingerprint = config.fingerprint(settings)
                server = Server(service, paths, limits, factory_spec, fingerprint)
                asyncio.run(server.serve(sock, on_listening=reporter.ok))
            finally:
                with contextlib.suppress(OSError):
                    now = os.stat(paths.socket)
                    if (now.st_dev, now.st_ino) == (st.st_dev, st.st_ino):
                        os.unlink(paths.socket)
                sock.close()
        finally:
            try:
                service.close()
            except Exception:
                log.exception("service.close() failed")
        log.info("stopped")
        return 0
    finally:
        if home_lock is not None:
            home_lock.release()
        lock.release()

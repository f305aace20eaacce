"""Where the daemon of one store listens, locks and logs — and the safety checks on those places.

Contract:

* The socket lives in a private directory ``<base>/cw-<uid>/`` where ``<base>`` is
  ``$XDG_RUNTIME_DIR`` when set to an existing directory, else the system temp dir. The directory
  is created ``0700`` when missing. It is refused (:class:`~cwcore.errors.UnsafeSocket`) when it is
  a symlink, not a directory, not owned by the current user, or accessible to group or others.
  Both the client (before connecting) and the daemon (before opening storage) call
  :func:`daemon_paths`, which performs the check.
* Inside it, the socket is ``<hash16>.sock`` and the pid/lock file ``<hash16>.pid``, where
  ``hash16`` is the first 16 hex digits of the SHA-256 of the resolved ``CW_HOME`` (the directory
  holding the store), so every client of one store finds the same daemon.
* The daemon's log is ``CW_HOME/daemon.log``.
* The running daemon is also findable from ``CW_HOME`` itself: ``CW_HOME/daemon.json`` (``0600``)
  is the daemon's second lock and, while it serves, names its socket and pid. Clients whose
  ``<base>`` differs (another ``XDG_RUNTIME_DIR`` or ``TMPDIR``: a cron job, an ssh session)
  compute another socket path; when nothing answers there they read this file
  (:func:`advertised_socket`) and connect to the socket it names, after the same checks of
  that socket's directory. The daemon empties the file at exit (it is a lock file: removing a
  locked path races with the next daemon opening it).

Unix socket paths are limited to 108 bytes (``sun_path``); the layout keeps them short and
:func:`daemon_paths` refuses a path over :data:`MAX_SOCKET_PATH` bytes rather than truncating.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cwcore.errors import DaemonError, UnsafeSocket

# ``cwcore.config`` and ``tempfile`` are imported where used: the lean hook client imports this
# module on every user prompt, and their import time is a large share of its start-up.

#: Longest socket path accepted, in bytes (``sun_path`` is 108 including the NUL on Linux).
MAX_SOCKET_PATH = 100

#: Name of the log file inside ``CW_HOME``.
LOG_NAME = "daemon.log"
#: Name of the lock-and-advertisement file inside ``CW_HOME`` (see the module contract).
ADVERT_NAME = "daemon.json"
#: Largest advertisement read, bytes (it holds one short path and a pid).
MAX_ADVERT_BYTES = 4096


@dataclass(frozen=True)
class DaemonPaths:
    """The files of one store's daemon. ``home`` is resolved."""

    home: Path
    socket_dir: Path
    socket: Path
    pidfile: Path
    log: Path

    @property
    def advert(self) -> Path:
        """``CW_HOME/daemon.json``: the daemon's home lock, naming its socket while it serves."""
        return self.home / ADVERT_NAME


def resolve_home(home: Path | None = None) -> Path:
    """The store home as every process names it: ``home`` or ``CW_HOME``, expanded and resolved."""
    if home is None:
        from cwcore import config

        home = config.default_home()
    return home.expanduser().resolve()


def store_hash(home: Path) -> str:
    """16 hex digits naming the daemon of the resolved ``home``."""
    return hashlib.sha256(os.fsencode(str(home))).hexdigest()[:16]


def runtime_base() -> Path:
    """``$XDG_RUNTIME_DIR`` if it names an existing directory, else the system temp dir."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return Path(xdg)
    import tempfile

    return Path(tempfile.gettempdir())


def check_private_dir(path: Path) -> None:
    """Refuse a socket directory another user could reach or redirect (see module contract).

    ``lstat`` is used on purpose: a symlink is refused even when its target would pass.
    """
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise UnsafeSocket(f"socket directory {path} does not exist") from None
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeSocket(f"socket directory {path} is a symlink; refusing it")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeSocket(f"socket directory {path} is not a directory")
    if st.st_uid != os.getuid():
        raise UnsafeSocket(
            f"socket directory {path} is owned by uid {st.st_uid}, not the current user"
        )
    if st.st_mode & 0o077:
        raise UnsafeSocket(
            f"socket directory {path} has mode {stat.S_IMODE(st.st_mode):04o}; it must be 0700"
        )


def ensure_socket_dir(base: Path | None = None) -> Path:
    """Create (0700) or verify the current user's socket directory and return it."""
    directory = (base or runtime_base()) / f"cw-{os.getuid()}"
    try:
        # mkdir applies the umask; 0700 minus any umask is still private, and the check below
        # refuses anything wider that already existed.
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UnsafeSocket(f"cannot create socket directory {directory}: {exc}") from None
    check_private_dir(directory)
    return directory


def daemon_paths(home: Path | None = None) -> DaemonPaths:
    """The daemon files of ``home`` (default ``CW_HOME``), after checking the socket directory."""
    resolved = resolve_home(home)
    directory = ensure_socket_dir()
    name = store_hash(resolved)
    sock = directory / f"{name}.sock"
    if len(os.fsencode(str(sock))) > MAX_SOCKET_PATH:
        raise DaemonError(
            f"socket path {sock} is longer than {MAX_SOCKET_PATH} bytes; "
            "set XDG_RUNTIME_DIR (or TMPDIR) to a shorter directory"
        )
    return DaemonPaths(
        home=resolved,
        socket_dir=directory,
        socket=sock,
        pidfile=directory / f"{name}.pid",
        log=resolved / LOG_NAME,
    )


def advert_body(socket_path: Path, pid: int) -> bytes:
    """What a serving daemon writes into ``CW_HOME/daemon.json``."""
    return (json.dumps({"socket": str(socket_path), "pid": pid}) + "\n").encode()


def advertised_socket(home: Path) -> Path | None:
    """The socket the daemon of the resolved ``home`` advertises in ``CW_HOME/daemon.json``, or
    None when there is none to try (no file, empty, unreadable, or naming a socket directory
    that no longer exists).

    The advertisement is trusted only as far as the checks go: it must name an absolute path
    ``<dir>/<hash16>.sock`` for this very home, no longer than :data:`MAX_SOCKET_PATH`, and
    ``<dir>`` must pass :func:`check_private_dir` (else :class:`~cwcore.errors.UnsafeSocket`),
    as the computed directory must.
    """
    try:
        fd = os.open(home / ADVERT_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            return None
        raw = os.read(fd, MAX_ADVERT_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        named = json.loads(raw.decode("utf-8"))["socket"]
    except (ValueError, KeyError, TypeError):
        return None  # empty (no daemon) or caught mid-write: nothing to try
    if not isinstance(named, str) or not os.path.isabs(named):
        return None
    sock = Path(named)
    if sock.name != f"{store_hash(home)}.sock" or len(os.fsencode(named)) > MAX_SOCKET_PATH:
        return None
    if not os.path.lexists(sock.parent):
        return None
    check_private_dir(sock.parent)
    return sock

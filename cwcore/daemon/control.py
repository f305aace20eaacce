"""Operator controls for faces (``cw daemon status|start|stop|restart``): no rendering here.

* :func:`status` never starts a daemon; it returns None when none is running.
* :func:`start` connects with autostart and returns the status of the daemon now serving; the
  notices of a daemon it started (permissions its open tightened) go to ``on_notice``, once.
* :func:`stop` asks the daemon to drain and exit and waits for its process to end.
* :func:`restart` without ``force`` only returns :data:`RESTART_WARNING` (every connected client
  is briefly disconnected, so a plain restart only warns); with ``force`` it stops the running
  daemon and starts a new one with the same service factory, returning the new status (notices as
  for :func:`start`). Clients reconnect and retry their request with the same id across the
  replacement.
* :func:`last_log_lines` is the log's tail, for a status that finds no daemon (why the last
  one stopped or failed to start).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cwcore.daemon.client import STOP_WAIT_S, Client, DaemonNotRunning, log_tail, wait_for_exit
from cwcore.daemon.paths import daemon_paths
from cwcore.daemon.results import DaemonStatus
from cwcore.errors import DaemonError

RESTART_WARNING = (
    "restarting the daemon briefly disconnects every connected client (TUI, MCP servers, hooks); "
    "they reconnect and retry on their own. Run `cw daemon restart --force` to do it."
)


def status(home: Path | None = None) -> DaemonStatus | None:
    """The running daemon's ``daemon.status``, or None when no daemon is running."""
    try:
        client = Client.connect(home, autostart=False)
    except DaemonNotRunning:
        return None
    with client:
        try:
            return DaemonStatus.from_json(client.call("daemon.status"))
        except DaemonNotRunning:  # it stopped between the handshake and the call
            return None


Notice = Callable[[str], None]


def start(
    home: Path | None = None, *, service: str | None = None, on_notice: Notice | None = None
) -> DaemonStatus:
    """Ensure a daemon serves ``home`` (starting one with ``service``) and return its status."""
    with Client.connect(home, autostart=True, service=service) as client:
        if on_notice is not None:
            for text in client.notices:
                on_notice(text)
        return DaemonStatus.from_json(client.call("daemon.status"))


def stop(home: Path | None = None) -> bool:
    """Drain and stop the daemon; False when none was running. Waits for its process to exit."""
    try:
        client = Client.connect(home, autostart=False)
    except DaemonNotRunning:
        return False
    pid = client.pid
    with client:
        try:
            client.call("daemon.stop")
        except DaemonError:
            pass  # it may close the connection as it stops; the exit wait below decides
    if pid is not None and not wait_for_exit(pid, STOP_WAIT_S):
        raise DaemonError(f"the cw daemon (pid {pid}) did not exit within {STOP_WAIT_S:g} s")
    return True


def restart(
    home: Path | None = None,
    force: bool = False,
    *,
    service: str | None = None,
    on_notice: Notice | None = None,
) -> DaemonStatus | str:
    """With ``force``: replace the daemon and return the new status. Without: the warning."""
    if not force:
        return RESTART_WARNING
    current = status(home)
    factory = service or (current.factory if current is not None else None)
    if current is not None:
        stop(home)
    return start(home, service=factory, on_notice=on_notice)


def last_log_lines(home: Path | None = None, lines: int = 10) -> tuple[str, list[str]]:
    """The daemon log's path and its last ``lines`` lines (none when there is no log)."""
    path = daemon_paths(home).log
    return str(path), [line for line in log_tail(path, lines).splitlines() if line.strip()]

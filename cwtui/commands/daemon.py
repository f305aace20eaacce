"""``cw daemon status|start|stop|restart [--force]``: inspect and control the store's daemon.

Thin: each command calls one :mod:`cwcore.daemon.control` function and renders the answer (a
table for people, JSON with ``--json``). "Not running" is a normal answer (exit 0). Errors go
through :func:`cwtui.output.guard`: one line on stderr, or ``{"error": {...}}`` with ``--json``,
and the error's exit code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cwcore.daemon import control
from cwtui.output import console, emit_json, err_console, guard

if TYPE_CHECKING:
    from cwcore.daemon.results import DaemonStatus

app = typer.Typer(
    help="Inspect and control the background daemon that owns the store.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]

#: Status fields (``DaemonStatus`` attributes) shown to people, in order, with their labels.
_ROWS = (
    ("pid", "pid"),
    ("uptime_s", "uptime (s)"),
    ("store", "home (CW_HOME)"),
    ("socket", "socket"),
    ("log", "log"),
    ("build", "build"),
    ("capabilities", "capabilities"),
    ("connections", "connections"),
    ("in_flight", "requests in flight"),
    ("grace_s", "idle grace (s)"),
)


def _cell(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    return str(value)


def _notice(text: str) -> None:
    err_console.print(text, markup=False, soft_wrap=True)


def _render_status(status: DaemonStatus) -> None:
    table = Table(title="cw daemon", show_header=False, title_justify="left")
    table.add_column("field", style="bold")
    table.add_column("value", overflow="fold")
    for key, label in _ROWS:
        table.add_row(label, _cell(getattr(status, key)))
    for key, value in sorted(status.service.items()):  # the engine's own fields
        table.add_row(key.replace("_", " "), _cell(value))
    console.print(table)


@app.command("status")
def status_cmd(as_json: JsonOpt = False) -> None:
    """Show the running daemon (pid, uptime, store, socket, connections, queue depths); when none
    runs, the last lines of its log (why it stopped, or why it failed to start)."""
    with guard(as_json):
        running = control.status()
        if running is not None:
            if as_json:
                emit_json(running.to_json())
            else:
                _render_status(running)
            return
        log, tail = control.last_log_lines()
        if as_json:
            emit_json({"running": False, "log": log, "logTail": tail})
            return
        console.print("cw daemon: not running")
        if tail:
            console.print(f"last lines of {log}:", markup=False, soft_wrap=True, style="dim")
            for line in tail:
                console.print(line, markup=False, soft_wrap=True, style="dim")


@app.command("start")
def start_cmd(as_json: JsonOpt = False) -> None:
    """Start the daemon if it is not running."""
    with guard(as_json):
        started = control.start(on_notice=_notice)
        if as_json:
            emit_json(started.to_json())
        else:
            console.print(f"cw daemon: running (pid {started.pid})")


@app.command("stop")
def stop_cmd(as_json: JsonOpt = False) -> None:
    """Drain in-flight requests and stop the daemon."""
    with guard(as_json):
        stopped = control.stop()
        if as_json:
            emit_json({"stopped": stopped})
        else:
            console.print("cw daemon: stopped" if stopped else "cw daemon: not running")


@app.command("restart")
def restart_cmd(
    force: Annotated[
        bool, typer.Option("--force", help="Drain and replace the daemon (clients reconnect).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Replace the daemon. Without --force this only warns: every client briefly disconnects."""
    with guard(as_json):
        outcome = control.restart(force=force, on_notice=_notice)
        if isinstance(outcome, str):
            if as_json:
                emit_json({"restarted": False, "warning": outcome})
            else:
                err_console.print(f"cw: {outcome}", markup=False, soft_wrap=True)
            return
        if as_json:
            emit_json({"restarted": True, **outcome.to_json()})
        else:
            console.print(f"cw daemon: restarted (pid {outcome.pid})")

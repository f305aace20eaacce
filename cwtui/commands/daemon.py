"""``cw daemon status|start|stop|restart [--force]``: inspect and control the store's daemon.

Thin: each command calls one :mod:`cwcore.daemon.control` function and renders the answer (a
table for people, JSON with ``--json``). "Not running" is a normal answer (exit 0). Errors go
through :func:`cwtui.output.guard`: one line on stderr, or ``{"error": {...}}`` with ``--json``,
and the error's exit code.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from cwcore import config as cwconfig
from cwcore.daemon import control
from cwtui.output import console, emit_json, err_console, guard

if TYPE_CHECKING:
    from cwcore.daemon.results import DaemonStatus

app = typer.Typer(
    help="Inspect and control the background daemon that owns the store.",
    no_args_is_help=True,
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 7 min``, ``3 d 4 h``: a span for people."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


def size(n: int) -> str:
    """Bytes for people (decimal units, as ``cw doctor``)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def value_text(value: Any) -> str:
    """Any JSON value of the service's own status as words, never a Python repr: a list is
    comma-separated, a mapping ``key value`` pairs, null ``-``, a boolean yes/no."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(value_text(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k.replace('_', ' ')} {value_text(v)}" for k, v in value.items()) or "-"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def worker_text(state: Any, now: float) -> str:
    """One background worker (``{"runs", "busy", "last_run", "last_error"}``): ``busy`` or
    ``idle``, its runs, when it last ran and its last error."""
    if not isinstance(state, dict):
        return value_text(state)
    parts = ["busy" if state.get("busy") else "idle"]
    if isinstance(state.get("runs"), int):
        parts.append(f"{state['runs']:,} run(s)")
    last = state.get("last_run")
    if isinstance(last, (int, float)) and last > 0:
        parts.append(f"last {duration(now - last)} ago")
    rest = {k: v for k, v in state.items() if k not in ("busy", "runs", "last_run", "last_error")}
    if rest:
        parts.append(value_text(rest))
    if state.get("last_error"):
        parts.append(f"last error: {state['last_error']}")
    return ", ".join(parts)


#: The service fields :func:`status_rows` words itself; others are listed by name after them.
_KNOWN_SERVICE = {
    "store",
    "outbox_depth",
    "rocksdb_bytes",
    "pending_compaction_bytes",
    "workers",
    "semantic_error",
}


def status_rows(status: DaemonStatus, now: float | None = None) -> list[tuple[str, str]]:
    """The running daemon for people, as ``(label, value)`` rows: the same facts as
    ``--json``, in words (a span, sizes, one row per background worker), never a raw dict.
    ``now`` is the Unix time the workers' last runs are measured from."""
    now = time.time() if now is None else now
    service = dict(status.service)
    dropped = status.stalled_dropped
    rows = [
        ("pid", str(status.pid)),
        ("build", f"{status.build} (protocol {status.protocol})"),
        ("uptime", f"{duration(status.uptime_s)} (since {status.started_at})"),
        ("state", "stopping" if status.stopping else "serving"),
        ("home (CW_HOME)", status.store),
        ("store", str(service.get("store", "-"))),
        ("socket", status.socket),
        ("log", status.log),
        (
            "clients",
            f"{status.connections} connected (at most {status.max_connections}), "
            f"{status.in_flight} request(s) in flight, {status.running_requests} running"
            + (f", {dropped} dropped for stalling" if dropped else ""),
        ),
    ]
    if "error" in service and len(service) == 1:
        rows.append(("service", f"did not answer: {value_text(service['error'])}"))
        service = {}
    if "outbox_depth" in service:
        depth = service["outbox_depth"]
        rows.append(("queue", f"{depth:,} document(s) waiting to be indexed (outbox)"))
    if "rocksdb_bytes" in service:
        pending = service.get("pending_compaction_bytes", 0) or 0
        rows.append(("disk", f"{size(service['rocksdb_bytes'])}, {size(pending)} to compact"))
    workers = service.get("workers")
    if isinstance(workers, dict):
        for name, state in workers.items():
            rows.append((f"background: {name}", worker_text(state, now)))
    if "semantic_error" in service:
        error = service["semantic_error"]
        rows.append(("embedding", f"failing: {error}" if error else "ok"))
    for key, value in service.items():
        if key not in _KNOWN_SERVICE:
            rows.append((key.replace("_", " "), value_text(value)))
    rows += [
        (
            "idle grace",
            f"{duration(status.grace_s)} without clients, then it exits once background work "
            + (f"is done (now {status.background})" if status.background else "is done"),
        ),
        ("capabilities", ", ".join(status.capabilities) or "-"),
        ("factory", status.factory),
        (
            "reserved",
            f"input {size(status.input_reserved_bytes)}, output "
            f"{size(status.output_reserved_bytes)}, small output "
            f"{size(status.small_output_reserved_bytes)}; {status.replay_entries} replayable "
            "answer(s) kept",
        ),
    ]
    return rows


def _notice(text: str) -> None:
    err_console.print(text, markup=False, soft_wrap=True)


def _render_status(status: DaemonStatus) -> None:
    console.print(f"cw daemon: running (pid {status.pid})", markup=False)
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column("field", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for label, value in status_rows(status):
        table.add_row(Text(label), Text(value))
    console.print(table)


@app.command("status")
def status_cmd(as_json: JsonOpt = False) -> None:
    """Show the running daemon (pid, build, uptime, store, socket, clients, indexing queue,
    background work); when none runs, the last lines of its log (why it stopped, or why it
    failed to start)."""
    with guard(as_json):
        # A broken config.toml is reported here as by every command (one line, exit 2), not
        # left for the reader to find in the log tail of a daemon that failed to start.
        cwconfig.load(cwconfig.default_home())
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

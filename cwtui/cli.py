"""The ``cw`` command line. Each command parses, calls one Archive method, renders.

People get tables; ``--json`` gets the public JSON shapes on stdout. Errors: one line on stderr
(or the JSON error object on stdout with ``--json``) and the exit code from ``docs/cli.md``.
"""

from __future__ import annotations

import copy
import importlib
import pkgutil
import shlex
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

import cwtui.commands as commands_pkg
from cwcore import clock
from cwcore import config as cwconfig
from cwcore.api import Archive
from cwcore.contract.methods import SESSIONS, answer_json
from cwcore.contract.sessions import SessionsRequest
from cwcore.errors import CwError, ImportErrors, InvalidInput, NotFound, excerpt
from cwcore.importers.base import formats as importer_formats
from cwcore.retrieve.filters import resolve_span
from cwtui.output import (
    CwGroup,
    console,
    emit_answer,
    emit_json,
    err_console,
    fit_columns,
    guard,
    json_safe,
    safe,
    short_session,
    shown_id,
)

if TYPE_CHECKING:
    from cwcore.contract.imports import ImportReport
    from cwcore.contract.retention import ForgetTarget

app = typer.Typer(
    name="cw",
    cls=CwGroup,
    help="A local archive and retrieval engine for coding-agent conversation history.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _print_version(value: bool) -> None:
    if value:
        from cwcore import __version__

        console.print(f"cw {__version__}", markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print cw's version."
        ),
    ] = False,
) -> None:
    """A local archive and retrieval engine for coding-agent conversation history."""


# Command modules register themselves: a module in cwtui/commands/ either defines a sub-app
# ``app`` with a ``NAME`` (``cw NAME ...``) or a ``register(app)`` function adding commands.
for _info in pkgutil.iter_modules(commands_pkg.__path__):
    _module = importlib.import_module(f"cwtui.commands.{_info.name}")
    if hasattr(_module, "register"):
        _module.register(app)
    elif isinstance(getattr(_module, "app", None), typer.Typer):
        app.add_typer(_module.app, name=getattr(_module, "NAME", _info.name))


def _notice(text: str) -> None:
    err_console.print(text, markup=False, soft_wrap=True)


# Every command that opens the store shows its notices (permissions tightened) on stderr.
Archive.notice_sink = _notice


def open_archive() -> Archive:
    return Archive.open()


WaitOpt = Annotated[
    bool,
    typer.Option(
        "--wait",
        help="Return once search covers what was imported (the lexical index published; "
        "embeddings go on in the background: cw index --wait waits for them).",
    ),
]


@app.command("import")
def import_(
    paths: Annotated[list[Path], typer.Argument(help="Session log files or folders.")],
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            help=f"auto (detect), or one of: {', '.join(importer_formats())}.",
        ),
    ] = "auto",
    project: Annotated[str | None, typer.Option(help="Project name for every session.")] = None,
    wait: WaitOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Import session logs (or folders of them) into the archive.

    Re-importing a file admits only what is new. With --json, one line per acknowledged document
    as it commits, then a summary line. Through the daemon, what was imported is indexed in the
    background: --wait returns once search covers all of it.
    """
    with guard(as_json):
        Archive.check("import", {"format": fmt})
        archive = open_archive()
    with guard(as_json), archive:
        if as_json:
            summary = archive.import_paths(
                paths,
                fmt=fmt,
                project=project,
                on_event=lambda e: (
                    emit_json({k: v for k, v in e.items() if k != "type"})
                    if e.get("type") == "ack"
                    else None
                ),
            )
        else:
            with _progress() as on_event:
                summary = archive.import_paths(paths, fmt=fmt, project=project, on_event=on_event)
        if wait:
            _publish(archive, summary)
        # After --wait the index has caught up: no status to read for the indexing note.
        _finish(summary, as_json, archive=None if wait else archive)


def _publish(archive: Archive, summary: ImportReport) -> None:
    """Publish what the import admitted (``cw index --wait --lexical``, its bar on a
    terminal); nothing to do when nothing new was imported."""
    if summary.imported:
        from cwtui.commands.index import publish

        publish(archive, wait=True)


@contextmanager
def _progress() -> Iterator[Callable[[dict[str, Any]], None]]:
    """A progress bar on stderr while importing (only on a terminal: elsewhere it would leave a
    blank line behind), and the event handler that drives it and prints notices."""
    if not err_console.is_terminal:

        def quiet(event: dict[str, Any]) -> None:
            if event.get("type") == "notice":
                err_console.print(event["message"], markup=False, soft_wrap=True)

        yield quiet
        return
    # Imported here: a bar is drawn only by an import on a terminal, and the module costs
    # every other start about 30 ms.
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn("[bold]importing[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[file]}"),
        TimeElapsedColumn(),
        console=err_console,
        transient=True,
    ) as progress:
        task = progress.add_task("import", total=None, file="")

        def on_event(event: dict[str, Any]) -> None:
            if event.get("type") == "progress":
                name = escape(safe(Path(str(event["file"])).name, one_line=True))
                progress.update(task, completed=event["files"], total=event["total"], file=name)
            elif event.get("type") == "notice":
                progress.console.print(f"[dim]{escape(event['message'])}[/]", markup=True)

        yield on_event


def _finish(
    summary: ImportReport,
    as_json: bool,
    *,
    per_file: bool = False,
    archive: Archive | None = None,
) -> None:
    """Print the whole summary, then exit with ``import-errors`` when anything was rejected:
    with ``--json`` the summary line itself carries the error object. ``per_file``: the file
    lines were printed before it, so the summary line does not repeat them (it keeps
    ``file_outcomes_truncated``). ``archive``: the text summary says when the daemon is still
    indexing what was imported (search right after a large import answers from the published
    part)."""
    failure = None
    if summary.error_count:
        files = summary.file_errors
        failure = ImportErrors(
            f"{summary.error_count - files:,} line(s) and {files:,} file(s) rejected; "
            "everything else was imported"
        )
    if as_json:
        # A copy: the answer's own JSON is not to be changed.
        body = {
            key: value
            for key, value in answer_json(summary).items()
            if not (per_file and key == "file_outcomes")
        }
        if failure is not None:
            body["error"] = {"code": failure.code, "message": failure.message}
        emit_json(body)
    else:
        _print_summary(summary)
        if archive is not None and summary.imported and not archive.embedded:
            from cwtui.commands.search import indexing_note

            try:
                note = indexing_note(archive.index_status())
            except CwError:  # the import stands; only this courtesy line is lost
                note = None
            if note:
                console.print(f"[dim]{escape(note)}[/]")
    if failure is not None:
        raise typer.Exit(failure.exit_code)


def _print_summary(summary: ImportReport) -> None:
    extra = []
    if summary.empty:
        extra.append(f"{summary.empty} session(s) without messages not imported")
    if summary.companions:
        extra.append(f"{summary.companions} companion file(s) read with their sessions")
    notices = len(summary.notices) + summary.notices_truncated
    if notices:
        extra.append(f"{notices} notice(s)")
    console.print(
        f"{summary.files} file(s), {summary.sessions} session(s), {summary.messages} "
        f"message(s): {summary.imported} document(s) imported, {summary.skipped} unchanged"
        + "".join(f"; {part}" for part in extra)
    )
    _print_errors(summary)


def _print_errors(summary: ImportReport) -> None:
    for problem in summary.errors:
        where = f"{problem.path}:{problem.line}" if problem.line else problem.path
        err_console.print(f"{where}: {problem.reason}", markup=False, soft_wrap=True)
    if summary.errors_truncated:
        err_console.print(
            f"… and {summary.errors_truncated:,} more problem(s) not listed", soft_wrap=True
        )


@app.command()
def sync(
    since: Annotated[
        str | None, typer.Option(help="Only files modified on or after this ISO date.")
    ] = None,
    wait: WaitOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Import what is new from every registered format's standard locations (cw sources).

    With --json, one line per file (path, format, outcome: imported, unchanged, skipped or
    failed, messages, problem), then the summary line.
    """
    with guard(as_json), open_archive() as archive:
        summary = archive.sync(since=since, home=str(Path.home()))
        if wait:
            _publish(archive, summary)
        if as_json:
            for outcome in answer_json(summary).get("file_outcomes", ()):
                emit_json(outcome)
        _finish(summary, as_json, per_file=True, archive=None if wait else archive)


@app.command()
def watch(
    interval: Annotated[float, typer.Option(help="Seconds between checks.")] = 2.0,
) -> None:
    """Follow the standard agent locations and import new lines as they settle (Ctrl-C stops)."""
    from cwcore.importers.sync import roots
    from cwcore.importers.sync import watch as follow

    with guard(False):
        if not interval > 0:
            raise InvalidInput("--interval must be a positive number of seconds")
        settings = cwconfig.load(cwconfig.default_home())[0]
        archive = open_archive()
    with guard(False), archive:
        found = sorted({str(root) for _, root in roots(Path.home(), settings)})
        console.print(
            f"watching {len(found)} location(s) (cw sources lists them all): " + ", ".join(found),
            soft_wrap=True,
            markup=False,
        )

        def on_sync(summary: ImportReport) -> None:
            if summary.imported:
                console.print(
                    f"imported {summary.imported} document(s) from {summary.files} file(s)"
                )
            _print_errors(summary)

        try:
            follow(
                lambda: archive.sync(home=str(Path.home())),
                home=Path.home(),
                settings=settings,
                interval=interval,
                on_sync=on_sync,
            )
        except KeyboardInterrupt:
            console.print("stopped")


@app.command()
def doctor(
    as_json: JsonOpt = False,
    repair: Annotated[
        bool,
        typer.Option(
            "--repair",
            help="Rebuild a stale session-order index; retire ordinals whose version was "
            "overwritten.",
        ),
    ] = False,
) -> None:
    """Store location, version, sizes, record counts and consistency checks."""
    with guard(as_json), open_archive() as archive:
        report = archive.doctor(repair=repair)
        healthy = report.healthy
        if as_json:
            emit_answer(report)
            if not healthy:
                raise typer.Exit(1)
            return
        table = Table(show_header=False, box=None)
        table.add_row("store", report.store)
        table.add_row("version", f"{report.version} (schema {report.schema})")
        for name, value in report.counts.to_json().items():
            table.add_row(name, f"{value:,}")
        table.add_row("disk", f"{report.disk_bytes / 1e6:.1f} MB")
        table.add_row("projects", ", ".join(report.projects) or "-")
        order = report.checks.session_order
        if order.ok:
            state = "[green]ok[/]" + (" (rebuilt)" if order.repaired else "")
        else:
            state = _unreadable(order.examples) or (
                f"[red]{order.problems} problem(s)[/]: run cw doctor --repair"
            )
        table.add_row("session order", state)
        perms = report.checks.permissions
        if perms.ok:
            state = "[green]ok[/] (owner only)"
            if perms.tightened:
                state += f", {perms.tightened} path(s) tightened {perms.tightened_at or ''}"
        else:
            state = f"[red]{perms.loose} path(s) readable by others[/]: " + escape(
                ", ".join(perms.examples)
            )
        table.add_row("permissions", state)
        records = report.checks.records
        if records.ok:
            state = f"[green]ok[/] ({records.checked:,} canonical record(s))"
        else:
            state = (
                f"[red]{records.corrupt} corrupt record(s)[/]: "
                + escape("; ".join(records.examples))
                + escape(f". {records.advice}")
            )
        table.add_row("records", state)
        index = report.checks.index
        if index.ok:
            state = f"[green]ok[/] ({index.checked:,} ordinal(s))"
            if index.retired:
                state += f", {index.retired} overwritten ordinal(s) retired"
            table.add_row("index", state)
        else:
            state = _unreadable(index.examples) or (
                f"[red]{index.problems} problem(s)[/]: see cw index verify"
            )
            table.add_row("index", state)
        console.print(table)
        if not healthy:
            raise typer.Exit(1)


def _unreadable(examples: tuple[str, ...]) -> str | None:
    """A check that stopped at a corrupt record (its examples), as markup (None for other
    failures)."""
    first = next(iter(examples), "")
    if " is corrupt (" not in first:
        return None
    return f"[red]not checked[/]: {escape(first)}"


@app.command("config")
def config_cmd(as_json: JsonOpt = False) -> None:
    """Effective settings and where each came from (default, config.toml, or CW_* variable)."""
    with guard(as_json):
        home = cwconfig.default_home()
        _, report = cwconfig.load(home)
        if as_json:
            emit_json(
                {
                    "home": str(home),
                    "settings": {
                        r.name: {
                            "value": r.value,
                            "source": r.source,
                            "env": cwconfig.env_name(r.name),
                        }
                        for r in report
                    },
                }
            )
            return
        console.print(f"CW_HOME = {escape(str(home))}")
        table = Table("setting", "value", "source", "env")
        for r in report:
            table.add_row(r.name, str(r.value), r.source, cwconfig.env_name(r.name))
        console.print(table)


@app.command()
def sessions(
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    agent: Annotated[
        str | None, typer.Option(help="Only this agent (claude-code, codex, ...).")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Active on or after this ISO date or instant, or 7d, 24h.")
    ] = None,
    limit: Annotated[int, typer.Option(help="Rows per page.")] = 50,
    cursor: Annotated[str | None, typer.Option(help="Continue from a previous page.")] = None,
    sort: Annotated[
        str, typer.Option(help="started, ended, messages, tools or duration (largest first).")
    ] = "started",
    ascending: Annotated[
        bool, typer.Option("--asc", help="Smallest (oldest) first instead.")
    ] = False,
    match: Annotated[
        str | None, typer.Option(help="Only sessions whose id or title contains this.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List sessions, newest first (or by --sort)."""
    with guard(as_json):
        since = resolve_span(since, clock.now())
        # The record refuses a bad limit, sort or date; the check adds the cursor's. Both before
        # the store is opened.
        request = SessionsRequest(project, agent, since, limit, cursor, sort, ascending, match)
        Archive.check("sessions", request.to_json())
        with open_archive() as archive:
            page = archive.ask(SESSIONS, request)
        if as_json:
            emit_answer(page)
            return
        rows = page.sessions
        if not rows:
            filtered = any(v is not None for v in (project, agent, since, match, cursor))
            console.print(
                "No session matches these filters."
                if filtered
                else "No sessions. Import some with `cw import PATH` or `cw sync`."
            )
            return
        # A sub-agent's id is long (parent/agent-…): on a terminal its parent's part is cut to
        # 8 characters; a pipe gets every id whole, for the program reading it (cw show ID).
        shorten = console.is_terminal
        body = [
            {
                "session": shown_id(
                    short_session(r.sessionId, r.parent) if shorten else r.sessionId
                ),
                "project": shown_id(r.project),
                "agent": shown_id(r.agent),
                "started": (r.started or "")[:16].replace("T", " "),
                "msgs": str(r.messages),
                "turns": str(r.turns),
                "tools": str(r.toolCalls),
                "title": shown_id(" ".join((r.title or "").split())),
            }
            for r in rows
        ]
        natural = {
            key: max([len(label), *(Text.from_markup(cells[key]).cell_len for cells in body)])
            for key, label in SESSION_COLUMNS
        }
        # A narrow terminal gives up secondary columns (SECONDARY), never the title; ids and
        # numbers are never cut. Each column adds 3 (padding and its border), the table 1.
        shown, title = fit_columns(console.width - 1, natural, SECONDARY, least=12, per_column=3)
        table = Table()
        for key, label in SESSION_COLUMNS:
            if key == "title":
                table.add_column(label, no_wrap=True, overflow="ellipsis", width=title)
            elif key in shown:
                table.add_column(label, no_wrap=True, min_width=natural[key])
        for cells in body:
            table.add_row(*(cells[key] for key, _ in SESSION_COLUMNS if key in shown))
        console.print(table)
        if page.next_cursor:
            again = "" if sort == "started" else f" --sort {sort}"
            again += " --asc" if ascending else ""
            again += f" --match {shlex.quote(match)}" if match else ""
            console.print(f"[dim]more: cw sessions{escape(again)} --cursor {page.next_cursor}[/]")


#: The columns of ``cw sessions`` (key, label).
SESSION_COLUMNS = (
    ("session", "session"),
    ("project", "project"),
    ("agent", "agent"),
    ("started", "started"),
    ("msgs", "msgs"),
    ("turns", "turns"),
    ("tools", "tools"),
    ("title", "title"),
)
#: The columns ``cw sessions`` gives up, in this order, when the terminal is too narrow for
#: them and a title (a pipe is :attr:`~cwtui.output.CwConsole.PIPE_WIDTH` wide: all shown).
SECONDARY = ("turns", "agent", "project", "tools", "started")


@app.command()
def show(
    session: Annotated[
        str, typer.Argument(help="Session id (or unique prefix), or a document id.")
    ],
    show_all: Annotated[bool, typer.Option("--all", help="Include metadata lines.")] = False,
    include_superseded: Annotated[
        bool,
        typer.Option(
            "--include-superseded", help="A document: every version, superseded ones too (audit)."
        ),
    ] = False,
    hide_superseded: Annotated[
        bool,
        typer.Option("--hide-superseded", help="A session: leave superseded messages out."),
    ] = False,
    full: Annotated[bool, typer.Option("--full", help="Do not fold long tool output.")] = False,
    thinking: Annotated[
        bool, typer.Option("--thinking", help="Show the model's thinking where the source has it.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """A session's transcript (roles, tool calls, tool output folded, model and tokens per
    response, a pointer to each sub-agent's session; superseded messages marked), or one
    document by id (with --include-superseded, every version, for audit). --json always lists
    thinking."""
    from cwtui.transcript import render_document, render_transcript

    with guard(as_json), open_archive() as archive:
        doc_like = session.startswith(("t-", "r-", "d-", "m-", "n-"))
        if doc_like:
            try:
                doc = archive.show_document(session, include_superseded=include_superseded)
            except NotFound:
                doc = None
            if doc is not None:
                if as_json:
                    emit_answer(doc)
                else:
                    render_document(console, doc)
                return
        try:
            body = archive.show(session, include_all=show_all, hide_superseded=hide_superseded)
        except NotFound as exc:
            if not doc_like:
                raise
            raise NotFound(f"no document or session {excerpt(session)}") from exc
        if as_json:
            emit_answer(body)
            return
        render_transcript(console, body, fold=not full, thinking=thinking)


@app.command()
def export(
    session: Annotated[str, typer.Argument(help="Session id (or a unique prefix).")],
    fmt: Annotated[str, typer.Option("--format", help="md or jsonl (cw-jsonl).")] = "md",
) -> None:
    """Write a session as Markdown or cw-jsonl to stdout."""
    with guard(False):
        Archive.check("export", {"format": fmt})
        with open_archive() as archive:
            text = archive.export(session, fmt)
        # Markdown is for people: controls shown escaped; cw-jsonl stays exact JSON lines.
        typer.echo(safe(text) if fmt == "md" else json_safe(text), nl=False)


@app.command()
def forget(
    target: Annotated[
        str, typer.Argument(help="A session id (or unique prefix) or a document id.")
    ],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove a session or document for good: canonical records and derived entries.

    Ordinals are tombstoned, never reused. On a terminal it names what it found (a unique prefix
    of a session id is accepted there) and asks; --yes skips the question and takes only an
    exact id. Without a terminal, --yes is required.
    """
    with guard(as_json):
        if not yes and not sys.stdin.isatty():
            raise InvalidInput("forget asks for confirmation on a terminal: pass --yes to skip it")
        with open_archive() as archive:
            found = archive.forget_target(target, prefix=not yes)
            what = _describe(found)
            if not yes and not _confirm(f"Forget {what} permanently?"):
                if as_json:
                    emit_json({"target": answer_json(found), "forgotten": False})
                else:
                    err_console.print("nothing forgotten")
                return
            if yes and not as_json:
                err_console.print(f"forgetting {what}", markup=False, soft_wrap=True)
            report = archive.forget(found.id)
        if as_json:
            emit_answer(report)
            return
        console.print(
            f"forgot {report.sessions} session(s), {report.documents} document(s) "
            f"({report.versions} version(s)), {report.events} event(s), "
            f"{report.chunks} chunk(s); {report.tombstoned} ordinal(s) tombstoned",
            soft_wrap=True,
        )


def _confirm(question: str) -> bool:
    """Ask on stderr, read one answer from stdin (a terminal); only y or yes agrees. Unlike
    ``typer.confirm``, nothing is written to stdout, which stays clean for ``--json``."""
    sys.stderr.write(f"{safe(question, one_line=True)} [y/N]: ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def _describe(found: ForgetTarget) -> str:
    """``session ID (project P, N document(s), M message(s))`` or ``document ID (...)``."""
    if found.kind == "session":
        project = "its record is corrupt" if found.corrupt else f"project {found.project}"
        return (
            f"session {found.id} ({project}, {found.documents} "
            f"document(s), {found.messages} message(s))"
        )
    return (
        f"document {found.id} (session {found.session}, project {found.project}, "
        f"{found.messages} message(s))"
    )


@app.command("tui")
def tui_cmd() -> None:
    """Browse the archive in the terminal UI (sessions, transcripts, export)."""
    from cwtui.commands.tui import tui

    tui()


def _command_name(info: typer.models.CommandInfo) -> str:
    assert info.callback is not None
    return info.name or typer.main.get_command_name(info.callback.__name__)


def only(argv: list[str]) -> typer.Typer:
    """``app`` holding only the command (or command group) ``argv`` names, or ``app`` itself
    when it names none (no arguments, ``--help``, ``--version``, an unknown name: those need
    every command). Typer builds each command's parameters from its annotations at every
    start, about 0.13 s of CPU for the whole tree against 0.007 s for one; a run uses one, and
    its usage, help and errors are the same either way (``tests/test_cli_start.py``)."""
    name = argv[0] if argv else "-"
    if name.startswith("-"):
        return app
    commands = [c for c in app.registered_commands if _command_name(c) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if len(commands) + len(groups) != 1:
        return app
    pruned = copy.copy(app)
    pruned.registered_commands = commands
    pruned.registered_groups = groups
    return pruned


def main() -> None:
    only(sys.argv[1:])()


if __name__ == "__main__":
    main()

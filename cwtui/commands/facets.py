"""``cw facets``: the archive's agents and projects, each with its sessions and messages under
the other filters (what the TUI's filter pickers list; :func:`cwcore.facets.facets`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from cwcore import clock
from cwcore.api import Archive
from cwcore.retrieve.filters import resolve_span
from cwtui.output import console, emit_answer, guard, shown_id
from cwtui.widgets.sparkline import sparkline

if TYPE_CHECKING:
    from cwcore.contract.facets import FacetCount

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def facets(
    project: Annotated[
        str | None, typer.Option(help="Count the agents within this project.")
    ] = None,
    agent: Annotated[str | None, typer.Option(help="Count the projects within this agent.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Only sessions active on or after this ISO date, or 7d, 24h.")
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(help="Only sessions active on or before this date, or a span back."),
    ] = None,
    days: Annotated[
        int,
        typer.Option(
            "--days",
            min=0,
            max=366,
            help="Also count each project's sessions per day over this many days, ending "
            "--until's day or today (a sparkline; activity in --json).",
        ),
    ] = 0,
    as_json: JsonOpt = False,
) -> None:
    """List the agents and projects with their sessions and messages, each counted under the
    other filters (an agent's within --project, a project's within --agent)."""
    with guard(as_json), Archive.open() as archive:
        now = clock.now()
        since, until = resolve_span(since, now), resolve_span(until, now)
        found = archive.facets(
            project=project, agent=agent, since=since, until=until, activity_days=days
        )
    if as_json:
        emit_answer(found)
        return
    if not found.agents and not found.projects:
        console.print("No sessions. Import some with `cw import PATH` or `cw sync`.")
        return
    _table("agent", found.agents)
    _table("project", found.projects, found.activity_end)
    sessions = "session" if found.sessions == 1 else "sessions"
    messages = "message" if found.messages == 1 else "messages"
    console.print(
        f"{found.sessions:,} {sessions} · {found.messages:,} {messages} pass every filter"
    )


def _table(name: str, items: tuple[FacetCount, ...], end: str | None = None) -> None:
    table = Table()
    table.add_column(name, no_wrap=True)
    table.add_column("sessions", justify="right")
    table.add_column("messages", justify="right")
    spark = end is not None and any(item.activity is not None for item in items)
    if spark:
        table.add_column(f"per day to {end}", no_wrap=True)
    for item in items:
        row = [shown_id(item.name), f"{item.sessions:,}", f"{item.messages:,}"]
        if spark:
            row.append(sparkline(item.activity or ()))
        table.add_row(*row)
    console.print(table)


def register(app: typer.Typer) -> None:
    app.command("facets")(facets)

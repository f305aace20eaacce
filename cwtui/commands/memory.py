"""``cw memory``: durable memory records and the per-turn injection block."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cwcore.api import Archive
from cwtui.output import console, emit_answer, guard

if TYPE_CHECKING:
    from cwcore.contract.memory import MemoryRecord

NAME = "memory"
app = typer.Typer(help="Memory records: add, list, show, contest, deprecate, injection context.")

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _line(record: MemoryRecord) -> str:
    rule = f" {record.rule_type}" if record.rule_type else ""
    return (
        f"[bold]{record.id}[/] {escape('[' + record.status + ']')} {record.layer} conf "
        f"{record.confidence:.2f} {escape(record.scope.label)}{rule}: {escape(record.statement)}"
    )


@app.command("add")
def add(
    statement: Annotated[str, typer.Argument(help="What to remember.")],
    rule_type: Annotated[
        str | None,
        typer.Option(
            "--rule-type", help="avoid_pattern, prefer_pattern, convention or correction."
        ),
    ] = None,
    confidence: Annotated[float, typer.Option(help="Confidence from 0 to 1.")] = 0.7,
    layer: Annotated[str, typer.Option(help="L1 (working) or L2 (consolidated).")] = "L1",
    scope: Annotated[str, typer.Option(help="global, domain:NAME or project:NAME.")] = "global",
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    not_when: Annotated[
        list[str] | None,
        typer.Option("--not-when", help="Does not apply when this phrase matches (repeatable)."),
    ] = None,
    exception: Annotated[
        list[str] | None,
        typer.Option("--exception", help="A known exception phrase (repeatable)."),
    ] = None,
    profile: Annotated[
        str | None, typer.Option("--profile", help="Only for this profile id.")
    ] = None,
    supersedes: Annotated[
        str | None, typer.Option("--supersedes", help="The record this one replaces.")
    ] = None,
    contradicts: Annotated[
        list[str] | None,
        typer.Option(
            "--contradicts", help="A record this one's evidence contradicts (repeatable)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Add an active memory record (contested when it conflicts with existing evidence)."""
    with guard(as_json), Archive.open() as archive:
        fields: dict[str, Any] = {
            "confidence": confidence,
            "layer": layer,
            "scope": scope,
            "tags": tag or [],
            "doesNotApplyWhen": not_when or [],
            "knownExceptions": exception or [],
        }
        for name, value in (
            ("ruleType", rule_type),
            ("profileId", profile),
            ("supersedes", supersedes),
        ):
            if value is not None:
                fields[name] = value
        if contradicts:
            fields["contradicts"] = contradicts
        record = archive.memory_add(statement, **fields)
        if as_json:
            emit_answer(record)
            return
        console.print(_line(record))
        for entry in record.history:
            if entry.op == "contest":
                console.print(f"[yellow]contested[/]: {escape(str(entry.reason))}")


@app.command("list")
def list_(
    status: Annotated[str | None, typer.Option(help="Only this status.")] = None,
    tag: Annotated[str | None, typer.Option(help="Only records with this tag.")] = None,
    scope: Annotated[str | None, typer.Option(help="Only this scope.")] = None,
    layer: Annotated[str | None, typer.Option(help="Only this layer (L1, L2).")] = None,
    limit: Annotated[int, typer.Option(help="At most this many (newest first).")] = 100,
    as_json: JsonOpt = False,
) -> None:
    """List memory records, most recently updated first."""
    with guard(as_json), Archive.open() as archive:
        filters: dict[str, Any] = {"limit": limit}
        for name, value in (("status", status), ("tag", tag), ("scope", scope), ("layer", layer)):
            if value is not None:
                filters[name] = value
        body = archive.memory_list(**filters)
        if as_json:
            emit_answer(body)
            return
        if not body.records:
            console.print("[dim]no memory records.[/]")
        for record in body.records:
            console.print(_line(record))


@app.command("show")
def show(
    record_id: Annotated[str, typer.Argument(help="The record id (mem_…).")],
    as_json: JsonOpt = False,
) -> None:
    """Show one memory record with its negative scope and history."""
    with guard(as_json), Archive.open() as archive:
        record = archive.memory_show(record_id)
        if as_json:
            emit_answer(record)
            return
        console.print(_line(record))
        table = Table(show_header=False, box=None)
        # Lists print as they always have (Python list form), so the text view is unchanged.
        for name, value in (
            ("tags", list(record.tags)),
            ("profile_id", record.profile_id),
            ("does_not_apply_when", list(record.does_not_apply_when)),
            ("known_exceptions", list(record.known_exceptions)),
            ("created", record.created),
            ("updated", record.updated),
            ("supersedes", record.supersedes),
            ("superseded_by", record.superseded_by),
        ):
            if value:
                table.add_row(name, escape(str(value)))
        console.print(table)
        for event in record.history:
            reason = f": {event.reason}" if event.reason else ""
            console.print(f"[dim]{event.at} {event.op}{escape(reason)}[/]")


def _status(record_id: str, reason: str | None, as_json: bool, op: str) -> None:
    with guard(as_json), Archive.open() as archive:
        if op == "contest":
            record = archive.memory_contest(record_id, reason=reason)
        else:
            record = archive.memory_deprecate(record_id, reason=reason)
        if as_json:
            emit_answer(record)
        else:
            console.print(_line(record))


@app.command("contest")
def contest(
    record_id: Annotated[str, typer.Argument(help="The record id (mem_…).")],
    reason: Annotated[str | None, typer.Option(help="Why it is disputed.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Mark a record contested: never a hard rule, shown only as a warning."""
    _status(record_id, reason, as_json, "contest")


@app.command("deprecate")
def deprecate(
    record_id: Annotated[str, typer.Argument(help="The record id (mem_…).")],
    reason: Annotated[str | None, typer.Option(help="Why it no longer holds.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Deprecate a record: it is no longer injected (kept for audit)."""
    _status(record_id, reason, as_json, "deprecate")


@app.command("context")
def context(
    prompt: Annotated[str, typer.Argument(help="The user's prompt for this turn.")],
    project: Annotated[str | None, typer.Option(help="The current project.")] = None,
    session: Annotated[
        str | None, typer.Option(help="The current session (gives the project).")
    ] = None,
    profile: Annotated[str | None, typer.Option(help="The session's profile id.")] = None,
    cwd: Annotated[str | None, typer.Option(help="The working directory.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Build the memory injection block for a prompt (with processor traces under --json)."""
    with guard(as_json), Archive.open() as archive:
        params: dict[str, Any] = {}
        for name, value in (
            ("project", project),
            ("session", session),
            ("profile", profile),
            ("cwd", cwd),
        ):
            if value is not None:
                params[name] = value
        body = archive.memory_context(prompt, **params)
        if as_json:
            emit_answer(body)
            return
        if body.block:
            console.print(escape(body.block), soft_wrap=True)
        else:
            console.print(f"[dim]no memory block ({body.reason}).[/]")

"""``cw index``: publish, inspect, verify and rebuild the derived indexes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from cwcore.api import Archive
from cwtui import semantic_status
from cwtui.output import console, emit_json, err_console, guard, shown_id

if TYPE_CHECKING:
    from cwcore.index.results import IndexStatus

app = typer.Typer(help="Publish, inspect, verify and rebuild the derived indexes.")

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _render_status(body: IndexStatus) -> None:
    rebuild = body.rebuild
    state = "complete" if body.complete else ("rebuilding" if rebuild else "partial")
    console.print(
        f"generation {body.generation} ({state}), {body.documents:,} document(s) in "
        f"{body.windows:,} window(s); outbox depth {body.outbox_depth}, "
        f"lag {body.outbox_lag_s:.1f}s"
    )
    if rebuild:
        console.print(f"rebuild: {rebuild.done:,} of {rebuild.queued:,} document(s) republished")
    table = Table("handler", "complete", "partial", "skipped")
    for counts in body.handlers:
        table.add_row(counts.name, str(counts.complete), str(counts.partial), str(counts.skipped))
    console.print(table)
    sem = body.semantic
    if sem:
        console.print(semantic_status.summary(sem))
        console.print(Text("  ") + semantic_status.detail(sem))
    doc = body.document
    if doc is not None:
        console.print(f"document {doc.document_id} v{doc.version} ({doc.state}): ", end="")
        if doc.indexed:
            outcomes = ", ".join(f"{h} {o}" for h, o in sorted(doc.handlers))
            console.print(f"generation {doc.generation}, {doc.windows} window(s): {outcomes}")
        else:
            console.print("not indexed yet")


@app.callback(invoke_without_command=True)
def index(
    ctx: typer.Context,
    wait: Annotated[
        bool, typer.Option("--wait", help="Index everything pending, with progress.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Publish pending index work now (`--wait`: until the outbox is empty)."""
    if ctx.invoked_subcommand is not None:
        return
    with guard(as_json), Archive.open() as archive:
        if as_json:
            emit_json(archive.index_run(wait=wait).to_json())
            return
        with Progress(
            TextColumn("[bold]indexing[/]"),
            BarColumn(),
            MofNCompleteColumn(),
            console=err_console,
            transient=True,
        ) as progress:
            task = progress.add_task("index", total=None)

            def on_event(event: dict[str, Any]) -> None:
                if event.get("type") == "progress":
                    progress.update(task, completed=event["done"], total=event["total"])

            body = archive.index_run(wait=wait, on_event=on_event)
        _render_status(body)


@app.command()
def status(
    document: Annotated[str | None, typer.Option(help="Also this document's outcomes.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Outbox depth and lag, the published generation, per-handler outcome counts, and the
    semantic index's embedding progress."""
    with guard(as_json), Archive.open() as archive:
        body = archive.index_status(document)
        if as_json:
            emit_json(body.to_json())
        else:
            _render_status(body)


@app.command()
def partial(
    limit: Annotated[int, typer.Option(help="Documents to list (1-1000).")] = 100,
    after: Annotated[int, typer.Option(help="Continue after this ordinal (from `next`).")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """The documents behind a partial index: each one's handler outcomes and the limit it hit."""
    with guard(as_json), Archive.open() as archive:
        body = archive.index_partial(limit=limit, after=after)
        if as_json:
            emit_json(body.to_json())
            return
        if not body.documents:
            console.print("No document has a partial or skipped handler outcome.")
        for doc in body.documents:
            outcomes = ", ".join(f"{h} {o}" for h, o in sorted(doc.outcomes))
            console.print(
                f"[bold]{shown_id(doc.document_id)}[/] v{doc.version} ({doc.state}, "
                f"{doc.windows} window(s)): {outcomes}"
            )
            for handler, cap in sorted(doc.caps):
                console.print(f"  [dim]{handler}: {escape(cap)}[/]")
        if body.next is not None:
            console.print(f"[dim]more: cw index partial --after {body.next}[/]")


@app.command()
def verify(as_json: JsonOpt = False) -> None:
    """Check the derived view against canonical records."""
    with guard(as_json), Archive.open() as archive:
        body = archive.index_verify()
        if as_json:
            emit_json(body.to_json())
        else:
            if body.ok:
                console.print(f"ok: {body.checked:,} ordinal(s) checked")
            for problem in body.problems:
                err_console.print(problem, markup=False)
        if not body.ok:
            raise typer.Exit(1)


@app.command()
def rebuild(
    wait: Annotated[bool, typer.Option("--wait", help="Rebuild before returning.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete every derived index and rebuild it from canonical records."""
    with guard(as_json), Archive.open() as archive:
        body = archive.index_rebuild(wait=wait)
        if as_json:
            emit_json(body.to_json())
        else:
            console.print(f"queued {body.queued or 0:,} document(s) for indexing")
            _render_status(body)

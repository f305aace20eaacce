"""``cw sources``: each standard location of every registered format, and what sync saw there."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from cwcore.api import Archive
from cwtui.output import console, emit_answer, guard

if TYPE_CHECKING:
    from cwcore.contract.sources import SourcesReport

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def sources(as_json: JsonOpt = False) -> None:
    """List every known session location: found or not, files, sessions and messages imported,
    files skipped and why, and the last sync."""
    with guard(as_json), Archive.open() as archive:
        body = archive.sources(home=str(Path.home()))
    if as_json:
        emit_answer(body)
        return
    _render(body)


def _render(body: SourcesReport) -> None:
    table = Table(title="sources", title_justify="left")
    for name in ("format", "location", "found", "files", "sessions", "messages", "skipped"):
        counts = ("files", "sessions", "messages", "skipped")
        table.add_column(name, justify="right" if name in counts else "left")
    table.add_column("last sync")
    for row in body.sources:
        table.add_row(
            row.format,
            escape(row.path),
            "yes" if row.found else "no",
            str(row.files),
            str(row.sessions),
            str(row.messages),
            str(row.skipped),
            row.last_sync or "never",
        )
    console.print(table)
    for row in body.sources:
        for reason, count in row.skipped_reasons:
            console.print(f"{escape(row.path)}: {count} skipped: {escape(reason)}", soft_wrap=True)
    s = body.summary
    console.print(
        f"{s.found} of {s.locations} locations found · {s.files} files · "
        f"{s.sessions} sessions · {s.messages} messages · {s.skipped} skipped · "
        f"last sync {s.last_sync or 'never'}"
    )


def register(app: typer.Typer) -> None:
    app.command("sources")(sources)

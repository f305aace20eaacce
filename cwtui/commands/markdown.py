"""``cw read-entry`` and ``cw read-markdown``: exact text of Markdown evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from cwcore.api import Archive
from cwcore.contract.markdown import RESULT_CHARS, TOOL_RESULT_CHARS
from cwtui.output import console, emit_answer, guard

if TYPE_CHECKING:
    from cwcore.contract.markdown import MarkdownRead

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
MaxChars = Annotated[
    int,
    typer.Option(
        "--max-chars",
        help=f"Characters returned at most (default {RESULT_CHARS:,}, "
        f"up to {TOOL_RESULT_CHARS:,}).",
    ),
]


def _render(read: MarkdownRead) -> None:
    where = [f"[bold]{escape(read.evidence_id)}[/] v{read.version}"]
    place = read.place
    if place is not None and place.relative_path:
        where.append(escape(place.relative_path))
    if place is not None and place.lines:
        first, last = place.lines
        where.append(f"lines {first}-{last}")
    if place is not None and place.heading_path:
        where.append(escape(" > ".join(place.heading_path)))
    if not read.current or read.state != "live":
        where.append(f"[yellow]{escape(read.state)}[/]")
    console.print("[dim]" + " · ".join(where) + "[/]")
    console.print(escape(read.text), soft_wrap=True, end="" if read.text else "\n")
    if read.text and not read.text.endswith("\n"):
        console.print()
    if read.truncated and read.next is not None:
        console.print(f"[dim]truncated; continue with: cw read-entry {escape(read.next)}[/]")


def read_entry(
    entry: Annotated[
        str,
        typer.Argument(help="An evidence id (DOC#md:START:END, from a hit) or a document id."),
    ],
    max_chars: MaxChars = RESULT_CHARS,
    as_json: JsonOpt = False,
) -> None:
    """Expand a search hit: the exact characters of its evidence range, with lines and heading."""
    with guard(as_json), Archive.open() as archive:
        read = archive.read_entry(entry, max_chars=max_chars)
        if as_json:
            emit_answer(read)
        else:
            _render(read)


def read_markdown(
    document: Annotated[
        str, typer.Argument(help="A Markdown document id, or the imported file's path.")
    ],
    lines: Annotated[
        str | None, typer.Option("--lines", help="One-based inclusive lines, e.g. 10-24.")
    ] = None,
    heading: Annotated[
        str | None,
        typer.Option(
            "--heading", help="A unique heading title, or its path ('Architecture > Keyspace')."
        ),
    ] = None,
    max_chars: MaxChars = RESULT_CHARS,
    as_json: JsonOpt = False,
) -> None:
    """Read lines or one heading's section of an imported Markdown document."""
    with guard(as_json), Archive.open() as archive:
        read = archive.read_markdown(document, lines=lines, heading=heading, max_chars=max_chars)
        if as_json:
            emit_answer(read)
        else:
            _render(read)


def register(app: typer.Typer) -> None:
    app.command("read-entry")(read_entry)
    app.command("read-markdown")(read_markdown)

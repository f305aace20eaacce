"""``cw read-entry`` and ``cw read-markdown``: exact text of Markdown evidence."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.markup import escape

from cwcore.api import Archive
from cwcore.markdown.limits import RESULT_CHARS, TOOL_RESULT_CHARS
from cwtui.output import console, emit_json, guard

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
MaxChars = Annotated[
    int,
    typer.Option(
        "--max-chars",
        help=f"Characters returned at most (default {RESULT_CHARS:,}, "
        f"up to {TOOL_RESULT_CHARS:,}).",
    ),
]


def _render(body: dict[str, Any]) -> None:
    where = [f"[bold]{escape(body['evidenceId'])}[/] v{body['version']}"]
    if body.get("relativePath"):
        where.append(escape(str(body["relativePath"])))
    if body.get("lines"):
        first, last = body["lines"]
        where.append(f"lines {first}-{last}")
    if body.get("headingPath"):
        where.append(escape(" > ".join(body["headingPath"])))
    if not body.get("current", True) or body.get("state", "live") != "live":
        where.append(f"[yellow]{escape(str(body.get('state')))}[/]")
    console.print("[dim]" + " · ".join(where) + "[/]")
    console.print(escape(body["text"]), soft_wrap=True, end="" if body["text"] else "\n")
    if body["text"] and not body["text"].endswith("\n"):
        console.print()
    if body["truncated"]:
        console.print(f"[dim]truncated; continue with: cw read-entry {escape(body['next'])}[/]")


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
        body = archive.call("markdown.read-entry", {"entry": entry, "maxChars": max_chars})
        if as_json:
            emit_json(body)
        else:
            _render(body)


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
        params: dict[str, Any] = {"document": document, "maxChars": max_chars}
        if lines is not None:
            params["lines"] = lines
        if heading is not None:
            params["heading"] = heading
        body = archive.call("markdown.read", params)
        if as_json:
            emit_json(body)
        else:
            _render(body)


def register(app: typer.Typer) -> None:
    app.command("read-entry")(read_entry)
    app.command("read-markdown")(read_markdown)

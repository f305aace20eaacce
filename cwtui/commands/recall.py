"""``cw recall``, ``cw gather`` and ``cw supersede``: materialize, widen, correct."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from cwcore.api import Archive
from cwcore.contract.search import EMPTY_ADVICE
from cwcore.errors import InvalidInput, NotFound
from cwtui.output import console, emit_answer, guard, shown_id

if TYPE_CHECKING:
    from cwcore.contract.recall import DocumentRead, RecalledSource, RecallResponse

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def recall(
    locator: Annotated[
        str, typer.Argument(help="A locator from `cw search --json` (- reads stdin).")
    ],
    neighbors: Annotated[int, typer.Option(help="Neighbouring windows to include (0-32).")] = 1,
    max_tokens: Annotated[int, typer.Option(help="Token budget of the answer (≤ 100,000).")] = 3000,
    session: Annotated[
        list[str] | None,
        typer.Option("--session", help="Your session (for session-scoped locators)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the exact archived source around a search hit, with provenance."""
    with guard(as_json):
        if locator == "-":
            locator = sys.stdin.read().strip()
        Archive.check("recall", {"neighbors": neighbors, "maxTokens": max_tokens})
        with Archive.open() as archive:
            body = archive.recall(
                locator, neighbors=neighbors, max_tokens=max_tokens, session_ids=session or []
            )
        if as_json:
            emit_answer(body)
        else:
            _render(body)
        code = recall_exit_code(body.status)
        if code:
            raise typer.Exit(code)


def recall_exit_code(status: str) -> int:
    """The exit status of a recall answer, the same with and without ``--json``: 0 when
    ``resolved``, 2 (as ``invalid-input``) for ``locator-invalid``, 3 (as ``not-found``) for
    ``expired``, ``superseded``, ``missing`` and ``lease-expired``."""
    if status == "resolved":
        return 0
    return InvalidInput.exit_code if status == "locator-invalid" else NotFound.exit_code


def _render(body: RecallResponse) -> None:
    """A recall answer for people: a locator's window (with ``tokens`` and ``continuation``) or
    a direct document read (with ``bytes``; a large document has a chunk list, not text)."""
    source, document = body.source, body.document
    shown: RecalledSource | DocumentRead | None = source or document
    if shown is None:
        # One line whatever the width (a pipe is 80 columns): scripts read the status from it.
        console.print(f"[bold red]{body.status}[/]: {escape(body.message or '')}", soft_wrap=True)
        return
    if source is not None:
        size = f"{source.tokens} tokens"
    else:
        size = f"{document.bytes if document is not None else 0:,} bytes"
    state = "" if body.status == "resolved" else f"[bold red]{body.status}[/] · "
    console.print(
        f"{state}[bold]{shown.document_id}[/] v{shown.version} · {shown.kind} · session "
        f"{escape(shown.session)} · {shown.created[:19]} · {size}"
    )
    console.print(f"[dim]{escape(shown.label)}[/]")
    if source is not None and source.parent_turn is not None:
        console.print(f"[dim]turn: {escape(source.parent_turn.text[:200])}[/]")
    if shown.text is not None:
        console.print(escape(shown.text), soft_wrap=True)
    else:
        chunks = document.chunks if document is not None else ()
        console.print(
            f"[dim]{len(chunks or ())} chunk(s); too large to print here: "
            f"cw show {shown.document_id}[/]"
        )
    cont = body.continuation
    if cont.before or cont.after:
        console.print("[dim]more: cw recall --json shows continuation locators[/]")


def gather(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    limit: Annotated[int, typer.Option(help="Anchor hits (1-100).")] = 5,
    neighbors: Annotated[int, typer.Option(help="Turns before and after each hit (0-8).")] = 1,
    scope: Annotated[str, typer.Option(help="session, project or all.")] = "all",
    session: Annotated[
        list[str] | None, typer.Option("--session", help="Session id (repeatable).")
    ] = None,
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Search, then show each hit with the turns around it (context, not ranked)."""
    from cwcore.contract.gather import gather_neighbors
    from cwcore.contract.search import parse_request

    with guard(as_json):
        fields: dict[str, Any] = {"query": query, "limit": limit, "scope": scope}
        if session:
            fields["sessions"] = session
        if project:
            fields["project"] = project
        # Validated here, before the store opens: a bad request creates no CW_HOME.
        request = parse_request(fields)
        gather_neighbors(neighbors)
        with Archive.open() as archive:
            body = archive.gather(request, neighbors=neighbors)
        if as_json:
            emit_answer(body)
            return
        if not body.anchors:
            console.print(f"[dim]no results.[/] {EMPTY_ADVICE}")
        for anchor in body.anchors:
            for n in anchor.before:
                console.print(f"[dim]  before {n.document_id}: {escape(n.text[:160])}[/]")
            console.print(
                f"[bold]{anchor.band} {anchor.score:.2f} {anchor.match_type}[/] "
                f"{anchor.document_id}: {escape(anchor.snippet)}"
            )
            for n in anchor.after:
                console.print(f"[dim]  after  {n.document_id}: {escape(n.text[:160])}[/]")
            console.print()


def supersede(
    document: Annotated[str, typer.Argument(help="The document id to retire from search.")],
    by: Annotated[str | None, typer.Option("--by", help="The replacing document id.")] = None,
    reason: Annotated[str | None, typer.Option(help="Why (kept in the audit record).")] = None,
    subject_key: Annotated[
        str | None, typer.Option("--subject-key", help="Move this subjectKey to --by.")
    ] = None,
    undo: Annotated[
        bool,
        typer.Option("--undo", help="Undo the supersession of DOCUMENT (a new audit record)."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Retire a reversed decision from search; it stays readable with --include-superseded.
    With --undo, bring a superseded document back into search."""
    with guard(as_json), Archive.open() as archive:
        if undo:
            if by is not None or subject_key is not None:
                raise InvalidInput("--undo takes only DOCUMENT and --reason")
            body = archive.unsupersede(document, reason=reason)
            if as_json:
                emit_answer(body)
            else:
                console.print(
                    f"restored {shown_id(body.document_id)} as v{body.version} (v"
                    f"{body.restored} stays superseded for audit): {escape(body.reason)}"
                )
            return
        if subject_key is not None and by is None:
            raise InvalidInput("--subject-key needs --by (the new holder of the key)")
        done = archive.supersede(document, by=by, reason=reason, subject_key=subject_key)
        if as_json:
            emit_answer(done)
        else:
            target = f" by {done.by}" if done.by else ""
            console.print(f"superseded {done.document_id} v{done.version}{target}: {done.reason}")


def register(app: typer.Typer) -> None:
    app.command("recall")(recall)
    app.command("gather")(gather)
    app.command("supersede")(supersede)

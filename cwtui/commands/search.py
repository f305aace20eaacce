"""``cw search``: explicit retrieval for people (a table with bands) and machines (JSON)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cwcore import clock
from cwcore.api import Archive
from cwcore.errors import CwError, InvalidInput
from cwcore.retrieve.filters import resolve_span
from cwtui.output import console, emit_json, err_console, guard, shown_id

if TYPE_CHECKING:
    from cwcore.contract.index import IndexStatus
    from cwcore.contract.models import SemanticStatus
    from cwcore.contract.search import SearchResponse

BAND_STYLE = {"high": "bold green", "moderate": "yellow", "some": "cyan", "low": "dim"}


def _highlight(snippet: str, highlights: Sequence[tuple[int, int]]) -> str:
    out, last = [], 0
    for start, end in sorted(highlights):
        if start < last:
            continue
        out.append(escape(snippet[last:start]))
        out.append(f"[bold reverse]{escape(snippet[start:end])}[/]")
        last = end
    out.append(escape(snippet[last:]))
    return "".join(out).replace("\n", " ")


def render(body: SearchResponse) -> None:
    results = body.hits()
    if not results:
        console.print(f"[dim]no results ({body.retrieval_status}).[/] {body.advice or ''}")
        return
    table = Table("band", "score", "match", "session · date", show_lines=True)
    # Folded, not cut: a path longer than the column (where an exact anchor such as
    # bug_report.yml usually sits) was shown as ".../ISSUE_TEMPLATE/bug…", without its match.
    table.add_column("snippet", overflow="fold")
    for hit in results:
        src = hit.source
        when = (src.timestamp or "")[:10]
        table.add_row(
            f"[{BAND_STYLE[hit.band]}]{hit.band}[/]",
            f"{hit.score:.2f}",
            hit.match_type,
            f"{shown_id(src.session_id[:13])}\n{when}\n[dim]{escape(hit.document_id)}[/]",
            _highlight(hit.snippet, hit.highlights),
        )
    console.print(table)
    status = body.retrieval_status
    note = "" if status == "ok" else f" · retrieval_status {status}"
    console.print(
        f"[dim]{len(results)} result(s), generation {body.generation}, "
        f"{body.timing_ms:.1f} ms{note} · recall one with: cw recall <locator> "
        f"(cw search --json shows locators)[/]"
    )


def indexing_note(status: IndexStatus) -> str | None:
    """The footer while admitted documents wait for the lexical index (right after a large
    import the daemon indexes in the background): search answers from the published part."""
    depth = status.outbox_depth
    if not depth:
        return None
    return (
        f"{depth:,} imported entries are not indexed yet: search covers what is published "
        "(cw index --wait publishes the rest now)"
    )


def embedding_note(status: SemanticStatus) -> str | None:
    """The footer while windows wait for a vector: what search used and the time left (the
    semantic handler's ``eta_s``); None once embedding is complete or disabled."""
    from cwtui.semantic_status import _left

    progress = status.progress
    state, pending, eta = progress.state, progress.pending, progress.eta_s
    if state not in ("waiting", "embedding", "revalidating") or not pending:
        return None
    left = f", about {_left(float(eta))} left" if eta is not None else ""
    if state == "embedding":
        return (
            f"semantic search covers the newest {progress.embedded:,} of "
            f"{progress.total:,} windows; the rest is lexical only "
            f"(embedding {pending:,} more{left})"
        )
    why = "revalidating after a rebuild" if state == "revalidating" else "no window embedded yet"
    return f"search is lexical only: {why} ({pending:,} windows to embed{left})"


def _batch_lines(path: Path) -> list[str]:
    try:
        return path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror}") from None


def _batch(archive: Archive, lines: list[str], as_json: bool) -> int:
    """One answer line per request line: the response (with the line's ``id`` echoed by the
    engine) or, with ``as_json``, an error object carrying that ``id`` in its place; without
    it the error is one line on stderr (``cw: line N (id X): message``) and stdout holds only
    responses. Each line is validated here, at the edge, so a bad one costs no engine call.
    Returns the exit code of the first failed line (0 when none failed)."""
    from cwcore.contract.search import parse_request

    failed = 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        rid: Any = None
        try:
            try:
                request = json.loads(line)
            except ValueError as exc:
                raise InvalidInput(f"line {number}: invalid JSON: {exc}") from None
            if isinstance(request, dict):
                rid = request.get("id")
            emit_json(archive.search_json(parse_request(request)))
        except CwError as exc:
            failed = failed or exc.exit_code
            if as_json:
                emit_json({"id": rid, "error": {"code": exc.code, "message": exc.message}})
                continue
            where = f"line {number}" + (f" (id {json.dumps(rid)})" if rid is not None else "")
            message = exc.message
            if not message.startswith(f"line {number}:"):
                message = f"{where}: {message}"
            elif rid is not None:
                message = where + message[len(f"line {number}") :]
            err_console.print(f"cw: {message}", markup=False, soft_wrap=True)
    return failed


def search(
    query: Annotated[
        str | None, typer.Argument(help="What to look for (words, a path, an error…).")
    ] = None,
    limit: Annotated[int, typer.Option(help="Results to return (1-100).")] = 10,
    scope: Annotated[str, typer.Option(help="session, project or all.")] = "all",
    session: Annotated[
        list[str] | None, typer.Option("--session", help="Session id (repeatable).")
    ] = None,
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
    agent: Annotated[str | None, typer.Option(help="Only this agent.")] = None,
    since: Annotated[
        str | None, typer.Option(help="On or after this ISO date or instant, or 7d, 24h, 90m.")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="On or before this ISO date or instant, or a span back.")
    ] = None,
    role: Annotated[str | None, typer.Option(help="user, assistant, tool or system.")] = None,
    kind: Annotated[
        str | None, typer.Option(help="turn, tool-result, decision, markdown, note.")
    ] = None,
    relation: Annotated[
        str | None, typer.Option(help="question, request, correction, answer or decision.")
    ] = None,
    semantic: Annotated[
        str | None,
        typer.Option(
            "--semantic",
            help="auto, always or never (default: the semanticPolicy setting, auto).",
        ),
    ] = None,
    no_rerank: Annotated[bool, typer.Option("--no-rerank", help="Skip the cross-encoder.")] = False,
    strict: Annotated[bool, typer.Option("--strict", help="Fail instead of degrading.")] = False,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            help="session: one hit per session (which session talked about it?); default document.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The contract object on stdout.")] = False,
    batch: Annotated[
        Path | None,
        typer.Option(
            "--batch",
            help="JSONL file of requests; one response per line (a failed line: on stderr, "
            "or an error object in its place with --json).",
        ),
    ] = None,
) -> None:
    """Search the archive: exact anchors first, then structure, then BM25 (and embeddings).

    Results carry a relevance band (high, moderate, some, low), the match type, and a locator
    for `cw recall`.
    """
    from cwcore.contract.search import parse_request

    with guard(as_json):
        if batch is not None:
            if query is not None:
                raise InvalidInput("give either QUERY or --batch FILE, not both")
            lines = _batch_lines(batch)
            with Archive.open() as archive:
                failed = _batch(archive, lines, as_json)
            # With --json every line answered in place (the documented contract: exit 0);
            # without it a failed line was said on stderr, and the exit code says so too.
            if failed and not as_json:
                raise typer.Exit(failed)
            return
        fields: dict[str, Any] = {"limit": limit, "scope": scope}
        now = clock.now()
        since, until = resolve_span(since, now), resolve_span(until, now)
        for name, value in (
            ("semanticPolicy", semantic),
            ("query", query),
            ("project", project),
            ("agent", agent),
            ("since", since),
            ("until", until),
            ("role", role),
            ("kind", kind),
            ("relation", relation),
            ("group", group),
        ):
            if value is not None:
                fields[name] = value
        if session:
            fields["sessions"] = session
        if no_rerank:
            fields["rerank"] = False
        if strict:
            fields["strict"] = True
        # Validated here, before the store opens: a bad request creates no CW_HOME and starts
        # no daemon. No policy named stays unnamed, for the store's semanticPolicy setting.
        request = parse_request(fields)
        with Archive.open() as archive:
            if as_json:  # the engine's JSON as it came: no typed record to rebuild it from
                emit_json(archive.search_json(request))
                return
            body = archive.search(request)
            notes = (
                indexing_note(archive.index_status()),
                embedding_note(archive.semantic_status()),
            )
        render(body)
        for note in notes:
            if note:
                console.print(f"[dim]{note}[/]")


def register(app: typer.Typer) -> None:
    app.command("search")(search)

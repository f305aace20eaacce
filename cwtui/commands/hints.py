"""``cw preflight``, ``cw hints`` and ``cw hints rotate``: frozen preflight hints."""

from __future__ import annotations

import sys
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from cwcore.api import Archive
from cwtui.output import console, emit_json, guard

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]

app = typer.Typer(help="Frozen preflight hints per user message, with diagnostics.")


def preflight(
    message: Annotated[str, typer.Argument(help="The real user message (- reads stdin).")],
    session: Annotated[str, typer.Option("--session", help="The session it belongs to.")],
    message_key: Annotated[
        str | None,
        typer.Option("--message-key", help="The host's id of the message (default: text hash)."),
    ] = None,
    visible: Annotated[
        list[str] | None,
        typer.Option("--visible", help="A source key already in the live context (repeatable)."),
    ] = None,
    max_results: Annotated[
        int | None, typer.Option("--max-results", help="Ranked evidence kept (1-100).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Decide (once) the hint for a user message; later calls return the same bytes."""
    with guard(as_json):
        if message == "-":
            message = sys.stdin.read()
        with Archive.open() as archive:
            body = archive.preflight(
                message,
                session=session,
                message_key=message_key,
                visible=visible or (),
                max_results=max_results,
            )
        if as_json:
            emit_json(body)
            return
        frozen = " (frozen)" if body["frozen"] else ""
        console.print(
            f"[bold]{body['outcome']}[/]{frozen} · key {escape(body['messageKey'])} · "
            f"{body['tokens']} tokens · generation {body['generation']} · "
            f"reason {escape(str(body['diagnostics'].get('reason')))}"
        )
        if body["hint"]:
            console.print(escape(body["hint"].lstrip("\n")), soft_wrap=True)


@app.callback(invoke_without_command=True)
def hints(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Option("--session", help="Only this session.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """List frozen hints per user message: outcome, bytes, tokens, query hash, generation,
    candidates retrieved/included/excluded with reasons, counts, token use and latency."""
    if ctx.invoked_subcommand is not None:
        return
    with guard(as_json), Archive.open() as archive:
        body = archive.hints(session=session)
        if as_json:
            emit_json(body)
            return
        _render(body)


def _render(body: dict[str, Any]) -> None:
    if not body["hints"]:
        console.print("[dim]no frozen hints.[/]")
        return
    table = Table("session", "message key", "outcome", "bytes", "tokens", "query", "gen", "why")
    for h in body["hints"]:
        d = h["diagnostics"]
        counts = d.get("counts") or {}
        why = str(d.get("reason") or h.get("reason") or "")
        if counts:
            why += (
                f"\n{counts.get('candidates', 0)} cand · {len(d.get('included') or [])} incl · "
                f"{len(d.get('excluded') or [])} excl · {counts.get('dedup', 0)} dedup · "
                f"{counts.get('branch', 0)} branch rows · {d.get('latencyMs', 0):.1f} ms"
            )
        table.add_row(
            escape(h["session"][:16]),
            escape(h["messageKey"][:24]),
            h["outcome"],
            str(h["bytes"]),
            str(h["tokens"]),
            h["queryHash"] or "-",
            str(h["generation"]),
            escape(why),
        )
    console.print(table)
    for name, state in body["sessions"].items():
        console.print(
            f"[dim]{escape(name)}: {state['activeTokens']}/{state['activeBudget']} active hint "
            f"tokens over {len(state['activeKeys'])} key(s); last activity "
            f"{state['lastActivity']}[/]"
        )


@app.command("rotate")
def rotate(
    session: Annotated[str, typer.Option("--session", help="The session.")],
    active: Annotated[
        list[str] | None,
        typer.Option("--active", help="A user-message key still in the context (repeatable)."),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Drop hints whose user-message keys left the active context; recompute the budget."""
    with guard(as_json), Archive.open() as archive:
        body = archive.hints_rotate(session, active or [])
        if as_json:
            emit_json(body)
            return
        console.print(
            f"dropped {len(body['dropped'])} hint(s); active hint tokens now "
            f"{body['activeTokens']}/{body['activeBudget']}"
        )


def register(root: typer.Typer) -> None:
    root.command("preflight")(preflight)
    root.add_typer(app, name="hints")

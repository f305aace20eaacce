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


SessionOpt = Annotated[str | None, typer.Option("--session", help="Only this session.")]
KeyOpt = Annotated[str | None, typer.Option("--message-key", help="Only this user-message key.")]


def _view(
    name: str, session: str | None, message_key: str | None, as_json: bool, everything: bool
) -> None:
    with guard(as_json), Archive.open() as archive:
        body = archive.hints(
            session=session, view=name, everything=everything, message_key=message_key
        )
        if as_json:
            emit_json(body)
            return
        if not body["decisions"]:
            console.print(
                "[dim]no memory selections.[/]" if name == "memory" else "[dim]no frozen hints.[/]"
            )
            return
        _VIEW_RENDERERS[name](body["decisions"])


def _heading(d: dict[str, Any]) -> str:
    return (
        f"[bold]{escape(d['session'])}[/] · {escape(d['messageKey'])} · "
        f"{d['outcome']} ({escape(str(d.get('reason') or '-'))})"
    )


def _render_retrieved(decisions: list[dict[str, Any]]) -> None:
    for d in decisions:
        console.print(_heading(d))
        if d["excerpt"] is not None:
            console.print(f"  excerpt: {escape(d['excerpt'])}", soft_wrap=True)
        if d["markerPhrases"] is not None:
            phrases = ", ".join(escape(p) for p in d["markerPhrases"])
            console.print(f"  marker phrases (the user's own words): {phrases}")
        counts = d["counts"]
        if counts:
            console.print(
                f"  {counts.get('candidates', 0)} candidates · {counts.get('verified', 0)} "
                f"verified · {counts.get('dedup', 0)} dedup · {counts.get('branch', 0)} branch "
                f"rows · {counts.get('alternateBranch', 0)} alternate-branch"
            )
        for i, c in enumerate(d["candidates"], 1):
            console.print(
                f"  {i}. {escape(c['id'])} score {c['score']} · tier {c['tier']} · "
                f"{c['matchType']} · {c['matchedUnits']} units · coverage {c['coverage']}"
                + (" · strong" if c.get("strong") else ""),
                soft_wrap=True,
            )
        for e in d["exclusions"]:
            console.print(f"  - {escape(e['id'])}: {escape(e['reason'])}", soft_wrap=True)
        budget = d.get("budget") or {}
        used = f"  {d['tokens']} tokens"
        if budget:
            used += f" of {budget.get('available')} available (message {budget.get('message')})"
        if d.get("latencyMs") is not None:
            used += f" · {d['latencyMs']:.1f} ms"
        console.print(used)
        for w in d["warnings"]:
            console.print(f"  [yellow]warning[/] {escape(w)}")


def _render_manifest(decisions: list[dict[str, Any]]) -> None:
    for d in decisions:
        console.print(_heading(d))
        if not d["entries"]:
            console.print("  [dim]no retrieval entries[/]")
        for e in d["entries"]:
            state = "included" if e["included"] else "excluded"
            score = "-" if e["score"] is None else e["score"]
            console.print(
                f"  {e['kind']} {escape(e['id'])} · {state} · "
                f"{escape(str(e['classification'] or '-'))} · score {score} · "
                f"{e['tokens']} tokens · group {escape(str(e['group']))} · "
                f"{escape(str(e['reason'] or '-'))}",
                soft_wrap=True,
            )
        console.print(
            f"  retrievedEventIds: {escape(', '.join(d['retrievedEventIds']) or '-')}",
            soft_wrap=True,
        )


def _render_items(decisions: list[dict[str, Any]], key: str) -> None:
    shown = 0
    for d in decisions:
        if not d[key]:
            continue
        console.print(_heading(d))
        for item in d[key]:
            shown += 1
            detail = [f"score {item.get('score', '-')}"]
            if key == "included":
                detail += [
                    str(item.get("classification") or "-"),
                    f"{item.get('tokens', 0)} tokens",
                    f"priority {item.get('priority', '-')}",
                    f"group {item.get('group') or '-'}",
                ]
            else:
                detail.insert(0, f"{item['stage']} stage")
            reason = escape(str(item.get("reason") or "-"))
            console.print(
                f"  {escape(item['id'])}: {reason} · {escape(' · '.join(detail))}",
                soft_wrap=True,
            )
    if not shown:
        console.print(f"[dim]nothing {key}.[/]")


def _render_memory(decisions: list[dict[str, Any]]) -> None:
    for d in decisions:
        state = f"skipped ({d['reason']})" if d["skipped"] else f"{d['bytes']} bytes"
        console.print(
            f"[bold]{escape(d['session'])}[/] · {escape(d['messageKey'])} · "
            f"{escape(str(d.get('event') or '-'))} · project {escape(str(d.get('project')))} · "
            f"{escape(state)}"
        )
        for section, ids in d["selected"].items():
            console.print(f"  {escape(section)}: {escape(', '.join(ids))}", soft_wrap=True)
        if d["truncated"]:
            console.print(f"  cut by the budget: {escape(', '.join(d['truncated']))}")
        for t in d["traces"]:
            console.print(
                f"  [dim]{escape(t['processor'])}: {t['input_count']} → {t['output_count']}[/]"
            )
        for e in d["excluded"]:
            console.print(
                f"  - {escape(e['id'])}: {escape(str(e['reason']))} · {escape(e['stage'])}",
                soft_wrap=True,
            )
        if d["excludedMore"]:
            console.print(f"  [dim]… and {d['excludedMore']} more left out[/]")


_VIEW_RENDERERS = {
    "memory": _render_memory,
    "retrieved": _render_retrieved,
    "manifest": _render_manifest,
    "included": lambda ds: _render_items(ds, "included"),
    "excluded": lambda ds: _render_items(ds, "excluded"),
}


@app.command("retrieved")
def retrieved(
    session: SessionOpt = None, message_key: KeyOpt = None, as_json: JsonOpt = False
) -> None:
    """Per decision: the quoted excerpt (or marker phrases), ranked candidates, candidate /
    dedup / branch counts, planner exclusions, token use and latency."""
    _view("retrieved", session, message_key, as_json, False)


@app.command("manifest")
def manifest(
    session: SessionOpt = None, message_key: KeyOpt = None, as_json: JsonOpt = False
) -> None:
    """Context-manifest entries (selected and privacy-excluded evidence) and retrievedEventIds."""
    _view("manifest", session, message_key, as_json, False)


@app.command("included")
def included(
    session: SessionOpt = None, message_key: KeyOpt = None, as_json: JsonOpt = False
) -> None:
    """The evidence that entered the context, with classification, score, tokens and group."""
    _view("included", session, message_key, as_json, False)


@app.command("excluded")
def excluded(
    session: SessionOpt = None,
    message_key: KeyOpt = None,
    everything: Annotated[
        bool,
        typer.Option("--all", help="Also the rows filtered before ranking (stale, unverified…)."),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Evidence left out after ranking, with reasons (duplicate, suppressed, privacy, budget…)."""
    _view("excluded", session, message_key, as_json, everything)


@app.command("memory")
def memory(
    session: SessionOpt = None, message_key: KeyOpt = None, as_json: JsonOpt = False
) -> None:
    """The memory block the hooks gave each turn (session start included): the record ids per
    section, the processors' traces and every record left out with its reason and stage."""
    _view("memory", session, message_key, as_json, False)


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
            emit_json(body.to_json())
            return
        console.print(
            f"dropped {len(body.dropped)} hint(s); active hint tokens now "
            f"{body.active_tokens}/{body.active_budget}"
        )


def register(root: typer.Typer) -> None:
    root.command("preflight")(preflight)
    root.add_typer(app, name="hints")

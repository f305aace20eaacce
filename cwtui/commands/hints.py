"""``cw preflight``, ``cw hints`` and ``cw hints rotate``: frozen preflight hints."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from cwcore.api import Archive
from cwtui.output import console, emit_answer, guard

if TYPE_CHECKING:
    from cwcore.contract.hints import (
        DecisionHead,
        ExcludedDecision,
        HintsListing,
        IncludedDecision,
        ManifestDecision,
        MemoryDecision,
        RetrievedDecision,
        ViewDecision,
    )

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
#: Characters of what the user said that the ``cw hints`` table shows (``--json`` has it all).
SAID_CHARS = 120


def _limits(archive: Archive) -> Any:
    """The archive's age limits and suppression, for the sentences of :mod:`cwcore.hints.why`."""
    from cwcore.config import load
    from cwcore.hints.why import Limits, limits_of

    try:
        return limits_of(load(archive.home)[0])
    except Exception:  # unreadable settings: the sentence names the defaults
        return Limits()


def _said(text: str | None, withheld: str | None, limit: int) -> str:
    if text is None:
        return f"(withheld: {withheld})" if withheld else "(not kept)"
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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
            emit_answer(body)
            return
        from cwcore.hints.why import explain

        frozen = " (frozen)" if body.frozen else ""
        console.print(
            f"[bold]{body.outcome}[/]{frozen} · session {escape(body.session)} · "
            f"key {escape(body.message_key)} · "
            f"{body.tokens} tokens · generation {body.generation} · "
            f"reason {escape(str(body.diagnostics.reason))}"
        )
        why = explain(body.outcome, body.diagnostics.reason, body.diagnostics, _limits(archive))
        console.print(f"why: {escape(why)}", soft_wrap=True)
        if body.hint:
            console.print(escape(body.hint.lstrip("\n")), soft_wrap=True)


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
            emit_answer(body)
            return
        _render(body, _limits(archive))


def _render(body: HintsListing, limits: Any = None) -> None:
    """One block per decision: its head, what the user said, why, the counts (a table of nine
    columns wrapped every cell to a few letters in 80 columns)."""
    from cwcore.hints.why import explain

    if not body.hints:
        console.print("[dim]no frozen hints.[/]")
        return
    for h in body.hints:
        d = h.diagnostics
        counts = d.counts
        console.print(
            f"[bold]{escape(h.session)}[/] · {escape(h.message_key)} · [bold]{h.outcome}[/] "
            f"({escape(str(h.reason or d.reason or '-'))}) · {h.bytes} bytes · "
            f"{h.tokens} tokens · query {h.query_hash or '-'} · generation {h.generation} · "
            f"frozen {escape(str(h.created_at or '-'))}",
            soft_wrap=True,
        )
        console.print(f"  said: {escape(_said(h.said, h.said_withheld, SAID_CHARS))}")
        console.print(f"  why: {escape(explain(h.outcome, h.reason, d, limits))}", soft_wrap=True)
        if counts:
            console.print(
                f"  [dim]{counts.candidates or 0} cand · {len(d.shown)} incl · "
                f"{len(d.left_out)} excl · {counts.dedup or 0} dedup · "
                f"{counts.branch or 0} branch rows · {d.latency_ms or 0:.1f} ms[/]"
            )
    for state in body.sessions:
        console.print(
            f"[dim]{escape(state.session)}: {state.active_tokens}/{state.active_budget} active "
            f"hint tokens over {len(state.active_keys)} key(s); last activity "
            f"{state.last_activity}[/]"
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
            emit_answer(body)
            return
        if not body.decisions:
            console.print(
                "[dim]no memory selections.[/]" if name == "memory" else "[dim]no frozen hints.[/]"
            )
            return
        _render_view(name, body.decisions)


def _render_view(name: str, decisions: tuple[ViewDecision, ...]) -> None:
    """Each view's decisions are all of the view's record type."""
    from cwcore.contract.hints import (
        ExcludedDecision,
        IncludedDecision,
        ManifestDecision,
        MemoryDecision,
        RetrievedDecision,
    )

    if name == "memory":
        _render_memory([d for d in decisions if isinstance(d, MemoryDecision)])
    elif name == "retrieved":
        _render_retrieved([d for d in decisions if isinstance(d, RetrievedDecision)])
    elif name == "manifest":
        _render_manifest([d for d in decisions if isinstance(d, ManifestDecision)])
    elif name == "included":
        _render_included([d for d in decisions if isinstance(d, IncludedDecision)])
    else:
        _render_excluded([d for d in decisions if isinstance(d, ExcludedDecision)])


def _heading(d: DecisionHead) -> str:
    return (
        f"[bold]{escape(d.session)}[/] · {escape(d.message_key)} · "
        f"{d.outcome} ({escape(str(d.reason or '-'))})"
    )


def _render_retrieved(decisions: list[RetrievedDecision]) -> None:
    for d in decisions:
        console.print(_heading(d.head))
        if d.excerpt is not None:
            console.print(f"  excerpt: {escape(d.excerpt)}", soft_wrap=True)
        if d.marker_phrases is not None:
            phrases = ", ".join(escape(p) for p in d.marker_phrases)
            console.print(f"  marker phrases (the user's own words): {phrases}")
        counts = d.counts
        if counts:
            console.print(
                f"  {counts.candidates or 0} candidates · {counts.verified or 0} "
                f"verified · {counts.dedup or 0} dedup · {counts.branch or 0} branch "
                f"rows · {_alternate(counts)} alternate-branch"
            )
        for i, c in enumerate(d.candidates, 1):
            console.print(
                f"  {i}. {escape(c.id)} score {c.score} · tier {c.tier} · "
                f"{c.match_type} · {c.matched_units} units · coverage {c.coverage}"
                + (" · strong" if c.strong else ""),
                soft_wrap=True,
            )
        for e in d.exclusions:
            console.print(f"  - {escape(e.id)}: {escape(e.reason)}", soft_wrap=True)
        used = f"  {d.tokens} tokens"
        if d.budget is not None:
            used += f" of {d.budget.available} available (message {d.budget.message})"
        if d.latency_ms is not None:
            used += f" · {d.latency_ms:.1f} ms"
        console.print(used)
        for w in d.warnings:
            console.print(f"  [yellow]warning[/] {escape(w)}")


def _alternate(counts: Any) -> int:
    """Spec 001's ``alternateBranchCandidates`` (``alternateBranch`` in older decisions)."""
    value = counts.alternate_branch_candidates
    return int(value if value is not None else counts.alternate_branch or 0)


def _render_manifest(decisions: list[ManifestDecision]) -> None:
    for d in decisions:
        console.print(_heading(d.head))
        if not d.entries:
            console.print("  [dim]no retrieval entries[/]")
        for e in d.entries:
            state = "included" if e.included else "excluded"
            score = "-" if e.score is None else e.score
            console.print(
                f"  {e.kind} {escape(e.id)} · {state} · "
                f"{escape(str(e.classification or '-'))} · score {score} · "
                f"{e.tokens} tokens · group {escape(str(e.group))} · "
                f"{escape(str(e.reason or '-'))}",
                soft_wrap=True,
            )
        console.print(
            f"  retrievedEventIds: {escape(', '.join(d.retrieved_event_ids) or '-')}",
            soft_wrap=True,
        )


def _item_line(ident: str, reason: str | None, detail: list[str]) -> None:
    console.print(
        f"  {escape(ident)}: {escape(str(reason or '-'))} · {escape(' · '.join(detail))}",
        soft_wrap=True,
    )


def _render_included(decisions: list[IncludedDecision]) -> None:
    shown = [d for d in decisions if d.included]
    for d in shown:
        console.print(_heading(d.head))
        for item in d.included:
            detail = [
                f"score {item.score}",
                str(item.classification or "-"),
                f"{item.tokens} tokens",
                f"priority {item.priority}",
                f"group {item.group or '-'}",
            ]
            _item_line(item.id, item.reason, detail)
    if not shown:
        console.print("[dim]nothing included.[/]")


def _render_excluded(decisions: list[ExcludedDecision]) -> None:
    from cwcore.contract.preflight import CandidateRow

    shown = [d for d in decisions if d.excluded]
    for d in shown:
        console.print(_heading(d.head))
        for e in d.excluded:
            score = e.row.score if isinstance(e.row, CandidateRow) else "-"  # privacy: none
            _item_line(e.id, e.reason, [f"{e.stage} stage", f"score {score}"])
    if not shown:
        console.print("[dim]nothing excluded.[/]")


def _render_memory(decisions: list[MemoryDecision]) -> None:
    for d in decisions:
        state = f"skipped ({d.reason})" if d.skipped else f"{d.bytes} bytes"
        console.print(
            f"[bold]{escape(d.session)}[/] · {escape(d.message_key)} · "
            f"{escape(str(d.event or '-'))} · project {escape(str(d.project))} · "
            f"{escape(state)}"
        )
        for section, ids in d.selected:
            console.print(f"  {escape(section)}: {escape(', '.join(ids))}", soft_wrap=True)
        if d.truncated:
            console.print(f"  cut by the budget: {escape(', '.join(d.truncated))}")
        for t in d.traces:
            console.print(f"  [dim]{escape(t.processor)}: {t.input_count} → {t.output_count}[/]")
        for e in d.excluded:
            console.print(
                f"  - {escape(e.id)}: {escape(str(e.reason))} · {escape(e.stage)}",
                soft_wrap=True,
            )
        if d.excluded_more:
            console.print(f"  [dim]… and {d.excluded_more} more left out[/]")


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
            emit_answer(body)
            return
        console.print(
            f"dropped {len(body.dropped)} hint(s); active hint tokens now "
            f"{body.active_tokens}/{body.active_budget}"
        )


def register(root: typer.Typer) -> None:
    root.command("preflight")(preflight)
    root.add_typer(app, name="hints")

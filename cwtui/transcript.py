"""Rendering a session transcript for people: roles distinct, long tool output folded."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from cwcore.contract.views import MetadataEvent, TranscriptMessage
from cwtui.output import shown_id

if TYPE_CHECKING:
    from cwcore.contract.views import DocumentView, Transcript

FOLD_LINES = 12

_ROLE_STYLE = {
    "user": "bold cyan",
    "assistant": "bold green",
    "tool": "yellow",
    "system": "magenta",
}


def _fold(text: str, limit: int = FOLD_LINES) -> str:
    lines = text.splitlines()
    if len(lines) <= limit:
        return text
    head = "\n".join(lines[: limit // 2])
    tail = "\n".join(lines[-limit // 4 :])
    return (
        f"{head}\n  … {len(lines) - limit // 2 - limit // 4} more lines (cw show --full) …\n{tail}"
    )


def tokens(count: int) -> str:
    """A token count for people: ``950``, ``9.2k``, ``1.3M``."""
    if count < 1000:
        return str(count)
    if count < 1_000_000:
        return f"{count / 1000:.1f}k"
    return f"{count / 1_000_000:.1f}M"


def usage_suffix(model: str | None, usage: dict[str, int] | None) -> str:
    """The compact model and token suffix of a message: ``model · in N out N cache rN/wN``."""
    bits = [shown_id(model)] if model else []
    if usage:
        text = f"in {tokens(usage['input'])} out {tokens(usage['output'])}"
        if usage.get("cacheRead") or usage.get("cacheWrite"):
            text += f" cache r{tokens(usage['cacheRead'])}/w{tokens(usage['cacheWrite'])}"
        bits.append(text)
    return " · ".join(bits)


def render_transcript(
    console: Console, body: Transcript, *, fold: bool = True, thinking: bool = False
) -> None:
    """A session for people. Thinking is hidden unless ``thinking``; a tool call that started
    a sub-agent is followed by a pointer to the sub-agent's session."""
    info = body.session
    console.print(
        f"[bold]{shown_id(info.sessionId)}[/]  {shown_id(info.project)} · "
        f"{shown_id(info.agent)} · "
        f"{(info.started or '')[:19].replace('T', ' ')} · {info.messages} messages, "
        f"{info.turns} turns, {info.toolCalls} tool calls"
    )
    if info.title:
        console.print(f"[bold]{shown_id(info.title)}[/]")
    if info.parent and info.parentToolCall:
        console.print(
            f"[dim]sub-agent of {shown_id(info.parent)}, "
            f"started by {shown_id(info.parentToolCall)}[/]"
        )
    spent = info.tokens or {}
    if any(spent.values()) or info.models:
        used = usage_suffix(", ".join(info.models) or None, spent or None)
        console.print(f"[dim]{used}[/]")
    if info.resume:
        console.print(f"[dim]resume: {escape(info.resume)}[/]")
    for agent, other in body.shared_with:
        native = info.nativeId or info.sessionId
        console.print(
            f"[yellow]{shown_id(agent)}'s session {shown_id(other)} has the same id "
            f"({shown_id(native)}): a different session (cw show {shown_id(other)})[/]"
        )
    counts = body.counts
    if counts.hidden_superseded:
        console.print(
            f"[dim]{counts.hidden_superseded} superseded message(s) hidden "
            "(cw show without --hide-superseded lists them)[/]"
        )
    elif counts.superseded:
        console.print(
            f"[dim]{counts.superseded} superseded message(s), marked (--hide-superseded "
            "leaves them out)[/]"
        )
    items: list[tuple[int, int, TranscriptMessage | MetadataEvent]] = []
    for index, m in enumerate(body.messages):
        items.append((m.lines[0] if m.lines else 0, index, m))
    for e in body.events or ():
        items.append((e.line, -1, e))
    if body.events:
        items.sort(key=lambda item: (item[0], item[1]))
    for _, _, item in items:
        if not isinstance(item, TranscriptMessage):
            console.print(
                f"[dim]· line {item.line} {escape(item.type)}: {escape(item.raw[:120])}[/]"
            )
            continue
        m = item
        if m.kind == "thinking" and not thinking:
            continue
        stamp = (m.timestamp or "")[11:19]
        style = _ROLE_STYLE.get(m.role, "bold")
        if m.kind == "tool-call":
            label = f"→ {m.tool or 'tool'}"
        elif m.kind == "tool-result":
            label = "← result" + (f" {m.tool}" if m.tool else "")
        elif m.kind in ("summary", "thinking"):
            label = m.kind
            style = "dim italic" if m.kind == "thinking" else style
        elif m.role == "user" and m.meta:
            # Text the host put in the user's place (a command wrapper, injected context).
            label, style = "host", "dim"
        else:
            label = m.role
        mark = ""
        if m.superseded:
            why = m.supersession
            mark = f" [red](superseded: {escape((why.reason if why else '') or 'superseded')}"
            if why is not None and why.by:
                mark += f"; replaced by {shown_id(why.by)}"
            mark += ")[/]"
        used = usage_suffix(m.model, m.usage_json())
        used = f" [dim]· {used}[/]" if used else ""
        console.print(
            f"\n[{style}]{escape(label)}[/] [dim]{stamp}  {shown_id(m.message_key)}[/]{used}{mark}"
        )
        text = m.text
        if fold and (m.kind in ("tool-call", "tool-result") or (m.role == "user" and m.meta)):
            text = _fold(text)
        console.print(escape(text), soft_wrap=True, style="dim" if m.kind == "thinking" else "")
        child = m.subagent
        if child is not None:
            count = child.messages
            size = f"{count} messages" if count is not None else "not imported"
            console.print(
                f"  [magenta]↳ sub-agent {shown_id(child.session_id)}: {size}[/] "
                f"[dim](cw show {shown_id(child.session_id)})[/]"
            )


def render_document(console: Console, doc: DocumentView) -> None:
    """One document, every version shown (audit view of superseded evidence)."""
    state = doc.state
    mark = "" if state == "live" else f" [red]({state}"
    if doc.superseded_by:
        mark += f" by {escape(doc.superseded_by)}"
    mark += ")[/]" if state != "live" else ""
    console.print(
        f"[bold]{escape(doc.document_id)}[/] {doc.kind} · session {shown_id(doc.session)}"
        f" · {shown_id(doc.project)}{mark}"
    )
    for version in doc.versions:
        sup = version.superseded
        note = f" — superseded ({escape(sup['reason'])})" if sup else ""
        undone = version.unsuperseded
        if undone:
            note += (
                f" — supersession undone {escape(str(undone.get('at', ''))[:19])} "
                f"({escape(str(undone.get('reason') or ''))}), restored as "
                f"v{undone.get('restoredVersion')}"
            )
        console.print(f"\n[bold]v{version.version}[/] {version.created[:19]}{note}")
        console.print(escape(version.text), soft_wrap=True)

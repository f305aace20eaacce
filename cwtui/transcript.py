"""Rendering a session transcript for people: roles distinct, long tool output folded."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape

from cwtui.output import shown_id

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


def render_transcript(console: Console, body: dict[str, Any], *, fold: bool = True) -> None:
    info = body["session"]
    console.print(
        f"[bold]{shown_id(info['sessionId'])}[/]  {shown_id(info['project'])} · "
        f"{shown_id(info['agent'])} · "
        f"{(info['started'] or '')[:19].replace('T', ' ')} · {info['messages']} messages, "
        f"{info['turns']} turns, {info['toolCalls']} tool calls"
    )
    if info.get("resume"):
        console.print(f"[dim]resume: {escape(info['resume'])}[/]")
    counts = body.get("counts") or {}
    if counts.get("hiddenSuperseded"):
        console.print(
            f"[dim]{counts['hiddenSuperseded']} superseded message(s) hidden "
            "(cw show without --hide-superseded lists them)[/]"
        )
    elif counts.get("superseded"):
        console.print(
            f"[dim]{counts['superseded']} superseded message(s), marked (--hide-superseded "
            "leaves them out)[/]"
        )
    items: list[tuple[int, int, Any]] = []
    for index, m in enumerate(body["messages"]):
        line = m["lines"][0] if m.get("lines") else 0
        items.append((line, index, ("message", m)))
    for e in body.get("events", []):
        items.append((e["line"], -1, ("event", e)))
    if body.get("events"):
        items.sort(key=lambda item: (item[0], item[1]))
    for _, _, (what, item) in items:
        if what == "event":
            raw = item["raw"]
            console.print(
                f"[dim]· line {item['line']} {escape(item['type'])}: {escape(raw[:120])}[/]"
            )
            continue
        m = item
        if m["kind"] == "thinking":
            continue
        stamp = (m["timestamp"] or "")[11:19]
        style = _ROLE_STYLE.get(m["role"], "bold")
        if m["kind"] == "tool-call":
            label = f"→ {m['tool'] or 'tool'}"
        elif m["kind"] == "tool-result":
            label = "← result" + (f" {m['tool']}" if m["tool"] else "")
        elif m["kind"] == "summary":
            label = "summary"
        else:
            label = m["role"]
        mark = ""
        if m.get("superseded"):
            why = m.get("supersession") or {}
            mark = f" [red](superseded: {escape(str(why.get('reason') or 'superseded'))}"
            if why.get("by"):
                mark += f"; replaced by {shown_id(str(why['by']))}"
            mark += ")[/]"
        console.print(
            f"\n[{style}]{escape(label)}[/] [dim]{stamp}  {shown_id(m['messageKey'])}[/]{mark}"
        )
        text = m["text"]
        if fold and m["kind"] in ("tool-call", "tool-result"):
            text = _fold(text)
        console.print(escape(text), soft_wrap=True)


def render_document(console: Console, doc: dict[str, Any]) -> None:
    """One document, every version shown (audit view of superseded evidence)."""
    state = doc["state"]
    mark = "" if state == "live" else f" [red]({state}"
    if doc.get("supersededBy"):
        mark += f" by {escape(doc['supersededBy'])}"
    mark += ")[/]" if state != "live" else ""
    console.print(
        f"[bold]{escape(doc['documentId'])}[/] {doc['kind']} · session {shown_id(doc['session'])}"
        f" · {shown_id(doc['project'])}{mark}"
    )
    for version in doc["versions"]:
        sup = version.get("superseded")
        note = f" — superseded ({escape(sup['reason'])})" if sup else ""
        undone = version.get("unsuperseded")
        if undone:
            note += (
                f" — supersession undone {escape(str(undone.get('at', ''))[:19])} "
                f"({escape(str(undone.get('reason') or ''))}), restored as "
                f"v{undone.get('restoredVersion')}"
            )
        console.print(f"\n[bold]v{version['version']}[/] {version['created'][:19]}{note}")
        console.print(escape(version["text"]), soft_wrap=True)

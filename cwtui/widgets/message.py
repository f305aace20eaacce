"""One transcript entry as a widget: a message (by role and kind) or a metadata event.

Role and kind become CSS classes (``role-user``, ``kind-tool-result``…) so app.tcss alone decides
how they look and the transcript screen can hide a kind (thinking) with one class on itself.
Text and summaries render as Markdown (fenced code is syntax-highlighted by Textual); tool calls
are collapsed; tool output is collapsed when it is long; thinking sits in its own collapsible.
Source text is never parsed as markup.
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.markup import escape
from textual.widgets import Collapsible, Markdown, Static

#: Tool output longer than this (lines or characters) starts collapsed.
FOLD_LINES = 12
FOLD_CHARS = 1500
#: Characters of a metadata event's raw line shown inline.
EVENT_CHARS = 160

LABELS = {"user": "user", "assistant": "assistant", "tool": "tool", "system": "system"}


def is_long(text: str) -> bool:
    return text.count("\n") + 1 > FOLD_LINES or len(text) > FOLD_CHARS


def _first_line(text: str, width: int = 70) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def tool_body(text: str) -> RenderableType:
    """JSON (tool inputs, structured results) pretty-printed and highlighted; else plain text."""
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            value = json.loads(stripped)
        except ValueError:
            pass
        else:
            pretty = json.dumps(value, indent=2, ensure_ascii=False)
            return Syntax(pretty, "json", word_wrap=True, background_color="default")
    return Text(text)


def message_label(message: dict[str, Any]) -> str:
    kind, tool = message["kind"], message.get("tool")
    if kind == "tool-call":
        return f"→ {tool or 'tool'}"
    if kind == "tool-result":
        return "← result" + (f" {tool}" if tool else "")
    if kind in ("summary", "thinking"):
        return kind
    return LABELS.get(message["role"], message["role"])


class MessageView(Vertical):
    """A message from ``Archive.show``: a header line (label, time, key) and its body.

    ``position`` is its place in the transcript (0-based, messages and events together);
    ``number`` its 1-based message number as the jump prompt counts them.
    """

    def __init__(
        self, message: dict[str, Any], *, position: int, number: int, expand_tools: bool = False
    ) -> None:
        role, kind = message["role"], message["kind"]
        classes = f"message role-{role} kind-{kind}"
        if message.get("superseded"):
            classes += " superseded"
        super().__init__(classes=classes)
        self.message = message
        self.position = position
        self.number = number
        self.expand_tools = expand_tools

    @property
    def key(self) -> str:
        return str(self.message["messageKey"])

    def _header(self) -> Text:
        m = self.message
        stamp = (m.get("timestamp") or "")[:19].replace("T", " ")
        text = Text.assemble(
            (message_label(m), "bold"),
            ("  " + stamp if stamp else "", "dim"),
            (f"  #{self.number}  {m['messageKey']}", "dim"),
        )
        if m.get("superseded"):
            text.append("  superseded", "bold red")
        return text

    def compose(self) -> ComposeResult:
        m = self.message
        kind, body = m["kind"], m["text"]
        yield Static(self._header(), classes="msg-header")
        if kind == "tool-call":
            title = escape(f"{m.get('tool') or 'tool'}: {_first_line(body)}")
            with Collapsible(title=title, collapsed=not self.expand_tools, classes="tool"):
                yield Static(tool_body(body), classes="tool-body")
        elif kind == "tool-result":
            lines = body.count("\n") + 1
            title = escape(f"{lines} line{'s' if lines != 1 else ''}: {_first_line(body)}")
            collapsed = is_long(body) and not self.expand_tools
            with Collapsible(title=title, collapsed=collapsed, classes="tool"):
                yield Static(tool_body(body), classes="tool-body")
        elif kind == "thinking":
            with Collapsible(title="reasoning", collapsed=False, classes="thinking"):
                yield Static(Text(body), classes="thinking-body")
        else:
            yield Markdown(body, classes="msg-body")


class EventView(Static):
    """A metadata event (the ``--all`` toggle): line number, type, the raw line's start."""

    def __init__(self, event: dict[str, Any], *, position: int) -> None:
        raw = " ".join(str(event.get("raw", "")).split())
        if len(raw) > EVENT_CHARS:
            raw = raw[: EVENT_CHARS - 1] + "…"
        text = Text.assemble(
            ("· ", "dim"),
            (f"line {event.get('line')} {event.get('type')}", "italic"),
            ("  " + raw, "dim"),
        )
        super().__init__(text, classes="event")
        self.position = position

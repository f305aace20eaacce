"""One transcript entry as a widget: a message (by role and kind) or a metadata event.

Each entry is a *single* widget that renders Rich renderables. A long session mounts thousands of
entries, and Textual's cost grows with the number of nodes (styles, layout), so a message is one
node rather than a tree of header, Markdown blocks and collapsible parts; that keeps opening and
scrolling a 1,000-message transcript responsive.

* Role and kind become CSS classes (``role-user``, ``kind-tool-result``…) so app.tcss decides the
  look, and the transcript screen hides a kind (thinking) with one class on itself.
* Text and summaries render as Markdown, fenced code syntax-highlighted (Rich ``Markdown``).
* Tool calls and long tool output are *folds*: collapsed to a title line, expanded with Enter,
  Space or a click (tool messages are focusable, so Tab walks through them). JSON is
  pretty-printed and highlighted.
* Source text is never parsed as markup.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.console import Group, RenderableType
from rich.markdown import Markdown
from rich.padding import Padding
from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

#: Tool output longer than this (lines or characters) starts collapsed.
FOLD_LINES = 12
FOLD_CHARS = 1500
#: Characters of a metadata event's raw line shown inline.
EVENT_CHARS = 160
#: Pygments theme for fenced code (dark background: readable on the default dark themes).
CODE_THEME = "monokai"

FOLDABLE = ("tool-call", "tool-result")


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
    return str(message["role"])


def fold_title(message: dict[str, Any]) -> str:
    """The line a folded tool message shows: the call's first line, or the output's size."""
    body = message["text"]
    if message["kind"] == "tool-call":
        return f"{message.get('tool') or 'tool'}: {_first_line(body)}"
    lines = body.count("\n") + 1
    return f"{lines} line{'s' if lines != 1 else ''}: {_first_line(body)}"


class MessageView(Widget):
    """A message from ``Archive.show``: a header line (label, time, number, key) and its body.

    ``position`` is its place in the transcript (0-based, messages and events together);
    ``number`` its 1-based message number as the jump prompt counts them. Tool messages are
    folds: ``expanded`` says whether the body shows.
    """

    DEFAULT_CSS = """
    MessageView { height: auto; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"message--header", "message--fold"}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter,space",
            "fold",
            "Expand/collapse",
            id="cw.transcript.fold",
            tooltip="Expand or collapse this tool call or output",
        ),
    ]

    expanded: reactive[bool] = reactive(False, layout=True)

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
        self.foldable = kind in FOLDABLE
        self.can_focus = self.foldable
        # Tool calls always start folded; output only when long (short output is the answer).
        start_open = expand_tools or (kind == "tool-result" and not is_long(message["text"]))
        self.set_reactive(MessageView.expanded, start_open)
        self._body: RenderableType | None = None

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
        text.stylize(self.get_component_rich_style("message--header", partial=True))
        if m.get("superseded"):
            text.append("  superseded", "bold red")
        return text

    def _content(self) -> RenderableType:
        """The body, built once (Markdown and JSON parsing are the expensive part)."""
        if self._body is None:
            m = self.message
            if self.foldable:
                self._body = Padding(tool_body(m["text"]), (0, 0, 0, 2))
            elif m["kind"] == "thinking":
                self._body = Text(m["text"], style="italic")
            else:
                self._body = Markdown(m["text"], code_theme=CODE_THEME)
        return self._body

    def render(self) -> RenderableType:
        parts: list[RenderableType] = [self._header()]
        if self.foldable:
            marker = "▼" if self.expanded else "▶"
            fold = Text(f" {marker} {fold_title(self.message)}", no_wrap=True, overflow="ellipsis")
            fold.stylize(self.get_component_rich_style("message--fold", partial=True))
            parts.append(fold)
            if self.expanded:
                parts.append(self._content())
        else:
            parts.append(self._content())
        return Group(*parts)

    def action_fold(self) -> None:
        if self.foldable:
            self.expanded = not self.expanded

    def on_click(self, event: events.Click) -> None:
        if self.foldable:
            event.stop()
            self.action_fold()


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

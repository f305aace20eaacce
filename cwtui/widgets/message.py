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
* Long tool output shows :data:`FOLD_PAGE` lines when opened, and ``+`` adds more: rendering a
  1,700-line output at once would hold the event loop for seconds (``v`` opens it whole in
  ``$PAGER``).
* A *find* term (``/`` in the transcript) highlights every occurrence; the body is then plain
  text, so the highlight lands on the exact characters typed.
* A superseded message says so in its header, with the reason and the replacement.
* Source text is never parsed as markup.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, ClassVar

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

from cwtui.output import safe

if TYPE_CHECKING:
    from cwcore.contract.views import MetadataEvent, TranscriptMessage

#: Tool output longer than this (lines or characters) starts collapsed.
FOLD_LINES = 12
FOLD_CHARS = 1500
#: Lines of a tool message shown when it is opened; ``+`` shows this many more.
FOLD_PAGE = 200
#: The style of a find match (the current one is the whole message's ``current`` mark).
FOUND = "bold #0d1117 on #e3b341"
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


def pretty_json(text: str) -> str | None:
    """``text`` pretty-printed when it is a JSON object or array (tool inputs, structured
    results), else None."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return json.dumps(value, indent=2, ensure_ascii=False)


def tool_body(text: str, limit: int | None = None) -> RenderableType:
    """JSON pretty-printed and highlighted; else plain text. With ``limit``, only the first
    ``limit`` lines (the caller says how many more there are). Control characters are shown
    escaped (:func:`cwtui.output.safe`)."""
    pretty = pretty_json(text)
    body = safe(pretty if pretty is not None else text)
    if limit is not None:
        body = "\n".join(body.split("\n")[:limit])
    if pretty is not None:
        return Syntax(body, "json", word_wrap=True, background_color="default")
    return Text(body)


def shown_text(message: TranscriptMessage) -> str:
    """The text a message's body shows (a tool message's JSON pretty-printed): what a find
    searches and what its line numbers count. An escape sequence of the text (ESC, BEL, CR, a
    lone surrogate) is shown escaped, as the CLI shows it (:func:`cwtui.output.safe`): Textual
    writes a strip's text to the terminal as it is, so a raw one would recolour the screen or
    retitle the terminal, and a lone surrogate cannot be written at all."""
    if message.kind in FOLDABLE:
        return safe(pretty_json(message.text) or message.text)
    return safe(message.text)


def found_spans(text: str, term: str) -> list[tuple[int, int]]:
    """Case-insensitive occurrences of ``term`` in ``text`` (character spans)."""
    if not term:
        return []
    folded, needle = text.casefold(), term.casefold()
    if len(folded) != len(text):  # casefold changed lengths (ß → ss): fall back to lower()
        folded, needle = text.lower(), term.lower()
    spans: list[tuple[int, int]] = []
    start = folded.find(needle)
    while start != -1 and len(spans) < 10_000:
        spans.append((start, start + len(needle)))
        start = folded.find(needle, start + max(1, len(needle)))
    return spans


def supersession_note(message: TranscriptMessage) -> str:
    """``superseded: reason · replaced by DOC`` for a superseded message ("" otherwise)."""
    if not message.superseded:
        return ""
    why = message.supersession
    note = f"superseded: {(why.reason if why else '') or 'superseded'}"
    if why is not None and why.by:
        note += f" · replaced by {why.by}"
    return safe(note, one_line=True)


def message_label(message: TranscriptMessage) -> str:
    kind, tool = message.kind, safe(message.tool or "", one_line=True)
    if kind == "tool-call":
        return f"→ {tool or 'tool'}"
    if kind == "tool-result":
        return "← result" + (f" {tool}" if tool else "")
    if kind in ("summary", "thinking"):
        return kind
    if message.role == "user" and message.meta:
        return "host"  # text the host put in the user's place (a wrapper, injected context)
    return message.role


def fold_title(message: TranscriptMessage) -> str:
    """The line a folded tool message shows: the call's first line, or the output's size."""
    body = safe(message.text)
    if message.kind == "tool-call":
        return f"{safe(message.tool or '', one_line=True) or 'tool'}: {_first_line(body)}"
    lines = body.count("\n") + 1
    return f"{lines} line{'s' if lines != 1 else ''}: {_first_line(body)}"


class MessageView(Widget):
    """A message from ``Archive.show``: a header line (label, time, number, key) and its body.

    ``position`` is its place in the transcript (0-based, messages and events together);
    ``number`` its 1-based message number as the jump prompt counts them; ``pair`` the number of
    the tool call or result it pairs with. Tool messages are folds: ``expanded`` says whether
    the body shows, ``limit`` how many of its lines.
    """

    DEFAULT_CSS = """
    MessageView { height: auto; }
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {"message--header", "message--fold"}

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter,space",
            "fold",
            "Fold",
            id="cw.transcript.fold",
            tooltip="Expand or collapse this tool call or output",
        ),
        Binding(
            "plus,equals_sign",
            "more",
            "More",
            key_display="+",
            id="cw.transcript.more-lines",
            tooltip=f"Show {FOLD_PAGE} more lines of this tool output",
        ),
    ]

    expanded: reactive[bool] = reactive(False, layout=True)
    limit: reactive[int] = reactive(FOLD_PAGE, layout=True)
    find_term: reactive[str] = reactive("", layout=True)

    def __init__(
        self,
        message: TranscriptMessage,
        *,
        position: int,
        number: int,
        expand_tools: bool = False,
        pair: int | None = None,
        find_term: str = "",
    ) -> None:
        role, kind = message.role, message.kind
        classes = f"message role-{role} kind-{kind}"
        if role == "user" and message.meta:
            classes += " host"
        if message.superseded:
            classes += " superseded"
        super().__init__(classes=classes)
        self.message = message
        self.position = position
        self.number = number
        self.pair = pair
        self.foldable = kind in FOLDABLE
        self.can_focus = True
        # Tool calls always start folded; output only when long (short output is the answer).
        start_open = expand_tools or (kind == "tool-result" and not is_long(message.text))
        self.set_reactive(MessageView.expanded, start_open)
        self.set_reactive(MessageView.find_term, find_term)
        self._body: RenderableType | None = None
        self._lines: int | None = None

    @property
    def key(self) -> str:
        return self.message.message_key

    @property
    def line_count(self) -> int:
        """Lines of the body as shown (a tool message's JSON pretty-printed)."""
        if self._lines is None:
            self._lines = shown_text(self.message).count("\n") + 1
        return self._lines

    def _header(self) -> Text:
        m = self.message
        stamp = (m.timestamp or "")[:19].replace("T", " ")
        text = Text.assemble(
            (message_label(m), "bold"),
            ("  " + stamp if stamp else "", "dim"),
            (f"  #{self.number}  {safe(m.message_key, one_line=True)}", "dim"),
        )
        text.stylize(self.get_component_rich_style("message--header", partial=True))
        if self.pair is not None:
            what = "result" if m.kind == "tool-call" else "call"
            text.append(f"  ⇄ {what} #{self.pair}", "dim italic")
        note = supersession_note(m)
        if note:
            text.append(f"  {note}", "bold red")
        return text

    def _content(self) -> RenderableType:
        """The body, built once per find term and line limit (Markdown and JSON parsing are
        the expensive part)."""
        if self._body is None:
            m = self.message
            spans = found_spans(shown_text(m), self.find_term) if self.find_term else []
            long_tool = self.foldable and self.line_count > self.limit
            if spans:
                text = Text(shown_text(m))
                for start, end in spans:
                    text.stylize(FOUND, start, end)
                if long_tool:
                    text = Text("\n").join(text.split("\n", allow_blank=True)[: self.limit])
                self._body = Padding(text, (0, 0, 0, 2)) if self.foldable else text
            elif self.foldable:
                limit = self.limit if long_tool else None
                self._body = Padding(tool_body(m.text, limit), (0, 0, 0, 2))
            elif m.kind == "thinking":
                self._body = Text(shown_text(m), style="italic")
            else:
                self._body = Markdown(shown_text(m), code_theme=CODE_THEME)
        return self._body

    def watch_find_term(self) -> None:
        self._body = None

    def watch_limit(self) -> None:
        self._body = None

    def render(self) -> RenderableType:
        parts: list[RenderableType] = [self._header()]
        if self.foldable:
            marker = "▼" if self.expanded else "▶"
            fold = Text(f" {marker} {fold_title(self.message)}", no_wrap=True, overflow="ellipsis")
            fold.stylize(self.get_component_rich_style("message--fold", partial=True))
            parts.append(fold)
            if self.expanded:
                parts.append(self._content())
                hidden = self.line_count - self.limit
                if hidden > 0:
                    parts.append(
                        Text(
                            f"  … {hidden:,} more line{'s' if hidden != 1 else ''} — + shows "
                            f"{min(hidden, FOLD_PAGE):,} more, v opens it all in $PAGER",
                            style="dim italic",
                        )
                    )
        else:
            parts.append(self._content())
        return Group(*parts)

    def show_line(self, line: int) -> None:
        """Open the fold (if any) far enough that body line ``line`` (0-based) shows."""
        if self.foldable:
            self.expanded = True
            if line >= self.limit:
                self.limit = (line // FOLD_PAGE + 1) * FOLD_PAGE

    def action_fold(self) -> None:
        if self.foldable:
            self.expanded = not self.expanded

    def action_more(self) -> None:
        if self.foldable and self.line_count > self.limit:
            self.expanded = True
            self.limit += FOLD_PAGE

    def on_click(self, event: events.Click) -> None:
        if self.foldable:
            event.stop()
            self.action_fold()


class EventView(Static):
    """A metadata event (the ``--all`` toggle): line number, type, the raw line's start."""

    def __init__(self, event: MetadataEvent, *, position: int) -> None:
        raw = " ".join(event.raw.split())
        if len(raw) > EVENT_CHARS:
            raw = raw[: EVENT_CHARS - 1] + "…"
        text = Text.assemble(
            ("· ", "dim"),
            (f"line {event.line} {event.type}", "italic"),
            ("  " + raw, "dim"),
        )
        super().__init__(text, classes="event")
        self.position = position

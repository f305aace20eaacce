"""The recall view: the exact source of one search hit, with neighbours and continuation.

``RecallScreen(locator, …)`` calls ``Archive.recall`` in a thread worker. A resolved recall shows
its provenance (document, version, session, project, agent, creation time, byte range, tokens),
the historical-evidence label, and the text message by message (each with its role, time and
key), the matched span highlighted and scrolled into view. Any other status (``expired``,
``superseded``, ``missing``, ``locator-invalid``, ``lease-expired``) is shown as such, with what
to do next; recall never substitutes a replacement.

Keys: ``[`` / ``]`` follow the continuation locators (each opens a new recall view, so Esc
walks back), ``+`` / ``-`` widen or narrow the neighbours, ``g`` shows the turns before and after
the document in its session (off → ±1 → ±2: ``gather``'s context, unranked, dimmed around the
recalled text), ``o`` opens the session transcript at the matched message, ``y`` / ``l`` copy
the text or the locator, ``c`` the copy menu, ``d`` opens the document's audit view, ``x``
supersedes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Header, Static
from textual.worker import get_current_worker

from cwcore.contract.context import DocumentContext, Neighbor
from cwcore.contract.recall import DocumentRead, MessageSpan, RecalledSource, RecallResponse
from cwcore.contract.supersession import Superseded
from cwcore.errors import CwError
from cwtui.output import safe, safe_text
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    CallFailed,
    LiveScreen,
    archive_handle,
    error_text,
)
from cwtui.screens.copy import CopyScreen
from cwtui.screens.document import DocumentScreen
from cwtui.screens.supersede import SupersedeScreen
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.hits import HIGHLIGHT, when

MAX_NEIGHBORS = 8
MAX_TOKENS = 3000
TERM_STYLE = "bold underline"

STATUS_STYLES = {
    "resolved": "bold #0d1117 on #3fb950",
    "superseded": "bold #0d1117 on #d29922",
    "lease-expired": "bold #0d1117 on #d29922",
    "expired": "bold #ffffff on #da3633",
    "missing": "bold #ffffff on #da3633",
    "locator-invalid": "bold #ffffff on #da3633",
}

WHAT_NOW = {
    "superseded": "This version was superseded, so recall does not return it. "
    "Press d for the audit view (show_document with include_superseded), or Esc to search again.",
    "lease-expired": "The search lease of this locator ran out. Press Esc and search again "
    "for a fresh locator.",
    "expired": "Retention removed this source from the archive.",
    "missing": "No such document version exists in this archive.",
    "locator-invalid": "This is not a locator of this archive (tampered, foreign, or out of "
    "the scope it was issued for).",
}


def char_offset(data: bytes, byte_offset: int) -> int:
    """The character index in ``data.decode()`` of a byte offset into ``data`` (clipped)."""
    byte_offset = max(0, min(len(data), byte_offset))
    return len(data[:byte_offset].decode("utf-8", "ignore"))


def term_spans(text: str, terms: list[str]) -> list[tuple[int, int]]:
    """Case-insensitive whole-word occurrences of ``terms`` in ``text``."""
    words = sorted({t for t in terms if len(t) > 2}, key=len, reverse=True)
    if not words:
        return []
    pattern = re.compile(r"\b(" + "|".join(re.escape(w) for w in words) + r")\b", re.IGNORECASE)
    return [m.span() for m in pattern.finditer(text)]


@dataclass(frozen=True)
class Part:
    """One source message of the recalled text (``message`` None: the text as one part, when
    the answer has no message map) and the matched character span inside it, if any."""

    message: MessageSpan | None
    text: str
    match: tuple[int, int] | None


def _shown(body: RecallResponse | None) -> RecalledSource | DocumentRead | None:
    """What the answer shows: a located hit's source, or a document read by id."""
    return None if body is None else (body.source or body.document)


def parts_of(body: RecallResponse) -> list[Part]:
    """The resolved text cut into its source messages, with the match inside each."""
    shown, source = _shown(body), body.source
    text = (shown.text if shown is not None else None) or ""
    data = text.encode("utf-8", "surrogatepass")
    start = source.range[0] if source is not None else 0
    match = source.match if source is not None else (0, 0)
    m_start, m_end = match[0] - start, match[1] - start
    out: list[Part] = []
    for message in source.messages if source is not None else ():
        lo, hi = (x - start for x in message.range)
        lo, hi = max(0, lo), min(len(data), hi)
        if hi <= lo:
            continue
        chunk = data[lo:hi]
        span = None
        if m_end > lo and m_start < hi:
            span = (char_offset(chunk, m_start - lo), char_offset(chunk, m_end - lo))
        out.append(Part(message, chunk.decode("utf-8", "ignore"), span))
    if not out:  # no message map: the text as one part
        span = (char_offset(data, m_start), char_offset(data, m_end)) if m_end > m_start else None
        out.append(Part(None, text, span))
    return out


def provenance(body: RecallResponse, neighbors: int) -> Text:
    status = body.status
    text = Text.assemble((f" {status.upper()} ", STATUS_STYLES.get(status, "bold reverse")), " ")
    shown, source = _shown(body), body.source
    if status != "resolved" or shown is None:
        text.append(safe(body.message or "", one_line=True), "bold")
        if body.superseded_by:
            text.append(f"\nreplaced by {safe(body.superseded_by, one_line=True)}")
        return text
    byte_range = source.range if source is not None else (0, 0)
    # A document read by id names no agent: shown as None, as it always has been.
    agent = source.agent if source is not None else None
    text.append_text(
        Text.assemble(
            (shown.document_id, "bold"),
            (f" v{shown.version} · {shown.kind}", ""),
            (
                " · markdown archive"
                if source is not None and source.archive_kind == "markdown"
                else "",
                "dim",
            ),
            "\nsession ",
            (safe(shown.session, one_line=True), ""),
            (safe(f" · {shown.project} · {agent}", one_line=True), ""),
            (f" · created {when(shown.created, seconds=True)} UTC", "dim"),
            (
                f"\nbytes {byte_range[0]:,}–{byte_range[1]:,} · "
                f"{source.tokens if source is not None else 0:,} tokens"
                f" · {len(shown.source_keys)} message(s) · neighbours {neighbors}",
                "dim",
            ),
        )
    )
    cont = body.continuation
    if cont.before or cont.after:
        text.append("\ncontinues: ", "dim")
        if cont.before:
            text.append("[ earlier ", "bold cyan")
        if cont.after:
            text.append("] later", "bold cyan")
    if source is not None and source.parent_turn is not None:
        text.append(f"\nparent turn {source.parent_turn.document_id}", "dim")
    return text


def context_view(turn: Neighbor, side: str) -> Static:
    """A neighbouring turn (context from ``Archive.context``), dimmed: not part of the hit."""
    keys = turn.message_keys
    header = Text.assemble(
        (f"{side} · context", "bold cyan"),
        (f"  {when(turn.created, seconds=True)}", "dim"),
        (f"  {turn.kind}", "dim"),
        (f"  {safe(keys[0], one_line=True)}" if keys else "", "dim"),
    )
    text = safe(turn.text)
    if turn.truncated:
        text += " …"
    return Static(Text.assemble(header, "\n", (text, "dim")), classes="message recall-context")


def part_view(part: Part, terms: list[str]) -> Static:
    message = part.message
    role = message.role if message is not None else "system"
    kind = message.kind if message is not None else "text"
    header = Text.assemble(
        (str(role) if kind == "text" else f"{role} {kind}", "bold"),
        (f"  {when(message.timestamp if message else None, seconds=True)}", "dim"),
        (f"  {safe(message.message_key, one_line=True) if message else ''}", "dim"),
    )
    if part.match:
        header.append("  ◆ match", "bold #e3b341")
    body = Text(part.text)
    for lo, hi in term_spans(part.text, terms):
        body.stylize(TERM_STYLE, lo, hi)
    if part.match:
        body.stylize(HIGHLIGHT, *part.match)
    body = safe_text(body)  # after styling: the spans count the raw text's characters
    classes = f"message recall-part role-{role} kind-{kind}"
    if part.match:
        classes += " matched"
    return Static(Text.assemble(header, "\n", body), classes=classes)


class RecallScreen(LiveScreen):
    """The exact source behind a locator."""

    SUB_TITLE = "Recall"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,b", "back", "Back", id="cw.recall.back", tooltip="Back to the results"),
        Binding(
            "left_square_bracket",
            "continue('before')",
            "Earlier",
            key_display="[",
            id="cw.recall.before",
            tooltip="Follow the continuation locator to the text before this",
        ),
        Binding(
            "right_square_bracket",
            "continue('after')",
            "Later",
            key_display="]",
            id="cw.recall.after",
            tooltip="Follow the continuation locator to the text after this",
        ),
        Binding(
            "plus,equals_sign",
            "neighbors(1)",
            "More",
            key_display="+",
            id="cw.recall.more",
            tooltip="Recall again with one more neighbour on each side",
        ),
        Binding(
            "minus",
            "neighbors(-1)",
            "Less",
            key_display="-",
            id="cw.recall.fewer",
            tooltip="Recall again with one neighbour fewer on each side",
        ),
        Binding(
            "o",
            "open_transcript",
            "Transcript",
            id="cw.recall.open",
            tooltip="Open the session transcript at the matched message",
        ),
        Binding(
            "g",
            "cycle_context",
            "Context",
            id="cw.recall.context",
            tooltip="Show the turns before and after it in its session: off → ±1 → ±2",
        ),
        Binding("y", "copy_text", "Text", id="cw.recall.copy", tooltip="Copy the recalled text"),
        Binding(
            "l",
            "copy_locator",
            "Locator",
            id="cw.recall.copy-locator",
            tooltip="Copy the locator (for cw recall)",
        ),
        Binding(
            "c",
            "copy",
            "Copy",
            id="cw.recall.copy-menu",
            tooltip="Copy the session id, message key, locator, document id or text",
        ),
        Binding(
            "d",
            "document",
            "Audit",
            id="cw.recall.document",
            tooltip="Show the whole document with every version (audit view)",
        ),
        Binding(
            "x",
            "supersede",
            "Supersede",
            id="cw.recall.supersede",
            tooltip="Supersede this document (with a reason and replacement)",
        ),
        Binding("r", "reload", "Reload", id="cw.recall.reload", tooltip="Recall again"),
    ]

    class Loaded(CallDone):
        def __init__(self, body: RecallResponse) -> None:
            super().__init__()
            self.body = body

    class Failed(CallFailed):
        pass

    class ContextLoaded(CallDone):
        def __init__(self, around: int, body: DocumentContext) -> None:
            super().__init__()
            self.around, self.body = around, body

    def __init__(
        self,
        locator: str,
        *,
        document_id: str | None = None,
        session_ids: list[str] | None = None,
        terms: list[str] | None = None,
        neighbors: int = 1,
    ) -> None:
        super().__init__()
        self.locator = locator
        self.document_id = document_id
        self.session_ids = list(session_ids or [])
        self.terms = list(terms or [])
        self.neighbors = neighbors
        self.body: RecallResponse | None = None
        self.context = 0  # turns shown on each side (0: none)

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("Recalling…", id="recall-header")
        yield Static("", id="recall-label")
        yield VerticalScroll(id="recall-body")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = f"Recall {self.document_id or ''}".strip()
        self.query_one("#recall-label").display = False
        self.action_reload()

    # -- loading -------------------------------------------------------------------------------

    def action_reload(self) -> None:
        self._load(archive_handle(self.app), self.locator, self.neighbors, self.session_ids)

    @work(thread=True, exclusive=True, group="recall", exit_on_error=False)
    def _load(
        self, handle: ArchiveHandle, locator: str, neighbors: int, session_ids: list[str]
    ) -> None:
        try:
            with handle.use() as archive:
                body = archive.recall(
                    locator, neighbors=neighbors, max_tokens=MAX_TOKENS, session_ids=session_ids
                )
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(body))

    async def on_recall_screen_loaded(self, message: Loaded) -> None:
        body = self.body = message.body
        shown = _shown(body)
        if body.document_id:
            self.document_id = body.document_id
            self.sub_title = f"Recall {self.document_id}"
        self.query_one("#recall-header", Static).update(provenance(body, self.neighbors))
        label = self.query_one("#recall-label", Static)
        view = self.query_one("#recall-body", VerticalScroll)
        await view.remove_children()
        if body.status != "resolved" or shown is None:
            label.display = False
            what = WHAT_NOW.get(body.status, "")
            await view.mount(Static(Text(what), classes="recall-state"))
        else:
            label.update(Text(safe(shown.label), "italic"))
            label.display = bool(shown.label)
            parts = [part_view(p, self.terms) for p in parts_of(body)]
            await view.mount_all(parts)
            matched = next((p for p in parts if p.has_class("matched")), None)
            if matched is not None:
                self.call_after_refresh(view.scroll_to_widget, matched, top=True, animate=False)
            if self.context:
                self._load_context(archive_handle(self.app), shown.document_id, self.context)
        self.refresh_bindings()
        view.focus()

    # -- context -------------------------------------------------------------------------------

    def action_cycle_context(self) -> None:
        self.context = (self.context + 1) % 3
        shown = _shown(self.body)
        if self.body is None or self.body.status != "resolved" or shown is None:
            return
        if self.context:
            self._load_context(archive_handle(self.app), shown.document_id, self.context)
        else:
            self.query("#recall-body .recall-context").remove()
            self.notify("Context hidden.", timeout=2)

    @work(thread=True, exclusive=True, group="recall-context", exit_on_error=False)
    def _load_context(self, handle: ArchiveHandle, document_id: str, around: int) -> None:
        try:
            with handle.use() as archive:
                body = archive.context(document_id, neighbors=around)
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.ContextLoaded(around, body))

    async def on_recall_screen_context_loaded(self, message: ContextLoaded) -> None:
        if message.around != self.context:
            return
        view = self.query_one("#recall-body", VerticalScroll)
        await view.query(".recall-context").remove()
        before = [context_view(n, "before") for n in message.body.before]
        after = [context_view(n, "after") for n in message.body.after]
        if not before and not after:
            after = [Static(Text("No turns around it in this session.", "dim italic"))]
            after[0].add_class("recall-context")
        if before:
            if view.children:
                await view.mount_all(before, before=view.children[0])
            else:
                await view.mount_all(before)
        await view.mount_all(after)
        self.notify(f"Context: ±{self.context} turn(s) around it (not ranked).", timeout=2)

    def on_recall_screen_failed(self, message: Failed) -> None:
        self.query_one("#recall-header", Static).update(
            Text(f"Recall failed: {message.text}", "bold red")
        )
        self.notify(message.text, title="Recall", severity="error", markup=False)

    # -- actions -------------------------------------------------------------------------------

    def _continuation(self, side: str) -> str | None:
        if self.body is None:
            return None
        cont = self.body.continuation
        return cont.before if side == "before" else cont.after

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):
            return False
        resolved = self.body is not None and self.body.status == "resolved"
        if action == "continue":
            return True if parameters and self._continuation(str(parameters[0])) else None
        if action in ("neighbors", "copy_text", "open_transcript"):
            return True if resolved else None
        if action in ("document", "supersede"):
            return True if self.document_id else None
        return True

    def action_continue(self, side: str) -> None:
        locator = self._continuation(side)
        if not locator:
            self.notify(f"Nothing {'earlier' if side == 'before' else 'later'} to follow.")
            return
        self.open(
            RecallScreen(
                locator,
                document_id=self.document_id,
                session_ids=self.session_ids,
                terms=self.terms,
                neighbors=self.neighbors,
            )
        )

    def action_neighbors(self, step: int) -> None:
        wanted = max(0, min(MAX_NEIGHBORS, self.neighbors + step))
        if wanted == self.neighbors:
            self.notify(f"Neighbours stay at {wanted}.", timeout=2)
            return
        self.neighbors = wanted
        self.action_reload()

    def _matched_key(self) -> str | None:
        shown = _shown(self.body)
        if self.body is None or shown is None:
            return None
        for part in parts_of(self.body):
            if part.match and part.message is not None and part.message.message_key:
                return part.message.message_key
        return shown.source_keys[0] if shown.source_keys else None

    def action_open_transcript(self) -> None:
        from cwtui.screens.transcript import TranscriptScreen

        shown = _shown(self.body)
        if self.body is None or self.body.status != "resolved" or not shown or not shown.session:
            return
        if isinstance(shown, RecalledSource) and shown.archive_kind == "markdown":
            self.notify("A Markdown document has no session transcript.", severity="warning")
            return
        self.open(TranscriptScreen(shown.session, focus_key=self._matched_key()))

    def action_copy_text(self) -> None:
        text = self._text()
        if text:
            self.app.copy_to_clipboard(text)
            self.notify(f"Copied {len(text):,} characters of source.", timeout=2)

    def action_copy_locator(self) -> None:
        self.app.copy_to_clipboard(self.locator)
        self.notify("Copied the locator (cw recall LOCATOR).", timeout=2)

    def action_copy(self) -> None:
        shown = _shown(self.body)
        self.open(
            CopyScreen(
                [
                    ("session id", shown.session if shown is not None else ""),
                    ("message key", str(self._matched_key() or "")),
                    ("locator", self.locator),
                    ("document id", str(self.document_id or "")),
                    ("text", self._text()),
                ]
            )
        )

    def action_document(self) -> None:
        if self.document_id:
            self.open(DocumentScreen(self.document_id))

    def action_supersede(self) -> None:
        if not self.document_id:
            return
        preview = self._text()[:300]
        self.open(SupersedeScreen(self.document_id, preview), self._superseded)

    def _superseded(self, result: Superseded | None) -> None:
        if result is not None:
            self.action_reload()  # now answers "superseded"

    def _text(self) -> str:
        """The recalled text ("" when the answer shows none)."""
        shown = _shown(self.body)
        return (shown.text if shown is not None else None) or ""

    def action_back(self) -> None:
        self.app.pop_screen()

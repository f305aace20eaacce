"""The document view: one document with every version, superseded ones included (the audit view).

``DocumentScreen(document_id)`` loads ``Archive.show_document(id, include_superseded=True)`` in a
thread worker, so a superseded document stays reachable: its state, what replaced it, when and
why, and the exact text of each version, with any undo of a supersession beside it. From here a
live document can be superseded (``x``), a superseded one brought back (``U``), and its session
opened at the document's first message (``o``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Header, Static
from textual.worker import get_current_worker

from cwcore.errors import CwError
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    CallFailed,
    LiveScreen,
    archive_handle,
    error_text,
)
from cwtui.screens.supersede import SupersedeScreen
from cwtui.screens.unsupersede import UnsupersedeScreen
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.hits import when

if TYPE_CHECKING:
    from cwcore.contract.views import DocumentVersion, DocumentView

STATE_STYLES = {"live": "bold #0d1117 on #3fb950", "superseded": "bold #0d1117 on #d29922"}


def document_header(doc: DocumentView) -> Text:
    state = doc.state or "?"
    text = Text.assemble(
        (f" {state.upper()} ", STATE_STYLES.get(state, "bold reverse")),
        " ",
        (doc.document_id, "bold"),
        (f" · {doc.kind or '?'}", ""),
        (f"\nsession {doc.session or '—'} · {doc.project or '—'}", "dim"),
    )
    if state == "superseded":
        by = doc.superseded_by
        text.append("\nsuperseded", "bold #d29922")
        text.append(f" — replaced by {by}" if by else " — no replacement named")
        text.append(". Hidden from search and recall; shown here for audit.", "dim")
    versions = doc.versions
    text.append(f"\n{len(versions)} version{'s' if len(versions) != 1 else ''}", "dim")
    return text


def version_block(version: DocumentVersion) -> Group:
    head = Text.assemble(
        (f"version {version.version}", "bold"),
        (" (current)" if version.current else "", "dim"),
        (f" · {version.kind or '?'} · created {when(version.created)} UTC", "dim"),
        (f" · {len(version.message_keys)} message(s)", "dim"),
    )
    parts: list[Any] = [head]
    retired = version.superseded
    if retired:
        by = retired.get("by") or ""
        line = Text.assemble(
            ("superseded ", "bold #d29922"),
            f"{when(retired.get('at'))} UTC",
            (f" · reason: {retired.get('reason') or '—'}", ""),
            (f" · by {by} v{retired.get('byVersion')}" if by else "", ""),
        )
        parts.append(line)
    undone = version.unsuperseded
    if undone:
        parts.append(
            Text.assemble(
                ("supersession undone ", "bold #3fb950"),
                f"{when(undone.get('at'))} UTC",
                (f" · reason: {undone.get('reason') or '—'}", ""),
                (f" · restored as version {undone.get('restoredVersion')}", ""),
            )
        )
    restores = version.restores
    if restores:
        parts.append(
            Text(f"restores version {restores.get('version')} (same text)", style="#3fb950")
        )
    parts.append(Text(version.text, style="" if not retired else "dim"))
    return Group(*parts)


class DocumentScreen(LiveScreen):
    """A document and its versions, including superseded ones."""

    SUB_TITLE = "Document"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,b", "back", "Back", id="cw.document.back", tooltip="Back"),
        Binding(
            "x",
            "supersede",
            "Supersede",
            id="cw.document.supersede",
            tooltip="Supersede this document (with a reason and replacement)",
        ),
        Binding(
            "U",
            "unsupersede",
            "Undo",
            key_display="U",
            id="cw.document.unsupersede",
            tooltip="Bring this superseded document back into search (an audited undo)",
        ),
        Binding(
            "o",
            "open_transcript",
            "Transcript",
            id="cw.document.open",
            tooltip="Open the document's session at its first message",
        ),
        Binding(
            "y",
            "copy_text",
            "Copy",
            id="cw.document.copy",
            tooltip="Copy the current version's text to the clipboard",
        ),
        Binding("r", "reload", "Reload", id="cw.document.reload", tooltip="Reload"),
    ]

    class Loaded(CallDone):
        def __init__(self, doc: DocumentView) -> None:
            super().__init__()
            self.doc = doc

    class Failed(CallFailed):
        pass

    def __init__(self, document_id: str) -> None:
        super().__init__()
        self.document_id = document_id
        self.doc: DocumentView | None = None
        self._seen_changes = -1

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(self.document_id, "bold"), id="document-header")
        with VerticalScroll(id="document-body"):
            yield Static("Loading…", id="document-versions")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = f"Document {self.document_id}"
        self.action_reload()

    def on_screen_resume(self) -> None:
        if self._seen_changes not in (-1, archive_handle(self.app).changes):
            self.action_reload()

    def action_reload(self) -> None:
        handle = archive_handle(self.app)
        self._seen_changes = handle.changes
        self._load(handle, self.document_id)

    @work(thread=True, exclusive=True, group="document", exit_on_error=False)
    def _load(self, handle: ArchiveHandle, document_id: str) -> None:
        try:
            with handle.use() as archive:
                doc = archive.show_document(document_id, include_superseded=True)
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(doc))

    def on_document_screen_loaded(self, message: Loaded) -> None:
        self.doc = message.doc
        self.query_one("#document-header", Static).update(document_header(message.doc))
        versions = list(reversed(message.doc.versions))  # newest first
        body: Any = Group(*(version_block(v) for v in versions)) if versions else "No versions."
        self.query_one("#document-versions", Static).update(body)
        self.refresh_bindings()

    def on_document_screen_failed(self, message: Failed) -> None:
        text = Text(f"Cannot show {self.document_id}: {message.text}", "bold red")
        self.query_one("#document-versions", Static).update(text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):
            return False
        if action == "supersede" and (self.doc is None or self.doc.state != "live"):
            return None  # shown greyed out: only a live document can be superseded
        if action == "unsupersede" and (self.doc is None or self.doc.state != "superseded"):
            return None
        return True

    def action_unsupersede(self) -> None:
        if self.doc is None or self.doc.state != "superseded":
            self.notify("Only a superseded document can be brought back.", severity="warning")
            return
        self.open(UnsupersedeScreen(self.document_id, self._current_text()[:300]))

    def _current_text(self) -> str:
        current = self.doc.current if self.doc is not None else None
        return current.text if current is not None else ""

    def action_supersede(self) -> None:
        if self.doc is None or self.doc.state != "live":
            self.notify("Only a live document can be superseded.", severity="warning")
            return
        self.open(SupersedeScreen(self.document_id, self._current_text()[:300]))

    def action_open_transcript(self) -> None:
        from cwtui.screens.transcript import TranscriptScreen

        if self.doc is None or not self.doc.session:
            return
        current = next((v for v in self.doc.versions if v.current), None)
        keys = current.message_keys if current is not None else ()
        focus = keys[0] if keys else None
        self.open(TranscriptScreen(self.doc.session, focus_key=focus))

    def action_copy_text(self) -> None:
        text = self._current_text()
        if text:
            self.app.copy_to_clipboard(text)
            self.notify(f"Copied {len(text):,} characters.", timeout=2)

    def action_back(self) -> None:
        self.app.pop_screen()

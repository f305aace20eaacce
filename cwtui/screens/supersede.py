"""The supersede dialog: retire a document from search, keeping it auditable.

``SupersedeScreen(document_id, summary)`` asks for a reason, an optional replacement document id
(``by``) and an optional subject key, then calls ``Archive.supersede`` in a thread worker. It
dismisses with the engine's answer (``{"documentId", "version", "state", "by", "reason", "at"}``)
after a notification, or with ``None`` when cancelled. A failure (unknown document, a replacement
that does not exist, the archive gone) is a notification and the dialog stays open. On success
the archive handle is marked changed, so screens showing the document reload when they resume.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from cwcore.errors import CwError
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    CallFailed,
    LiveScreen,
    archive_handle,
    error_text,
)
from cwtui.widgets.dialog import Dialog

EXPLAIN = (
    "It leaves search and recall but is not deleted: transcripts and the audit view (d) still "
    "show it, with the reason, and U (cw supersede --undo) brings it back."
)


class SupersedeScreen(ModalScreen[dict[str, Any] | None], LiveScreen):
    """Confirm superseding one document, with a reason, replacement and subject key."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "cancel",
            "Cancel",
            id="cw.supersede.cancel",
            tooltip="Close without superseding",
        ),
    ]

    class Done(CallDone):
        def __init__(self, result: dict[str, Any]) -> None:
            super().__init__()
            self.result = result

    class Failed(CallFailed):
        pass

    def __init__(self, document_id: str, summary: str = "") -> None:
        super().__init__()
        self.document_id = document_id
        self.summary = " ".join(summary.split())

    def compose(self) -> ComposeResult:
        with Dialog(id="supersede-dialog", classes="dialog"):
            yield Label(f"Supersede {self.document_id}?", classes="dialog-title")
            if self.summary:
                clipped = self.summary if len(self.summary) <= 200 else self.summary[:199] + "…"
                yield Static(Text(clipped, "italic"), id="supersede-summary")
            yield Static(EXPLAIN, id="supersede-explain")
            yield Label("Reason")
            yield Input(
                placeholder="why it no longer holds (e.g. reversed by ADR 0008)",
                id="supersede-reason",
                compact=True,
            )
            yield Label("Replaced by (document id, optional)")
            yield Input(placeholder="t-…", id="supersede-by", compact=True)
            yield Label("Subject key (optional)")
            yield Input(placeholder="e.g. queue-backend", id="supersede-subject", compact=True)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Supersede", variant="error", id="supersede-go")
                yield Button("Cancel", id="supersede-cancel")

    def on_mount(self) -> None:
        self.query_one("#supersede-reason", Input).focus()

    def _value(self, widget_id: str) -> str | None:
        return self.query_one(widget_id, Input).value.strip() or None

    @on(Input.Submitted)
    def _next_or_submit(self, event: Input.Submitted) -> None:
        # Enter moves down the form; on the last field it confirms.
        if event.input.id == "supersede-subject":
            self._submit()
        else:
            self.focus_next()

    @on(Button.Pressed, "#supersede-go")
    def _submit(self) -> None:
        by = self._value("#supersede-by")
        if by == self.document_id:
            self.notify("A document cannot replace itself.", severity="warning")
            return
        self.query_one("#supersede-go", Button).disabled = True
        self._supersede(
            archive_handle(self.app),
            self.document_id,
            by,
            self._value("#supersede-reason"),
            self._value("#supersede-subject"),
        )

    @on(Button.Pressed, "#supersede-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @work(thread=True, exclusive=True, group="supersede", exit_on_error=False)
    def _supersede(
        self,
        handle: ArchiveHandle,
        document_id: str,
        by: str | None,
        reason: str | None,
        subject_key: str | None,
    ) -> None:
        try:
            with handle.use() as archive:
                result = archive.supersede(
                    document_id, by=by, reason=reason, subject_key=subject_key
                )
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        self.post_message(self.Done(result))

    def on_supersede_screen_done(self, message: Done) -> None:
        archive_handle(self.app).mark_changed()
        result = message.result
        by = f", replaced by {result['by']}" if result.get("by") else ""
        self.app.notify(
            f"Superseded {result.get('documentId', self.document_id)}{by}. "
            "It no longer appears in search; d shows it for audit.",
            title="Supersede",
        )
        self.dismiss(result)

    def on_supersede_screen_failed(self, message: Failed) -> None:
        self.query_one("#supersede-go", Button).disabled = False
        self.notify(f"Supersede failed: {message.text}", severity="error", markup=False)

"""The undo dialog: bring a superseded document back into search (``cw supersede --undo``).

``UnsupersedeScreen(document_id, summary)`` asks for an optional reason and calls
``Archive.unsupersede`` in a thread worker. The supersession record stays; an unsupersession
record is added beside it, and the document comes back as a new version (locators made before
the supersede keep answering ``superseded``). It dismisses with the engine's answer
(a :class:`~cwcore.contract.supersession.Restored`) after a notification, or
with ``None`` when cancelled; a failure (not superseded, its subject key taken meanwhile) is a
notification and the dialog stays open. On success the archive handle is marked changed.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label, Static

from cwcore.api import Archive
from cwcore.contract.supersession import Restored
from cwtui.screens.confirm import ArchiveChangeDialog
from cwtui.widgets.dialog import Dialog

EXPLAIN = (
    "It becomes searchable again, as a new version. Nothing is erased: the audit view (d) keeps "
    "the supersession and this undo, and old locators still answer superseded."
)


class UnsupersedeScreen(ArchiveChangeDialog[Restored]):
    """Confirm undoing a supersession, with a reason."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="cw.unsupersede.cancel", tooltip="Close"),
    ]
    GO = "unsupersede-go"
    CANCEL = "unsupersede-cancel"
    ACTION = "Undo supersede"

    def __init__(self, document_id: str, summary: str = "") -> None:
        super().__init__()
        self.document_id = document_id
        self.summary = " ".join(summary.split())

    def compose(self) -> ComposeResult:
        with Dialog(id="unsupersede-dialog", classes="dialog"):
            yield Label(f"Undo the supersession of {self.document_id}?", classes="dialog-title")
            if self.summary:
                clipped = self.summary if len(self.summary) <= 200 else self.summary[:199] + "…"
                yield Static(Text(clipped, "italic"), id="unsupersede-summary")
            yield Static(EXPLAIN, id="unsupersede-explain")
            yield Label("Reason (optional)")
            yield Input(placeholder="why it holds after all", id="unsupersede-reason", compact=True)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Undo", variant="warning", id=self.GO)
                yield Button("Cancel", id=self.CANCEL)

    def on_mount(self) -> None:
        self.query_one("#unsupersede-reason", Input).focus()

    @on(Input.Submitted)
    @on(Button.Pressed, "#unsupersede-go")
    def _submit(self) -> None:
        reason = self.query_one("#unsupersede-reason", Input).value.strip() or None
        self.start({"documentId": self.document_id, "reason": reason})

    def perform(self, archive: Archive, request: dict[str, Any]) -> Restored:
        return archive.unsupersede(request["documentId"], reason=request["reason"])

    def done_text(self, result: Restored) -> str:
        return (
            f"{result.document_id} is searchable again (version "
            f"{result.version}); version {result.restored} stays in the audit."
        )

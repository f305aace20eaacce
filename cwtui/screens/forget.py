"""The forget dialog: remove one session from the archive for good, after a confirmation.

``ForgetScreen(session_id, detail)`` says what will be removed and that it cannot be undone.
Focus starts on *Cancel*; Tab (or a click) reaches *Forget*. The ``Archive.forget`` call runs in
a thread worker. It dismisses with the engine's report (a
:class:`~cwcore.store.retention.Forgotten`) after a notification, or ``None`` when cancelled; a
failure is a notification and the dialog stays open. On success the archive handle is marked
changed, so every screen showing the session reloads when it resumes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.widgets import Button, Label, Static

from cwcore.api import Archive
from cwcore.contract.retention import Forgotten
from cwtui.screens.confirm import ArchiveChangeDialog
from cwtui.widgets.dialog import Dialog


class ForgetScreen(ArchiveChangeDialog[Forgotten]):
    """Confirm forgetting one session."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", id="cw.forget.cancel", tooltip="Close without forgetting"
        ),
    ]

    GO = "forget-go"
    CANCEL = "forget-cancel"
    ACTION = "Forget"

    def __init__(self, session_id: str, detail: str = "") -> None:
        super().__init__()
        self.session_id = session_id
        self.detail = detail

    def compose(self) -> ComposeResult:
        with Dialog(id="forget-dialog", classes="dialog"):
            yield Label(Text(f"Forget session {self.session_id}?"), classes="dialog-title")
            if self.detail:
                yield Static(Text(self.detail, "italic"), id="forget-detail")
            yield Static(
                Text.assemble(
                    "This removes the session, its messages and every version of its documents "
                    "from the archive, and retires them from the index. Locators that point at "
                    "it stop resolving. ",
                    ("It cannot be undone.", "bold red"),
                ),
                id="forget-explain",
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Forget", variant="error", id=self.GO)
                yield Button("Cancel", variant="primary", id=self.CANCEL)

    def on_mount(self) -> None:
        self.query_one("#forget-cancel", Button).focus()

    @on(Button.Pressed, "#forget-go")
    def _confirm(self) -> None:
        self.start({"sessionId": self.session_id})

    def perform(self, archive: Archive, request: dict[str, Any]) -> Forgotten:
        return archive.forget(request["sessionId"])

    def done_text(self, result: Forgotten) -> str:
        return (
            f"Forgot {self.session_id}: {result.documents} document(s), "
            f"{result.versions} version(s), {result.events} event(s)."
        )

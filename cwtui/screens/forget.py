"""The forget dialog: remove one session from the archive for good, after a confirmation.

``ForgetScreen(session_id, detail)`` says what will be removed and that it cannot be undone.
Focus starts on *Cancel*; Tab (or a click) reaches *Forget*. The ``Archive.forget`` call runs in a
thread worker. It dismisses with the engine's report (``{"sessions", "documents", "versions",
"events", "chunks", "tombstoned", "skippedPinned"}``) after a notification, or ``None`` when
cancelled; a failure is a notification and the dialog stays open. On success the archive handle
is marked changed, so every screen showing the session reloads when it resumes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

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


class ForgetScreen(ModalScreen[dict[str, Any] | None], LiveScreen):
    """Confirm forgetting one session."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", id="cw.forget.cancel", tooltip="Close without forgetting"
        ),
    ]

    class Done(CallDone):
        def __init__(self, report: dict[str, Any]) -> None:
            super().__init__()
            self.report = report

    class Failed(CallFailed):
        pass

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
                yield Button("Forget", variant="error", id="forget-go")
                yield Button("Cancel", variant="primary", id="forget-cancel")

    def on_mount(self) -> None:
        self.query_one("#forget-cancel", Button).focus()

    @on(Button.Pressed, "#forget-go")
    def _confirm(self) -> None:
        self.query_one("#forget-go", Button).disabled = True
        self._forget(archive_handle(self.app), self.session_id)

    @on(Button.Pressed, "#forget-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @work(thread=True, exclusive=True, group="forget", exit_on_error=False)
    def _forget(self, handle: ArchiveHandle, session_id: str) -> None:
        try:
            with handle.use() as archive:
                report = archive.forget(session_id)
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        self.post_message(self.Done(report))

    def on_forget_screen_done(self, message: Done) -> None:
        archive_handle(self.app).mark_changed()
        report = message.report
        self.app.notify(
            f"Forgot {self.session_id}: {report.get('documents', 0)} document(s), "
            f"{report.get('versions', 0)} version(s), {report.get('events', 0)} event(s).",
            title="Forget",
            markup=False,
        )
        self.dismiss(report)

    def on_forget_screen_failed(self, message: Failed) -> None:
        self.query_one("#forget-go", Button).disabled = False
        self.notify(f"Forget failed: {message.text}", severity="error", markup=False)

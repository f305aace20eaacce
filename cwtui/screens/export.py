"""The export modal: asks for a path and a format, exports one session, writes the file.

Contract: ``ExportScreen(session_id)`` dismisses with the written :class:`~pathlib.Path` on
success (after a notification), or ``None`` when cancelled. The export call and the file write run
in a thread worker; a failure is a notification and the modal stays open so the path can be fixed.
An existing file is only replaced after a second confirmation (pressing Export again).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioButton, RadioSet
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
from cwtui.widgets.dialog import Dialog

FORMATS = ("md", "jsonl")


class MarkRadio(RadioButton):
    """A radio button whose mark reads without colour: ● chosen, ○ not (Textual draws the same
    dot for both and tells them apart by colour only)."""

    @property
    def BUTTON_INNER(self) -> str:  # type: ignore[override]  # a class constant upstream
        return "●" if self.value else "○"


def default_path(session_id: str, fmt: str) -> str:
    """``./<session>.<fmt>``, with characters that are unsafe in file names replaced."""
    safe = re.sub(r"[^A-Za-z0-9._-]", "_", session_id).lstrip(".") or "session"
    return f"./{safe}.{fmt}"


class ExportScreen(ModalScreen[Path | None], LiveScreen):
    """Export one session as Markdown or cw-jsonl to a file the user names."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", id="cw.export.cancel", tooltip="Close without exporting"
        ),
    ]

    class Done(CallDone):
        def __init__(self, path: Path, size: int) -> None:
            super().__init__()
            self.path = path
            self.size = size

    class Failed(CallFailed):
        pass

    def __init__(self, session_id: str) -> None:
        super().__init__()
        self.session_id = session_id
        self._fmt = "md"
        self._confirm_overwrite: Path | None = None

    def compose(self) -> ComposeResult:
        with Dialog(id="export-dialog", classes="dialog"):
            yield Label(Text(f"Export session {self.session_id}"), classes="dialog-title")
            with RadioSet(id="export-format"):
                yield MarkRadio("Markdown (.md)", value=True, id="fmt-md")
                yield MarkRadio("cw-jsonl (.jsonl)", id="fmt-jsonl")
            yield Input(default_path(self.session_id, "md"), id="export-path", compact=True)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Export", variant="primary", id="export-go")
                yield Button("Cancel", id="export-cancel")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()

    @on(RadioSet.Changed, "#export-format")
    def _format_changed(self, event: RadioSet.Changed) -> None:
        fmt = "jsonl" if event.pressed.id == "fmt-jsonl" else "md"
        path_input = self.query_one("#export-path", Input)
        # Follow the format only while the path is still a default one the user did not edit.
        if path_input.value == default_path(self.session_id, self._fmt):
            path_input.value = default_path(self.session_id, fmt)
        self._fmt = fmt

    @on(Input.Submitted, "#export-path")
    @on(Button.Pressed, "#export-go")
    def _submit(self) -> None:
        raw = self.query_one("#export-path", Input).value.strip()
        if not raw:
            self.notify("Enter a file path to export to.", severity="warning")
            return
        path = Path(raw).expanduser()
        if path.exists() and self._confirm_overwrite != path:
            self._confirm_overwrite = path
            self.notify(
                f"{path} exists; press Export again to replace it.",
                severity="warning",
                markup=False,
            )
            return
        self.query_one("#export-go", Button).disabled = True
        self._export(archive_handle(self.app), self.session_id, self._fmt, path)

    @on(Button.Pressed, "#export-cancel")
    def action_cancel(self) -> None:
        self.dismiss(None)

    @work(thread=True, exclusive=True, group="export", exit_on_error=False)
    def _export(self, handle: ArchiveHandle, session_id: str, fmt: str, path: Path) -> None:
        try:
            with handle.use() as archive:
                text = archive.export(session_id, fmt)
            if get_current_worker().is_cancelled:
                return
            data = text.encode("utf-8")
            path.write_bytes(data)
        except (CwError, OSError) as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        self.post_message(self.Done(path, len(data)))

    def on_export_screen_done(self, message: Done) -> None:
        self.app.notify(
            f"Exported {self.session_id} to {message.path} ({message.size:,} bytes)", markup=False
        )
        self.dismiss(message.path)

    def on_export_screen_failed(self, message: Failed) -> None:
        self.query_one("#export-go", Button).disabled = False
        self.notify(f"Export failed: {message.text}", severity="error", markup=False)

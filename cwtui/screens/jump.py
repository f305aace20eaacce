"""A one-line modal asking which message to jump to.

Dismisses with the text typed (a 1-based message number or a message key such as
``user:u3`` or just ``u3``), or ``None`` when cancelled. Resolving it is the caller's job.
"""

from __future__ import annotations

from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from cwtui.screens.common import LiveScreen
from cwtui.widgets.dialog import Dialog


class JumpScreen(ModalScreen[str | None], LiveScreen):
    """Ask for a message number or key."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="cw.jump.cancel", tooltip="Close without jumping"),
    ]

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count

    def compose(self) -> ComposeResult:
        with Dialog(id="jump-dialog", classes="dialog"):
            yield Label("Jump to message", classes="dialog-title")
            hint = f"1–{self.count} or a message key (user:u3, u3)"
            yield Input(placeholder=hint, id="jump-input", compact=True)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)

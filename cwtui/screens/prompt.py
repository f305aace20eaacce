"""A one-line modal that asks for a value (a document id to audit, …).

``PromptScreen(title, placeholder, value=…)`` dismisses with the stripped text, or ``None`` when
empty or cancelled (with ``allow_empty``, an empty answer is ``""``: "clear it"). What the value
means is the caller's business.
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


class PromptScreen(ModalScreen[str | None], LiveScreen):
    """Ask for one value."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="cw.prompt.cancel", tooltip="Close"),
    ]

    def __init__(
        self, title: str, placeholder: str = "", *, value: str = "", allow_empty: bool = False
    ) -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder
        self.value = value
        self.allow_empty = allow_empty

    def compose(self) -> ComposeResult:
        with Dialog(id="prompt-dialog", classes="dialog"):
            yield Label(self.title_text, classes="dialog-title")
            yield Input(
                value=self.value, placeholder=self.placeholder, id="prompt-input", compact=True
            )

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Submitted)
    def _submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        self.dismiss(text if text or self.allow_empty else None)

    def action_cancel(self) -> None:
        self.dismiss(None)

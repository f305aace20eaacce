"""The copy menu: pick what to put on the clipboard (ids, keys, a locator, a command, text).

``CopyScreen(choices)`` lists ``(label, value)`` pairs with a number each; a number, Enter on
the highlighted one or a click copies that value (OSC 52, so it works over SSH where the
terminal supports it) and closes the menu with a notification. Esc closes it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from cwtui.screens.common import LiveScreen
from cwtui.widgets.dialog import Dialog
from cwtui.widgets.nav import NavList

PREVIEW_CHARS = 56


class CopyScreen(ModalScreen[str | None], LiveScreen):
    """Copy one of several values; dismisses with the label copied (None: cancelled)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="cw.copy.cancel", tooltip="Close"),
        *(Binding(str(n), f"pick({n - 1})", show=False, id=f"cw.copy.{n}") for n in range(1, 10)),
    ]

    def __init__(self, choices: list[tuple[str, str]]) -> None:
        super().__init__()
        self.choices = [(label, value) for label, value in choices if value]

    def compose(self) -> ComposeResult:
        with Dialog(id="copy-dialog", classes="dialog"):
            yield Label("Copy to the clipboard", classes="dialog-title")
            options = []
            for n, (label, value) in enumerate(self.choices, start=1):
                flat = " ".join(value.split())
                shown = flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"
                options.append(
                    Option(Text.assemble((f"{n} ", "bold"), (label, "bold"), "  ", (shown, "dim")))
                )
            yield NavList(*options, id="copy-options")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.action_pick(event.option_index)

    def action_pick(self, index: int) -> None:
        if not 0 <= index < len(self.choices):
            return
        label, value = self.choices[index]
        self.app.copy_to_clipboard(value)
        self.app.notify(f"Copied the {label}.", timeout=2)
        self.dismiss(label)

    def action_cancel(self) -> None:
        self.dismiss(None)

"""The help screen (``?``): the cw keys of the screen it was opened from.

Built from the live bindings (``Screen.active_bindings``) so it never drifts from what the keys
do: ``HelpScreen.for_screen(screen)`` snapshots them before the modal covers the screen. Only
bindings with a ``cw.`` id are listed (the widgets' own movement keys are summed up in a line).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Label, Static

from cwtui.screens.common import LiveScreen

#: Characters of an action's description the table shows (the rest is in the palette).
ACTION_CHARS = 72


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@dataclass(frozen=True)
class KeyHelp:
    key: str
    description: str
    binding_id: str


class HelpScreen(ModalScreen[None], LiveScreen):
    """A table of keys: key, what it does, and the binding id (for a keymap file)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,question_mark,q", "close", "Close", id="cw.help.close", tooltip="Close the help"
        ),
    ]

    def __init__(self, title: str, keys: list[KeyHelp]) -> None:
        super().__init__()
        self.title_text = title
        self.keys = keys

    @classmethod
    def for_screen(cls, screen: Screen[Any]) -> HelpScreen:
        seen: set[str] = set()
        keys: list[KeyHelp] = []
        for active in screen.active_bindings.values():
            binding = active.binding
            binding_id = binding.id or ""
            if not binding_id.startswith("cw.") or binding_id in seen:
                continue
            seen.add(binding_id)
            keys.append(
                KeyHelp(
                    screen.app.get_key_display(binding),
                    binding.tooltip or binding.description,
                    binding_id,
                )
            )
        # The screen's own keys first, the app-wide ones (help, quit, screens) after.
        keys.sort(key=lambda k: (k.binding_id.startswith(("cw.help", "cw.quit", "cw.mode.")),))
        return cls(screen.sub_title or screen.title or "cw", keys)

    def compose(self) -> ComposeResult:
        with Vertical(id="help-dialog", classes="dialog"):
            yield Label(f"Keys — {self.title_text}", classes="dialog-title")
            yield DataTable(id="help-keys", cursor_type="none", zebra_stripes=True)
            yield Static(
                "Arrows, PgUp/PgDn, Home/End move and scroll; Tab moves between panes; Enter\n"
                "opens or expands what is selected. ctrl+p opens the command palette: every\n"
                "action above, searchable by name. Esc closes this help.",
                id="help-footnote",
            )

    def on_mount(self) -> None:
        table = self.query_one("#help-keys", DataTable)
        table.add_columns("Key", "Action", "Binding id")
        for item in self.keys:
            table.add_row(item.key, clip(item.description, ACTION_CHARS), item.binding_id)

    def action_close(self) -> None:
        self.dismiss(None)

"""The help screen (``?``): the cw keys of the screen it was opened from.

Built from the live bindings (``Screen.active_bindings``) so it never drifts from what the keys
do: ``HelpScreen.for_screen(screen)`` snapshots them before the modal covers the screen. Only
bindings with a ``cw.`` id are listed (the widgets' own movement keys are summed up in a line),
each with every key that works on that screen (on a screen that sends typing to its query, not
the keys that type: ``F1`` for help there, not ``?``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Label, Static

from cwtui.screens.common import LiveScreen
from cwtui.widgets.footer import key_display, usable

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
        keys: list[KeyHelp] = []
        at: dict[str, int] = {}  # binding id → its row: a second key joins the first's row
        for key, active in screen.active_bindings.items():
            binding = active.binding
            binding_id = binding.id or ""
            if not binding_id.startswith("cw.") or not usable(screen, key):
                continue
            display = key_display(screen, key, binding)
            if binding_id in at:
                row = keys[at[binding_id]]
                if display not in row.key.split(" "):
                    keys[at[binding_id]] = replace(row, key=f"{row.key} {display}")
                continue
            at[binding_id] = len(keys)
            keys.append(KeyHelp(display, binding.tooltip or binding.description, binding_id))
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

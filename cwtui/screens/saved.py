"""The saved-searches dialog: nine slots, to save the current search into or to recall one from.

``SavedSearchesScreen(state, saving=…)`` lists slots 1–9 of a :class:`~cwtui.tui_state.TuiState`
(each with its name and a summary of its query, filters, scope and policy, or "empty"). A digit,
Enter on the highlighted slot or a click picks one: the dialog dismisses with the slot's number
and the caller does the rest (saving asks for a name next; recalling an empty slot is refused
here). Delete empties the highlighted slot (dismisses with ``-N``), Esc closes (``None``).

Picking goes through :meth:`LiveScreen.dismiss`, which acts once: a second Enter of a burst
(``ctrl+s Enter Enter``) cannot pop the screen below the dialog.
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
from cwtui.tui_state import SLOTS, SavedSearch, SearchView, TuiState
from cwtui.widgets.dialog import Dialog
from cwtui.widgets.nav import NavList

SUMMARY_CHARS = 48


def summary(view: SearchView) -> str:
    """One line for a person: the query, the standing filters, and the scope and policy when
    they are not the defaults."""
    parts = [f"“{view.query}”" if view.query else "(no query)"]
    if view.filters:
        parts.append(view.filters)
    if view.scope != "all":
        parts.append(f"scope {view.scope}")
    if view.policy:
        parts.append(f"semantic {view.policy}")
    if view.relation:
        parts.append(view.relation)
    flat = " ".join(" · ".join(parts).split())
    flat = "".join(c if c.isprintable() else "?" for c in flat)
    return flat if len(flat) <= SUMMARY_CHARS else flat[: SUMMARY_CHARS - 1] + "…"


class SavedSearchesScreen(ModalScreen[int | None], LiveScreen):
    """Pick a saved-search slot: dismisses with its number, ``-N`` to empty slot N, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="cw.saved.cancel", tooltip="Close"),
        Binding(
            "delete",
            "clear",
            "Empty slot",
            id="cw.saved.clear",
            tooltip="Empty the highlighted slot",
        ),
        *(
            Binding(str(n), f"pick({n})", show=False, id=f"cw.saved.{n}", tooltip=f"Slot {n}")
            for n in SLOTS
        ),
    ]

    def __init__(self, state: TuiState, *, saving: bool) -> None:
        super().__init__()
        self.state = state
        self.saving = saving

    def compose(self) -> ComposeResult:
        title = (
            "Save this search in slot… (a name comes next)"
            if self.saving
            else "Recall a saved search"
        )
        with Dialog(id="saved-dialog", classes="dialog"):
            yield Label(title, classes="dialog-title")
            yield NavList(*(self._option(n, self.state.slot(n)) for n in SLOTS), id="saved-options")

    @staticmethod
    def _option(number: int, saved: SavedSearch | None) -> Option:
        if saved is None:
            return Option(Text.assemble((f"{number} ", "bold"), ("empty", "dim")))
        name = "".join(c if c.isprintable() else "?" for c in saved.name)
        return Option(
            Text.assemble(
                (f"{number} ", "bold"), (name, "bold"), "  ", (summary(saved.view), "dim")
            )
        )

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.saving:  # the first empty slot, else the first
            empty = [n for n in SLOTS if self.state.slot(n) is None]
            options.highlighted = (empty[0] if empty else SLOTS[0]) - 1
        else:  # the first saved one
            used = [s.slot for s in self.state.saved]
            options.highlighted = (used[0] if used else SLOTS[0]) - 1
        options.focus()

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        self.action_pick(event.option_index + 1)

    def action_pick(self, number: int) -> None:
        if number not in SLOTS:
            return
        if not self.saving and self.state.slot(number) is None:
            self.notify(f"Slot {number} is empty (ctrl+s saves a search).", timeout=2)
            return
        self.dismiss(number)

    def action_clear(self) -> None:
        index = self.query_one(OptionList).highlighted
        if index is None or self.state.slot(index + 1) is None:
            return
        self.dismiss(-(index + 1))

    def action_cancel(self) -> None:
        self.dismiss(None)

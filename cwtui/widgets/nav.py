"""The same list keys everywhere: ``j`` / ``k`` down and up, Home / ``g`` the first row, End /
``G`` the last, on every table (:class:`NavTable`) and option list (:class:`NavList`) of the TUI.
"""

from __future__ import annotations

from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.widgets import DataTable, OptionList


class NavTable(DataTable[object]):
    """A row table with the list keys (Home / End go to the first / last row, not column)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="cw.list.down"),
        Binding("k", "cursor_up", "Up", show=False, id="cw.list.up"),
        Binding("g,home", "scroll_top", "First", show=False, id="cw.list.first"),
        Binding("G,end", "scroll_bottom", "Last", show=False, id="cw.list.last"),
    ]


class NavList(OptionList):
    """An option list with the list keys."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="cw.list.down"),
        Binding("k", "cursor_up", "Up", show=False, id="cw.list.up"),
        Binding("g", "first", "First", show=False, id="cw.list.first"),
        Binding("G", "last", "Last", show=False, id="cw.list.last"),
    ]

"""The body of every modal dialog: a column that scrolls when the terminal is too short for
it (80×24), so its buttons stay reachable, without taking a Tab stop itself."""

from __future__ import annotations

from textual.containers import VerticalScroll


class Dialog(VerticalScroll, can_focus=False):
    """A dialog's scrolling column (style it with the ``dialog`` class)."""

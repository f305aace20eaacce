"""The find bar of the transcript (``/``): a one-line query input and the match count.

Enter posts :class:`FindBar.Find` with the term and hands the keys back to the transcript
(``n`` / ``N`` then step through the matches); Esc posts :class:`FindBar.Closed`.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Static


class FindInput(Input):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="cw.transcript.find-close", tooltip="Close find"),
    ]

    def action_close(self) -> None:
        self.post_message(FindBar.Closed())


class FindBar(Horizontal):
    """``Find: [term]  3 / 12``."""

    DEFAULT_CSS = """
    FindBar { height: 1; display: none; padding: 0 1; background: $boost; }
    FindBar > .find-label { width: auto; text-style: bold; }
    FindBar > FindInput { width: 1fr; height: 1; border: none; padding: 0 1; }
    FindBar > #find-count { width: auto; color: $text-muted; }
    """

    class Find(Message):
        def __init__(self, term: str) -> None:
            super().__init__()
            self.term = term

    class Closed(Message):
        pass

    def compose(self) -> ComposeResult:
        yield Static("Find", classes="find-label")
        yield FindInput(placeholder="text in any message, tool output included", id="find-input")
        yield Static("", id="find-count")

    def open(self) -> None:
        self.display = True
        self.query_one(FindInput).focus()

    def count(self, text: Text | str) -> None:
        self.query_one("#find-count", Static).update(text)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Find(event.value))

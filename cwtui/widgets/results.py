"""The search results list: one two-line option per hit (see :func:`cwtui.widgets.hits.result_row`).

The list holds the hits it shows; :attr:`ResultsList.current` is the highlighted one. Enter
recalls it (the screen handles :class:`ResultsList.Recall`); Esc goes back to the query bar.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from cwtui.widgets.hits import result_row
from cwtui.widgets.nav import NavList

if TYPE_CHECKING:
    from cwcore.retrieve.results import SearchHit


class ResultsList(NavList):
    """Search hits, best first."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select",
            "Recall",
            id="cw.search.recall",
            tooltip="Recall the exact source of the selected result, with its neighbours",
        ),
        Binding(
            "escape",
            "screen.focus_query",
            "Query",
            show=False,
            id="cw.search.back",
            tooltip="Back to the query bar",
        ),
    ]

    class Recall(Message):
        """The user asked to recall ``hit``."""

        def __init__(self, index: int, hit: SearchHit) -> None:
            super().__init__()
            self.index = index
            self.hit = hit

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.hits: list[SearchHit] = []

    def show(self, hits: Sequence[SearchHit]) -> None:
        """Replace the options with ``hits`` (highlighting the first)."""
        self.hits = list(hits)
        options: list[Option | None] = []
        for i, hit in enumerate(self.hits):
            if i:
                options.append(None)  # a rule between results
            options.append(Option(result_row(hit), id=f"hit-{i}"))
        self.set_options(options)
        if self.hits:
            self.highlighted = 0

    @property
    def current(self) -> SearchHit | None:
        index = self.highlighted
        if index is None or not 0 <= index < len(self.hits):
            return None
        return self.hits[index]

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        index = event.option_index
        if 0 <= index < len(self.hits):
            self.post_message(self.Recall(index, self.hits[index]))

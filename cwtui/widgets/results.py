"""The search results list: one option per hit, its head line over one or two lines of its
snippet around the match (see :func:`cwtui.widgets.hits.result_row`; :attr:`ResultsList.lines`).

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

from cwtui.widgets.hits import order_notes, result_row
from cwtui.widgets.nav import NavList

if TYPE_CHECKING:
    from cwcore.contract.search import SearchHit


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
        #: Snippet lines under each row's head line (1 compact, 2 comfortable).
        self.lines = 2
        #: Whether the hits are in the engine's order (then a row that sits above a higher
        #: score says why); False for a display order by date.
        self.ranked = True

    def show(
        self, hits: Sequence[SearchHit], *, ranked: bool = True, keep: int | None = None
    ) -> None:
        """Replace the options with ``hits`` (highlighting the one at ``keep``, else the
        first). ``ranked``: the hits are in the engine's order, so each row whose score a row
        below beats carries the reason (:func:`~cwtui.widgets.hits.order_notes`)."""
        self.hits = list(hits)
        self.ranked = ranked
        notes = order_notes(self.hits) if ranked else [None] * len(self.hits)
        options: list[Option | None] = []
        for i, (hit, note) in enumerate(zip(self.hits, notes, strict=True)):
            if i:
                options.append(None)  # a rule between results
            options.append(Option(result_row(hit, lines=self.lines, note=note), id=f"hit-{i}"))
        self.set_options(options)
        if self.hits:
            self.highlighted = keep if keep is not None and 0 <= keep < len(self.hits) else 0

    def set_lines(self, lines: int) -> None:
        """Show ``lines`` snippet lines per row, the same hit still highlighted."""
        self.lines = lines
        self.show(self.hits, ranked=self.ranked, keep=self.highlighted)

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

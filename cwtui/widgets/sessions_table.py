"""The sessions table: one row per session, filled page by page.

The table knows nothing about paging itself: callers :meth:`~SessionsTable.append` pages, and the
table posts :class:`SessionsTable.NearEnd` when the cursor or the viewport comes within
:attr:`~SessionsTable.PREFETCH` rows of the last loaded row, so the next page arrives before the
user reaches the end. Row keys are full session ids; the id column shows a prefix (``cw show``
accepts any unique prefix of four or more characters).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import DataTable

from cwcore.session_info import SessionInfo
from cwtui.output import safe
from cwtui.widgets.nav import NavTable

ID_CHARS = 13
TITLE_CHARS = 60

# The id and the start come first, so a narrow terminal keeps them and cuts the rest.
COLUMNS = (
    ("Session", "session"),
    ("Started (UTC)", "started"),
    ("Project", "project"),
    ("Agent", "agent"),
    ("Msgs", "messages"),
    ("Turns", "turns"),
    ("Tools", "tools"),
    ("Title", "title"),
)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _when(stamp: str | None) -> str:
    return stamp[:16].replace("T", " ") if stamp else "—"


def row_cells(row: SessionInfo) -> tuple[str | Text, ...]:
    """How one session reads in the table (numbers right-aligned). Ids, names and titles are
    data, so they go in as :class:`Text`: a ``[`` in one is not markup, and a control character
    in one is shown escaped (:func:`cwtui.output.safe`), never written to the terminal."""
    return (
        Text(_clip(safe(row.sessionId, one_line=True), ID_CHARS)),
        _when(row.started),
        Text(safe(row.project, one_line=True)),
        Text(safe(row.agent, one_line=True)),
        Text(str(row.messages), justify="right"),
        Text(str(row.turns), justify="right"),
        Text(str(row.toolCalls), justify="right"),
        Text(_clip(safe(" ".join((row.title or "").split()), one_line=True), TITLE_CHARS)),
    )


class SessionsTable(NavTable):
    """A row-cursor table of sessions that asks for more rows as the user nears the end."""

    #: Rows before the end at which :class:`NearEnd` is posted.
    PREFETCH = 25

    # Enter is the table's own "select row" (which opens the session); shown in the footer here
    # because the focused table's binding hides the screen's.
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select_cursor",
            "Open",
            id="cw.sessions.open-row",
            tooltip="Open the selected session's transcript",
        ),
    ]

    class NearEnd(Message):
        """The cursor or viewport is close to the last loaded row."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self._sessions: dict[str, SessionInfo] = {}

    def on_mount(self) -> None:
        for label, key in COLUMNS:
            self.add_column(label, key=key)

    def reset(self) -> None:
        """Drop every row (the columns stay)."""
        self.clear()
        self._sessions.clear()

    def append(self, rows: Iterable[SessionInfo]) -> None:
        for row in rows:
            if row.sessionId in self._sessions:  # a page boundary never repeats, but be safe
                continue
            self._sessions[row.sessionId] = row
            self.add_row(*row_cells(row), key=row.sessionId)

    @property
    def current(self) -> SessionInfo | None:
        """The session under the cursor, if any."""
        if not self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return self._sessions.get(key or "")

    def _check_near_end(self, row: int) -> None:
        if self.row_count and row >= self.row_count - self.PREFETCH:
            self.post_message(self.NearEnd())

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        # Not stopped: the screen may want it too.
        self._check_near_end(event.cursor_row)

    def watch_scroll_y(self, old: float, new: float) -> None:
        super().watch_scroll_y(old, new)
        # Mouse-wheel scrolling moves the viewport, not the cursor: check its bottom row too.
        self._check_near_end(int(new) + self.scrollable_content_region.height)

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

from cwcore.contract.sessions import SessionInfo
from cwtui.output import fit_columns, safe, short_session
from cwtui.widgets.nav import NavTable

ID_CHARS = 13
TITLE_CHARS = 60
#: A project name longer than this is cut in its cell (the projects pane shows it whole).
PROJECT_CHARS = 24
#: The title column's least width: below it a secondary column is given up instead.
TITLE_MIN = 24
#: Columns (keys) in the order they are given up as the table narrows; the session id and the
#: title are always kept.
DROP_ORDER = ("turns", "agent", "project", "tools", "started", "messages")
#: Columns a cell's padding and the vertical scrollbar take besides the cells' own widths.
CELL_PADDING = 2
SCROLLBAR = 2

# The id and the start come first; the title last, with the width that is left.
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
KEYS = tuple(key for _, key in COLUMNS)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _when(stamp: str | None) -> str:
    return stamp[:16].replace("T", " ") if stamp else "—"


def row_cells(row: SessionInfo) -> dict[str, str | Text]:
    """How one session reads in the table, by column key (numbers right-aligned). Ids, names
    and titles are data, so they go in as :class:`Text`: a ``[`` in one is not markup, and a
    control character in one is shown escaped (:func:`cwtui.output.safe`), never written to
    the terminal. ``messages`` is the session record's count, the one ``cw sessions``, ``cw
    show`` and the transcript header give (docs/importers.md: thinking is not a message)."""
    return {
        "session": Text(safe(short_session(row.sessionId, row.parent, ID_CHARS), one_line=True)),
        "started": _when(row.started),
        "project": Text(_clip(safe(row.project, one_line=True), PROJECT_CHARS)),
        "agent": Text(safe(row.agent, one_line=True)),
        "messages": Text(str(row.messages), justify="right"),
        "turns": Text(str(row.turns), justify="right"),
        "tools": Text(str(row.toolCalls), justify="right"),
        "title": Text(_clip(safe(" ".join((row.title or "").split()), one_line=True), TITLE_CHARS)),
    }


def _cell_width(cell: str | Text) -> int:
    return cell.cell_len if isinstance(cell, Text) else len(cell)


def layout(width: int, natural: dict[str, int]) -> tuple[tuple[str, ...], int]:
    """The columns shown in a table ``width`` columns wide, and the title's width: every
    column but the title at its natural width (``natural``: its widest cell), the title with
    what is left; secondary columns given up in :data:`DROP_ORDER` until the title has
    :data:`TITLE_MIN`, so a number is never cut to its first digits and a narrow terminal
    keeps the title (:func:`cwtui.output.fit_columns`)."""
    return fit_columns(
        width - SCROLLBAR,
        {key: natural[key] for key in KEYS},
        DROP_ORDER,
        least=TITLE_MIN,
        per_column=CELL_PADDING,
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
        self._cells: dict[str, dict[str, str | Text]] = {}
        #: Each column's widest cell so far, its label included.
        self._natural = {key: len(label) for label, key in COLUMNS}
        #: The columns shown and the title's width (see :func:`layout`); () until laid out.
        self.shown: tuple[str, ...] = ()
        self._title_width = 0

    def on_mount(self) -> None:
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """Lay the columns out for the table's width; rebuild them when that changes what is
        shown (the rows are added again, the cursor stays on its session)."""
        width = self.size.width or self.app.size.width
        shown, title = layout(width, self._natural)
        if (shown, title) == (self.shown, self._title_width):
            return
        current = self.current
        self.shown, self._title_width = shown, title
        self.clear(columns=True)
        for label, key in COLUMNS:
            if key in shown:
                self.add_column(label, key=key, width=title if key == "title" else None)
        for session_id in self._sessions:
            self._add(session_id)
        if current is not None:
            self.move_cursor(row=self.get_row_index(current.sessionId), animate=False)

    def _add(self, session_id: str) -> None:
        cells = self._cells[session_id]
        self.add_row(*(cells[key] for key in self.shown), key=session_id)

    def reset(self) -> None:
        """Drop every row (the columns stay)."""
        self.clear()
        self._sessions.clear()
        self._cells.clear()

    def append(self, rows: Iterable[SessionInfo]) -> None:
        added = []
        for row in rows:
            if row.sessionId in self._sessions:  # a page boundary never repeats, but be safe
                continue
            self._sessions[row.sessionId] = row
            cells = self._cells[row.sessionId] = row_cells(row)
            for key, cell in cells.items():
                self._natural[key] = max(self._natural[key], _cell_width(cell))
            added.append(row.sessionId)
        before = (self.shown, self._title_width)
        self._fit()  # wider cells may change the layout (then every row was added again)
        if (self.shown, self._title_width) == before:
            for session_id in added:
                self._add(session_id)

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

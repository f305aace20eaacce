"""Issue 34: the sessions table as an operator saw it at 120 and 80 columns, sub-agent rows,
and one message count in the table and the transcript header."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cwcore.api import Archive
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.transcript import session_summary
from cwtui.widgets.sessions_table import (
    CELL_PADDING,
    KEYS,
    SCROLLBAR,
    TITLE_MIN,
    SessionsTable,
    layout,
    row_cells,
)
from tests.tui.conftest import AppFactory, settle

FIXTURES = Path(__file__).parents[1] / "importers" / "fixtures" / "claude_code"
# Widest cells of a real archive: a sub-agent id, a long project, 5-digit counts, long titles.
NATURAL = {
    "session": 24,
    "started": 16,
    "project": 24,
    "agent": 14,
    "messages": 5,
    "turns": 5,
    "tools": 5,
    "title": 60,
}


@pytest.mark.parametrize("width", [40, 60, 80, 83, 100, 120, 160, 200])
def test_layout_never_cuts_a_number_and_keeps_the_title(width: int) -> None:
    """At 120 columns (83 beside the projects pane) the Tools column was cut to its first
    digits and the title was off screen; at 80 the secondary columns pushed the title out."""
    shown, title = layout(width, NATURAL)
    assert shown[0] == "session" and shown[-1] == "title"
    assert list(shown) == [k for k in KEYS if k in shown]  # order kept
    used = sum(NATURAL[k] + CELL_PADDING for k in shown if k != "title") + title + CELL_PADDING
    if len(shown) > 2:  # something secondary is still shown: everything fits, title has room
        assert used <= width - SCROLLBAR
        assert title >= TITLE_MIN
    if width >= 180:
        assert shown == KEYS and title == NATURAL["title"]
    if width <= 83:
        assert "turns" not in shown and "agent" not in shown


def test_subagent_rows_show_their_own_part(archive: Archive) -> None:
    archive.import_paths([FIXTURES])
    rows, _ = archive.sessions(limit=50)
    subagents = [r for r in rows if r.parent]
    assert subagents
    for row in subagents:
        cell = row_cells(row)["session"].plain  # type: ignore[union-attr]
        own = row.sessionId[len(row.parent or "") :]
        assert cell == f"{(row.parent or '')[:8]}…{own}"  # e.g. c1a0de00…/agent-b7f00d1
    # Told apart from their parents and from each other (they read "c1a0de00-000…" before).
    cells = [row_cells(r)["session"].plain for r in rows]  # type: ignore[union-attr]
    sub = [row_cells(r)["session"].plain for r in subagents]  # type: ignore[union-attr]
    assert len(set(sub)) == len(sub) and all(cells.count(c) == 1 for c in sub)


def test_one_message_count_in_the_table_and_the_transcript_header(archive: Archive) -> None:
    """The table said 180 and the transcript header 226 for one session: the header counted
    the thinking blocks the transcript lists, which docs/importers.md does not count."""
    archive.import_paths([FIXTURES])
    rows, _ = archive.sessions(limit=50)
    checked = 0
    for row in rows:
        body = archive.show(row.sessionId)
        thinking = sum(1 for m in body.messages if m.kind == "thinking")
        header = session_summary(body.session, body.counts).plain
        table = row_cells(row)["messages"].plain  # type: ignore[union-attr]
        assert f"\n{table} messages ·" in header
        assert int(table) == len(body.messages) - thinking
        checked += bool(thinking)
    assert checked  # a session with thinking was among them
    info = replace(rows[0], messages=180)
    assert "180 messages" in session_summary(info, replace(body.counts, messages=226)).plain


@pytest.mark.anyio
@pytest.mark.parametrize("size", [(120, 30), (80, 24)])
async def test_sessions_table_fits_the_terminal(
    cw_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([FIXTURES])
    app = app_for(cw_home)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        table = app.screen.query_one(SessionsTable)
        assert "title" in table.shown and table.row_count
        widths = {key.value: col.get_render_width(table) for key, col in table.columns.items()}
        assert sum(widths.values()) <= table.size.width
        for key, column in table.columns.items():
            if key.value != "title":  # whole: as wide as its widest cell
                assert column.get_render_width(table) >= column.content_width
        labels = [str(table.get_row_at(i)[0]) for i in range(table.row_count)]
        assert any("…/agent-" in label for label in labels)

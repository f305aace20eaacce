"""The sessions screen driven with Pilot over a real embedded archive."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Select, Static

from cwcore.api import Archive
from cwcore.errors import StoreLocked
from cwtui.app import make_app
from cwtui.screens.sessions import EMPTY_ARCHIVE, SessionsScreen
from cwtui.widgets.projects import SPARK_DAYS, ProjectList
from cwtui.widgets.sessions_table import SessionsTable
from tests.tui.conftest import SIZE, AppFactory, settle, type_text

pytestmark = pytest.mark.anyio


def row_ids(screen: SessionsScreen) -> list[str]:
    table = screen.query_one(SessionsTable)
    return [str(key.value) for key in table.rows]


def static_text(screen: SessionsScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_lists_sessions_newest_first_with_project_counts(
    filled_home: Path, app_for: AppFactory
) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        assert row_ids(screen) == ["s-alpha-1", "s-beta-1", "s-alpha-2", "s-gamma-1"]
        assert "4 sessions" in static_text(screen, "#sessions-status")
        overview = screen.overview
        assert overview is not None
        assert [(p.name, p.sessions) for p in overview.projects] == [
            ("alpha", 2),
            ("beta", 1),
            ("gamma", 1),
        ]
        # CW_NOW is 2026-11-20: alpha was active on the 5th and the 18th; gamma (October) is
        # outside the 28-day window.
        alpha = overview.projects[0].activity
        assert sum(alpha) == 2 and alpha[-3] == 1
        assert sum(overview.projects[2].activity) == 0
        assert overview.agents == ("claude-code", "codex", "pi")
        assert screen.query_one(ProjectList).option_count == 4


async def test_filter_by_project_from_the_list(filled_home: Path, app_for: AppFactory) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await pilot.press("f2", "down", "down", "enter")  # All projects → alpha → beta
        await settle(pilot)
        assert row_ids(screen) == ["s-beta-1"]
        assert screen.filters.project == "beta"
        await pilot.press("f2", "up", "enter")
        await settle(pilot)
        assert row_ids(screen) == ["s-alpha-1", "s-alpha-2"]
        await pilot.press("f7")
        await settle(pilot)
        assert len(row_ids(screen)) == 4


async def test_filter_by_agent_and_since(filled_home: Path, app_for: AppFactory) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        screen.query_one("#agent-filter", Select).value = "codex"
        await settle(pilot)
        assert row_ids(screen) == ["s-beta-1", "s-alpha-2"]

        await pilot.press("f4")
        await type_text(pilot, "2026-11-10")
        await pilot.press("enter")
        await settle(pilot)
        assert row_ids(screen) == ["s-beta-1"]

        await pilot.press("f7")
        await settle(pilot)
        await pilot.press("f4", *"7d", "enter")  # since 2026-11-13T12:00Z
        await settle(pilot)
        assert row_ids(screen) == ["s-alpha-1", "s-beta-1"]

        # A value that is not a date is a notification; the filter stays as it was.
        await pilot.press("f4", "ctrl+u")
        await type_text(pilot, "last tuesday")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.filters.since == "2026-11-13T12:00:00.000Z"
        assert row_ids(screen) == ["s-alpha-1", "s-beta-1"]
        assert any("not an ISO-8601" in n.message for n in app._notifications)


async def test_pages_load_as_the_cursor_nears_the_end(
    filled_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(SessionsScreen, "PAGE_SIZE", 2)
    monkeypatch.setattr(SessionsTable, "PREFETCH", 1)
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        assert row_ids(screen) == ["s-alpha-1", "s-beta-1"]
        assert screen.next_cursor is not None
        assert "more load as you scroll" in static_text(screen, "#sessions-status")
        await pilot.press("down")  # onto the last loaded row
        await settle(pilot)
        assert row_ids(screen) == ["s-alpha-1", "s-beta-1", "s-alpha-2", "s-gamma-1"]
        assert screen.next_cursor is None


async def test_empty_archive_says_how_to_import(cw_home: Path, app_for: AppFactory) -> None:
    app = app_for(cw_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        assert static_text(screen, "#empty-state") == EMPTY_ARCHIVE
        assert not screen.query_one(SessionsTable).display


async def test_an_archive_that_cannot_open_is_a_message_not_a_crash() -> None:
    def locked() -> object:
        raise StoreLocked("another process holds the store lock")

    app = make_app(locked)  # type: ignore[arg-type]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        text = static_text(screen, "#empty-state")
        assert "Cannot open the archive: another process holds the store lock" in text
        assert "Press ctrl+r to retry" in text


async def test_the_first_page_loads_before_the_projects_count(
    filled_home: Path, app_for: AppFactory
) -> None:
    """First paint first: the table's page is the first call, the projects count (one facets
    call, with the sparklines' days) comes after, and a reload does the same again. No call
    pages through every session (the sparklines used to: 5.2 s at a million messages)."""
    calls: list[tuple[str, Any]] = []

    class Recording(Archive):
        def sessions(self, **kw: Any) -> Any:
            calls.append(("sessions", kw["limit"]))
            return super().sessions(**kw)

        def facets(self, **kw: Any) -> Any:
            calls.append(("facets", kw.get("activity_days")))
            return super().facets(**kw)

    app = app_for(filled_home, Recording)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        expected = [("sessions", SessionsScreen.PAGE_SIZE), ("facets", SPARK_DAYS)]
        assert calls == expected
        assert screen.overview is not None
        assert "counting" not in static_text(screen, "#projects-title")
        calls.clear()
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert calls == expected


async def test_a_failing_projects_count_leaves_the_table_and_says_so(
    filled_home: Path, app_for: AppFactory
) -> None:
    """The facets call fails (a store error after the first page): the pane's title says the
    counts are unavailable, the table keeps its rows, nothing crashes."""

    class FailingCounts(Archive):
        def facets(self, **kw: Any) -> Any:
            raise StoreLocked("another process holds the store lock")

    app = app_for(filled_home, FailingCounts)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        assert static_text(screen, "#projects-title") == "Projects (unavailable)"
        assert len(row_ids(screen)) == 4 and screen.overview is None


async def test_a_burst_of_time_filters_counts_the_projects_for_the_last_one(
    filled_home: Path, app_for: AppFactory
) -> None:
    """ctrl+n three times in one burst (any → 24h → 7d → 30d): every change asks the facets
    again, answers for the filters passed over are dropped, and the pane shows the counts and
    sparklines of the last filter."""
    from cwtui.screens.common import archive_handle
    from tests.tui.test_bursts import assert_running_cleanly, burst

    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        burst(app, "ctrl+n", "ctrl+n", "ctrl+n")
        await settle(pilot)
        assert_running_cleanly(app)
        since = screen.filters.since
        assert since is not None
        with archive_handle(app).use() as archive:  # the app's own (it holds the store)
            expected = archive.facets(since=since, activity_days=SPARK_DAYS)
        assert screen.facets == expected
        overview = screen.overview
        assert overview is not None
        assert [(p.name, p.sessions, p.activity) for p in overview.projects] == [
            (p.name, p.sessions, p.activity) for p in expected.projects
        ]

"""Filter pickers (issue 34): agent and project pickers on the search screen filled from the
archive's facets, each choice counted under the other active filters; the time preset cycle
(any → 24h → 7d → 30d → any) on Search and Sessions; the sessions' project counts and agent
choices honouring the active filters; and a filter error that leaves the toggles line and the
standing filters alone. Keys go as bursts where a person would type them so."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Label, OptionList, Select

from cwtui.screens.prompt import PromptScreen
from cwtui.screens.search import SearchScreen
from cwtui.screens.sessions import SessionsScreen
from cwtui.widgets.filter_picker import FilterPicker, next_time, set_token, token_value
from cwtui.widgets.projects import ProjectList
from tests.tui.conftest import SIZE, AppFactory, settle, type_text
from tests.tui.test_bursts import assert_running_cleanly, burst
from tests.tui.test_search_screen import open_search, plain, static_text

pytestmark = pytest.mark.anyio


def picker_rows(app: Any) -> list[str]:
    picker = app.screen
    assert isinstance(picker, FilterPicker)
    listing = picker.query_one("#filter-options", OptionList)
    return [plain(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]


def test_the_time_cycle_and_the_filter_tokens() -> None:
    assert [next_time(t) for t in (None, "24h", "7d", "30d")] == ["24h", "7d", "30d", None]
    assert next_time("2026-11-01") == "24h"  # a typed date is no preset: the cycle starts over
    assert set_token("role:user agent:pi since:7d", "agent", "codex") == (
        "role:user since:7d agent:codex"
    )
    assert set_token("agent:pi \\agent:x", "agent", None) == "\\agent:x"  # escaped stays text
    assert set_token("", "project", "my project") == 'project:"my project"'
    assert token_value('project:"my project" x', "project") == "my project"
    assert token_value("agent:pi agent:codex", "agent") == "codex"  # the last one counts
    assert token_value("none here", "since") is None


async def test_agent_and_project_pickers_count_under_the_other_filters(
    search_home: Path, app_for: AppFactory
) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue")
        await pilot.press("ctrl+b")
        await settle(pilot)
        rows = picker_rows(app)
        assert rows[0].startswith("any agent") and "8 sessions" in rows[0]
        assert [r.split()[0] for r in rows[1:]] == ["claude-code", "codex", "pi"]
        assert "5 sessions" in rows[1] and "2 sessions" in rows[2]
        assert rows[3].endswith("1 session · 1 msg")
        await pilot.press("down", "down", "enter")  # codex
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen)
        assert screen.filter_text == "agent:codex"
        assert screen.last_request is not None and screen.last_request.agent == "codex"
        assert "agent:codex" in plain(screen.toggles_text(160))

        # The projects, counted within the agent codex; every known one listed.
        await pilot.press("ctrl+f")
        await settle(pilot)
        rows = picker_rows(app)
        assert "within agent codex" in plain(app.screen.query_one("#filter-note", Label).content)
        counts = {r.split()[0]: r.split()[1] for r in rows[1:]}
        assert counts == {"alpha": "1", "beta": "1", "delta": "0", "gamma": "0"}
        await pilot.press("escape")  # closed: nothing changes
        await settle(pilot)
        assert screen.filter_text == "agent:codex"

        # Back to any agent: the highlighted row is the current pick, "any" is the first.
        await pilot.press("ctrl+b")
        await settle(pilot)
        assert app.screen.query_one("#filter-options", OptionList).highlighted == 2
        await pilot.press("home", "enter")
        await settle(pilot)
        assert screen.filter_text == ""
        assert screen.last_request is not None and screen.last_request.agent is None


async def test_time_presets_cycle_on_search(search_home: Path, app_for: AppFactory) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue")
        seen = []
        for _ in range(4):
            await pilot.press("ctrl+n")
            await settle(pilot)
            assert screen.last_request is not None
            seen.append((screen.filter_text, screen.last_request.since))
        # CW_NOW is 2026-11-20T12:00Z.
        assert seen == [
            ("since:24h", datetime(2026, 11, 19, 12, tzinfo=UTC)),
            ("since:7d", datetime(2026, 11, 13, 12, tzinfo=UTC)),
            ("since:30d", datetime(2026, 10, 21, 12, tzinfo=UTC)),
            ("", None),
        ]
        # A burst of the key lands where the count says, and the counts follow the time.
        burst(app, "ctrl+n", "ctrl+n", "ctrl+b")
        await settle(pilot)
        assert_running_cleanly(app)
        assert screen.filter_text == "since:7d"
        rows = picker_rows(app)
        assert "within since 2026-11-13" in plain(
            app.screen.query_one("#filter-note", Label).content
        )
        counts = {r.split()[0]: r.split()[1] for r in rows[1:]}
        assert counts == {"claude-code": "3", "codex": "1", "pi": "0"}


async def test_sessions_time_cycle_and_counts_follow_the_filters(
    filled_home: Path, app_for: AppFactory
) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        projects = screen.query_one(ProjectList)

        def project_counts() -> dict[str, int]:
            assert screen.facets is not None
            return {p.name: p.sessions for p in screen.facets.projects}

        assert project_counts() == {"alpha": 2, "beta": 1, "gamma": 1}
        assert projects.option_count == 4  # "All projects" and the three
        burst(app, "ctrl+n", "ctrl+n")  # 7d, in one burst
        await settle(pilot)
        assert_running_cleanly(app)
        assert screen.query_one("#since-filter", Input).value == "7d"
        assert screen.filters.since == "2026-11-13T12:00:00.000Z"
        assert project_counts() == {"alpha": 1, "beta": 1, "gamma": 0}
        assert "All projects" in plain(projects.get_option_at_index(0).prompt)
        assert plain(projects.get_option_at_index(0).prompt).split("\n")[0].endswith("2")

        # The agent choices count under the project and time filters.
        screen.query_one("#agent-filter", Select).value = "codex"
        await settle(pilot)
        assert project_counts() == {"alpha": 0, "beta": 1, "gamma": 0}
        select = screen.query_one("#agent-filter", Select)
        labels = {str(value): plain(prompt) for prompt, value in select._options[1:]}
        assert labels == {"claude-code": "claude-code (1)", "codex": "codex (1)", "pi": "pi (0)"}
        assert select.value == "codex"  # kept across the new options

        await pilot.press("ctrl+n", "ctrl+n")  # 30d, then any
        await settle(pilot)
        assert screen.query_one("#since-filter", Input).value == ""
        assert screen.filters.since is None
        assert project_counts() == {"alpha": 1, "beta": 1, "gamma": 0}


async def test_a_filter_error_leaves_the_toggles_and_the_standing_filters(
    search_home: Path, app_for: AppFactory
) -> None:
    app = app_for(search_home)
    async with app.run_test(size=(160, 45)) as pilot:
        screen = await open_search(pilot, "queue")
        await pilot.press("f5")
        await settle(pilot)
        await type_text(pilot, "project:delta")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.filter_text == "project:delta"

        # A bad value in F5: refused whole, said, and nothing it would have replaced is gone.
        burst(app, "f5", "ctrl+u")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        await type_text(pilot, "since:notadate")
        await pilot.press("enter", "enter")
        await settle(pilot)
        assert_running_cleanly(app)
        assert isinstance(app.screen, SearchScreen)
        assert screen.filter_text == "project:delta"
        assert "project:delta" in static_text(screen, "#search-toggles")
        assert any("since:notadate is not a date" in n.message for n in app._notifications)
        assert screen.last_request is not None and screen.last_request.project == "delta"

        # A bad value typed inline: named on its own line; the toggles line keeps its width.
        toggles = screen.query_one("#search-toggles")
        width = toggles.size.width
        await type_text(pilot, " since:notadate-with-a-long-tail-to-fill-the-status")
        await settle(pilot)
        assert "is not a date" in static_text(screen, "#search-problems")
        assert screen.query_one("#search-problems").display
        assert "not a date" not in static_text(screen, "#search-status")
        assert toggles.size.width >= width > 60  # never squeezed by the problem
        assert "project:delta" in static_text(screen, "#search-toggles")
        await pilot.press("escape")  # cleared: the problem line goes with the query
        await settle(pilot)
        assert not screen.query_one("#search-problems").display


async def test_picker_bursts_neither_crash_nor_pick(search_home: Path, app_for: AppFactory) -> None:
    """The picker opened and Enter twice in the same burst: the Enters were typed before the
    picker existed (dropped), so no pick is made and the screen below stays."""
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue")
        burst(app, "ctrl+b", "down", "enter", "enter", "ctrl+f", "enter")
        await settle(pilot)
        assert_running_cleanly(app)
        assert screen.filter_text == ""
        while not isinstance(app.screen, SearchScreen):
            await pilot.press("escape")
            await settle(pilot)
        assert len(app.screen_stack) == 1

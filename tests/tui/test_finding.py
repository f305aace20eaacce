"""Finding things: search filters (inline, standing, remembered), id prefixes, context, the
empty state, copying; the sessions' sort, text match and id jump; hints candidates."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import pytest
from textual.widgets import Input, OptionList

from cwcore.api import Archive
from cwcore.contract.gather import GatherResponse
from cwcore.contract.search import SearchRequest, SearchResponse
from cwtui.screens.candidates import CandidatesScreen
from cwtui.screens.copy import CopyScreen
from cwtui.screens.prompt import PromptScreen
from cwtui.screens.recall import RecallScreen
from cwtui.screens.search import QueryInput
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.widgets.sessions_table import SessionsTable
from tests.tui.conftest import SIZE, AppFactory, settle, type_text
from tests.tui.test_bursts import burst
from tests.tui.test_search_screen import open_search, plain, static_text

pytestmark = pytest.mark.anyio


class RecordingArchive(Archive):
    """The real archive, recording the search and gather requests it receives."""

    #: (method, the typed request the screen built, neighbours: 0 for a search).
    calls: ClassVar[list[tuple[str, SearchRequest, int]]] = []

    def search(self, request: SearchRequest | Mapping[str, Any]) -> SearchResponse:
        assert isinstance(request, SearchRequest)  # the screen validates at its edge
        RecordingArchive.calls.append(("search", request, 0))
        return super().search(request)

    def gather(
        self, request: SearchRequest | Mapping[str, Any], *, neighbors: int = 1
    ) -> GatherResponse:
        assert isinstance(request, SearchRequest)
        RecordingArchive.calls.append(("gather", request, neighbors))
        return super().gather(request, neighbors=neighbors)


def last_request() -> SearchRequest:
    return RecordingArchive.calls[-1][1]


async def test_inline_filters_narrow_the_search_and_a_session_prefix_resolves(
    search_home: Path, app_for: AppFactory
) -> None:
    RecordingArchive.calls = []
    app = app_for(search_home, RecordingArchive)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue backend session:s-delta-2 role:user")
        request = last_request()
        assert request.query == "queue backend"
        assert request.sessions == ("s-delta-2",) and request.role == "user"
        assert {h.source.session_id for h in screen.hits} == {"s-delta-2"}
        assert all(h.source.message_key.startswith("user:") for h in screen.hits)
        # A unique prefix (what the results list shows) names its session.
        bar = screen.query_one(QueryInput)
        bar.value = "queue backend session:s-delta-3"
        await settle(pilot)
        assert {h.source.session_id for h in screen.hits} == {"s-delta-3"}
        bar.value = "queue backend session:s-del"  # a prefix of every s-delta-N
        await settle(pilot)
        assert "ambiguous" in static_text(screen, "#search-empty")
        bar.value = "queue since:2026-11-14 until:2026-11-16"
        await settle(pilot)
        assert last_request().since == datetime(2026, 11, 14, tzinfo=UTC)
        assert last_request().until == datetime(2026, 11, 16, 23, 59, 59, 999000, tzinfo=UTC)
        assert {h.source.session_id for h in screen.hits} == {"s-delta-3"}
        bar.value = "queue kind:tool"  # a bad value: said, and left out of the request
        await settle(pilot)
        assert last_request().kind is None
        # On its own line: in the status line it took the toggles line's place (issue 34).
        assert "kind:tool is not a kind" in static_text(screen, "#search-problems")
        assert "not a kind" not in static_text(screen, "#search-status")


async def test_standing_filters_stay_and_history_brings_a_search_back(
    search_home: Path, app_for: AppFactory
) -> None:
    RecordingArchive.calls = []
    app = app_for(search_home, RecordingArchive)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue backend")
        await pilot.press("f5")
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        await type_text(pilot, "project:delta agent:claude-code")
        await pilot.press("enter")
        await settle(pilot)
        assert last_request().project == "delta" and last_request().agent == "claude-code"
        assert "project:delta" in plain(screen.toggles_text(140))
        await pilot.press("enter")  # the full search, remembered with its filters
        await settle(pilot)
        bar = screen.query_one(QueryInput)
        bar.focus()
        bar.value = "socket path"  # another query: the standing filters still apply
        await settle(pilot)
        assert last_request().project == "delta" and not screen.hits
        empty = static_text(screen, "#search-empty")
        assert empty.startswith("No results for “socket path” with project delta, agent")
        assert "fewer filters (F5" in empty and "agent" not in empty.split("\n")[1]
        await pilot.press("f5")
        burst(app, *["backspace"] * 40)  # clear them (one burst: each press waits for idle)
        await settle(pilot)
        assert isinstance(app.screen, PromptScreen)
        assert app.screen.query_one(Input).value == ""
        await pilot.press("enter")
        await settle(pilot)
        assert last_request().project is None and screen.hits
        await pilot.press("up")  # the earlier search, its filters with it
        await settle(pilot)
        assert bar.value == "queue backend" and screen.filter_text.startswith("project:delta")
        assert last_request().project == "delta"


async def test_context_shows_neighbours_in_search_and_recall(
    search_home: Path, app_for: AppFactory
) -> None:
    RecordingArchive.calls = []
    app = app_for(search_home, RecordingArchive)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "parse since dates")
        await pilot.press("f6")
        await settle(pilot)
        kind, _, neighbors = RecordingArchive.calls[-1]
        assert kind == "gather" and neighbors == 1
        assert len(screen.anchors) == len(screen.hits) > 0  # each hit with its neighbours
        assert "context ±1" in static_text(screen, "#search-status")
        preview = static_text(screen, "#preview")
        assert "context (not ranked)" in preview and "▶ the hit" in preview
        await pilot.press("enter")  # the full search (as gather), to the results
        await settle(pilot)
        assert RecordingArchive.calls[-1][0] == "gather"
        await pilot.press("enter")  # the recall view has the same toggle
        await settle(pilot)
        recall = app.screen
        assert isinstance(recall, RecallScreen)
        await pilot.press("g")
        await settle(pilot)
        around = recall.query(".recall-context")
        assert around and "context" in plain(around.first().content)


async def test_copy_menu_from_a_result(search_home: Path, app_for: AppFactory) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue backend")
        await pilot.press("enter")
        await settle(pilot)
        hit = screen.hits[0]
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert isinstance(app.screen, CopyScreen)
        await pilot.press("3")
        await pilot.pause()
        assert app.clipboard == hit.locator and app.screen is screen
        await pilot.press("ctrl+t", "1")
        await pilot.pause()
        assert app.clipboard == hit.source.session_id


async def test_sessions_sort_match_and_open_by_prefix(
    search_home: Path, app_for: AppFactory
) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        table = screen.query_one(SessionsTable)

        def ids() -> list[str]:
            return [str(key.value) for key in table.rows]

        assert ids()[0] == "s-delta-4"  # newest first
        await pilot.press("f5")  # by end … then messages
        await settle(pilot)
        await pilot.press("f5")
        await settle(pilot)
        assert screen.filters.sort == "messages" and ids()[0] == "s-alpha-1"  # 7 messages
        assert "by messages ↓" in str(screen.query_one("#sessions-status").render())
        await pilot.press("f6")
        await settle(pilot)
        assert ids()[-1] == "s-alpha-1"
        await pilot.press("slash", *"delta", "enter")
        await settle(pilot)
        assert sorted(ids()) == ["s-delta-1", "s-delta-2", "s-delta-3", "s-delta-4"]
        await pilot.press("f7")
        await settle(pilot)
        assert len(ids()) == 8 and screen.query_one("#match-filter", Input).value == ""
        await pilot.press("ctrl+g")
        await type_text(pilot, "s-gam")  # a prefix of s-gamma-1
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
        assert app.screen.session_id == "s-gamma-1"


async def test_the_projects_pane_folds_away_when_narrow(
    filled_home: Path, app_for: AppFactory
) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        pane = screen.query_one("#projects-pane")
        assert not pane.display  # folded at 80 columns
        await pilot.press("f8")
        await pilot.pause()
        assert pane.display
        await pilot.press("f8")
        await pilot.press("f2")  # focusing the projects brings the pane back
        await pilot.pause()
        assert pane.display and app.focused is screen.query_one("#projects", OptionList)


async def test_hint_candidates_open_recall_and_transcript(
    cw_home: Path, tmp_path: Path, app_for: AppFactory
) -> None:
    from tests.tui.conftest import archive_lines, write_jsonl
    from tests.tui.test_hints_screen import CUE, SESSION, omega_lines

    source = write_jsonl(tmp_path / "s.jsonl", archive_lines() + omega_lines())
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([source])
        cue = archive.preflight(CUE, session=SESSION, message_key="user:u3")
    assert cue.diagnostics.candidates or cue.diagnostics.shown
    app = app_for(cw_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("alt+4")
        await settle(pilot)
        await pilot.press("s")
        await type_text(pilot, SESSION[:8])  # a prefix
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert screen.session == SESSION and screen.hints
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, CandidatesScreen)
        first = app.screen.rows[0]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, RecallScreen)
        assert app.screen.body is not None and app.screen.body.document_id == first.document_id
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("c", "o")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen) and app.screen.session_id == SESSION

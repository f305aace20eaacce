"""Saved searches (ctrl+s / ctrl+r on Search) and the last search restored on start, kept in
``CW_HOME/tui-state.json`` (issue 34: "Saved searches (a few slots, persisted), and the last
query and filters restored on start")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore import config
from cwtui import tui_state
from cwtui.screens.prompt import PromptScreen
from cwtui.screens.saved import SavedSearchesScreen
from cwtui.screens.search import QueryInput, SearchScreen
from cwtui.tui_state import SavedSearch, SearchView, TuiState
from tests.tui.conftest import SIZE, AppFactory, settle, type_text
from tests.tui.test_bursts import assert_running_cleanly, burst
from tests.tui.test_search_screen import open_search

pytestmark = pytest.mark.anyio


def state_file() -> Path:
    return config.default_home() / tui_state.FILE_NAME


def saved_state() -> TuiState:
    loaded = tui_state.load(state_file())
    assert loaded.problem is None
    return loaded.state


async def test_save_then_recall_a_search(search_home: Path, app_for: AppFactory) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue backend")
        await pilot.press("f4", "f5")  # relation: question; the standing filters prompt
        await settle(pilot)
        await type_text(pilot, "project:delta")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert isinstance(app.screen, SavedSearchesScreen)
        await pilot.press("enter")  # slot 1, the first empty one
        await settle(pilot)
        prompt = app.screen
        assert isinstance(prompt, PromptScreen) and prompt.value == "queue backend"
        await pilot.press("ctrl+u")  # clear the name first
        await type_text(pilot, "queue q")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        saved = saved_state().slot(1)
        assert saved is not None and saved.name == "queue q"
        assert saved.view.query == "queue backend"
        assert saved.view.filters == "project:delta" and saved.view.relation == "question"

        # Something else entirely, then slot 1 back.
        await pilot.press("escape", "f4", "f4", "f4", "f4", "f4", *"socket")
        await settle(pilot)
        screen.filter_text = ""
        assert screen.relation is None
        await pilot.press("ctrl+r")
        await settle(pilot)
        assert isinstance(app.screen, SavedSearchesScreen)
        await pilot.press("1")
        await settle(pilot)
        assert app.screen is screen
        assert screen.query_one(QueryInput).value == "queue backend"
        assert (screen.filter_text, screen.relation) == ("project:delta", "question")
        assert screen.last_request is not None and screen.last_request.project == "delta"
        assert screen.last_request.relation == "question"
        assert screen.history[-1] == ("queue backend", "project:delta")  # ↑ brings it back
    assert app._exception is None


async def test_the_last_search_is_restored_on_start(search_home: Path, app_for: AppFactory) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "rocksdb")
        await pilot.press("f5")
        await settle(pilot)
        await type_text(pilot, "agent:claude-code")
        await pilot.press("enter", "f8", "f7", "f6")
        await settle(pilot)
        await pilot.press("ctrl+q")
    assert app._exception is None
    last = saved_state().last
    assert last is not None and (last.query, last.filters) == ("rocksdb", "agent:claude-code")

    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("alt+2")
        await settle(pilot)
        screen = app.screen  # type: ignore[assignment]
        assert isinstance(screen, SearchScreen)
        bar = screen.query_one(QueryInput)
        assert bar.value == "rocksdb" and screen.filter_text == "agent:claude-code"
        assert (screen.order, screen.density, screen.context) == ("newest", 1, 1)
        # The fast search of it ran (no full search unasked), with the standing filter.
        assert screen.last_request is not None and screen.last_request.query == "rocksdb"
        assert screen.last_request.agent == "claude-code" and not screen.last_request.rerank
        assert screen.hits
        # The restored query is selected: what is typed next replaces it.
        await type_text(pilot, "queue")
        await settle(pilot)
        assert bar.value == "queue"
    assert app._exception is None


async def test_restore_can_be_turned_off(
    search_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    tui_state.save(state_file(), TuiState(last=SearchView(query="rocksdb")))
    monkeypatch.setattr(SearchScreen, "RESTORE", False)
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "")
        assert screen.query_one(QueryInput).value == ""
        await type_text(pilot, "queue")
        await pilot.press("ctrl+q")
    assert saved_state().last == SearchView(query="rocksdb")  # and nothing written


async def test_unknown_values_fall_back_field_by_field(
    search_home: Path, app_for: AppFactory
) -> None:
    """A scope, policy or order this cw does not know (an older or newer file) is left at its
    default; the rest is restored. A project scope without its project is scope all."""
    odd = SearchView(
        query="queue", scope="project", policy="sometimes", order="sideways", context=7
    )
    tui_state.save(state_file(), TuiState(last=odd))
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "")
        assert screen.query_one(QueryInput).value == "queue"
        assert (screen.scope, screen.policy, screen.order, screen.context) == (
            "all",
            screen.setting_policy,
            "relevance",
            0,
        )
    assert app._exception is None


async def test_a_corrupt_state_file_is_reported_once_and_replaced(
    search_home: Path, app_for: AppFactory
) -> None:
    state_file().write_text('{"version": 1, "last": {"query": [', encoding="utf-8")
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "")
        notes = [str(n.message) for n in app._notifications]
        assert any("tui-state.json.corrupt" in note for note in notes), notes
        assert screen.query_one(QueryInput).value == ""
        await type_text(pilot, "socket")
        await pilot.press("ctrl+q")
    assert app._exception is None
    assert (state_file().parent / "tui-state.json.corrupt").exists()
    assert saved_state().last == SearchView(query="socket")  # replaced by a good one

    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        await open_search(pilot, "")
        assert not any("corrupt" in str(n.message) for n in app._notifications)  # once
    assert app._exception is None


async def test_delete_empties_a_slot_and_an_empty_slot_recalls_nothing(
    search_home: Path, app_for: AppFactory
) -> None:
    kept = SavedSearch(2, "kept", SearchView(query="socket"))
    gone = SavedSearch(1, "gone", SearchView(query="rocksdb"))
    tui_state.save(state_file(), TuiState().with_saved(gone).with_saved(kept))
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "")
        await pilot.press("ctrl+r")
        await settle(pilot)
        await pilot.press("delete")  # the first saved slot is highlighted: 1
        await settle(pilot)
        assert app.screen is screen
        assert saved_state().saved == (kept,)
        await pilot.press("ctrl+r")
        await settle(pilot)
        await pilot.press("5")  # empty: said, and the dialog stays
        await settle(pilot)
        assert isinstance(app.screen, SavedSearchesScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen and screen.query_one(QueryInput).value == ""
    assert app._exception is None


@pytest.mark.parametrize(
    "keys",
    [
        ("ctrl+s", "enter", "enter"),
        ("ctrl+s", "enter", "enter", "enter", "enter"),
        ("ctrl+s", "escape", "enter", "enter"),
        ("ctrl+s", "1", "enter", "escape"),
        ("ctrl+r", "enter", "enter"),
        ("ctrl+r", "1", "enter", "enter"),
        ("ctrl+r", "delete", "enter"),
        ("ctrl+s", "ctrl+r", "ctrl+s", "enter"),
    ],
    ids=lambda keys: "-".join(keys),
)
async def test_bursts_into_the_slots_change_nothing(
    search_home: Path, app_for: AppFactory, keys: tuple[str, ...]
) -> None:
    """Keys of the burst that opened the dialog were typed before it: they pick, save or empty
    nothing, and a second Enter never pops the Search screen."""
    before = TuiState().with_saved(SavedSearch(1, "one", SearchView(query="socket")))
    tui_state.save(state_file(), before)
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen: Any = await open_search(pilot, "queue")
        burst(app, *keys)
        await settle(pilot)
        assert_running_cleanly(app)
        assert screen in app.screen_stack
        assert tui_state.load(state_file()).state.saved == before.saved
        for _ in range(3):
            if app.screen is screen:
                break
            await pilot.press("escape")
            await settle(pilot)
        assert app.screen is screen
        # A digit of the burst may have reached the query bar before the dialog was up (as
        # any key typed ahead of a dialog does): typed, never a slot picked.
        assert screen.query_one(QueryInput).value.startswith("queue")
    assert app._exception is None


@pytest.mark.parametrize("key", ["ctrl+s", "ctrl+r"])
async def test_the_slot_list_is_centred_like_every_dialog(
    search_home: Path, app_for: AppFactory, key: str
) -> None:
    """The slot list opened in the top left corner, over the query bar (seen in tmux): its
    screen was missing from the modals' ``align: center middle`` rule."""
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        await open_search(pilot, "queue backend")
        await pilot.press(key)
        await settle(pilot)
        assert isinstance(app.screen, SavedSearchesScreen)
        dialog = app.screen.query_one("#saved-dialog").region
        width, height = SIZE
        assert abs((dialog.x + dialog.right) - width) <= 2
        assert abs((dialog.y + dialog.bottom) - height) <= 2

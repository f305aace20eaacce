"""Key bursts the way a terminal delivers them: every key of a burst posted in one tick, no
pause between them (keys queued during a stall under load arrive exactly so). Issue 34: ``i
Enter Enter`` on Sessions dismissed the id prompt twice and the second pop removed the base
screen (``ScreenStackError``); 6 of 7 such bursts crashed the app.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.widgets import Input

from cwtui.screens.export import ExportScreen
from cwtui.screens.search import SearchScreen
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.supersede import SupersedeScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.widgets.results import ResultsList
from tests.tui.conftest import SIZE, AppFactory, settle
from tests.tui.test_search_screen import open_search

pytestmark = pytest.mark.anyio

NAMED = {"enter": "\r", "escape": "\x1b", "space": " ", "tab": "\t"}


def burst(app: Any, *keys: str) -> None:
    """Post ``keys`` to the app in one tick, as one terminal read delivers them."""
    for key in keys:
        app.post_message(events.Key(key, NAMED.get(key, key if len(key) == 1 else None)))


def assert_running_cleanly(app: Any) -> None:
    assert app._exception is None, app._exception
    assert app.is_running
    assert len(app.screen_stack) >= 1


@pytest.mark.parametrize(
    "keys",
    [
        ("i", "enter", "enter"),
        ("i", "escape", "enter", "enter"),
        ("i", "enter", "enter", "enter", "enter"),
        ("i", "escape", "escape", "escape"),
    ],
    ids=lambda keys: "-".join(keys),
)
async def test_a_modal_submitted_twice_in_one_burst_closes_once(
    filled_home: Path, app_for: AppFactory, keys: tuple[str, ...]
) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        base = app.screen
        assert isinstance(base, SessionsScreen)
        burst(app, *keys)
        await settle(pilot)
        assert_running_cleanly(app)
        assert base in app.screen_stack  # the base screen is never popped by a modal's submit
        await pilot.press("escape", "escape")
        await settle(pilot)
        assert app.screen is base
    assert app._exception is None, app._exception


async def test_search_id_prompt_burst(filled_home: Path, app_for: AppFactory) -> None:
    """Search: ``i i Enter Enter`` (the second ``i`` is typed into the prompt)."""
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        search = app.screen
        assert isinstance(search, SearchScreen)
        await pilot.press("escape")  # leave the query bar so `i` is a binding
        await settle(pilot)
        burst(app, "i", "i", "enter", "enter")
        await settle(pilot)
        assert_running_cleanly(app)
        assert search in app.screen_stack
    assert app._exception is None, app._exception


@pytest.mark.parametrize(
    "keys",
    [("enter", "j", "enter", "j", "enter"), ("enter", "k", "enter"), ("enter", "enter")],
    ids=lambda keys: "-".join(keys),
)
async def test_one_transcript_opens_from_a_burst_on_sessions(
    filled_home: Path, app_for: AppFactory, keys: tuple[str, ...]
) -> None:
    """Issue 34: ``Enter j Enter j Enter`` stacked four transcripts (each Esc 1.5–2.7 s back),
    ``Enter k Enter`` opened the same session twice. One open at a time."""
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        base = app.screen
        burst(app, *keys)
        await settle(pilot)
        assert_running_cleanly(app)
        opened = [s for s in app.screen_stack if isinstance(s, TranscriptScreen)]
        assert len(opened) == 1, app.screen_stack
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is base
    assert app._exception is None, app._exception


async def test_supersede_needs_a_typed_reason(search_home: Path, app_for: AppFactory) -> None:
    """Issue 34: after Enter, a new query typed into the result list opened Supersede on ``x``
    and three Enters retired the document with no reason. Enters alone retire nothing."""
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "rocksdb")
        await pilot.press("down")
        target = screen.query_one(ResultsList).current
        assert target is not None
        burst(app, "x", "enter", "enter", "enter", "enter")
        await settle(pilot)
        assert_running_cleanly(app)
        assert isinstance(app.screen, SupersedeScreen)  # still asking for the reason
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen
        with app.archive_handle.use() as archive:
            view = archive.show_document(target.document_id, include_superseded=True)
        assert view.state != "superseded"
    assert app._exception is None, app._exception


@pytest.mark.parametrize("field", ["d", "slash"])
async def test_escape_leaves_a_sessions_filter_field(
    filled_home: Path, app_for: AppFactory, field: str
) -> None:
    """Issue 34: Esc in a Sessions filter field kept the cursor there, so the next command keys
    (``f`` for forget, ``e`` for export) were typed into the filter instead."""
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        base = app.screen
        burst(app, field, "escape", "e")
        await settle(pilot)
        assert_running_cleanly(app)
        assert isinstance(app.screen, ExportScreen)  # `e` reached the screen, not the field
        for selector in ("#since-filter", "#match-filter"):
            assert base.query_one(selector, Input).value == ""
    assert app._exception is None, app._exception


async def test_a_shell_line_typed_into_sessions_exports_nothing(
    filled_home: Path, app_for: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: ``echo hi > out`` typed into the TUI by mistake opened Export on ``e`` and the
    rest became an export file named after the command. Keys typed before a dialog is on the
    screen are not typed into it."""
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.iterdir())
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        burst(app, "e", *"cho hi > out", "enter", "enter")
        await settle(pilot)
        assert_running_cleanly(app)
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        path = dialog.query_one("#export-path", Input).value
        assert "cho" not in path and "out" not in path
        await pilot.press("escape")
        await settle(pilot)
    assert set(tmp_path.iterdir()) == before
    assert app._exception is None, app._exception


async def test_keys_typed_after_a_dialog_shows_are_taken(
    filled_home: Path, app_for: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other side of the rule: once the dialog is painted, typing goes into it."""
    monkeypatch.chdir(tmp_path)
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        field = dialog.query_one("#export-path", Input)
        field.value = ""
        await pilot.press(*"typed.md", "enter")
        await settle(pilot)
    assert (tmp_path / "typed.md").is_file()
    assert app._exception is None, app._exception

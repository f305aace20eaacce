"""TUI speed by design, without timing: Esc keeps the screen below as it was (no rebuild),
quit does not wait on a worker blocked in a call, and opening at a hit scrolls once."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.screen import Screen

from cwcore.api import Archive
from cwcore.contract.views import Transcript
from cwtui.app import make_app
from cwtui.screens.search import SearchScreen
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.widgets.message import MessageView
from cwtui.widgets.results import ResultsList
from cwtui.widgets.sessions_table import SessionsTable
from cwtui.widgets.transcript_view import TranscriptView
from tests.helpers import HomeCache
from tests.tui.conftest import SIZE, AppFactory, settle
from tests.tui.test_transcript_reading import _import_long

pytestmark = pytest.mark.anyio


@pytest.fixture
def long_home(cw_home: Path, home_cache: HomeCache) -> Path:
    return home_cache.clone("tui-long", _import_long, cw_home)


class Frames:
    """Where the hit sits in the view at every frame Textual paints (rows from the view's top),
    from the first frame that shows it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, key: str) -> None:
        self.rows: list[int] = []
        frames = self
        refresh_layout = Screen._refresh_layout

        def frame(screen: Any, *args: Any, **kwargs: Any) -> Any:
            result = refresh_layout(screen, *args, **kwargs)
            if isinstance(screen, TranscriptScreen) and screen.is_current:
                view = screen.query_one(TranscriptView)
                hit = next((w for w in view.query(MessageView) if w.key == key), None)
                if hit is not None and hit.virtual_region.height and not view.has_class("-landing"):
                    frames.rows.append(hit.virtual_region.y - round(view.scroll_y))
            return result

        monkeypatch.setattr(Screen, "_refresh_layout", frame)


async def test_opening_at_a_hit_scrolls_to_it_once(
    long_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    frames = Frames(monkeypatch, "assistant:m61")
    app = app_for(long_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.push_screen(TranscriptScreen("long", focus_key="assistant:m61"))
        await settle(pilot)
        for _ in range(5):
            await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        assert screen.query_one(".message.current", MessageView).key == "assistant:m61"
        # Every frame that showed the transcript showed the hit at the top: it was never
        # painted elsewhere first, nor pushed down by the batch above it and scrolled back.
        assert frames.rows and set(frames.rows) == {0}, frames.rows


class Counted:
    """Counts the calls of ``cls.name`` (the original still runs)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, cls: type, name: str) -> None:
        self.calls = 0
        original = getattr(cls, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(cls, name, counted)


async def test_esc_from_a_transcript_keeps_the_sessions_screen_as_it_was(
    long_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    reloads = Counted(monkeypatch, SessionsScreen, "action_reload")
    resets = Counted(monkeypatch, SessionsTable, "reset")
    composed = Counted(monkeypatch, SessionsScreen, "compose")
    app = app_for(long_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sessions = app.screen
        assert isinstance(sessions, SessionsScreen)
        table = sessions.query_one(SessionsTable)
        rows, before = table.row_count, (reloads.calls, resets.calls, composed.calls)
        widgets = set(sessions.walk_children())
        assert rows and sessions.open(TranscriptScreen("long"))
        await settle(pilot)
        await pilot.press("G")  # read to the end: more messages mounted
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is sessions
        # The same widgets, the same rows: nothing reloaded, reset or composed again.
        assert sessions.query_one(SessionsTable) is table and table.row_count == rows
        assert set(sessions.walk_children()) == widgets
        assert (reloads.calls, resets.calls, composed.calls) == before


async def test_esc_from_a_hit_keeps_the_search_results_as_they_were(
    long_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    searches = Counted(monkeypatch, SearchScreen, "_run")
    app = app_for(long_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.switch_mode("search")
        await settle(pilot)
        search = app.screen
        assert isinstance(search, SearchScreen)
        search.query_one("#search-query").value = "zebracorn"  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert search.hits
        results = search.query_one(ResultsList)
        hits, runs = list(search.hits), searches.calls
        source = hits[0].source
        assert search.open(TranscriptScreen(source.session_id, focus_key=source.message_key))
        await settle(pilot)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is search
        assert search.query_one(ResultsList) is results and search.hits == hits
        assert searches.calls == runs  # not searched again


class BlockingArchive(Archive):
    """The real archive, whose ``show`` blocks until :attr:`release` is set (a daemon call
    that takes long); :attr:`closed` is set when the archive is closed."""

    entered = threading.Event()
    release = threading.Event()
    closed = threading.Event()

    def show(
        self, session: str, *, include_all: bool = False, hide_superseded: bool = False
    ) -> Transcript:
        self.entered.set()
        self.release.wait(60)
        return super().show(session, include_all=include_all, hide_superseded=hide_superseded)

    def close(self) -> None:
        super().close()
        self.closed.set()


async def test_quit_does_not_wait_on_a_worker_blocked_in_a_call(long_home: Path) -> None:
    for event in (BlockingArchive.entered, BlockingArchive.release, BlockingArchive.closed):
        event.clear()
    app = make_app(lambda: BlockingArchive.open(long_home, embedded=True))
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            screen = app.screen
            assert isinstance(screen, SessionsScreen) and screen.open(TranscriptScreen("long"))
            assert await asyncio.to_thread(BlockingArchive.entered.wait, 60)
            await pilot.press("ctrl+q")
        # The app is gone while the call is still in flight: the archive is not closed under
        # it; the call closes it as it ends (its write, if any, committed first).
        assert app.exiting and not BlockingArchive.closed.is_set()
    finally:
        BlockingArchive.release.set()
    assert await asyncio.to_thread(BlockingArchive.closed.wait, 60)

"""The TUI under keys that arrive at the wrong moment: screens that go while they mount or while
their workers run, and keys typed right after ``q``. None of these may raise; a traceback, should
one still happen, makes ``cw tui`` exit non-zero.

A slow archive holds the transcript's worker open on an event, so "still loading" is a state the
test controls, never a race it hopes to win. Keys that a terminal delivers in one read are posted
in one tick (no awaits between them), which is what makes them land in the same burst.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from textual import events

from cwcore.api import Archive
from cwcore.contract.views import Transcript
from cwtui.commands import tui as tui_command
from cwtui.screens.export import ExportScreen
from cwtui.screens.forget import ForgetScreen
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.transcript import TranscriptScreen
from tests.tui.conftest import SIZE, AppFactory, settle

pytestmark = pytest.mark.anyio


class SlowArchive(Archive):
    """The real archive, whose ``show`` waits for :attr:`gate` (and signals :attr:`entered`)."""

    gate = threading.Event()
    entered = threading.Event()

    def show(self, session: str, **kwargs: Any) -> Transcript:
        SlowArchive.entered.set()
        if not SlowArchive.gate.wait(30):
            raise AssertionError("the test never released the transcript worker")
        return super().show(session, **kwargs)


@pytest.fixture(autouse=True)
def closed_gate() -> Any:
    SlowArchive.gate.clear()
    SlowArchive.entered.clear()
    yield
    SlowArchive.gate.set()  # never leave a worker thread blocked behind a failed test


def assert_no_crash(app: Any) -> None:
    """The app ended by itself and cleanly: no exception, return code 0."""
    assert app._exception is None, app._exception
    assert app.return_code == 0


async def test_escape_before_the_transcript_has_mounted(
    filled_home: Path, app_for: AppFactory
) -> None:
    """Enter then Esc in one burst: the Esc binding reaches the transcript before Textual has
    mounted its widgets. Popping it then ran the Header's mount on a half-removed tree
    (``NoMatches: No nodes match 'HeaderTitle'``)."""
    app = app_for(filled_home, SlowArchive)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = TranscriptScreen("s-alpha-1")
        app.push_screen(screen)  # what Enter on a session does
        await app.run_action("back", screen)  # the Esc of the same burst
        await pilot.pause()
        SlowArchive.gate.set()
        await settle(pilot)
        assert app.screen is screen  # the early Esc was ignored; the next one goes back
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        await pilot.press("ctrl+q")  # q types into the Sessions text match
    assert_no_crash(app)


async def test_a_late_result_of_a_popped_transcript_is_dropped(
    filled_home: Path, app_for: AppFactory
) -> None:
    """Esc while the transcript is loading: the screen leaves the stack at once, but Textual
    removes its widgets afterwards. A result handled in between (here posted in the same tick)
    queried widgets that were being removed; it must be dropped, and the worker cancelled."""
    with Archive.open(filled_home, embedded=True) as archive:
        body = archive.show("s-alpha-1")
    app = app_for(filled_home, SlowArchive)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        assert await asyncio.to_thread(SlowArchive.entered.wait, 30)
        (worker,) = [w for w in app.workers if w.group == "transcript"]
        app.pop_screen()  # what Esc does
        screen.post_message(TranscriptScreen.Loaded(body))
        await pilot.pause()
        assert worker.is_cancelled
        SlowArchive.gate.set()
        await settle(pilot)
        assert screen.body is None  # neither the posted result nor the worker's was shown
        assert isinstance(app.screen, SessionsScreen)
        await pilot.press("ctrl+q")  # q types into the Sessions text match
    assert_no_crash(app)


@pytest.mark.parametrize(("key", "dialog"), [("ctrl+e", ExportScreen), ("ctrl+f", ForgetScreen)])
async def test_a_key_right_after_q_opens_no_dialog(
    filled_home: Path, app_for: AppFactory, key: str, dialog: type[Any]
) -> None:
    """Quit then export (or forget) in one burst: the dialog was pushed while the app was
    already exiting and its mount handler found no widgets (``NoMatches: #export-path``).
    (Quit, export and forget are ctrl+q, ctrl+e and ctrl+f on Sessions: letters type.)"""
    app = app_for(filled_home)
    pushed: list[Any] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.post_message(events.Key("ctrl+q", None))
        app.post_message(events.Key(key, None))
        await pilot.pause()
        pushed = [s for s in app.screen_stack if isinstance(s, dialog)]
    assert pushed == []
    assert_no_crash(app)


def test_cw_tui_exits_non_zero_after_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """Textual prints a handler's traceback and returns from ``run`` with return code 1; the
    process used to exit 0 regardless."""

    class Crashed:
        return_code = 1

        def run(self) -> None:
            pass

    monkeypatch.setattr(tui_command.Archive, "open", lambda: object())
    monkeypatch.setattr("cwtui.app.make_app", lambda factory: Crashed())
    with pytest.raises(SystemExit) as exit_info:
        tui_command.tui()
    assert exit_info.value.code == 1

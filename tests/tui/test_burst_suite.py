"""The burst suite (issue 34, "Done when"): every screen takes key bursts sent with no pause
between the keys — open/back, a modal submitted twice, typing into lists, Esc from inputs — with
no crash, the screen stack as expected, and no change to the archive or the disk that was not
asked for (no supersede, no forget, no export file).

A burst is posted in one tick (:func:`tests.tui.test_bursts.burst`), as one terminal read
delivers it; keys queued during a stall under load arrive exactly so. The fast version runs a
fixed burst per screen; the slow one (``-m slow``) 100 seeded random bursts over each screen's
keys.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.screen import Screen
from textual.widgets import Input

from cwcore.api import Archive
from cwtui import tui_state
from cwtui.screens.candidates import CandidatesScreen
from cwtui.screens.document import DocumentScreen
from cwtui.screens.export import ExportScreen
from cwtui.screens.forget import ForgetScreen
from cwtui.screens.help import HelpScreen
from cwtui.screens.hints import HintsScreen
from cwtui.screens.index import IndexScreen
from cwtui.screens.partial import PartialScreen
from cwtui.screens.prompt import PromptScreen
from cwtui.screens.recall import RecallScreen
from cwtui.screens.saved import SavedSearchesScreen
from cwtui.screens.search import SearchScreen
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.supersede import SupersedeScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.screens.unsupersede import UnsupersedeScreen
from cwtui.widgets.filter_picker import FilterPicker
from tests.helpers import HomeCache
from tests.tui.conftest import SIZE, AppFactory, archive_lines, settle, topic_lines, write_jsonl
from tests.tui.test_bursts import assert_running_cleanly, burst

pytestmark = pytest.mark.anyio

Setup = Callable[[Any], Awaitable[None]]


async def go(pilot: Any, *keys: str) -> None:
    """Keys one at a time, settling after each (how the suite reaches a screen)."""
    for key in keys:
        await pilot.press(key)
        await settle(pilot)


async def search(pilot: Any, text: str, *then: str) -> None:
    """The Search screen with ``text`` typed into its bar, then ``then`` one key at a time.

    The text arrives as one burst (as a paste or a fast typist delivers it) and is settled
    once: typed key by key, each letter cost a press and a settle, two idle waits of Textual's
    pilot (at least 20 ms each, far more under load), about a second per set-up."""
    await go(pilot, "alt+2")
    burst(pilot.app, *text)
    await settle(pilot)
    assert pilot.app.screen.query_one("#search-query", Input).value == text
    await go(pilot, *then)


async def search_results(pilot: Any) -> None:
    await search(pilot, "rocksdb", "enter")


async def superseded_document(pilot: Any) -> None:
    """The audit view of a superseded document (superseded through the archive, not the TUI,
    before the screen opens: the suite's change counter stays at zero)."""
    await search_results(pilot)
    screen = pilot.app.screen
    hit = screen.hits[0]
    with pilot.app.archive_handle.use() as archive:
        archive.supersede(hit.document_id, reason="set up by the test")
    pilot.app.push_screen(DocumentScreen(hit.document_id))
    await settle(pilot)


async def candidates(pilot: Any) -> None:
    from tests.tui.test_hints_screen import SESSION

    await go(pilot, "alt+4", "s")
    burst(pilot.app, *SESSION[:8])  # typed at once, as in search()
    await settle(pilot)
    await go(pilot, "enter")
    await go(pilot, "c")


#: name → (how to get there, the screen class on top once there).
SCREENS: dict[str, tuple[Setup, type[Screen[Any]]]] = {
    "sessions": (lambda p: go(p), SessionsScreen),
    "search-bar": (lambda p: search(p, "queue"), SearchScreen),
    "search-results": (search_results, SearchScreen),
    "transcript": (lambda p: go(p, "enter"), TranscriptScreen),
    "hints": (lambda p: go(p, "alt+4"), HintsScreen),
    "index": (lambda p: go(p, "alt+3"), IndexScreen),
    "recall": (lambda p: search(p, "rocksdb", "enter", "enter"), RecallScreen),
    "document": (lambda p: search(p, "rocksdb", "enter", "ctrl+d"), DocumentScreen),
    "help": (lambda p: go(p, "f1"), HelpScreen),
    "prompt": (lambda p: go(p, "ctrl+g"), PromptScreen),
    "forget": (lambda p: go(p, "ctrl+f"), ForgetScreen),
    "supersede": (lambda p: search(p, "rocksdb", "enter", "ctrl+x"), SupersedeScreen),
    "export": (lambda p: go(p, "ctrl+e"), ExportScreen),
    "unsupersede": (lambda p: go_unsupersede(p), UnsupersedeScreen),
    "partial": (lambda p: go(p, "alt+3", "p"), PartialScreen),
    "candidates": (candidates, CandidatesScreen),
    "search-filters": (lambda p: go(p, "alt+2", "f5"), PromptScreen),
    "sessions-filter": (lambda p: go(p, "slash"), SessionsScreen),
    "saved-save": (lambda p: search(p, "queue", "ctrl+s"), SavedSearchesScreen),
    "saved-recall": (lambda p: go(p, "alt+2", "ctrl+r"), SavedSearchesScreen),
    "search-agent-picker": (lambda p: search(p, "queue", "ctrl+b"), FilterPicker),
    "search-project-picker": (lambda p: go(p, "alt+2", "ctrl+n", "ctrl+f"), FilterPicker),
    "sessions-time": (lambda p: go(p, "ctrl+n", "ctrl+n"), SessionsScreen),
}


async def go_unsupersede(pilot: Any) -> None:
    await superseded_document(pilot)
    await go(pilot, "U")


#: Bursts every screen takes: open/back, submit twice, typing (into lists too), Esc from inputs.
#: No ``q``: on a screen without a query it quits, as asked.
BURSTS: dict[str, tuple[str, ...]] = {
    "enter-escape-x2": ("enter", "escape", "enter", "escape"),
    "enter-enter": ("enter", "enter"),
    "escape-escape": ("escape", "escape"),
    "typing": (*"xdfeoicpy", "space", *"U1?", "enter"),
    "typing-escape-keys": (*"new word", "escape", "ctrl+e", "ctrl+x", "enter", "enter"),
}


def _build_burst_home(home: Path) -> None:
    from tests.tui.test_hints_screen import CUE, SESSION, omega_lines

    rows = archive_lines() + topic_lines() + omega_lines()
    source = write_jsonl(home.parent / "s.jsonl", rows)
    with Archive.open(home, embedded=True) as archive:
        summary = archive.import_paths([source])
        assert not summary.errors, summary.errors
        archive.preflight(CUE, session=SESSION, message_key="user:u3")


@pytest.fixture
def burst_home(cw_home: Path, home_cache: HomeCache) -> Path:
    """The search archive plus the hints session of the hints tests (frozen hints with
    candidates): a copy of an archive built once per test process, so the set-ups that
    supersede through the archive change only this test's copy."""
    return home_cache.clone("tui-burst", _build_burst_home, cw_home)


def session_count(app: Any) -> int:
    with app.archive_handle.use() as archive:
        rows, _ = archive.sessions(limit=1000)
    return len(rows)


#: Dialogs whose confirm a burst typed into them may ask for (Enter in Export writes the file,
#: Enter in Undo supersede restores): at most one change, and the dialog closes once.
MAY_ACT = {"export", "unsupersede"}
#: Random bursts can also type a reason and confirm a supersede, or Tab to Forget and press it.
MAY_ACT_RANDOM = MAY_ACT | {"supersede", "forget"}


async def run_burst(
    app: Any, pilot: Any, where: str, keys: tuple[str, ...], cwd: Path, *, may_act: set[str]
) -> None:
    setup, expected = SCREENS[where]
    await setup(pilot)
    assert isinstance(app.screen, expected), (where, app.screen)
    mode = app.current_mode
    base = app.screen_stack[0]
    changes = app.archive_handle.changes
    files = set(cwd.iterdir())
    sessions = session_count(app)
    slots = tui_state.load(tui_state.state_path()).state.saved
    burst(app, *keys)
    await settle(pilot)
    assert_running_cleanly(app)
    # The screen below everything is never popped (a second dismiss used to pop it).
    assert app.get_screen_stack(mode)[0] is base
    transcripts = [s for s in app.screen_stack if isinstance(s, TranscriptScreen)]
    assert len(transcripts) <= 1, app.screen_stack  # one open at a time
    allowed = 1 if where in may_act else 0
    # Nothing changed the archive or the disk that the keys did not ask for.
    assert app.archive_handle.changes - changes <= allowed, (where, keys)
    assert len(set(cwd.iterdir()) - files) <= allowed, (where, keys)
    assert sessions - session_count(app) <= allowed, (where, keys)
    # No search saved into a slot, or a slot emptied (both take keys typed into their dialog).
    assert tui_state.load(tui_state.state_path()).state.saved == slots, (where, keys)
    # Esc walks back down to the base screen, one screen at a time.
    for _ in range(8):
        if len(app.screen_stack) == 1:
            break
        await pilot.press("escape")
        await settle(pilot)
        assert_running_cleanly(app)
    assert len(app.screen_stack) == 1, app.screen_stack


@pytest.mark.parametrize("where", list(SCREENS))
@pytest.mark.parametrize("name", list(BURSTS))
async def test_burst(
    burst_home: Path,
    app_for: AppFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    name: str,
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    app = app_for(burst_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await run_burst(app, pilot, where, BURSTS[name], cwd, may_act=MAY_ACT)
    assert app._exception is None, app._exception


#: Keys the random bursts draw from: every screen's command keys and the keys a person types,
#: never the quit keys (the app would rightly stop).
ALPHABET = (
    *"abcdefghijklmnoprstuvwxyzOPUG/?[]+-%1234",  # no q: it quits where it is not typed
    *("enter", "escape", "tab", "shift+tab", "up", "down", "home", "end", "backspace", "space"),
    *("pageup", "pagedown", "left", "right"),
    *(f"f{n}" for n in range(1, 10)),
    *(f"ctrl+{c}" for c in "bdefglnorstxy"),
    *(f"alt+{n}" for n in range(1, 5)),
)


@pytest.mark.slow
@pytest.mark.parametrize("run", range(100))
async def test_random_bursts(
    burst_home: Path,
    app_for: AppFactory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    run: int,
) -> None:
    """100 seeded runs, each on one screen (in turn), each a burst of 16 random keys."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    rng = random.Random(run)
    where = list(SCREENS)[run % len(SCREENS)]
    keys = tuple(rng.choice(ALPHABET) for _ in range(16))
    app = app_for(burst_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await run_burst(app, pilot, where, keys, cwd, may_act=MAY_ACT_RANDOM)
    assert app._exception is None, app._exception

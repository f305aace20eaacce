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
from textual.keys import key_to_character
from textual.widgets import DataTable, Input

from cwtui.screens.export import ExportScreen
from cwtui.screens.help import HelpScreen
from cwtui.screens.search import QueryInput, SearchScreen
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.supersede import SupersedeScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.results import ResultsList
from tests.tui.conftest import SIZE, AppFactory, settle
from tests.tui.test_search_screen import open_search

pytestmark = pytest.mark.anyio

NAMED = {"enter": "\r", "escape": "\x1b", "space": " ", "tab": "\t", "backspace": "\x7f"}


def burst(app: Any, *keys: str) -> None:
    """Post ``keys`` to the app in one tick, as one terminal read delivers them."""
    for key in keys:
        character = NAMED.get(key) or (key if len(key) == 1 else key_to_character(key))
        app.post_message(events.Key(key, character))


def assert_running_cleanly(app: Any) -> None:
    assert app._exception is None, app._exception
    assert app.is_running
    assert len(app.screen_stack) >= 1


@pytest.mark.parametrize(
    "keys",
    [
        ("ctrl+g", "enter", "enter"),
        ("ctrl+g", "escape", "enter", "enter"),
        ("ctrl+g", "enter", "enter", "enter", "enter"),
        ("ctrl+g", "escape", "escape", "escape"),
        ("i", "enter", "enter"),  # issue 34's burst: now `i` is typed into the text match
        ("i", "escape", "enter", "enter"),
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
    """Search: ``ctrl+g i Enter Enter`` (``i`` is typed into the prompt; issue 34's burst was
    ``i i Enter Enter`` when ``i`` opened the prompt)."""
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("alt+2")
        await settle(pilot)
        search = app.screen
        assert isinstance(search, SearchScreen)
        await pilot.press("escape")  # leave the query bar
        await settle(pilot)
        burst(app, "ctrl+g", "i", "enter", "enter")
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
        burst(app, "ctrl+x", "enter", "enter", "enter", "enter")
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


@pytest.mark.parametrize("field", ["f4", "slash"])
async def test_escape_leaves_a_sessions_filter_field(
    filled_home: Path, app_for: AppFactory, field: str
) -> None:
    """Issue 34: Esc in a Sessions filter field kept the cursor there, so the next command keys
    (then ``f`` for forget, ``e`` for export; now ctrl+e) were typed into the filter instead."""
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        base = app.screen
        burst(app, field, "escape", "ctrl+e")
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
        burst(app, "ctrl+e", *"cho hi > out", "enter", "enter")
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
        await pilot.press("ctrl+e")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ExportScreen)
        field = dialog.query_one("#export-path", Input)
        field.value = ""
        await pilot.press(*"typed.md", "enter")
        await settle(pilot)
    assert (tmp_path / "typed.md").is_file()
    assert app._exception is None, app._exception


# -- typing goes to the query (issue 34: printable keys in a list go to the query bar) --------


def typed_burst(app: Any, text: str) -> None:
    burst(app, *("space" if c == " " else c for c in text))


async def test_a_new_query_typed_into_the_results_after_enter_retires_nothing(
    search_home: Path, app_for: AppFactory
) -> None:
    """After Enter the results have the focus; the next query typed there, with every former
    letter binding in it (p o y c l x d i) and Enters, is a query, never an action."""
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "rocksdb")
        await pilot.press("enter")
        await settle(pilot)
        results = screen.query_one(ResultsList)
        assert results.has_focus
        before = {h.document_id for h in screen.hits}
        clipboard = app.clipboard
        typed_burst(app, "xpoycldi queue")
        burst(app, "enter", "enter", "enter")
        await settle(pilot)
        assert_running_cleanly(app)
        assert app.screen is screen  # no Supersede, no transcript, no prompt, no audit view
        assert screen.query_one(QueryInput).value == "xpoycldi queue"
        assert app.clipboard == clipboard
        with app.archive_handle.use() as archive:
            for document_id in before:
                view = archive.show_document(document_id, include_superseded=True)
                assert view.state != "superseded", document_id
    assert app._exception is None, app._exception


async def test_typing_into_the_results_starts_a_new_query_backspace_edits_it(
    search_home: Path, app_for: AppFactory
) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "rocksdb")
        bar = screen.query_one(QueryInput)
        await pilot.press("enter")
        await settle(pilot)
        assert screen.query_one(ResultsList).has_focus
        await pilot.press("q", "u")  # q is typed, not quit
        await settle(pilot)
        assert app.is_running and bar.has_focus and bar.value == "qu"
        await pilot.press(*"eue")  # into the bar now: added, not replacing
        assert bar.value == "queue"
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)
        assert screen.query_one(ResultsList).has_focus
        await pilot.press("backspace")  # edits the query that is there
        await settle(pilot)
        assert bar.has_focus and bar.value == "queu"
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)
        assert screen.query_one(ResultsList).has_focus
        await pilot.press("slash")  # / first: to the bar, its text selected, nothing inserted
        await settle(pilot)
        assert bar.has_focus and bar.value == "queue"
        await pilot.press(*"adr")
        assert bar.value == "adr"
        await settle(pilot)
        await pilot.press("down")
        await settle(pilot)
        await pilot.press("2", "question_mark")  # digits and ? are typed too
        await settle(pilot)
        assert isinstance(app.screen, SearchScreen) and bar.value == "2?"
        await pilot.press("alt+1")  # screens by alt+N, even from the bar
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        # Esc-2 from a terminal reaches Textual as ™ (the macOS Option character): alt+2 too.
        await pilot.press("trade_mark_sign")
        await settle(pilot)
        assert app.screen is screen and bar.value == "2?"
        await pilot.press("pound_sign")  # Esc-3, from the query bar: the index, nothing typed
        await settle(pilot)
        assert bar.value == "2?" and type(app.screen).__name__ == "IndexScreen"
    assert app._exception is None, app._exception


async def test_a_query_typed_into_the_results_with_its_enter_in_one_burst_searches(
    search_home: Path, app_for: AppFactory
) -> None:
    """The Enter of ``queue<Enter>`` typed into the results in one read belongs to the query
    (the full search), not to the result list (a recall of the old hit)."""
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "rocksdb")
        await pilot.press("enter")
        await settle(pilot)
        typed_burst(app, "sqlite")
        burst(app, "enter")
        await settle(pilot)
        assert_running_cleanly(app)
        assert app.screen is screen
        assert screen.last_request is not None and screen.last_request.query == "sqlite"
        assert screen.last_request.rerank  # the full search of what was typed
    assert app._exception is None, app._exception


async def test_typing_into_the_sessions_table_goes_to_the_text_match(
    filled_home: Path, app_for: AppFactory
) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        base = app.screen
        assert isinstance(base, SessionsScreen)
        field = base.query_one("#match-filter", Input)
        typed_burst(app, "efpadocPirs beta")  # every former letter command, then a match
        burst(app, "enter")
        await settle(pilot)
        assert_running_cleanly(app)
        assert app.screen is base  # no export, forget, prompt or transcript
        assert field.value == "efpadocPirs beta"
        assert base.filters.match == "efpadocPirs beta"
        await pilot.press("f7")  # clear
        await settle(pilot)
        await pilot.press(*"beta", "enter")
        await settle(pilot)
        assert base.filters.match == "beta"
        assert [str(k.value) for k in base.query_one("#sessions", DataTable).rows] == ["s-beta-1"]
        assert base.query_one("#sessions").has_focus
        await pilot.press("enter")  # the table has the focus again: Enter opens
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
    assert app._exception is None, app._exception


@pytest.mark.parametrize("screen_key", ["alt+1", "alt+2"])
async def test_footer_and_help_name_only_keys_that_work(
    search_home: Path, app_for: AppFactory, screen_key: str
) -> None:
    """On a screen that sends typing to its query, the footer and the help name no key that
    types a character (they would be typed, not run): F1 for help, ^q to quit."""
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(screen_key)
        await settle(pilot)
        await pilot.press("escape")  # off the query bar / filter field
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, (SearchScreen, SessionsScreen))
        items = screen.query_one(KeysFooter).items()
        assert items
        for item in items:
            assert screen.takes_key(item.key), item
        assert "^q" in {item.display for item in items}
        await pilot.press("f1")
        await settle(pilot)
        help_screen = app.screen
        assert isinstance(help_screen, HelpScreen)
        rows = {k.binding_id: k.key for k in help_screen.keys}
        assert rows["cw.help.f1"] == "f1" and rows["cw.quit"] == "^q"
        assert "cw.help" not in rows  # `?` is typed here
        assert rows["cw.mode.search.alt"] == "alt+2"
        for key in rows.values():
            for part in key.split(" "):
                assert not (len(part) == 1 and part.isascii() and part != "/"), rows


def test_docs_list_every_key_of_every_screen() -> None:
    """docs/tui.md names every ``cw.*`` binding of every screen, dialog and widget (the keys
    tables), so the page cannot fall behind a key that moved."""
    import importlib
    import pkgutil

    import cwtui.screens
    import cwtui.widgets
    from cwtui.app import CwApp

    ids: set[str] = set()
    classes: list[type] = [CwApp]
    for package in (cwtui.screens, cwtui.widgets):
        for info in pkgutil.iter_modules(package.__path__):
            module = importlib.import_module(f"{package.__name__}.{info.name}")
            classes += [v for v in vars(module).values() if isinstance(v, type)]
    for cls in classes:
        for binding in getattr(cls, "BINDINGS", []):
            binding_id = getattr(binding, "id", None)
            if binding_id and binding_id.startswith("cw."):
                ids.add(binding_id)
    text = (Path(__file__).parents[2] / "docs" / "tui.md").read_text(encoding="utf-8")
    missing = sorted(
        i for i in ids if f"`{i}`" not in text and not i.startswith(("cw.mode.", "cw.copy."))
    )
    assert not missing, missing
    assert "`cw.mode.*.alt`" in text and "`cw.copy.N`" in text

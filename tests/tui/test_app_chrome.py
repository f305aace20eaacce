"""App-wide pieces: binding ids, the help screen, the command palette, the ``cw tui`` entry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.widgets import DataTable

from cwcore.errors import StoreLocked
from cwtui.app import CwApp
from cwtui.commands import tui as tui_command
from cwtui.screens import MODES
from cwtui.screens.candidates import CandidatesScreen
from cwtui.screens.copy import CopyScreen
from cwtui.screens.document import DocumentScreen
from cwtui.screens.export import ExportScreen
from cwtui.screens.forget import ForgetScreen
from cwtui.screens.help import HelpScreen
from cwtui.screens.index import IndexScreen
from cwtui.screens.jump import JumpScreen
from cwtui.screens.partial import PartialScreen
from cwtui.screens.prompt import PromptScreen
from cwtui.screens.recall import RecallScreen
from cwtui.screens.search import QueryInput, SearchScreen
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.supersede import SupersedeScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.screens.unsupersede import UnsupersedeScreen
from cwtui.widgets.findbar import FindInput
from cwtui.widgets.message import MessageView
from cwtui.widgets.nav import NavList, NavTable
from cwtui.widgets.results import ResultsList
from cwtui.widgets.sessions_table import SessionsTable
from tests.tui.conftest import SIZE, AppFactory, settle, type_text

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "owner",
    [
        CwApp,
        SessionsScreen,
        TranscriptScreen,
        ExportScreen,
        JumpScreen,
        HelpScreen,
        SessionsTable,
        MessageView,
        SearchScreen,
        QueryInput,
        ResultsList,
        RecallScreen,
        DocumentScreen,
        SupersedeScreen,
        ForgetScreen,
        PromptScreen,
        IndexScreen,
        UnsupersedeScreen,
        CopyScreen,
        CandidatesScreen,
        PartialScreen,
        NavTable,
        NavList,
        FindInput,
    ],
)
def test_every_cw_binding_has_a_unique_cw_id(owner: Any) -> None:
    bindings = [b for b in owner.BINDINGS if isinstance(b, Binding)]
    assert bindings and len(bindings) == len(owner.BINDINGS)
    ids = [b.id for b in bindings]
    assert all(i and i.startswith("cw.") for i in ids), ids
    assert len(set(ids)) == len(ids)


def test_every_registered_screen_is_a_mode_with_a_key() -> None:
    keys = {b.key: b.id for b in CwApp.BINDINGS if isinstance(b, Binding)}
    for spec in MODES:
        assert spec.name in CwApp.MODES
        assert keys[spec.key] == f"cw.mode.{spec.name}"


async def test_help_lists_the_keys_of_the_current_screen(
    filled_home: Path, app_for: AppFactory
) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query_one("#help-keys", DataTable)
        rows = [table.get_row_at(i) for i in range(table.row_count)]
        ids = {str(row[2]) for row in rows}
        assert {"cw.sessions.export", "cw.sessions.reload", "cw.help.f1", "cw.quit"} <= ids
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, SessionsScreen)


async def test_the_palette_runs_screen_actions(filled_home: Path, app_for: AppFactory) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen) and not screen.show_thinking
        await pilot.press("ctrl+p")
        await pilot.pause()
        await type_text(pilot, "Thinking")
        await settle(pilot)  # the palette gathers its hits in a worker
        await pilot.press("enter")
        await settle(pilot)
        assert screen.show_thinking
        assert app.screen is screen


def test_tui_reports_an_archive_that_cannot_open(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def locked(*args: object, **kwargs: object) -> None:
        raise StoreLocked("another process holds the store lock")

    monkeypatch.setattr(tui_command.Archive, "open", locked)
    with pytest.raises(SystemExit) as exit_info:
        tui_command.tui()
    assert exit_info.value.code == 5  # the exit code of store-locked, as for every command
    assert capsys.readouterr().err == (
        "cw: cannot open the archive: another process holds the store lock\n"
    )

"""80×24: every action in the footer, dialogs that fit and scroll, marks without colour; the
audited undo from the TUI; the index view's partial drill-down and rebuild badge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button

from cwcore.api import Archive
from cwcore.contract.index import IndexStatus, RebuildProgress
from cwtui.screens.document import DocumentScreen
from cwtui.screens.export import ExportScreen, MarkRadio
from cwtui.screens.index import summary_text
from cwtui.screens.partial import PartialScreen
from cwtui.screens.supersede import SupersedeScreen
from cwtui.screens.unsupersede import UnsupersedeScreen
from cwtui.widgets.footer import KeysFooter, layout
from tests.support import store_of
from tests.tui.conftest import AppFactory, settle, type_text
from tests.tui.test_search_screen import open_search, plain

pytestmark = pytest.mark.anyio

SMALL = (80, 24)


def footer_complete(screen: Any) -> bool:
    footer = screen.query_one(KeysFooter)
    items = footer.items()
    shown = layout(items, footer.content_size.width)
    return sum(len(line) for line in shown) == len(items) and len(shown) <= 3


async def test_every_screen_lists_all_its_actions_at_80_columns(
    search_home: Path, app_for: AppFactory
) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        assert footer_complete(app.screen)  # sessions
        await pilot.press("enter")
        await settle(pilot)
        assert footer_complete(app.screen)  # transcript
        keys = {i.display for i in app.screen.query_one(KeysFooter).items()}
        assert {"q ^q", "?", "^p"} <= keys  # quit (both keys), help and the palette too
        await pilot.press("escape")
        screen = await open_search(pilot, "queue backend")
        await pilot.press("enter")
        await settle(pilot)
        assert footer_complete(screen)
        assert {"^l", "^g"} <= {i.display for i in screen.query_one(KeysFooter).items()}
        await pilot.press("alt+3")
        await settle(pilot)
        assert footer_complete(app.screen)  # index
        await pilot.press("4")
        await settle(pilot)
        assert footer_complete(app.screen)  # hints


async def test_the_supersede_dialog_fits_and_scrolls_at_80x24(
    search_home: Path, app_for: AppFactory
) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SMALL) as pilot:
        await open_search(pilot, "queue backend")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("ctrl+x")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, SupersedeScreen)
        box = dialog.query_one("#supersede-dialog")
        assert box.region.bottom <= SMALL[1] and box.region.y >= 0
        for _ in range(4):  # Tab down to the buttons: each one comes into view
            await pilot.press("tab")
            await pilot.pause()
            focused = app.focused
            assert focused is not None
            assert box.region.contains_region(focused.region), focused
        assert isinstance(app.focused, Button)


async def test_radio_marks_read_without_colour(filled_home: Path, app_for: AppFactory) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+e")
        await settle(pilot)
        assert isinstance(app.screen, ExportScreen)
        md, jsonl = app.screen.query(MarkRadio)
        assert (md.BUTTON_INNER, jsonl.BUTTON_INNER) == ("●", "○")
        jsonl.value = True
        await pilot.pause()
        assert (md.BUTTON_INNER, jsonl.BUTTON_INNER) == ("○", "●")


async def test_undo_a_supersession_from_the_audit_view(
    search_home: Path, app_for: AppFactory
) -> None:
    with Archive.open(search_home, embedded=True) as archive:
        hit = archive.search({"query": "ADR 0007", "limit": 1}).results[0]
        archive.supersede(hit.document_id, reason="reversed")
    app = app_for(search_home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        app.push_screen(DocumentScreen(hit.document_id))
        await settle(pilot)
        audit = app.screen
        assert isinstance(audit, DocumentScreen)
        assert audit.doc is not None and audit.doc.state == "superseded"
        await pilot.press("U")
        await settle(pilot)
        assert isinstance(app.screen, UnsupersedeScreen)
        await type_text(pilot, "it holds after all")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is audit and audit.doc.state == "live"  # reloaded on resume
        undone = audit.doc.versions[0].unsuperseded
        assert undone is not None and undone["reason"] == "it holds after all"
        shown = plain(audit.query_one("#document-versions").content)
        assert "supersession undone" in shown and "restores version 1" in shown


async def test_partial_documents_and_the_rebuild_badge(
    search_home: Path, app_for: AppFactory
) -> None:
    from cwcore.index.derived import DOC_WINDOWS
    from cwcore.store import codec

    with Archive.open(search_home, embedded=True) as archive:
        store = store_of(archive)
        key, value = next(iter(store.scan("windows", DOC_WINDOWS.prefix())))
        mark = codec.decode_record(value)
        mark["outcomes"]["exact"] = "partial"
        batch = store.batch()
        batch.put("windows", key, codec.encode_record(mark))
        store.commit(batch)
    app = app_for(search_home)
    async with app.run_test(size=SMALL) as pilot:
        await settle(pilot)
        await pilot.press("alt+3", "p")
        await settle(pilot)
        partial = app.screen
        assert isinstance(partial, PartialScreen)
        assert [d.document_id for d in partial.documents] == [mark["documentId"]]
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, DocumentScreen)
        assert app.screen.document_id == mark["documentId"]
    status = IndexStatus(0, 0.0, 4, False, RebuildProgress(9, 3, None), None, 9, 12, (), ())
    text = plain(summary_text(status, None))
    assert "REBUILDING" in text and "3 of 9 documents republished" in text


def test_the_index_summary_says_when_word_forms_are_not_indexed() -> None:
    old = IndexStatus(0, 0.0, 4, True, None, None, 9, 12, (), ())  # built before stem terms
    assert "word forms not indexed" in plain(summary_text(old, None))
    new = IndexStatus(0, 0.0, 4, True, None, None, 9, 12, (), (), word_stems=True)
    assert "word forms" not in plain(summary_text(new, None))

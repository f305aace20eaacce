"""Issue 34: the supersede notification says the audit key opens the document; on the search
screen that key opened the row that took its place once the results were read again."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.binding import Binding

from cwtui.screens.document import DocumentScreen
from cwtui.screens.search import SearchScreen
from cwtui.screens.supersede import RecentSupersede, SupersedeScreen
from cwtui.widgets.results import ResultsList
from tests.tui.conftest import SIZE, AppFactory, settle, type_text
from tests.tui.test_search_screen import open_search

pytestmark = pytest.mark.anyio


def _key(action: str) -> str:
    """The search screen's key for ``action`` (the keys are the TUI's to choose)."""
    return next(
        b.key.split(",")[0]
        for b in SearchScreen.BINDINGS
        if isinstance(b, Binding) and b.action == action
    )


async def test_the_audit_key_opens_the_document_just_superseded(
    search_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = app_for(search_home)
    # The notification stays up for the whole test: no step depends on how fast it runs.
    monkeypatch.setattr(type(app), "NOTIFICATION_TIMEOUT", 3600)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "rocksdb")
        await pilot.press("down")
        await settle(pilot)
        hit = screen.query_one(ResultsList).current
        assert hit is not None
        await pilot.press(_key("supersede"))
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, SupersedeScreen)
        await type_text(pilot, "reversed")
        await pilot.press("enter", "enter", "enter")  # reason, by, subject
        await settle(pilot)
        assert app.screen is screen
        assert hit.document_id not in [h.document_id for h in screen.hits]
        assert screen.hits  # another row is under the cursor now
        note = next(str(n.message) for n in app._notifications if "Superseded" in str(n.message))
        key = app.get_key_display(
            next(
                b
                for b in SearchScreen.BINDINGS
                if isinstance(b, Binding) and b.action == "document"
            )
        )
        assert f"{key} opens it for audit while this shows" in note
        await pilot.press(_key("document"))
        await settle(pilot)
        audit = app.screen
        assert isinstance(audit, DocumentScreen)
        assert audit.document_id == hit.document_id  # not the row that took its place
        assert audit.doc is not None and audit.doc.state == "superseded"
        await pilot.press("escape")
        await settle(pilot)
        # Once used (or once the notification is gone) the key opens the selected row again.
        current = screen.query_one(ResultsList).current
        assert current is not None and screen.superseded is None
        await pilot.press(_key("document"))
        await settle(pilot)
        assert isinstance(app.screen, DocumentScreen)
        assert app.screen.document_id == current.document_id


def test_a_notification_gone_leaves_nothing_to_open() -> None:
    assert RecentSupersede.of(None, 5.0) is None
    assert not RecentSupersede("t-1", 0.0).shown

"""The search screen and what hangs off it: recall, transcript jumps, copy, supersede, audit."""

from __future__ import annotations

import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console
from textual.widgets import Input, Static

from cwcore.api import Archive
from cwcore.contract.recall import Continuation, MessageSpan, RecalledSource, RecallResponse
from cwcore.contract.search import SearchRequest, SearchResponse
from cwtui.screens import recall as recall_module
from cwtui.screens.document import DocumentScreen
from cwtui.screens.recall import RecallScreen, parts_of
from cwtui.screens.search import EMPTY_ARCHIVE, QueryInput, SearchScreen
from cwtui.screens.supersede import SupersedeScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.screens.unsupersede import UnsupersedeScreen
from cwtui.widgets.message import MessageView
from cwtui.widgets.results import ResultsList
from cwtui.widgets.timeline import Timeline
from tests.tui.conftest import SIZE, AppFactory, settle, type_text

pytestmark = pytest.mark.anyio


class CountingArchive(Archive):
    """The real archive, recording every search request it receives."""

    requests: ClassVar[list[SearchRequest]] = []

    def search(self, request: SearchRequest | Mapping[str, Any]) -> SearchResponse:
        assert isinstance(request, SearchRequest)  # the screen validates at its edge
        CountingArchive.requests.append(request)
        return super().search(request)


def plain(renderable: Any) -> str:
    """What a Rich renderable reads as, without styles."""
    if isinstance(renderable, str):
        return renderable
    console = Console(width=160, file=io.StringIO(), record=True, color_system=None)
    console.print(renderable)
    return console.export_text().rstrip("\n")


def static_text(screen: Any, selector: str) -> str:
    return plain(screen.query_one(selector, Static).content)


async def open_search(pilot: Any, query: str) -> SearchScreen:
    await settle(pilot)
    await pilot.press("alt+2")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, SearchScreen)
    await type_text(pilot, query)
    await settle(pilot)
    return screen


async def test_typing_searches_fast_once_then_enter_runs_the_full_search_and_recall(
    search_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    CountingArchive.requests = []
    app = app_for(search_home, CountingArchive)
    # A pause no typing can outlast, however loaded the machine: each keystroke's worker waits.
    monkeypatch.setattr(SearchScreen, "DEBOUNCE", 3600.0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("alt+2")
        await settle(pilot)
        screen = pilot.app.screen
        assert isinstance(screen, SearchScreen)
        await pilot.press(*"queue backend")
        await pilot.pause()
        assert CountingArchive.requests == []  # still typing
        # The pause ends (read live by the waiting worker): only the last keystroke's worker is
        # left; every earlier one was cancelled before it reached the archive.
        monkeypatch.setattr(SearchScreen, "DEBOUNCE", 0.0)
        await settle(pilot)
        assert [r.query for r in CountingArchive.requests] == ["queue backend"]
        assert CountingArchive.requests[0].rerank is False
        sessions = [h.source.session_id for h in screen.hits]
        assert sorted(sessions) == ["s-delta-1", "s-delta-2", "s-delta-3", "s-delta-4"]
        assert "fast" in static_text(screen, "#search-status")
        # Preview of the highlighted hit, and a timeline with one bar per day.
        assert screen.hits[0].document_id in static_text(screen, "#preview")
        buckets = screen.query_one(Timeline).buckets
        assert buckets is not None and buckets.unit == "day" and buckets.total == 4
        assert buckets.marked is not None

        await pilot.press("enter")  # the full explicit search, focus to the results
        await settle(pilot)
        assert CountingArchive.requests[-1].rerank is True
        results = screen.query_one(ResultsList)
        assert results.has_focus

        await pilot.press("down")
        await settle(pilot)
        hit = screen.hits[1]
        assert hit.document_id in static_text(screen, "#preview")
        await pilot.press("ctrl+y")
        assert app.clipboard == hit.snippet
        await pilot.press("ctrl+l")
        assert app.clipboard == hit.locator

        await pilot.press("enter")  # recall
        await settle(pilot)
        recall = app.screen
        assert isinstance(recall, RecallScreen)
        assert recall.body is not None and recall.body.status == "resolved"
        assert recall.body.source is not None
        assert recall.body.document_id == hit.document_id
        assert "RESOLVED" in static_text(recall, "#recall-header")
        assert recall.query(".recall-part.matched")  # the matched message is marked
        await pilot.press("y")
        assert app.clipboard == recall.body.source.text
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen

        # ctrl+o: the hit's session transcript, at the hit's message.
        await pilot.press("ctrl+o")
        await settle(pilot)
        transcript = app.screen
        assert isinstance(transcript, TranscriptScreen)
        assert transcript.session_id == hit.source.session_id
        current = transcript.query_one(".message.current", MessageView)
        assert current.message.message_key == hit.source.message_key
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen


async def test_toggles_no_results_and_an_empty_archive(
    search_home: Path, app_for: AppFactory
) -> None:
    CountingArchive.requests = []
    app = app_for(search_home, CountingArchive)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue backend")
        await pilot.press("down", "down")  # the second hit
        await settle(pilot)
        hit = screen.query_one(ResultsList).current
        assert hit is not None
        await pilot.press("f2")  # scope project, from the selected hit
        await settle(pilot)
        assert CountingArchive.requests[-1].scope == "project"
        assert CountingArchive.requests[-1].project == "delta"
        await pilot.press("f2")  # scope session: the selected hit's session
        await settle(pilot)
        current = screen.query_one(ResultsList).current
        assert current is not None
        session = current.source.session_id
        assert CountingArchive.requests[-1].sessions == (session,)
        assert [h.source.session_id for h in screen.hits] == [session]
        assert CountingArchive.requests[-1].semantic_policy == "auto"  # the setting
        await pilot.press("f2", "f3", "f4")  # back to all; semantic always; relation question
        await settle(pilot)
        last = CountingArchive.requests[-1]
        assert (last.scope, last.semantic_policy, last.relation) == (
            "all",
            "always",
            "question",
        )
        assert "scope all" in static_text(screen, "#search-toggles")
        assert "relation question" in static_text(screen, "#search-toggles")
        # Every action is in the command palette too.
        await pilot.press("ctrl+p")
        await type_text(pilot, "Semantic policy")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen and screen.policy == "never"
        assert CountingArchive.requests[-1].semantic_policy == "never"

        await pilot.press("slash", "ctrl+u", *"zzzqqq")
        await settle(pilot)
        assert screen.hits == []
        empty = static_text(screen, "#search-empty")
        assert "No results for “zzzqqq”" in empty and "any relation (F4)" in empty
        # Esc clears the query; with a relation chosen, that is a relation-only search.
        await pilot.press("escape")
        await settle(pilot)
        assert screen.query_one(QueryInput).value == ""
        assert CountingArchive.requests[-1].query is None
        assert CountingArchive.requests[-1].relation == "question"


async def test_an_empty_archive_says_how_to_import(cw_home: Path, app_for: AppFactory) -> None:
    app = app_for(cw_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "anything")
        assert screen.hits == []
        assert static_text(screen, "#search-empty") == EMPTY_ARCHIVE


async def test_a_request_the_engine_would_refuse_fails_on_the_screen_without_a_call(
    search_home: Path, app_for: AppFactory
) -> None:
    CountingArchive.requests = []
    app = app_for(search_home, CountingArchive)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue")
        asked = len(CountingArchive.requests)
        screen.query_one(QueryInput).value = "q" * 4_001  # over the query length limit
        await settle(pilot)
        assert CountingArchive.requests[asked:] == []
        assert screen.hits == [] and screen.last_request is None
        empty = static_text(screen, "#search-empty")
        assert "Search failed: query is 4001 characters; the limit is 4000" in empty


async def test_supersede_hides_the_result_and_the_audit_view_keeps_it(
    search_home: Path, app_for: AppFactory
) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "rocksdb")
        await pilot.press("down")
        decision = next(h for h in screen.hits if h.source.session_id == "s-delta-2")
        reversal = next(h for h in screen.hits if h.source.session_id == "s-delta-3")
        while screen.query_one(ResultsList).current is not decision:
            await pilot.press("down")
        await pilot.press("ctrl+x")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, SupersedeScreen)
        assert dialog.document_id == decision.document_id
        # Enter moves down the form and confirms on the last field.
        await type_text(pilot, "ADR 8")
        await pilot.press("enter")
        dialog.query_one("#supersede-by", Input).value = reversal.document_id
        await pilot.press("enter")
        await type_text(pilot, "queue")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen
        ids = [h.document_id for h in screen.hits]
        assert decision.document_id not in ids and reversal.document_id in ids

        # Still reachable for audit, by id.
        await pilot.press("ctrl+g")
        await pilot.pause()
        app.screen.query_one("#prompt-input", Input).value = decision.document_id
        await pilot.press("enter")
        await settle(pilot)
        audit = app.screen
        assert isinstance(audit, DocumentScreen)
        assert audit.doc is not None and audit.doc.state == "superseded"
        assert audit.doc.superseded_by == reversal.document_id
        header = static_text(audit, "#document-header")
        assert "SUPERSEDED" in header and reversal.document_id in header
        assert "reason: ADR 8" in static_text(audit, "#document-versions")
        await pilot.press("x")  # only a live document can be superseded
        await settle(pilot)
        assert app.screen is audit

        # U undoes it: a new live version, searchable again; the audit keeps both records.
        await pilot.press("U")
        await settle(pilot)
        undo = app.screen
        assert isinstance(undo, UnsupersedeScreen)
        await type_text(pilot, "holds after all")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is audit
        assert audit.doc is not None and audit.doc.state == "live"
        assert any("searchable again" in str(n.message) for n in app._notifications)


async def test_a_failed_change_keeps_the_dialog_open_with_its_button_back(
    search_home: Path, app_for: AppFactory
) -> None:
    app = app_for(search_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "rocksdb")
        live = screen.hits[0].document_id
        dialog = UnsupersedeScreen(live)
        await app.push_screen(dialog)
        await settle(pilot)
        await type_text(pilot, "no reason")
        await pilot.press("enter")  # a live document has nothing to undo
        await settle(pilot)
        assert app.screen is dialog
        assert not dialog.query_one("#unsupersede-go").disabled
        assert dialog.query_one("#unsupersede-reason", Input).value == "no reason"
        assert any("Undo supersede failed" in str(n.message) for n in app._notifications)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen


async def test_recall_follows_continuations_and_reports_other_statuses(
    filled_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recall_module, "MAX_TOKENS", 80)
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "test_case_15")
        await pilot.press("enter", "enter")  # full search, then recall the first hit
        await settle(pilot)
        first = app.screen
        assert isinstance(first, RecallScreen) and first.body is not None
        assert first.body.status == "resolved" and first.body.source is not None
        continuation = first.body.continuation
        assert continuation.before and continuation.after
        assert "test_case_15" in first.body.source.text
        await pilot.press("right_square_bracket")
        await settle(pilot)
        later = app.screen
        assert isinstance(later, RecallScreen) and later is not first
        assert later.body is not None and later.body.source is not None
        assert later.body.source.range[1] > first.body.source.range[1]
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is first
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is screen

        app.push_screen(RecallScreen("cwl1.not-a-locator", document_id="t-x"))
        await settle(pilot)
        bad = app.screen
        assert isinstance(bad, RecallScreen) and bad.body is not None
        assert bad.body.status == "locator-invalid"
        assert "LOCATOR-INVALID" in static_text(bad, "#recall-header")
        assert "not a locator of this archive" in plain(
            bad.query_one(".recall-state", Static).content
        )


def test_recall_parts_map_byte_ranges_to_characters() -> None:
    text = "héllo wörld\n\nsecond — part"
    data = text.encode()
    second = data.index(b"second")
    source = RecalledSource(
        document_id="t-1",
        version=1,
        kind="turn",
        archive_kind="session",
        session="s",
        project="p",
        agent="a",
        created="2026-01-01T00:00:00Z",
        text=text,
        range=(100, 100 + len(data)),
        match=(100 + data.index("wörld".encode()), 100 + data.index(b"\n")),
        tokens=8,
        source_keys=("user:u1", "assistant:a1"),
        messages=(
            MessageSpan("user:u1", "user", "text", (100, 100 + data.index(b"\n")), None),
            MessageSpan("assistant:a1", "assistant", "text", (100 + second, 100 + len(data)), None),
        ),
        chunks=(),
        continuation=Continuation(),
        label="",
    )
    parts = parts_of(RecallResponse("resolved", source=source))
    assert [p.text for p in parts] == ["héllo wörld", "second — part"]
    assert parts[0].match is not None
    lo, hi = parts[0].match
    assert parts[0].text[lo:hi] == "wörld"
    assert parts[1].match is None


class PendingIndexArchive(Archive):
    """The real archive, with imported entries still waiting for the lexical index (as right
    after a large import through the daemon)."""

    def index_status(self, document: str | None = None) -> Any:
        from dataclasses import replace

        return replace(super().index_status(document), outbox_depth=1234)


async def test_the_search_screen_says_when_imported_entries_wait_for_the_index(
    search_home: Path, app_for: AppFactory
) -> None:
    """An empty page right after a large import must not read as "nothing archived": the status
    line and the no-results text say what is not indexed yet."""
    app = app_for(search_home, PendingIndexArchive)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue backend")
        assert screen.hits
        assert "1,234 not indexed yet" in static_text(screen, "#search-status")
        await pilot.press("ctrl+a", "ctrl+k")
        await type_text(pilot, "zzqqxx nothingmatches")
        await settle(pilot)
        assert not screen.hits
        assert "1,234 imported entries are not indexed yet" in static_text(screen, "#search-empty")

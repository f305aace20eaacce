"""The index view, and forgetting a session (with its confirmation) from either screen."""

from __future__ import annotations

import io
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from textual.widgets import DataTable, ProgressBar, Static

from cwcore.api import Archive
from cwcore.contract.index import SemanticProgress
from cwcore.contract.sources import SourcesSummary
from cwcore.daemon.results import DaemonStatus
from cwcore.semantic import index as handler
from cwtui import semantic_status
from cwtui.screens.forget import ForgetScreen
from cwtui.screens.index import IndexScreen, daemon_text, outcome_bar, sources_text
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.widgets.sessions_table import SessionsTable
from tests.semantic.conftest import FakeEmbedder
from tests.support import engine_of
from tests.tui.conftest import SIZE, AppFactory, settle

pytestmark = pytest.mark.anyio


def plain(widget: Static) -> str:
    content: Any = widget.content
    if isinstance(content, str):
        return content
    console = Console(width=160, file=io.StringIO(), record=True, color_system=None)
    console.print(content)
    return console.export_text()


def row_ids(screen: SessionsScreen) -> list[str]:
    return [str(key.value) for key in screen.query_one(SessionsTable).rows]


async def open_index(pilot: Any) -> IndexScreen:
    """Start on the sessions screen, then switch to the index view (key 3)."""
    await settle(pilot)
    await pilot.press("alt+3")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, IndexScreen)
    return screen


async def test_index_view_shows_generation_handlers_outbox_and_daemon(
    filled_home: Path, app_for: AppFactory
) -> None:
    with Archive.open(filled_home, embedded=True) as archive:
        status = archive.index_status().to_json()
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_index(pilot)
        summary = plain(screen.query_one("#index-summary", Static))
        assert f"Generation {status['generation']}" in summary
        assert f"{status['documents']} documents indexed in {status['windows']} windows" in summary
        assert "4 sessions" in summary  # the archive's counts
        table = screen.query_one("#index-handlers", DataTable)
        rows = {
            str(table.get_row_at(i)[0]): [str(c) for c in table.get_row_at(i)[1:4]]
            for i in range(table.row_count)
        }
        assert rows == {
            name: [str(c["complete"]), str(c["partial"]), str(c["skipped"])]
            for name, c in status["handlers"].items()
        }
        outbox = plain(screen.query_one("#index-outbox", Static))
        assert "depth 0" in outbox and "idle" in outbox
        bar = screen.query_one("#index-progress", ProgressBar)
        assert bar.percentage == 1.0
        total = status["windows"]
        semantic = plain(screen.query_one("#index-semantic", Static))
        assert f"Semantic  0 / {total} windows embedded (0%) · {total} pending" in semantic
        detail = plain(screen.query_one("#index-semantic-detail", Static))
        assert "nothing embedded yet: search is lexical only" in detail
        assert "embedded" in plain(screen.query_one("#index-daemon", Static))
        sources = plain(screen.query_one("#index-sources", Static))
        assert "0 of " in sources and "locations found" in sources  # an empty HOME
        assert "never synced (cw sync)" in sources

        await pilot.press("i")  # index now: nothing pending, so it is up to date at once
        await settle(pilot)
        assert not screen.running
        assert any("up to date" in str(n.message) for n in app._notifications)


async def test_index_view_shows_embedding_progress_live(
    filled_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeEmbedder()
    with Archive.open(filled_home, embedded=True) as archive:
        engine = engine_of(archive)
        handler.embed_pending(engine.store, engine.reader, 2, embedder=fake)
        total = archive.index_status().windows
    assert total > 2
    monkeypatch.setattr(IndexScreen, "LIVE_INTERVAL", 0.05)
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_index(pilot)
        semantic = plain(screen.query_one("#index-semantic", Static))
        assert f"Semantic  2 / {total} windows embedded" in semantic
        assert f"{total - 2} pending" in semantic
        detail = plain(screen.query_one("#index-semantic-detail", Static))
        assert "partial: search uses the vectors embedded so far" in detail
        assert "model fake:1 (window mode)" in detail
        bar = screen.query_one("#index-semantic-progress", ProgressBar)
        assert bar.percentage == pytest.approx(2 / total)

        # The background handler finishes; the screen refreshes by itself while work is pending.
        with app.archive_handle.use() as live:
            engine = engine_of(live)
            handler.embed_pending(engine.store, engine.reader, 1000, embedder=fake)
        for _ in range(100):
            await pilot.pause(0.05)
            await settle(pilot)
            semantic = plain(screen.query_one("#index-semantic", Static))
            if "complete" in semantic:
                break
        assert f"Semantic  {total} / {total} windows embedded (100%) · complete" in semantic
        detail = plain(screen.query_one("#index-semantic-detail", Static))
        assert "search uses every published window's vector" in detail
        assert bar.percentage == 1.0


def test_embedding_rate_and_time_left() -> None:
    screen = IndexScreen()
    assert screen.embedding_rate(10, now=100.0) is None
    assert screen.embedding_rate(30, now=110.0) == pytest.approx(2.0)
    assert screen.embedding_rate(5, now=111.0) is None  # the cursor went back: start over
    sem = SemanticProgress(30, 30, 70, 30, 100, 100, 0.3, "embedding", True, "m", "window")
    assert "2.0 windows/s, about 35 s left" in semantic_status.detail(sem, 2.0).plain
    off = replace(sem, state="disabled", partial=False)
    assert "Semantic  disabled" in semantic_status.summary(off).plain


def test_outcome_bars_and_daemon_lines() -> None:
    assert outcome_bar({"complete": 3, "partial": 1, "skipped": 0}, 8).plain == "━" * 8 + "  75%"
    spans = outcome_bar({"complete": 1, "partial": 0, "skipped": 1}, 10).spans
    assert [s.end - s.start for s in spans if s.end > s.start][:2] == [5, 5]
    assert outcome_bar({"complete": 0, "partial": 0, "skipped": 0}, 4).plain == "····"
    golden = Path(__file__).parents[1] / "results" / "golden" / "daemon.jsonl"
    body = json.loads(golden.read_text(encoding="utf-8").splitlines()[0])["answer"]
    status = DaemonStatus.from_json({**body, "pid": 42, "uptime_s": 90.0, "connections": 1})
    running = daemon_text(status, None).plain
    assert "running" in running and "pid 42" in running and "uptime 1.5 min" in running
    assert "connections 1" in running and "build fake-1" in running
    assert "cannot connect" in daemon_text(None, "cannot connect").plain


def test_sources_line_names_skips_and_the_last_sync() -> None:
    summary = SourcesSummary(
        locations=19,
        found=3,
        files=17,
        sessions=12,
        messages=4210,
        skipped=2,
        last_sync="2026-11-20T12:00:00Z",
    )
    line = sources_text(summary).plain
    assert line.startswith("Sources  3 of 19 locations found")
    assert "4,210 messages" in line and "2 skipped (cw sources)" in line
    assert "last sync 2026-11-20T12:00:00Z" in line
    assert sources_text(None).plain == "Sources  unknown"


async def test_forget_a_session_after_confirming(filled_home: Path, app_for: AppFactory) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SessionsScreen)
        await pilot.press("down", "down")  # s-alpha-2
        await pilot.press("ctrl+f")
        await settle(pilot)
        dialog = app.screen
        assert isinstance(dialog, ForgetScreen) and dialog.session_id == "s-alpha-2"
        await pilot.press("enter")  # focus starts on Cancel
        await settle(pilot)
        assert app.screen is screen and "s-alpha-2" in row_ids(screen)

        await pilot.press("ctrl+f", "shift+tab", "enter")  # Forget
        await settle(pilot)
        assert app.screen is screen
        assert row_ids(screen) == ["s-alpha-1", "s-beta-1", "s-gamma-1"]

        # From a transcript: forgetting pops back to the (reloaded) sessions.
        await pilot.press("home", "enter")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
        await pilot.press("f")
        await settle(pilot)
        assert isinstance(app.screen, ForgetScreen)
        await pilot.press("shift+tab", "enter")
        await settle(pilot)
        assert app.screen is screen
        assert row_ids(screen) == ["s-beta-1", "s-gamma-1"]
    with Archive.open(filled_home, embedded=True) as archive:
        rows, _ = archive.sessions()
    assert [r.sessionId for r in rows] == ["s-beta-1", "s-gamma-1"]


class _NoDoctor(Archive):
    """An archive that records doctor calls: the screens' polled reads must not run it."""

    doctor_calls = 0

    def doctor(self, *, repair: bool = False) -> Any:
        type(self).doctor_calls += 1
        return super().doctor(repair=repair)


async def test_the_polled_views_read_counts_without_running_doctor(
    filled_home: Path, app_for: AppFactory
) -> None:
    # doctor decodes every record of the archive; the index view polls every few seconds and
    # the search screen probes on open, so both read the counts record alone.
    with Archive.open(filled_home, embedded=True) as archive:
        assert archive.counts() == archive.doctor().counts
    _NoDoctor.doctor_calls = 0
    app = app_for(filled_home, _NoDoctor)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_index(pilot)
        assert "4 sessions" in plain(screen.query_one("#index-summary", Static))
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("2")  # the search screen probes whether the archive is empty
        await settle(pilot)
        assert type(pilot.app.screen).__name__ == "SearchScreen"
    assert _NoDoctor.doctor_calls == 0

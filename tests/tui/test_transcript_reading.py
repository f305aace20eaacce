"""Reading a transcript: landing on a hit, superseded messages, find, long output, pager, copy."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwtui.screens.copy import CopyScreen
from cwtui.screens.search import SearchScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.message import FOLD_PAGE, MessageView
from cwtui.widgets.transcript_view import TranscriptView
from tests.helpers import HomeCache
from tests.tui.conftest import SIZE, AppFactory, settle, type_text, write_jsonl

pytestmark = pytest.mark.anyio

LONG = 1701


def long_rows() -> list[dict[str, Any]]:
    """90 messages; #27 holds a unique word; #40 is a tool call whose output has 1,701 lines."""
    rows: list[dict[str, Any]] = []
    for n in range(90):
        base = {"session": "long", "project": "p", "agent": "codex"}
        stamp = f"2026-11-19T10:{n // 60:02}:{n % 60:02}Z"
        if n == 39:
            rows.append(
                {
                    **base,
                    "id": f"m{n}",
                    "role": "assistant",
                    "text": "",
                    "tool_name": "Bash",
                    "tool_call_id": "c1",
                    "tool_input": {"command": "pytest"},
                    "timestamp": stamp,
                }
            )
            continue
        if n == 40:
            output = "\n".join(f"line {i} ok" for i in range(LONG - 1)) + "\nline end needle9"
            rows.append(
                {
                    **base,
                    "id": f"m{n}",
                    "role": "tool",
                    "text": output,
                    "tool_name": "Bash",
                    "tool_call_id": "c1",
                    "timestamp": stamp,
                }
            )
            continue
        text = f"message number {n}: " + ("zebracorn marker" if n == 26 else "filler words")
        rows.append(
            {
                **base,
                "id": f"m{n}",
                "role": "user" if n % 3 == 0 else "assistant",
                "text": text + "\n\nmore\n" * 3,
                "timestamp": stamp,
            }
        )
    return rows


def _import_long(home: Path) -> None:
    with Archive.open(home, embedded=True) as archive:
        archive.import_paths([write_jsonl(home.parent / "long.jsonl", long_rows())])


@pytest.fixture
def long_home(cw_home: Path, home_cache: HomeCache) -> Path:
    """``CW_HOME`` with the long session imported (a copy of one import per test process)."""
    return home_cache.clone("tui-long", _import_long, cw_home)


def on_screen(view: TranscriptView, widget: MessageView) -> bool:
    top, bottom = view.scroll_y, view.scroll_y + view.size.height
    return top <= widget.virtual_region.y < bottom


def current(screen: TranscriptScreen) -> MessageView:
    return screen.query_one(".message.current", MessageView)


async def open_long(pilot: Any) -> TranscriptScreen:
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    assert isinstance(pilot.app.screen, TranscriptScreen)
    return pilot.app.screen


async def test_open_at_a_hit_lands_on_it_and_stays_there(
    long_home: Path, app_for: AppFactory
) -> None:
    app = app_for(long_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("alt+2")
        await settle(pilot)
        await type_text(pilot, "zebracorn")
        await pilot.press("enter")
        await settle(pilot)
        search = app.screen
        assert isinstance(search, SearchScreen)
        assert search.hits[0].source.message_key == "assistant:m26"
        await pilot.press("ctrl+o")
        await settle(pilot)
        for _ in range(5):  # let every batch that wants to mount do so
            await pilot.pause()
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        view = screen.query_one(TranscriptView)
        hit = current(screen)
        assert hit.key == "assistant:m26" and hit.number == 27
        # On screen, at the top, and the batch above it mounted without pushing it away.
        assert on_screen(view, hit) and view.first_in_view() is hit
        assert view.first < hit.position


async def test_superseded_messages_are_marked_hidden_on_request_and_reachable(
    long_home: Path, app_for: AppFactory
) -> None:
    with Archive.open(long_home, embedded=True) as archive:
        body = archive.show("long")
        doc = body.messages[79].document_id
        archive.supersede(doc, reason="wrong turn")
        gone = [m.message_key for m in body.messages if m.document_id == doc]
    app = app_for(long_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_long(pilot)
        total = len(screen.all_entries)
        assert total == 90  # the header's 90 messages, superseded ones included
        header = str(screen.query_one("#transcript-header").render())
        assert "90 messages" in header and f"{len(gone)} superseded, marked" in header
        await pilot.press("g", *"80", "enter")
        await settle(pilot)
        target = current(screen)
        assert target.number == 80 and target.key in gone and target.has_class("superseded")
        assert "superseded: wrong turn" in target._header().plain
        await pilot.press("u")  # hide them: numbers stay, #80 is not shown
        await settle(pilot)
        assert len(screen.entries) == total - len(gone)
        assert "superseded hidden" in str(screen.query_one("#transcript-header").render())
        await pilot.press("g", *"80", "enter")  # asking for it shows them again
        await settle(pilot)
        assert not screen.hide_superseded and current(screen).number == 80


async def test_a_long_tool_output_opens_a_page_at_a_time(
    long_home: Path, app_for: AppFactory
) -> None:
    app = app_for(long_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_long(pilot)
        await pilot.press("g", *"41", "enter")
        await settle(pilot)
        output = current(screen)
        assert output.message.kind == "tool-result" and not output.expanded
        assert output.pair == 40  # paired with its call
        await pilot.press("enter")
        await pilot.pause()
        assert output.expanded and output.limit == FOLD_PAGE
        assert output.size.height < FOLD_PAGE + 10  # not 1,701 lines
        assert (
            f"{LONG - FOLD_PAGE:,} more lines"
            in output.render_lines(output.region.reset_offset)[-1].text
        )
        await pilot.press("plus")
        await pilot.pause()
        assert output.limit == 2 * FOLD_PAGE


async def test_find_reaches_into_folded_output_and_steps_through_matches(
    long_home: Path, app_for: AppFactory
) -> None:
    app = app_for(long_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_long(pilot)
        await pilot.press("slash")
        await type_text(pilot, "needle9")
        await pilot.press("enter")
        await settle(pilot)
        hit = current(screen)
        # The only match is the last line of the folded 1,701-line output: opened to it.
        assert hit.key == "tool:m40" and hit.expanded and hit.limit >= LONG
        assert screen.matches == [(hit.position, LONG - 1)]
        assert "1 / 1" in str(screen.query_one("#find-count").render())
        # The find bar is on screen, above the footer (both at the bottom once hid it).
        bar, footer = screen.query_one("#find-bar"), screen.query_one(KeysFooter)
        assert bar.region.height == 1 and bar.region.bottom <= footer.region.y
        await pilot.press("escape")  # closes find first …
        await pilot.pause()
        assert not screen.query_one("#find-bar").display and app.screen is screen
        await pilot.press("slash")
        await type_text(pilot, "message number 1")
        await pilot.press("enter")
        await settle(pilot)
        first = current(screen).number
        await pilot.press("n")
        await settle(pilot)
        assert current(screen).number > first
        await pilot.press("N")
        await settle(pilot)
        assert current(screen).number == first
        spans = [s for s in current(screen)._content().spans if "e3b341" in str(s.style)]
        assert spans  # the match is highlighted in the message


@contextlib.contextmanager
def no_suspend(app: Any) -> Iterator[None]:
    yield


async def test_pager_copy_and_paired_calls(
    long_home: Path, app_for: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "paged"
    out.mkdir()
    monkeypatch.setenv("PAGER", f"cp -t {out}")
    app = app_for(long_home)
    monkeypatch.setattr(type(app), "suspend", lambda self: no_suspend(self))
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_long(pilot)
        await pilot.press("g", *"41", "enter")
        await settle(pilot)
        await pilot.press("v")
        await pilot.pause()
        (paged,) = out.iterdir()
        assert paged.read_text().endswith("line end needle9")  # the whole output
        await pilot.press("percent_sign")
        assert current(screen).number == 40
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, CopyScreen)
        await pilot.press("2")  # the message key
        await pilot.pause()
        assert app.clipboard == "assistant:m39" and app.screen is screen
        await pilot.press("c", "1")
        await pilot.pause()
        assert app.clipboard == "long"


def titled_home(cw_home: Path) -> Path:
    """Two sessions admitted with titles (as the importers set them from a summary or the
    first real prompt), one with a thinking message, shaped as importers keep thinking."""
    from cwcore.methods import make_service
    from cwcore.model import DocumentPart, DocumentSpec, SessionSpec

    engine = make_service(cw_home)
    try:
        for sid, title, start in (
            ("s-titled-1", "Fix the flaky lease renewal test", "2026-11-19T09:00:00Z"),
            ("s-titled-2", "Why is the queue back on SQLite?", "2026-11-18T09:00:00Z"),
        ):
            session = SessionSpec(sid, "proj", "claude-code", started=start, title=title)
            parts = (
                DocumentPart("user:u1", "user", "text", f"{title} please", timestamp=start),
                DocumentPart(
                    "assistant:k1",
                    "assistant",
                    "thinking",
                    "The lease clock should be monotonic, not wall time.",
                    timestamp=start,
                ),
                DocumentPart("assistant:a1", "assistant", "text", "Done.", timestamp=start),
            )
            spec = DocumentSpec(
                f"t-{sid}", "turn", sid, "proj", "claude-code", parts, starts_turn=True
            )
            engine.admission.admit(session, (), [spec])
        engine.indexer.drain()
    finally:
        engine.close()
    return cw_home


async def test_titles_show_in_the_table_and_header_and_find_reaches_thinking(
    cw_home: Path, app_for: AppFactory
) -> None:
    from cwtui.widgets.sessions_table import SessionsTable

    app = app_for(titled_home(cw_home))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        table = app.screen.query_one(SessionsTable)
        titles = [str(table.get_row_at(n)[-1]) for n in range(table.row_count)]
        assert titles == ["Fix the flaky lease renewal test", "Why is the queue back on SQLite?"]
        await pilot.press("slash", *"queue", "enter")  # the / filter matches titles
        await settle(pilot)
        assert table.row_count == 1
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, TranscriptScreen)
        assert "Why is the queue back on SQLite?" in str(
            screen.query_one("#transcript-header").render()
        )
        thinking = next(v for v in screen.query(MessageView) if v.message.kind == "thinking")
        assert not thinking.display  # hidden until t …
        await pilot.press("slash")
        await type_text(pilot, "monotonic")
        await pilot.press("enter")  # … or until a find lands in it
        await settle(pilot)
        assert current(screen) is thinking and thinking.display and screen.show_thinking


async def test_esc_pops_at_once_and_removes_the_left_screen_later_in_batches(
    long_home: Path, app_for: AppFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Esc shows the screen below at once; the transcript's widgets go afterwards, a batch at
    a time (keys are handled between batches), and then the screen itself."""
    import cwtui.screens.transcript as transcript_module

    monkeypatch.setattr(transcript_module, "DISPOSE_DELAY", 0)
    monkeypatch.setattr(transcript_module, "DISPOSE_BATCH", 3)
    removed: list[int] = []
    original = TranscriptView.remove_children

    def counting(self: TranscriptView, selector: Any = "*") -> Any:
        removed.append(len(list(selector)))
        return original(self, selector)

    monkeypatch.setattr(TranscriptView, "remove_children", counting)
    app = app_for(long_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_long(pilot)
        view = screen.view
        await pilot.press("G")  # read it: more messages mounted
        await settle(pilot)
        mounted = len(view.children)
        assert mounted > 3
        removed.clear()  # (landing may restart the window)
        await pilot.press("escape", "escape")  # a second Esc of a burst reaches the list only
        assert not isinstance(app.screen, TranscriptScreen)
        await settle(pilot)
        await pilot.pause()
        await settle(pilot)
        assert not isinstance(app.screen, TranscriptScreen) and app.is_running
        assert not screen.is_attached and not view.children
        assert removed and max(removed) <= 3 and sum(removed) == mounted
        assert not any(s is screen for s in app._installed_screens.values())

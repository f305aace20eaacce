"""The transcript screen: open, roles, tool sections, thinking, jumps, metadata, export."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, RadioButton, Static

from cwcore.api import Archive
from cwcore.contract.views import Transcript
from cwtui.screens.export import ExportScreen
from cwtui.screens.transcript import TranscriptScreen
from cwtui.widgets.message import MessageView
from cwtui.widgets.transcript_view import TranscriptView
from tests.tui.conftest import SIZE, AppFactory, settle, write_jsonl

pytestmark = pytest.mark.anyio


class ThinkingArchive(Archive):
    """The real archive, plus one thinking message in ``s-alpha-1``'s transcript.

    The transcript contract has a ``thinking`` kind, but today's importers keep reasoning in
    session metadata rather than as messages, so no imported session carries one yet. This adds
    one, shaped exactly like a ``show`` message, to exercise the toggle.
    """

    def show(
        self, session: str, *, include_all: bool = False, hide_superseded: bool = False
    ) -> Transcript:
        body = super().show(session, include_all=include_all, hide_superseded=hide_superseded)
        if body.session.sessionId == "s-alpha-1":
            first = body.messages[0]
            thinking = replace(
                first,
                message_key="assistant:think-1",
                role="assistant",
                kind="thinking",
                text="The user wants date parsing; parse_time handles ISO input.",
            )
            body = replace(body, messages=(first, thinking, *body.messages[1:]))
        return body


def rendered(view: MessageView) -> str:
    """What the widget shows, as plain text (at its current width)."""
    return "\n".join(strip.text for strip in view.render_lines(view.region.reset_offset))


def views(screen: TranscriptScreen) -> list[MessageView]:
    return list(screen.query(MessageView))


def by_key(screen: TranscriptScreen, key: str) -> MessageView:
    return next(v for v in views(screen) if v.key == key)


async def open_first(pilot: Any) -> TranscriptScreen:
    await settle(pilot)
    await pilot.press("enter")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, TranscriptScreen)
    return screen


async def test_enter_opens_the_transcript_with_roles_and_folded_tools(
    filled_home: Path, app_for: AppFactory
) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(pilot)
        assert screen.session_id == "s-alpha-1"
        shown = views(screen)
        assert [v.key for v in shown] == [
            "user:u1",
            "assistant:a1",
            "assistant:a2",
            "tool:t1",
            "assistant:a3",
            "user:u2",
            "assistant:a4",
        ]
        assert by_key(screen, "user:u1").has_class("role-user")
        assert by_key(screen, "assistant:a1").has_class("role-assistant")
        # Markdown (with its fenced code highlighted) for prose, folds for tools.
        assert "from cwcore.clock import parse_time" in rendered(by_key(screen, "assistant:a1"))
        call = by_key(screen, "assistant:a2")
        result = by_key(screen, "tool:t1")
        assert call.foldable and result.foldable
        assert not call.expanded and not result.expanded  # the 30-line output is long
        assert "test_30" not in rendered(result)

        # Expand the tool output as a user would: j to it (every message takes the focus), Enter.
        await pilot.press("j", "j", "j", "j")
        await pilot.pause()
        assert app.focused is result and result.has_class("current")
        await pilot.press("enter")
        await pilot.pause()
        assert result.expanded and "test_30 PASSED" in rendered(result)
        await pilot.click(result, offset=(4, 1))  # a click on the fold line folds it again
        await pilot.pause()
        assert not result.expanded

        await pilot.press("x")  # every tool message open …
        await pilot.pause()
        assert call.expanded and result.expanded
        assert '"command": "pytest -q tests"' in rendered(call)
        await pilot.press("x")  # … and closed
        await pilot.pause()
        assert not call.expanded and not result.expanded

        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, TranscriptScreen)


async def test_thinking_and_metadata_toggles(filled_home: Path, app_for: AppFactory) -> None:
    app = app_for(filled_home, ThinkingArchive)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(pilot)
        thinking = by_key(screen, "assistant:think-1")
        assert thinking.has_class("kind-thinking")
        assert not thinking.display
        await pilot.press("t")
        await pilot.pause()
        assert thinking.display
        await pilot.press("t")
        await pilot.pause()
        assert not thinking.display

        # Metadata events are the `cw show --all` view: toggling asks the archive again.
        assert screen.body is not None and screen.body.events is None
        await pilot.press("m")
        await settle(pilot)
        # cw-jsonl lines are all conversational, so the list is empty, but it was asked for.
        assert screen.body is not None and screen.body.events == ()
        assert len(views(screen)) == 8


async def test_jump_and_user_prompt_navigation(filled_home: Path, app_for: AppFactory) -> None:
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(pilot)

        def current() -> str:
            return next(v.key for v in views(screen) if v.has_class("current"))

        await pilot.press("right_square_bracket")
        assert current() == "user:u1"
        await pilot.press("right_square_bracket")
        assert current() == "user:u2"
        await pilot.press("right_square_bracket")  # no further prompt: stays
        assert current() == "user:u2"
        await pilot.press("left_square_bracket")
        assert current() == "user:u1"
        await pilot.press("k")  # no message before the first
        assert current() == "user:u1"
        await pilot.press("j", "j")
        assert current() == "assistant:a2"
        await pilot.press("percent_sign")  # the call's result
        assert current() == "tool:t1"
        await pilot.press("percent_sign")  # and back
        assert current() == "assistant:a2"
        await pilot.press("G")
        assert current() == "assistant:a4"

        await pilot.press("g", "5", "enter")
        await pilot.pause()
        assert current() == "assistant:a3"
        await pilot.press("g", *"t1", "enter")
        await pilot.pause()
        assert current() == "tool:t1"
        await pilot.press("g", *"nope", "enter")
        await pilot.pause()
        assert current() == "tool:t1"
        assert any("No message 'nope'" in n.message for n in app._notifications)


async def test_export_markdown_from_the_transcript(
    filled_home: Path, app_for: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await open_first(pilot)
        await pilot.press("e")
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ExportScreen)
        assert modal.query_one("#export-path", Input).value == "./s-alpha-1.md"
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
        text = (tmp_path / "s-alpha-1.md").read_text(encoding="utf-8")
        assert text.startswith("# Session s-alpha-1")
        assert any("Exported s-alpha-1" in n.message for n in app._notifications)


async def test_export_jsonl_from_the_sessions_screen_with_errors_and_overwrite(
    filled_home: Path, app_for: AppFactory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    target = tmp_path / "s-alpha-1.jsonl"
    target.write_text("old", encoding="utf-8")
    app = app_for(filled_home)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+e")  # export (e types into the text match)
        await pilot.pause()
        modal = app.screen
        assert isinstance(modal, ExportScreen)
        modal.query_one("#fmt-jsonl", RadioButton).value = True
        await pilot.pause()
        path_input = modal.query_one("#export-path", Input)
        assert path_input.value == "./s-alpha-1.jsonl"
        path_input.focus()

        # A folder that does not exist: a notification, and the modal stays to fix the path.
        path_input.value = str(tmp_path / "missing" / "out.jsonl")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is modal
        assert any(n.message.startswith("Export failed") for n in app._notifications)

        path_input.value = "./s-alpha-1.jsonl"
        await pilot.press("enter")  # exists: asks for confirmation
        await settle(pilot)
        assert app.screen is modal and target.read_text(encoding="utf-8") == "old"
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is not modal
        lines = target.read_text(encoding="utf-8").splitlines()
        assert len(lines) == 7 and '"session": "s-alpha-1"' in lines[0]


async def test_a_jump_far_down_mounts_enough_to_put_the_target_on_top(
    cw_home: Path, app_for: AppFactory, tmp_path: Path
) -> None:
    """A long session mounts in batches; a jump past them still lands at the top of the view."""
    rows = [
        {
            "session": "long",
            "id": f"m{n}",
            "role": "user" if n % 2 == 0 else "assistant",
            "text": f"message number {n}",
            "timestamp": f"2026-11-19T10:{n // 60:02}:{n % 60:02}Z",
        }
        for n in range(150)
    ]
    source = write_jsonl(tmp_path / "long.jsonl", rows)
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([source])
    app = app_for(cw_home)
    async with app.run_test(size=SIZE) as pilot:
        screen = await open_first(pilot)
        view = screen.query_one(TranscriptView)
        assert view.mounted < 150  # lazily mounted
        await pilot.press("g", *"120", "enter")
        await settle(pilot)
        target = by_key(screen, "assistant:m119")
        assert target.has_class("current")
        assert 0 <= target.region.y - view.region.y <= 1  # at the top (below its margin)
        # A far jump starts a new window there instead of mounting the hundred entries between
        # (the target being near the window's top, the batch above it follows).
        first = view.first
        assert first in (119, 119 - view.BATCH) and view.mounted <= 3 * view.BATCH + 1
        earlier = view.query_one(".transcript-earlier", Static)
        assert f"{first} earlier entries" in str(earlier.content)
        # Scrolling to the top mounts the batch above, the old top entry staying in view.
        view.scroll_to(y=0, animate=False)
        await settle(pilot)
        assert view.first == first - view.BATCH and target.is_attached and view.scroll_y > 0
        assert f"{view.first} earlier" in str(earlier.content)
        # A far jump back starts the window at the first message.
        await pilot.press("g", *"1", "enter")
        await settle(pilot)
        assert view.first == 0 and not view.query(".transcript-earlier")
        assert by_key(screen, "user:m0").has_class("current")

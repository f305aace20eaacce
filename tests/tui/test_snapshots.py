"""SVG snapshots of the screens at a fixed size, over the fixed archive of conftest.

Regenerate after an intended visual change with
``.venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwtui.screens.search import SearchScreen
from tests.tui.conftest import SIZE, AppFactory, settle


@pytest.fixture(autouse=True)
def _no_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search status shows the engine's timing, the one value that varies between runs."""
    monkeypatch.setattr(SearchScreen, "SHOW_TIMING", False)


def test_sessions_screen(snap_compare: Any, filled_home: Path, app_for: AppFactory) -> None:
    assert snap_compare(app_for(filled_home), terminal_size=SIZE, run_before=settle)


def test_empty_archive(snap_compare: Any, cw_home: Path, app_for: AppFactory) -> None:
    assert snap_compare(app_for(cw_home), terminal_size=SIZE, run_before=settle)


def test_transcript_screen(snap_compare: Any, filled_home: Path, app_for: AppFactory) -> None:
    async def open_transcript(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_for(filled_home), terminal_size=SIZE, run_before=open_transcript)


def test_transcript_with_tool_output_expanded(
    snap_compare: Any, filled_home: Path, app_for: AppFactory
) -> None:
    async def expand(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("x", "g", "3", "enter")  # expand tools, then jump to the tool call
        await settle(pilot)

    assert snap_compare(app_for(filled_home), terminal_size=SIZE, run_before=expand)


async def _search(pilot: Any, query: str = "queue backend") -> None:
    await settle(pilot)
    await pilot.press("2")
    await settle(pilot)
    await pilot.press(*query)
    await settle(pilot)
    await pilot.press("enter", "down")  # the full search; the second result
    await settle(pilot)


def test_search_screen(snap_compare: Any, search_home: Path, app_for: AppFactory) -> None:
    assert snap_compare(app_for(search_home), terminal_size=SIZE, run_before=_search)


def test_recall_screen(snap_compare: Any, search_home: Path, app_for: AppFactory) -> None:
    async def recall(pilot: Any) -> None:
        await _search(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_for(search_home), terminal_size=SIZE, run_before=recall)


def test_supersede_dialog(snap_compare: Any, search_home: Path, app_for: AppFactory) -> None:
    async def dialog(pilot: Any) -> None:
        await _search(pilot)
        await pilot.press("x")
        await settle(pilot)
        await pilot.press(*"ADR 0008", "enter", "enter", *"queue")
        await settle(pilot)

    assert snap_compare(app_for(search_home), terminal_size=SIZE, run_before=dialog)


def test_index_screen(snap_compare: Any, filled_home: Path, app_for: AppFactory) -> None:
    async def index(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)

    assert snap_compare(app_for(filled_home), terminal_size=SIZE, run_before=index)

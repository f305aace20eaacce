"""SVG snapshots of the screens at 80×24 (the smallest terminal the TUI must fully serve) and
160×45, over the fixed archive of conftest.

Regenerate after an intended visual change with
``.venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwtui.screens.search import SearchScreen
from tests.tui.conftest import AppFactory, settle, type_text

SIZES = pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])


@pytest.fixture(autouse=True)
def _no_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The search status shows the engine's timing, the one value that varies between runs."""
    monkeypatch.setattr(SearchScreen, "SHOW_TIMING", False)


@SIZES
def test_sessions_screen(
    snap_compare: Any, filled_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    assert snap_compare(app_for(filled_home), terminal_size=size, run_before=settle)


@SIZES
def test_empty_archive(
    snap_compare: Any, cw_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    assert snap_compare(app_for(cw_home), terminal_size=size, run_before=settle)


@SIZES
def test_transcript_screen(
    snap_compare: Any, filled_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    async def open_transcript(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_for(filled_home), terminal_size=size, run_before=open_transcript)


@SIZES
def test_transcript_with_tool_output_expanded(
    snap_compare: Any, filled_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    async def expand(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("x", "g", "3", "enter")  # expand tools, then jump to the tool call
        await settle(pilot)

    assert snap_compare(app_for(filled_home), terminal_size=size, run_before=expand)


@SIZES
def test_transcript_find_and_superseded(
    snap_compare: Any, filled_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    """A superseded message shown and marked; a find landed in folded tool output."""
    with Archive.open(filled_home, embedded=True) as archive:
        docs = archive.show("s-alpha-1").documents
        archive.supersede(docs[-1].document_id, reason="export moved to cw export --format")

    async def find(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("slash", *"test_30", "enter")
        await settle(pilot)

    assert snap_compare(app_for(filled_home), terminal_size=size, run_before=find)


async def _search(pilot: Any, query: str = "queue backend") -> None:
    await settle(pilot)
    await pilot.press("alt+2")
    await settle(pilot)
    await type_text(pilot, query)
    await settle(pilot)
    await pilot.press("enter", "down")  # the full search; the second result
    await settle(pilot)


@SIZES
def test_search_screen(
    snap_compare: Any, search_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    assert snap_compare(app_for(search_home), terminal_size=size, run_before=_search)


@SIZES
def test_search_with_filters_and_context(
    snap_compare: Any, search_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    async def filtered(pilot: Any) -> None:
        await _search(pilot, "queue backend project:delta role:user")
        await pilot.press("f6")
        await settle(pilot)

    assert snap_compare(app_for(search_home), terminal_size=size, run_before=filtered)


@SIZES
def test_search_no_results(
    snap_compare: Any, search_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    async def nothing(pilot: Any) -> None:
        await _search(pilot, "zebracorn agent:codex")

    assert snap_compare(app_for(search_home), terminal_size=size, run_before=nothing)


@SIZES
def test_recall_screen(
    snap_compare: Any, search_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    async def recall(pilot: Any) -> None:
        await _search(pilot)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_for(search_home), terminal_size=size, run_before=recall)


@SIZES
def test_supersede_dialog(
    snap_compare: Any, search_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    async def dialog(pilot: Any) -> None:
        await _search(pilot)
        await pilot.press("ctrl+x")
        await settle(pilot)
        await type_text(pilot, "ADR 0008")
        await pilot.press("enter", "enter")
        await type_text(pilot, "queue")
        await settle(pilot)

    assert snap_compare(app_for(search_home), terminal_size=size, run_before=dialog)


@SIZES
def test_index_screen(
    snap_compare: Any, filled_home: Path, app_for: AppFactory, size: tuple[int, int]
) -> None:
    async def index(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("alt+3")
        await settle(pilot)

    assert snap_compare(app_for(filled_home), terminal_size=size, run_before=index)

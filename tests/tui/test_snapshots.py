"""SVG snapshots of the screens at a fixed size, over the fixed archive of conftest.

Regenerate after an intended visual change with
``.venv/bin/pytest tests/tui/test_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.tui.conftest import SIZE, AppFactory, settle


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

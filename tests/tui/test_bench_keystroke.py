"""The TUI bench's keystroke clock (``bench.tui._keystrokes``) over a small embedded archive.

The bench's number is only as good as its hooks: this checks that each typed query and each
Enter is timed to a painted frame (the clock fires), that the painted time never comes after
Pilot's idle time, and that the hooks are taken off afterwards. It asserts no duration.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual.screen import Screen

from bench.tui import _keystrokes, _leave_once
from cwtui.screens.search import SearchScreen


def test_each_query_is_timed_to_a_painted_frame_and_the_hooks_come_off(
    search_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_EMBEDDED", "1")
    monkeypatch.setattr(SearchScreen, "DEBOUNCE", 0.0)
    hooks = (
        SearchScreen.on_search_screen_results,
        Screen._refresh_layout,
    )
    samples = asyncio.run(_keystrokes(["queue backend", "which broker did we pick"]))
    assert len(samples["fast"]) == len(samples["full"]) == 2
    for painted, idle in zip(
        samples["fast"] + samples["full"], samples["fast_idle"] + samples["full_idle"], strict=True
    ):
        assert 0 < painted <= idle
    assert hooks == (
        SearchScreen.on_search_screen_results,
        Screen._refresh_layout,
    )


def test_esc_and_quit_are_timed_to_a_painted_frame_and_the_hook_comes_off(
    filled_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench.tui._leave_once``: the screen below's first frame after Esc is seen (the clock
    fires), reading mounts more messages, and the frame hook is taken off afterwards."""
    monkeypatch.setenv("CW_EMBEDDED", "1")
    hook = Screen._refresh_layout
    sample = asyncio.run(_leave_once(True))
    assert Screen._refresh_layout == hook
    assert sample["messages"] >= sample["mounted"] > 0
    assert 0 < sample["esc_ms"] <= sample["esc_idle_ms"]
    assert sample["quit_headless_ms"] > 0

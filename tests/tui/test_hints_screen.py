"""The hints screen (key 4): frozen preflight decisions of a session and their diagnostics.

A small archive (the fixed sessions of conftest plus one session that discusses ``REAP_DRAIN``)
is imported embedded; ``Archive.preflight`` freezes two decisions in that session: a historical
cue about ``REAP_DRAIN`` (an excerpt, or a marker) and an acknowledgement (``no-query``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, OptionList, Static

from cwcore.api import Archive
from cwtui.screens.hints import EMPTY_SESSION, HintsScreen
from tests.helpers import HomeCache
from tests.tui.conftest import (
    SIZE,
    AppFactory,
    _line,
    archive_lines,
    settle,
    type_text,
    write_jsonl,
)

SESSION = "s-omega-1"
CUE = "Last time, what did we decide `REAP_DRAIN` does?"
OMEGA = {"project": "omega", "agent": "claude-code"}


def omega_lines() -> list[dict[str, Any]]:
    return [
        _line(
            SESSION,
            "u1",
            "user",
            "The worker pool hangs on shutdown. What does `REAP_DRAIN` do?",
            "2026-11-17T10:00:00Z",
            **OMEGA,
        ),
        _line(
            SESSION,
            "a1",
            "assistant",
            "`REAP_DRAIN` prevents accepting new work while the pool drains.",
            "2026-11-17T10:00:30Z",
            **OMEGA,
        ),
        _line(SESSION, "u2", "user", "ok thanks", "2026-11-17T10:05:00Z", **OMEGA),
    ]


#: The preflight outcomes frozen by :func:`_build_hints_home`, by message key; filled when this
#: process builds the archive (once, through the home cache) and read by every test after.
_FROZEN: dict[str, dict[str, Any]] = {}


def _build_hints_home(home: Path) -> None:
    source = write_jsonl(home.parent / "sessions.jsonl", archive_lines() + omega_lines())
    with Archive.open(home, embedded=True) as archive:
        summary = archive.import_paths([source])
        assert not summary.errors, summary.errors
        # Kept as the public preflight JSON, which the assertions below compare the screen to.
        cue = archive.preflight(CUE, session=SESSION, message_key="user:u3").to_json()
        ack = archive.preflight("ok thanks", session=SESSION, message_key="user:u4").to_json()
        # The host logs the messages after their preflight; a later import brings them in.
        later = [
            _line(SESSION, "u3", "user", CUE, "2026-11-17T10:06:00Z", **OMEGA),
            _line(SESSION, "u4", "user", "ok thanks", "2026-11-17T10:07:00Z", **OMEGA),
        ]
        archive.import_paths([write_jsonl(home.parent / "later.jsonl", later)])
    _FROZEN.update({"user:u3": cue, "user:u4": ack})


@pytest.fixture
def hints_home(cw_home: Path, home_cache: HomeCache) -> dict[str, Any]:
    """The archive with two frozen decisions in :data:`SESSION`; returns them by key (a copy of
    an archive built once per test process: the test may write to it)."""
    home_cache.clone("tui-hints", _build_hints_home, cw_home)
    cue, ack = _FROZEN["user:u3"], _FROZEN["user:u4"]
    assert cue["outcome"] in ("excerpt", "marker"), cue
    assert cue["hint"]
    assert ack["outcome"] == "no-query" and ack["hint"] is None
    return {"home": cw_home, "user:u3": cue, "user:u4": ack}


@pytest.fixture(autouse=True)
def _no_timing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(HintsScreen, "SHOW_TIMING", False)


def _text(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def _open_hints(pilot: Any) -> HintsScreen:
    await settle(pilot)
    await pilot.press("alt+4")
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, HintsScreen), screen
    return screen


@pytest.mark.anyio
async def test_table_and_detail(hints_home: dict[str, Any], app_for: AppFactory) -> None:
    cue = hints_home["user:u3"]
    async with app_for(hints_home["home"]).run_test(size=SIZE) as pilot:
        screen = await _open_hints(pilot)
        # The Sessions screen's cursor sits on the newest session (no hints): it is pinned and
        # shown first, with the empty state.
        options = screen.query_one("#hints-sessions", OptionList)
        prompts = [str(options.get_option_at_index(i).id) for i in range(options.option_count)]
        assert SESSION in prompts
        assert screen.session == "s-alpha-1"
        assert not screen.hints
        assert screen.query_one("#hints-empty", Static).display
        assert EMPTY_SESSION in _text(screen, "#hints-empty")
        assert not screen.query_one("#hints-table").display

        # Choose the session with hints from the list.
        options.focus()
        options.highlighted = prompts.index(SESSION)
        await pilot.press("enter")
        await settle(pilot)
        assert screen.session == SESSION
        table = screen.query_one("#hints-table", DataTable)
        assert table.row_count == 2
        rows = [[str(cell) for cell in table.get_row_at(n)] for n in range(2)]
        # Each decision with what the user said there (from the session's transcript).
        assert rows[0][0] == "user:u3" and rows[0][1].startswith("Last time, what did")
        assert rows[0][2] == cue["outcome"]
        assert rows[0][4] == f"{len(cue['hint'].encode('utf-8')):,}"
        assert rows[0][5] == str(cue["tokens"])
        assert rows[0][6] == cue["queryHash"]
        assert rows[0][7] == str(cue["generation"])
        assert rows[1][:4] == ["user:u4", "ok thanks", "no-query", "no-topic"]
        assert f"The user said “{CUE}”" in _text(screen, "#hints-detail")
        assert "Why: a historical cue" in _text(screen, "#hints-detail") or (
            "Why: " in _text(screen, "#hints-detail") and cue["outcome"] == "marker"
        )
        assert "Session s-omega-1" in _text(screen, "#hints-budget")
        assert f"{cue['tokens']} / 640 tokens" in _text(screen, "#hints-budget")

        # The detail pane: the exact hint lines (markup-like brackets kept), and the reasons.
        detail = _text(screen, "#hints-detail")
        for line in cue["hint"].split("\n"):
            assert line in detail
        assert "[CW " in detail and "[END CW " in detail
        included = cue["diagnostics"]["included"]
        for row in included:
            assert str(row["id"]) in detail
            assert str(row["reason"]) in detail
        assert f"Retrieved ({len(cue['diagnostics']['retrieved'])})" in detail
        counts = cue["diagnostics"]["counts"]
        for key in ("candidates", "dedup", "branch", "alternateBranchCandidates"):
            assert f"{key} {counts[key]}" in detail
        assert "session active budget" in detail
        assert " ms" not in detail  # timing off for the tests

        # Down: the no-query decision, with no hint and no counts.
        table.focus()
        await pilot.press("down")
        await settle(pilot)
        detail = _text(screen, "#hints-detail")
        assert "user:u4" in detail and "no-query" in detail
        assert "no hint" in detail


@pytest.mark.anyio
async def test_session_by_id_and_copy(hints_home: dict[str, Any], app_for: AppFactory) -> None:
    app = app_for(hints_home["home"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_hints(pilot)
        await pilot.press("s")
        await settle(pilot)
        await type_text(pilot, SESSION)
        await pilot.press("enter")
        await settle(pilot)
        assert screen.session == SESSION
        assert len(screen.hints) == 2
        await pilot.press("y")
        assert app.clipboard == hints_home["user:u3"]["hint"]

        await pilot.press("s")
        await settle(pilot)
        await type_text(pilot, "s-beta-1")
        await pilot.press("enter")
        await settle(pilot)
        assert screen.hints == []
        assert EMPTY_SESSION in _text(screen, "#hints-empty")


@pytest.mark.anyio
async def test_empty_archive(cw_home: Path, app_for: AppFactory) -> None:
    async with app_for(cw_home).run_test(size=SIZE) as pilot:
        screen = await _open_hints(pilot)
        assert screen.session is None
        assert "No frozen hints yet" in _text(screen, "#hints-empty")


@pytest.mark.parametrize("size", [(80, 24), (160, 45)], ids=["80x24", "160x45"])
def test_hints_snapshot(
    snap_compare: Any, hints_home: dict[str, Any], app_for: AppFactory, size: tuple[int, int]
) -> None:
    async def hints(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("alt+4")
        await settle(pilot)
        await pilot.press("s")
        await settle(pilot)
        await type_text(pilot, SESSION)
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_for(hints_home["home"]), terminal_size=size, run_before=hints)


@pytest.mark.anyio
async def test_what_was_said_comes_from_the_decision_and_none_says_why(
    hints_home: dict[str, Any], app_for: AppFactory
) -> None:
    # A decision under a key no transcript message has (the default text- key of a manual
    # preflight): what the user said is read from the decision itself.
    with Archive.open(hints_home["home"], embedded=True) as archive:
        archive.preflight("what about the zebra stripes?", session=SESSION)
    async with app_for(hints_home["home"]).run_test(size=SIZE) as pilot:
        screen = await _open_hints(pilot)
        await pilot.press("s")
        await settle(pilot)
        await type_text(pilot, SESSION)
        await pilot.press("enter")
        await settle(pilot)
        keyed = [n for n, h in enumerate(screen.hints) if h.message_key.startswith("text-")]
        assert len(keyed) == 1
        table = screen.query_one("#hints-table", DataTable)
        assert str(table.get_row_at(keyed[0])[1]) == "what about the zebra stripes?"
        table.focus()
        table.move_cursor(row=keyed[0])
        await settle(pilot)
        detail = _text(screen, "#hints-detail")
        assert "The user said “what about the zebra stripes?”" in detail
        assert "Why: nothing in the" in detail and "matches the message's topic" in detail


@pytest.mark.anyio
async def test_a_candidate_recalls_with_its_provenance(
    hints_home: dict[str, Any], app_for: AppFactory
) -> None:
    from cwtui.screens.candidates import CandidatesScreen
    from cwtui.screens.recall import RecallScreen

    app = app_for(hints_home["home"])
    async with app.run_test(size=SIZE) as pilot:
        screen = await _open_hints(pilot)
        await pilot.press("s")
        await settle(pilot)
        await type_text(pilot, SESSION)
        await pilot.press("enter")
        await settle(pilot)
        screen.query_one("#hints-table", DataTable).focus()
        await pilot.press("c")
        await settle(pilot)
        assert isinstance(app.screen, CandidatesScreen)
        await pilot.press("enter")
        await settle(pilot)
        recall = app.screen
        assert isinstance(recall, RecallScreen)
        body = recall.body
        assert body is not None and body.status == "resolved" and body.source is not None
        header = _text(recall, "#recall-header")
        assert "claude-code" in header and "None" not in header
        assert "bytes 0–0" not in header and " 0 tokens" not in header
        roles = {p.message.role for p in _parts(body) if p.message is not None}
        assert roles == {"user", "assistant"}


def _parts(body: Any) -> list[Any]:
    from cwtui.screens.recall import parts_of

    return parts_of(body)

"""Result rows show why they matched: the snippet around its match on one or two lines (F7),
a row above a higher score says why, and F8 re-sorts the fetched page by date (and says so).

The rows are rendered as the results list renders them (a Rich console of the row's width);
the screen is driven by Pilot with its keys pressed in bursts."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.segment import Segment

from cwcore.contract.search import SearchHit, SearchResponse
from cwtui.commands import search as search_command
from cwtui.screens.search import SearchScreen
from cwtui.widgets.hits import order_notes, result_row
from cwtui.widgets.results import ResultsList
from tests.tui.conftest import SIZE, AppFactory, settle
from tests.tui.test_search_screen import open_search, static_text

HIGHLIGHT_BG = "#e3b341"


def _hit(
    snippet: str,
    anchor: str | None = None,
    *,
    score: float = 0.8,
    tier: int = 0,
    reranked: bool = False,
    timestamp: str = "2026-11-10T10:00:00Z",
    doc: str = "t-1",
) -> SearchHit:
    highlights = []
    if anchor:
        at = snippet.find(anchor)
        while at != -1:
            highlights.append([at, at + len(anchor)])
            at = snippet.find(anchor, at + len(anchor))
    return SearchHit.from_json(
        {
            "documentId": doc,
            "version": 1,
            "kind": "turn",
            "score": score,
            "matchType": ("exact-symbol", "structural-decision", "lexical")[tier],
            "margin": 0.0,
            "snippet": snippet,
            "highlights": highlights,
            "locator": "cwl2.x.y",
            "reranked": reranked,
            "matchedTerms": [anchor] if anchor else [],
            "expandedTerms": [],
            "score_metadata": {"mode": "exact", "tier": tier, "stages": []},
            "source": {
                "sessionId": "s-1",
                "turnId": doc,
                "messageKey": "user:m1",
                "messageKeys": ["user:m1"],
                "project": "p",
                "agent": "claude-code",
                "timestamp": timestamp,
            },
        }
    )


def _render(hit: SearchHit, width: int, lines: int) -> tuple[list[str], str]:
    """The row's snippet lines as text, and the text styled as a highlight."""
    console = Console(width=width, file=io.StringIO(), color_system="truecolor")
    row = result_row(hit, lines=lines)
    rendered = list(console.render(row, console.options.update_width(width)))
    text = "".join(s.text for s in rendered)
    marked = "".join(
        s.text
        for s in rendered
        if s.style is not None
        and s.style.bgcolor is not None
        and s.style.bgcolor.triplet is not None
        and s.style.bgcolor.triplet.hex == HIGHLIGHT_BG
    )
    body = text.split("\n")[1:]
    return [line for line in body if line], marked


# A snippet as the engine makes it for a real Go session: the anchor past the first 90 characters.
GO = (
    "…directories to protect. This combines // static infrastructure dirs with agent-reported dirs"
    " from the registry. // The result is cached via sync.Once since it's called per-file during"
    " filepath.Walk. // // NOTE: The cache is never invalidated. In production this is fine (the"
    " agent registry //…"
)
PATH = (
    '…answer questions about the code behavior. </system-reminder> {"file_path":'
    ' "/Users/soph/Work/entire/devenv/cli/.github/ISSUE_TEMPLATE/bug_report.yml", "new_string":'
    ' " - type: input id: terminal attributes: label: Terminal description: Which terminal…'
)


@pytest.mark.parametrize("width", [60, 78, 94, 160])
@pytest.mark.parametrize("lines", [1, 2])
@pytest.mark.parametrize(("snippet", "anchor"), [(GO, "sync.Once"), (PATH, "bug_report.yml")])
def test_the_row_shows_its_anchor_whole_and_highlighted(
    snippet: str, anchor: str, width: int, lines: int
) -> None:
    body, marked = _render(_hit(snippet, anchor), width, lines)
    assert 1 <= len(body) <= lines
    assert anchor in marked
    assert all(Segment(line).cell_length <= width for line in body)


def test_a_short_snippet_is_shown_whole_without_ellipses() -> None:
    body, marked = _render(_hit("the sync.Once guard", "sync.Once"), 80, 2)
    assert body == ["  the sync.Once guard"]
    assert marked == "sync.Once"


@settings(max_examples=60, deadline=None)
@given(
    st.integers(min_value=0, max_value=260),
    st.integers(min_value=30, max_value=200),
    st.sampled_from([1, 2]),
    st.sampled_from(["x", "wörd", "数据"]),
)
def test_any_match_position_is_in_view(at: int, width: int, lines: int, filler: str) -> None:
    words = (filler + " ") * 80
    snippet = words[:at] + " ANCHOR.yml " + words[at : at + 260]
    body, marked = _render(_hit(snippet, "ANCHOR.yml"), width, lines)
    assert "ANCHOR.yml" in marked
    assert len(body) <= lines


def test_a_row_above_a_higher_score_says_why() -> None:
    hits = [
        _hit("a", score=0.6, tier=0, doc="t-exact"),
        _hit("b", score=0.7, tier=1, doc="t-structural"),
        _hit("c", score=0.5, tier=2, reranked=True, doc="t-reranked"),
        _hit("d", score=0.6, tier=2, doc="t-fused"),
        _hit("e", score=0.9, tier=2, doc="t-best"),
        _hit("f", score=0.9, tier=2, doc="t-tie"),
    ]
    assert order_notes(hits) == [
        "exact tier",
        "structural tier",
        "reranked",
        "fused rank",
        None,
        None,
    ]
    console = Console(width=160, file=io.StringIO(), record=True, color_system=None)
    console.print(result_row(hits[0], note="exact tier"))
    assert "· exact tier" in console.export_text()


def test_the_cli_table_folds_a_long_path_instead_of_cutting_its_match(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = Console(width=100, file=io.StringIO(), record=True, color_system=None)
    monkeypatch.setattr(search_command, "console", out)
    hit = _hit(PATH, "bug_report.yml")
    body: dict[str, Any] = {
        "query": "bug_report.yml",
        "relation": None,
        "semantic_search_used": False,
        "stages": {},
        "retrieval_status": "ok",
        "generation": 1,
        "timing_ms": 1.0,
        "results": [hit.to_json()],
    }
    search_command.render(SearchResponse.from_json(body))
    text = out.export_text()
    cells = "".join(line.split("│")[-2].strip() for line in text.splitlines() if "│" in line)
    assert "ISSUE_TEMPLATE/bug_report.yml" in cells
    assert "…" not in cells.split("file_path")[1].split("new_string")[0]


@pytest.mark.anyio
async def test_f7_folds_rows_and_f8_re_sorts_the_fetched_page_by_date(
    search_home: Path, app_for: AppFactory
) -> None:
    async with app_for(search_home).run_test(size=SIZE) as pilot:
        screen = await open_search(pilot, "queue backend")
        assert isinstance(screen, SearchScreen)
        await pilot.press("enter")
        await settle(pilot)
        results = screen.query_one(ResultsList)
        ranked = [h.document_id for h in screen.hits]
        assert len(ranked) == 4 and results.lines == 2

        await pilot.press("f7")  # compact: one snippet line
        await settle(pilot)
        assert results.lines == 1 and len(results.hits) == 4

        # A burst: newest, oldest, back to relevance, newest again.
        await pilot.press("f8", "f8", "f8", "f8")
        await settle(pilot)
        assert screen.order == "newest"
        times = [h.source.timestamp or "" for h in screen.hits]
        assert times == sorted(times, reverse=True)
        assert "newest first (these 4 re-sorted)" in static_text(screen, "#search-status")
        assert "order newest" in static_text(screen, "#search-toggles")
        assert results.hits == screen.hits and not results.ranked

        await pilot.press("f8")
        await settle(pilot)
        times = [h.source.timestamp or "" for h in screen.hits]
        assert times == sorted(times)

        await pilot.press("down", "down")  # the third, kept across the re-sort
        await settle(pilot)
        chosen = screen.current_hit
        assert chosen is not None
        await pilot.press("f8", "f7")  # relevance; comfortable rows again
        await settle(pilot)
        assert [h.document_id for h in screen.hits] == ranked
        assert screen.current_hit is chosen and results.lines == 2
        assert "re-sorted" not in static_text(screen, "#search-status")
        assert chosen.document_id in static_text(screen, "#preview")

        # The next search keeps the density and the order the user chose.
        await pilot.press("f8", "f7", "slash", "end", *" queue", "enter")
        await settle(pilot)
        assert screen.order == "newest" and results.lines == 1
        times = [h.source.timestamp or "" for h in screen.hits]
        assert times == sorted(times, reverse=True)

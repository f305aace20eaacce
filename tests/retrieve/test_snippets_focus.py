"""A face with room for part of a snippet shows the part with the match (``focus``), and a
literal anchor inside a longer one is one match (``outermost``).

Before ``focus``, a results row cut the snippet from its start: on 23 real sessions 3 of 9
``sync.Once`` rows and 3 of 10 ``bug_report.yml`` rows showed no match (the engine centres a
280-character snippet on the match; a row holds about 90 characters of it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cwcore.retrieve.snippets import focus, literal_spans, make_snippet, outermost, term_spans

# Modelled on a real window of the agent logs (a Go session about a cached directory list).
GO_WINDOW = (
    '{"file_path": "/Users/alex/workspace/cli/.worktrees/2/cmd/entire/cli/strategy/common.go",'
    ' "limit": 30, "offset": 200} 200→// protectedDirs returns the directories to protect. This'
    " combines 201→// static infrastructure dirs with agent-reported dirs from the registry. 202→"
    "// The result is cached via sync.Once since it's called per-file during filepath.Walk. 203→"
    "// NOTE: The cache is never invalidated. In production this is fine (the agent registry 204→"
    "// is populated at init time)."
)
TEMPLATES = (
    "| Project | Bug template | Feature template | |---|---|---| | Go | `00-bug.yml` |"
    " `01-enhancement.yml` | | Kubernetes | `bug-report.yaml` | `enhancement.yaml` | | VS Code |"
    " `bug_report.md`, `feature_request.md` | | uv | `1_bug_report.yaml` | | Docker CLI |"
    " `bug_report.yml` | `feature_request.yml` |"
)


def _shown(text: str, span: tuple[int, int], lo: int, hi: int) -> bool:
    return lo <= span[0] and span[1] <= hi


def test_a_row_of_the_snippet_shows_the_exact_anchor_past_its_start() -> None:
    snippet, highlights = make_snippet(GO_WINDOW, literal_spans(GO_WINDOW, ["sync.Once"]))
    assert highlights and all(snippet[a:b] == "sync.Once" for a, b in highlights)
    assert highlights[0][0] > 90  # the old row, cut from the start, showed no match
    for width in (60, 76, 90):
        lo, hi = focus(snippet, highlights, width)
        assert hi - lo <= width
        assert "sync.Once" in snippet[lo:hi]


def test_a_nested_literal_is_one_match_the_longer() -> None:
    text = "see .github/ISSUE_TEMPLATE/bug_report.yml and bug_report.yml again"
    spans = literal_spans(text, ["bug_report", "bug_report.yml", "ISSUE_TEMPLATE/bug_report.yml"])
    snippet, highlights = make_snippet(text, spans)
    assert [snippet[a:b] for a, b in highlights] == [
        "ISSUE_TEMPLATE/bug_report.yml",
        "bug_report.yml",
    ]
    assert outermost([(5, 9), (0, 20), (0, 20), (21, 22)]) == [(0, 20), (21, 22)]


def test_the_file_name_is_in_view_in_a_table_of_similar_names() -> None:
    spans = literal_spans(TEMPLATES, ["bug_report.yml"])
    snippet, highlights = make_snippet(TEMPLATES, spans)
    lo, hi = focus(snippet, highlights, 76)
    assert "bug_report.yml" in snippet[lo:hi]


def test_lexical_rows_centre_on_the_densest_cluster_of_distinct_terms() -> None:
    text = (
        "test " * 3
        + "filler words " * 12
        + "the cached protected dirs break every test that mutates it "
        + "more filler " * 12
    )
    spans = term_spans(text, ["protected", "dirs", "cache", "test"])
    lo, hi = focus(text, [list(s) for s in spans], 60)
    assert "protected dirs" in text[lo:hi]


def test_focus_without_highlights_or_room_to_spare() -> None:
    assert focus("short", [], 10) == (0, 5)
    assert focus("x" * 100, [], 10) == (0, 10)
    assert focus("x" * 100, [(0, 0), (5, 3)], 10) == (0, 10)  # empty or inverted: ignored
    # A highlight longer than the room keeps its start in view.
    text = "a " * 20 + "y" * 40 + " b" * 20
    lo, hi = focus(text, [(40, 80)], 20)
    assert lo == 40 and hi == 60


@given(
    st.integers(min_value=0, max_value=400),
    st.integers(min_value=1, max_value=30),
    st.integers(min_value=10, max_value=200),
    st.lists(st.integers(min_value=0, max_value=420), max_size=6),
)
def test_focus_always_holds_a_whole_highlight_that_fits(
    at: int, length: int, width: int, others: list[int]
) -> None:
    text = ("lorem ipsum " * 40)[:420]
    spans = [(at, min(420, at + length))] + [(o, min(420, o + 3)) for o in others]
    spans = [(a, b) for a, b in spans if a < b]
    lo, hi = focus(text, spans, width)
    assert 0 <= lo <= hi <= len(text) and hi - lo <= width
    matches = outermost(spans)
    fitting = [s for s in matches if s[1] - s[0] <= width]
    if fitting:
        assert any(_shown(text, s, lo, hi) for s in fitting)
    else:
        assert any(lo <= a < hi for a, _ in matches)


def test_the_query_anchor_outweighs_a_shorter_anchor_it_holds() -> None:
    # A real row: the window holds the anchors bug_report (of bug_report.md) and bug_report.yml,
    # far apart; the row must show bug_report.yml, the more specific of the two.
    snippet = (
        "…| | **Charm** | That's it — just bug + feature + Discord link in config | | **VS Code**"
        " | `bug_report.md`, `feature_request.md`, plus heavy bot-based triage | | **Rust** |"
        " `bug_report.yml`, `diagnostics.yml` (compiler error improvements), `ice.yml` (internal"
        " compiler errors), `l…"
    )
    spans = literal_spans(snippet, ["bug_report", "bug_report.yml"])
    lo, hi = focus(snippet, outermost(spans), 60)
    assert "bug_report.yml" in snippet[lo:hi]


def test_the_engine_snippet_goes_to_the_anchor_not_its_stem_elsewhere() -> None:
    text = (
        "see bug_report.md for the old one " + "filler words here " * 30 + "then the new"
        " .github/ISSUE_TEMPLATE/bug_report.yml form " + "more filler " * 30
    )
    spans = literal_spans(text, ["bug_report", "bug_report.yml"])
    snippet, highlights = make_snippet(text, spans, width=120)
    assert "bug_report.yml" in [snippet[a:b] for a, b in highlights]

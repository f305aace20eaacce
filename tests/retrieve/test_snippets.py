"""Snippets sit where the matches are densest and read cleanly; highlights stay on the terms."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from cwcore.retrieve.snippets import make_snippet, readable, term_spans


def _highlighted(snippet: str, highlights: list[list[int]]) -> list[str]:
    return [snippet[a:b] for a, b in highlights]


def test_snippet_goes_to_the_rare_terms_not_the_first_match() -> None:
    text = "git " + "filler " * 100 + "sync.Once guards the lazy init of the pool " + "x " * 200
    spans = term_spans(text, ["git", "sync", "once", "pool"])
    weights = {"git": 0.2, "sync": 3.0, "once": 3.0, "pool": 2.0}
    snippet, highlights = make_snippet(text, spans, weights=weights)
    assert "sync.Once guards" in snippet
    assert {"sync", "Once", "pool"} <= set(_highlighted(snippet, highlights))


def test_json_escapes_and_white_space_read_cleanly() -> None:
    text = '{"command": "git commit -m \\"fix: retry\\"\\n\\tdone", "path": "a\\/b"}\n\n  next'
    snippet, highlights = make_snippet(text, term_spans(text, ["retry"]))
    assert snippet == '{"command": "git commit -m "fix: retry" done", "path": "a/b"} next'
    assert _highlighted(snippet, highlights) == ["retry"]


def test_unicode_escape_decodes() -> None:
    assert readable("caf\\u00e9 \\ud83d")[0] == "café \ufffd"


@given(st.text(max_size=300))
def test_readable_maps_every_offset_monotonically(text: str) -> None:
    out, where = readable(text)
    mapped = [where(i) for i in range(len(text) + 1)]
    assert mapped == sorted(mapped)
    assert all(0 <= w <= len(out) for w in mapped)
    assert "  " not in out and not out.endswith(" ") and "\n" not in out


@given(st.text(alphabet='ab \n\\"', max_size=400), st.sampled_from(["a", "b", "ab"]))
def test_highlights_always_cover_the_term(text: str, term: str) -> None:
    snippet, highlights = make_snippet(text, term_spans(text, [term]), width=60)
    for a, b in highlights:
        assert 0 <= a < b <= len(snippet)
        assert snippet[a:b].lower() == term


@given(
    st.text(alphabet="abAB_ 1.-", max_size=200),
    st.lists(st.sampled_from(["ab", "a", "b1", "ab_b", "ba"]), min_size=1, max_size=3),
)
def test_ascii_spans_equal_the_general_pattern(text: str, terms: list[str]) -> None:
    from cwcore.retrieve.snippets import _pattern

    wanted = tuple(sorted(set(terms), key=lambda t: (-len(t), t)))
    general = [m.span() for _, m in zip(range(64), _pattern(wanted).finditer(text), strict=False)]
    assert term_spans(text, terms) == general


@example("a.a.a x b/ab ab-ab", ["a.a", "ab", "b/ab", "a"], 64)
@example("ab ab ab ab", ["ab"], 2)
@example("1 1 1", ["1"], 2)
@given(
    st.text(alphabet="abAB_ 1.-/", max_size=300),
    st.lists(st.sampled_from(["ab", "a", "b1", "a.a", "b/ab", "ab_b", "ba", "1"]), min_size=1),
    st.integers(min_value=1, max_value=70),
)
def test_substring_search_finds_what_the_ascii_pattern_finds(
    text: str, terms: list[str], limit: int
) -> None:
    # Overlapping compounds ("a.a" in "a.a.a", "b/ab" around "ab"), the longest at one start,
    # the limit, and a term too frequent for the substring search (None: the pattern answers).
    from cwcore.retrieve.snippets import _ascii_pattern, _found_spans

    low = text.lower()
    wanted = tuple(sorted(set(terms), key=lambda t: (-len(t), t)))
    matches = _ascii_pattern(wanted).finditer(low)
    pattern = [m.span() for _, m in zip(range(limit), matches, strict=False)]
    found = _found_spans(low, wanted, limit)
    assert found is None or found == pattern
    if all(low.count(t) <= limit for t in wanted):
        assert found == pattern


def test_hint_budget_tokens_bounds_the_pages_snippets(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cwcore.api import Archive
    from cwcore.text.tokens import estimate
    from tests.helpers import write_jsonl

    rows = [
        {
            "session": "s",
            "id": f"m{i}",
            "role": "user",
            "text": f"kestrel report {i} " + "word " * 80,
        }
        for i in range(5)
    ]
    with Archive.open(tmp_path / "home", embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "a.jsonl", rows)])
        base = {"query": "kestrel report", "semanticPolicy": "never", "limit": 5}
        plain = archive.search(base).results
        for budget in (1, 20, 100):
            hits = archive.search({**base, "hintBudgetTokens": budget}).results
            assert sum(estimate(h.snippet) for h in hits) <= budget
            assert [h.document_id for h in hits] == [h.document_id for h in plain]
        wide = archive.search({**base, "hintBudgetTokens": 100}).results
        assert all("kestrel" in h.snippet for h in wide)
        assert all(len(w.snippet) < len(p.snippet) for w, p in zip(wide, plain, strict=True))

"""Word forms in a search without a semantic stage (cwcore/text/stems.py, docs/retrieval.md):
another form of a query word is found, the form written ranks first, nothing a hit reports
names a stem term, and a search that has vectors to search leaves the stems out."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.contract.search import SearchRequest
from cwcore.retrieve.search import stem_terms
from cwcore.retrieve.snippets import form_spans, with_forms
from cwcore.text.stems import is_prose, query_stems, stem_term
from tests.helpers import user_turns, write_jsonl
from tests.support import search_context_of

#: Forms of a few words (some capitalized, one whose stem is not its prefix), grammar words and
#: an identifier, for the property test of form_spans.
WORDS = [
    "coach",
    "Coaches",
    "coaching",
    "happy",
    "happiness",
    "run",
    "runs",
    "running",
    "the",
    "and",
    "utf8",
    "plot",
    "plots",
    "Plotting",
    "go",
]
FILLER = [f"notes about the garden shed and paint colour number {i}" for i in range(30)]


@pytest.fixture
def forms(archive: Archive, tmp_path: Path) -> Archive:
    texts = ["Priya said she has got a coach now", "the coaches met before the match", *FILLER]
    archive.import_paths([write_jsonl(tmp_path / "forms.jsonl", user_turns(texts))])
    return archive


def _texts(archive: Archive, query: str, **body: Any) -> list[tuple[str, Any]]:
    answer = archive.search({"query": query, "semanticPolicy": "never", "rerank": False, **body})
    return [(hit.snippet, hit) for hit in answer.results]


def test_another_form_of_a_query_word_is_found(forms: Archive) -> None:
    hits = _texts(forms, "coaching")
    assert [s for s, _ in hits[:2]] and all("coach" in s for s, _ in hits[:2])
    for _, hit in hits:
        # The stem term matched, but hits name only the words of the query and its expansion.
        assert not any(t.startswith("~") for t in (*hit.matched_terms, *hit.expanded_terms))
        assert 0.0 < hit.score <= 1.0


def test_without_stems_the_other_form_is_not_found(forms: Archive) -> None:
    ctx = search_context_of(forms)
    ctx.params = ctx.params.replace(stem_weight=0.0)
    assert not any("coach" in s for s, _ in _texts(forms, "coaching"))


def test_the_form_written_ranks_first(forms: Archive) -> None:
    assert "coaches" in _texts(forms, "coaches")[0][0]
    assert "a coach now" in _texts(forms, "coach")[0][0]


class _Semantic:
    def __init__(self, vectors: bool) -> None:
        self.vectors = vectors

    def has_vectors(self) -> bool:
        return self.vectors


@pytest.mark.parametrize(
    ("semantic", "policy", "stems"),
    [
        (None, "auto", True),  # no semantic tier at all
        (_Semantic(False), "auto", True),  # nothing embedded yet
        (_Semantic(True), "never", True),  # lexical only on request
        (_Semantic(True), "auto", False),  # the semantic stage covers word forms
        (_Semantic(True), "always", False),
    ],
)
def test_stems_join_only_searches_without_a_semantic_stage(
    forms: Archive, semantic: object, policy: str, stems: bool
) -> None:
    ctx = dataclasses.replace(search_context_of(forms), semantic=semantic)
    req = SearchRequest(query="coaching", semantic_policy=policy)
    assert stem_terms(ctx, req, ["coaching", "the"]) == (["~coach"] if stems else [])


def test_the_other_form_is_highlighted_and_the_locator_points_at_it(forms: Archive) -> None:
    hits = [hit for _, hit in _texts(forms, "coaching")]
    marked = {hit.snippet[s:e] for hit in hits for s, e in hit.highlights}
    assert {"coach", "coaches"} <= marked
    assert all(hit.highlights for hit in hits)


@given(st.lists(st.sampled_from(WORDS), max_size=30), st.sets(st.sampled_from(WORDS), max_size=4))
def test_form_spans_are_exactly_the_words_with_a_wanted_stem(
    words: list[str], query: set[str]
) -> None:
    text = " ".join(words)
    wanted = query_stems(sorted(query))
    got = [text[s:e] for s, e in form_spans(text, wanted)]
    expected = [w for w in words if is_prose(w.lower()) and stem_term(w.lower()) in wanted]
    # A form whose stem is not its prefix (happy, happi) is the one kind left out.
    assert got == [w for w in expected if w.lower().startswith(stem_term(w.lower())[1:])]


def test_a_form_inside_a_search_term_is_not_highlighted_twice() -> None:
    text = "see bug_report.md and the bugs list"
    spans = with_forms([(4, 14)], form_spans(text, ["~bug"]))
    assert [text[s:e] for s, e in spans] == ["bug_report", "bugs"]
    # No two spans overlap, whatever the inputs.
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))


@given(
    st.text(alphabet="abcXYZ019 _-.'\n", max_size=60),
    st.sets(st.text(alphabet="abcxyz", min_size=1, max_size=3), min_size=1, max_size=4),
)
def test_the_ascii_scan_finds_what_the_form_pattern_finds(text: str, prefixes: set[str]) -> None:
    """form_spans reads ASCII text by str.find per prefix: the same words, in the same order,
    as the case-insensitive pattern it uses on other text."""
    from cwcore.retrieve import snippets

    ordered = tuple(sorted(prefixes, key=lambda t: (-len(t), t)))
    low = text.lower()
    pattern = snippets._form_pattern(ordered)
    assert snippets._prefixed_words(low, ordered) == [m.span() for m in pattern.finditer(low)]

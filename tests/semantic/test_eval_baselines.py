"""The FTS5 baseline the bench and the evaluation compare cw against."""

from __future__ import annotations

from eval.baselines import Fts5, Unit

UNITS = [
    Unit("a", "the rocksdb compaction stalled the writer for seconds", "s1"),
    Unit("b", "we tuned compaction triggers and the writer stopped stalling", "s2"),
    Unit("c", "lunch was a sandwich", "s1"),
]


def test_page_ranks_as_search_does_and_brackets_the_matches() -> None:
    fts = Fts5(UNITS)
    query = "why did the compaction stall the writer"
    page = fts.page(query, 10)
    assert [uid for uid, _ in page] == fts.search(query, 10)
    assert {uid for uid, _ in page} == {"a", "b"}
    snippet = dict(page)["a"]
    assert "[compaction]" in snippet and "[writer]" in snippet and "[the]" not in snippet


def test_scope_and_empty_query() -> None:
    fts = Fts5(UNITS)
    assert fts.search("compaction writer", 10, ["s2"]) == ["b"]
    assert fts.page("compaction writer", 10, ["s2"])[0][0] == "b"
    assert fts.page("the and of", 10) == []  # stopwords only: nothing to match

"""Equal scores are ordered by a stated rule (docs/retrieval.md, "Order and ties"): within a
tier, hits whose presented scores are equal come newest first (the later window first), and
the same search over the same archive always gives the same order."""

from __future__ import annotations

from pathlib import Path

from cwcore.api import Archive
from cwcore.contract.search import SearchHit
from tests.helpers import user_turns, write_jsonl


def _search(archive: Archive, query: str) -> tuple[SearchHit, ...]:
    body = {"query": query, "semanticPolicy": "never", "limit": 20, "rerank": False}
    return archive.search(body).results


def _ties(hits: tuple[SearchHit, ...]) -> list[list[SearchHit]]:
    """Runs of adjacent hits with the same presented score and tier."""
    runs: list[list[SearchHit]] = []
    for hit in hits:
        last = runs[-1][-1] if runs else None
        if (
            last is not None
            and last.score == hit.score
            and last.score_metadata["tier"] == hit.score_metadata["tier"]
        ):
            runs[-1].append(hit)
        else:
            runs.append([hit])
    return [run for run in runs if len(run) > 1]


def test_equal_exact_scores_come_newest_first(archive: Archive, tmp_path: Path) -> None:
    # Same length, same anchor, same words around it: equal coverage, BM25 and score.
    texts = [f"note {c}: renderFrame is called here" for c in "abcdef"]
    texts += [f"filler text about weather number {i}" for i in range(40)]
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", user_turns(texts))])
    hits = _search(archive, "renderFrame")
    exact = [h for h in hits if h.score_metadata["tier"] == 0]
    assert len(exact) == 6 and len({h.score for h in exact}) == 1
    times = [h.source.timestamp or "" for h in exact]
    assert times == sorted(times, reverse=True)
    assert [h.document_id for h in _search(archive, "renderFrame")] == [h.document_id for h in hits]


def test_equal_lexical_scores_come_newest_first(archive: Archive, tmp_path: Path) -> None:
    texts = [f"the flaky widget {c} broke the nightly build" for c in "abcdefgh"]
    texts += [f"filler text about weather number {i}" for i in range(40)]
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", user_turns(texts))])
    hits = _search(archive, "flaky widget nightly")
    lexical = [h for h in hits if h.score_metadata["tier"] == 2]
    assert len(lexical) == 8 and len({h.score for h in lexical}) == 1
    for run in _ties(hits):
        times = [h.source.timestamp or "" for h in run]
        assert times == sorted(times, reverse=True)
    again = _search(archive, "flaky widget nightly")
    assert [h.document_id for h in again] == [h.document_id for h in hits]


def test_equal_raw_values_share_a_fusion_rank_and_the_newest_key_wins() -> None:
    from cwcore.retrieve.fusion import fuse, fuse_tier

    # Without raw values the ranking's positions stand (distinct ranks, order kept).
    assert [f.key for f in fuse({"lexical": ["3", "7", "12"]}, {})] == ["3", "7", "12"]
    tied = fuse({"lexical": ["3", "7", "12", "1"]}, {}, ties={"lexical": [2.0, 2.0, 2.0, 1.0]})
    assert [f.ranks["lexical"] for f in tied] == [1, 1, 1, 4]
    # Numeric keys compare as numbers: window 12 is newer than 7 and 3.
    assert [f.key for f in tied] == ["12", "7", "3", "1"]
    # A prior (recency) still decides between equal ranks.
    entries = fuse_tier(
        [("3", 0.5), ("7", 0.5)], [], {"3": 1.02}, ties={"lexical": [1.0, 1.0], "semantic": []}
    )
    assert [e.key for e in entries] == ["3", "7"]


def test_window_ids_are_fused_as_integers() -> None:
    """Search fuses window ids as they are (they went int → str → int around fusion before)."""
    from cwcore.retrieve.fusion import fuse, fuse_tier

    tied = fuse({"lexical": [3, 7, 12, 1]}, {}, ties={"lexical": [2.0, 2.0, 2.0, 1.0]})
    assert [f.key for f in tied] == [12, 7, 3, 1]
    entries = fuse_tier([(3, 0.5), (7, 0.5)], [(7, 0.9)], {3: 1.0})
    assert [e.key for e in entries] == [7, 3] and all(isinstance(e.key, int) for e in entries)

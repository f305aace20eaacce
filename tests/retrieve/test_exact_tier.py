"""The exact tier: specific anchors form it, common ones do not; within it the rest of the query
decides; the page fills to ``limit`` distinct documents."""

from __future__ import annotations

from pathlib import Path

from cwcore.api import Archive
from cwcore.contract.search import SearchHit
from cwcore.retrieve import exact
from tests.helpers import write_jsonl


def _session(sid: str, texts: list[str], project: str = "p") -> list[dict]:
    rows = []
    for i, text in enumerate(texts):
        rows.append(
            {
                "session": sid,
                "id": f"m{i}",
                "role": "user",  # every message its own turn: one document per message
                "text": text,
                "project": project,
                "timestamp": f"2026-11-10T{10 + i // 60:02d}:{i % 60:02d}:00Z",
            }
        )
    return rows


def _search(archive: Archive, query: str, **extra: object) -> tuple[SearchHit, ...]:
    body = {"query": query, "semanticPolicy": "never", "limit": 10, **extra}
    return archive.search(body).results


def test_the_rest_of_the_query_orders_windows_that_share_an_anchor(
    archive: Archive, tmp_path: Path
) -> None:
    texts = [f"note {i}: renderFrame is called here" for i in range(6)]
    texts.insert(3, "the lint error says func renderFrame is unused and should be removed")
    texts += [f"filler text about weather number {i}" for i in range(40)]
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", _session("s", texts))])
    hits = _search(archive, "lint error: renderFrame is unused")
    assert hits[0].match_type == "exact-symbol"
    assert "unused" in hits[0].snippet
    # The windows that only name the anchor follow it, still in the exact tier.
    assert [h.score_metadata["tier"] for h in hits[:7]] == [0] * 7


def test_a_common_anchor_forms_no_tier(archive: Archive, tmp_path: Path) -> None:
    # "GitHub" is a camel-case word, so an anchor, but it is in every other message: weak
    # evidence. The message that matches the rest of the query must come first.
    texts = [f"pushed branch {i} to GitHub and opened a page" for i in range(30)]
    texts += [f"unrelated chatter about lunch {i}" for i in range(30)]
    texts.append("the review comments listed open pull requests waiting for approval")
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", _session("s", texts))])
    hits = _search(archive, "which pull requests were open on GitHub for review")
    assert "pull requests" in hits[0].snippet
    assert hits[0].match_type == "lexical"


def test_a_rare_anchor_outranks_lexical_evidence(archive: Archive, tmp_path: Path) -> None:
    texts = [f"pushed branch {i} to the remote" for i in range(30)]
    texts.append("ParseRetryAfter returns the delay in seconds")
    texts.append("the retry delay parse step returns seconds of delay for retry parse")
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", _session("s", texts))])
    hits = _search(archive, "ParseRetryAfter retry delay parse")
    assert hits[0].match_type == "exact-symbol"
    assert hits[0].band == "high"
    assert hits[1].match_type == "lexical"


def test_specificity_and_score_follow_document_frequency() -> None:
    from cwcore.index.anchors import Anchor

    class _Visible:
        def filter(self, wids: list[int]) -> list[int]:
            return wids

    class _Store:
        def __init__(self, postings: dict[str, list[int]]) -> None:
            self.postings = postings

        def scan(self, family: str, prefix: bytes, reverse: bool, limit: int):
            from cwcore.index import derived

            for value, wids in self.postings.items():
                if derived.EXACT.prefix(derived.anchor_digest(value)) == prefix:
                    for w in wids[:limit]:
                        yield derived.EXACT.encode(derived.anchor_digest(value), w, 0), b""

    store = _Store({"rareThing": [7], "commonThing": list(range(1, 201))})
    anchors = [Anchor(0, 9, "rareThing", "symbol"), Anchor(10, 21, "commonThing", "symbol")]
    stats = {s.anchor.value: s for s in exact.anchor_stats(store, _Visible(), anchors, 1000)}
    assert stats["rareThing"].specific and stats["rareThing"].specificity == 1.0
    assert stats["commonThing"].df == 200 and not stats["commonThing"].specific
    assert 0 < stats["commonThing"].specificity < 0.3


def test_limit_fills_with_distinct_documents(archive: Archive, tmp_path: Path) -> None:
    # One long document matches in many windows; 29 short ones match once. The page must
    # still hold `limit` distinct documents.
    long_text = " ".join(f"kestrel paragraph {i} with more words here." for i in range(2000))
    rows = _session("s", [long_text] + [f"kestrel note {i}" for i in range(29)])
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", rows)])
    hits = _search(archive, "kestrel", limit=25)
    assert len(hits) == 25
    assert len({h.document_id for h in hits}) == 25


def test_the_same_text_in_two_sessions_is_one_hit(archive: Archive, tmp_path: Path) -> None:
    text = "the lease renewal now uses a monotonic deadline instead of wall-clock time"
    rows = _session("s1", [text, "unrelated chatter"]) + _session("s2", [text, "more chatter"])
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", rows)])
    hits = _search(archive, "monotonic deadline lease renewal")
    assert len([h for h in hits if "monotonic" in h.snippet]) == 1


def test_grouped_by_session_one_hit_per_session(archive: Archive, tmp_path: Path) -> None:
    rows = []
    for s in range(4):
        rows += _session(f"s{s}", [f"kestrel sighting number {i} in session {s}" for i in range(5)])
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", rows)])
    plain = _search(archive, "kestrel sighting", limit=10)
    grouped = _search(archive, "kestrel sighting", limit=10, group="session")
    assert len({h.source.session_id for h in plain}) < len(plain)
    sessions = [h.source.session_id for h in grouped]
    assert sorted(sessions) == ["s0", "s1", "s2", "s3"] and len(sessions) == 4
    # Sessions come in the order of their best hit.
    order = list(dict.fromkeys(h.source.session_id for h in plain))
    assert sessions[: len(order)] == order[: len(sessions)]


def test_the_current_session_wins_a_tie_with_its_parent(archive: Archive, tmp_path: Path) -> None:
    text = "the kestrel migration plan uses two phases"
    parent = _session("parent", [text + " for the queue"])
    child = [{**r, "parent_session": "parent"} for r in _session("child", [text + " for the pool"])]
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", parent + child)])
    hits = _search(archive, "kestrel migration plan phases", scope="session", sessions=["child"])
    assert [h.source.session_id for h in hits] == ["child", "parent"]


def test_the_newer_of_two_equal_hits_comes_first(archive: Archive, tmp_path: Path) -> None:
    rows = _session("old", ["kestrel note alpha"]) + _session("new", ["kestrel note gamma"])
    rows[1]["timestamp"] = "2026-11-20T10:00:00Z"
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", rows)])
    hits = _search(archive, "kestrel note")
    assert [h.source.session_id for h in hits] == ["new", "old"]

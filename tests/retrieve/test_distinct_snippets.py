"""A page shows each passage once: a hit whose snippet reads exactly as an earlier hit's (the same
file read four times in a session, each read its own tool output) gives its place to the next
candidate. Windows of equal text are dropped earlier (the collapse); these differ elsewhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from tests.helpers import user_turns, write_jsonl

PASSAGE = (
    "the websocket reconnect test is flaky because the fake clock advances before the "
    "server has acknowledged the close frame, so the retry fires against a socket that is "
    "still half open and the assertion on the backoff counter sees one attempt too many"
)
#: Words no query here uses, enough to keep each copy's own first line out of its snippet.
PADDING = " ".join(f"shed{i} paint{i} garden{i}" for i in range(60))
OTHERS = [  # two of the query's three words: each ranks below the passage
    "websocket reconnect on the staging proxy: the idle timeout is 30 s there",
    "the reconnect backoff doubles up to 8 s; the websocket test pinned it at 1 s",
    "websocket reconnect after laptop sleep drops the first message",
    "websocket reconnect works again after the proxy fix since Tuesday",
]
QUERY = "flaky websocket reconnect"


def _rows(texts: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """``(session, text)`` pairs as user messages, one a minute."""
    return user_turns([text for _, text in texts], sessions=[session for session, _ in texts])


@pytest.fixture
def reads(archive: Archive, tmp_path: Path) -> Archive:
    """The passage in three messages of three sessions, each with its own first line (so no two
    windows have equal text), and four other messages about the same thing, which rank below
    it."""
    copies = [
        (f"read{i}", f"read number {i} of the test file. {PADDING} {PASSAGE}") for i in range(3)
    ]
    others = [(f"other{i}", text) for i, text in enumerate(OTHERS)]
    archive.import_paths([write_jsonl(tmp_path / "reads.jsonl", _rows(copies + others))])
    return archive


def _search(archive: Archive, **body: Any) -> Any:
    return archive.search({"query": QUERY, "semanticPolicy": "never", "rerank": False, **body})


def _reads(snippet: str) -> str:
    return " ".join(snippet.split())


def test_the_same_passage_is_shown_once_and_the_page_stays_full(reads: Archive) -> None:
    answer = _search(reads, limit=5)
    hits = answer.results
    assert answer.stages["repeatedPassages"] == 2  # the trace says what was left out
    assert len(hits) == 5
    shown = [_reads(h.snippet) for h in hits]
    assert len(set(shown)) == 5
    assert sum("fake clock" in s for s in shown) == 1
    assert {h.source.session_id for h in hits} >= {f"other{i}" for i in range(4)}
    # Every hit of the page was leased and signed: each recalls its own source.
    for hit in hits:
        assert reads.recall(hit.locator).source.document_id == hit.document_id


def test_grouped_by_session_every_session_keeps_its_hit(reads: Archive) -> None:
    answer = _search(reads, limit=7, group="session")
    sessions = {h.source.session_id for h in answer.results}
    assert "repeatedPassages" not in answer.stages
    assert {"read0", "read1", "read2"} <= sessions  # the same passage, three sessions


def test_a_narrow_budget_does_not_make_different_passages_the_same(
    archive: Archive, tmp_path: Path
) -> None:
    """Under a token budget the snippets are cut short and may start alike; what counts as the
    same is the passage at the full snippet width."""
    texts = [
        (f"s{i}", f"the websocket reconnect is flaky again, this time in the {name} handler")
        for i, name in enumerate(["upload", "billing", "search", "presence"])
    ]
    archive.import_paths([write_jsonl(tmp_path / "near.jsonl", _rows(texts))])
    wide = _search(archive, limit=4).results
    narrow = _search(archive, limit=4, hintBudgetTokens=24).results
    assert len(wide) == len(narrow) == 4
    assert len({_reads(h.snippet) for h in narrow}) < 4  # cut short, some read alike

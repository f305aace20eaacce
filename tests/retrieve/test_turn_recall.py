"""Recall of a hit inside a turn stored as several documents: the turn's documents in order,
and continuation locators that walk to the neighbouring documents."""

from __future__ import annotations

from pathlib import Path

from cwcore.api import Archive
from tests.helpers import write_jsonl


def test_a_segment_names_its_turn_and_continues_into_its_neighbours(
    archive: Archive, tmp_path: Path
) -> None:
    filler = "lorem ipsum dolor sit amet " * 200  # ~5.4 KB: two messages fill a document
    rows = [{"session": "s", "id": "u1", "role": "user", "text": "please look into the pool"}]
    for i in range(6):
        text = f"step {i}: " + ("the kestrel clue is here " if i == 3 else "") + filler
        rows.append({"session": "s", "id": f"a{i}", "role": "assistant", "text": text})
    archive.import_paths([write_jsonl(tmp_path / "t.jsonl", rows)])
    [hit] = archive.search({"query": "kestrel clue", "limit": 1, "semanticPolicy": "never"}).results
    answer = archive.recall(hit.locator, neighbors=0)
    body = answer.source
    assert answer.status == "resolved" and body is not None and "kestrel clue" in body.text
    turn = body.turn
    assert turn is not None
    assert turn.documents[0] == hit.source.turn_id and len(turn.documents) >= 3
    assert turn.documents[turn.index] == hit.document_id
    assert body.continuation.before and body.continuation.after
    before = archive.recall(body.continuation.before, neighbors=0)
    after = archive.recall(body.continuation.after, neighbors=0)
    assert before.document_id == turn.before and after.document_id == turn.after
    assert before.status == after.status == "resolved"

"""The conversational eval set (eval/conversations.py, eval/sets/conversations/): the source
parser on a tiny slice, the committed JSONL in step with its source, the per-question scoring,
and a slice imported into cw so the evidence turns map to the documents a search returns."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cwcore.api import Archive
from eval import conversations as conv
from tests.support import engine_of

SLICE = """\
# a comment line
= c99 | Ana | Tom

== s01 | 2025-09-07 19:20
A: I start the new job on the 3rd of November. [[start]]
B: Brilliant, where is the office?
A: Temple Quarter, ten minutes from the station. [[office]]
B: Nice.

== s02 | 2025-10-02 20:40
B: Any news about the flat in Bedminster?
A: The landlord picked a couple who paid six months up front. [[lost]]
?? single-hop | 2026-06-01 | When does Ana start? | 3 November | start
?? multi-hop | 2026-06-01 | Office, and the flat? | Temple Quarter; lost | office,lost
"""


def test_parse_source_resolves_labels_to_turns() -> None:
    turns, questions = conv.parse_source(SLICE)
    assert [(t["session"], t["turn"], t["role"]) for t in turns] == [
        ("c99-s01", 0, "user"),
        ("c99-s01", 1, "assistant"),
        ("c99-s01", 2, "user"),
        ("c99-s01", 3, "assistant"),
        ("c99-s02", 0, "assistant"),
        ("c99-s02", 1, "user"),
    ]
    # The label is not part of the text; the speaker's name is.
    assert turns[0]["text"] == "Ana: I start the new job on the 3rd of November."
    assert turns[4]["text"].startswith("Tom: ")
    assert turns[2]["timestamp"] == "2025-09-07T19:24:00Z"  # two minutes a turn
    assert [q["qid"] for q in questions] == ["c99-q01", "c99-q02"]
    assert questions[1]["evidence"] == [
        {"session": "c99-s01", "turn": 2},
        {"session": "c99-s02", "turn": 1},
    ]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (SLICE.replace("| office,lost", "| office,nowhere"), "unknown label"),
        (SLICE.replace("[[lost]]", "[[start]]"), "used twice"),
        (SLICE.replace("?? single-hop", "?? open-domain"), "unknown kind"),
        (SLICE + "A: a stray turn? no: a line nobody can read\nZ: what\n", "cannot read"),
    ],
)
def test_parse_source_rejects_broken_sources(bad: str, message: str) -> None:
    with pytest.raises(conv.SourceError, match=message):
        conv.parse_source(bad)


def test_committed_set_is_built_from_its_source(tmp_path: Path) -> None:
    shutil.copytree(conv.SET / "src", tmp_path / "src")
    conv.build_set(tmp_path)
    for name in ("conversations.jsonl", "questions.jsonl"):
        assert (tmp_path / name).read_bytes() == (conv.SET / name).read_bytes(), (
            f"{name} is stale: run python -m eval.conversations build"
        )
    ds = conv.load()
    assert 120 <= len(ds.questions) <= 200
    assert {q.kind for q in ds.questions} == set(conv.KINDS)
    for q in ds.questions:
        assert all(s in ds.conversations[q.conversation] for s in q.sessions), q.qid
        for e in q.evidence:
            session, turn = e.rsplit(":", 1)
            assert int(turn) < len(ds.sessions[session]), q.qid


def test_score_turn_hits_and_session_recall() -> None:
    q = conv.Question("q", "c", "?", "2026-01-01", "multi-hop", ("s1:2", "s3:0"), "")
    m = conv.score([{"s1:0", "s1:1"}, {"s3:0", "s3:1"}, {"s1:2"}], ["s1", "s3", "s1"], q)
    assert m == {"hit@1": 0.0, "hit@5": 1.0, "hit@10": 1.0, "mrr": 0.5, "recall_all@5": 1.0}
    m = conv.score([{"s2:0"}], ["s2"], q)
    assert m == {"hit@1": 0.0, "hit@5": 0.0, "hit@10": 0.0, "mrr": 0.0, "recall_all@5": 0.0}


def test_a_slice_imports_and_its_evidence_is_found(archive: Archive, tmp_path: Path) -> None:
    from eval.lme import Corpus

    turns, questions = conv.parse_source(SLICE)
    folder = tmp_path / "set"
    folder.mkdir()
    (folder / "conversations.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    ds = conv.load(folder)
    src = tmp_path / "slice.cw.jsonl"
    src.write_text("".join(line + "\n" for line in conv.cw_jsonl_lines(ds)))
    archive.import_paths([src], fmt="cw-jsonl")
    corpus = Corpus(engine_of(archive))
    covered = set().union(*corpus.doc_turns.values())
    assert covered == {f"{t['session']}:{t['turn']}" for t in turns}
    q = ds.questions[0]
    body = {"query": "landlord couple six months", "sessions": ds.conversations["c99"]}
    hits = archive.search({**body, "semanticPolicy": "never"}).hits()
    assert hits and "c99-s02:1" in corpus.doc_turns[hits[0].document_id]
    assert q.sessions == {"c99-s01"}

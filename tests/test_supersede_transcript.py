"""Superseded documents in transcripts (shown, marked, hideable) and undoing a supersession."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.errors import Conflict, NotFound
from tests.helpers import conversation, write_jsonl
from tests.support import engine_of


@pytest.fixture
def arch(cw_home: Path, tmp_path: Path) -> Any:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", conversation("s1", 4))])
        yield archive


def documents(arch: Archive) -> list[str]:
    return [d.document_id for d in arch.show("s1").documents]


def test_a_superseded_document_stays_in_the_transcript_marked(arch: Archive) -> None:
    before = arch.show("s1")
    doc = before.documents[1].document_id
    arch.supersede(doc, by=before.documents[2].document_id, reason="reversed by ADR 8")
    body = arch.show("s1")
    # Every message is still there, in order; the superseded ones say why and by what.
    assert [m.message_key for m in body.messages] == [m.message_key for m in before.messages]
    marked = [m for m in body.messages if m.superseded]
    assert marked and all(m.document_id == doc for m in marked)
    assert marked[0].supersession.reason == "reversed by ADR 8"
    assert marked[0].supersession.by == before.documents[2].document_id
    assert body.counts.to_json() == {
        "messages": len(before.messages),
        "superseded": len(marked),
        "hiddenSuperseded": 0,
    }
    assert body.session.messages == body.counts.messages  # the header's count
    assert {d.document_id: d.state for d in body.documents}[doc] == "superseded"


def test_hiding_superseded_messages_is_explicit_and_counted(arch: Archive) -> None:
    doc = documents(arch)[0]
    arch.supersede(doc)
    full = arch.show("s1")
    hidden = arch.show("s1", hide_superseded=True)
    gone = [m for m in full.messages if m.superseded]
    assert hidden.counts.hidden_superseded == len(gone) > 0
    assert not any(m.superseded for m in hidden.messages)
    assert len(hidden.messages) == len(full.messages) - len(gone)
    # The older parameter keeps its meaning for callers that still send it.
    old_style = arch.call("show", {"session": "s1", "includeSuperseded": False})
    assert old_style["counts"]["hiddenSuperseded"] == len(gone)


def test_cw_show_marks_superseded_and_hides_on_request(
    arch: Archive, capsys: pytest.CaptureFixture[str]
) -> None:
    from typer.testing import CliRunner

    from cwtui.cli import app

    doc = documents(arch)[0]
    arch.supersede(doc, reason="wrong")
    arch.close()
    runner = CliRunner()
    shown = runner.invoke(app, ["show", "s1"])
    assert shown.exit_code == 0, shown.output
    assert "superseded: wrong" in shown.output and "question 0" in shown.output
    hidden = runner.invoke(app, ["show", "s1", "--hide-superseded", "--json"])
    assert hidden.exit_code == 0, hidden.output
    body = json.loads(hidden.output)
    assert body["counts"]["hiddenSuperseded"] > 0
    assert "question 0" not in [m["text"].split(" about")[0] for m in body["messages"]]


def test_undo_brings_the_document_back_with_both_records_kept(arch: Archive) -> None:
    hit = arch.search({"query": "ERR_0002", "limit": 5}).results[0]
    doc = hit.document_id
    arch.supersede(doc, reason="reversed")
    assert doc not in [h.document_id for h in arch.search({"query": "ERR_0002"}).results]
    undone = arch.unsupersede(doc, reason="the reversal was wrong")
    assert undone.state == "live" and undone.restored == hit.version
    assert undone.version == hit.version + 1
    again = arch.search({"query": "ERR_0002", "limit": 5}).results
    assert doc in [h.document_id for h in again]  # searchable again, as the new version
    assert next(h for h in again if h.document_id == doc).version == undone.version
    # A locator made before the supersede names the retired version: it stays superseded.
    assert arch.recall(hit.locator).status == "superseded"
    fresh = next(h for h in again if h.document_id == doc)
    assert arch.recall(fresh.locator).status == "resolved"
    # The audit view keeps both records: the supersession and its undoing.
    audit = arch.show_document(doc, include_superseded=True)
    assert audit.state == "live"
    old, new = audit.versions
    assert old.superseded is not None and old.superseded["reason"] == "reversed"
    assert old.unsuperseded is not None
    assert old.unsuperseded["reason"] == "the reversal was wrong"
    assert old.unsuperseded["restoredVersion"] == new.version
    assert new.restores is not None and new.restores["version"] == old.version
    assert new.text == old.text
    # The transcript shows it live again, once.
    body = arch.show("s1")
    keys = [m.message_key for m in body.messages]
    assert len(keys) == len(set(keys)) and not any(m.superseded for m in body.messages)
    verify = arch.index_verify()
    assert verify.ok, verify.problems


def test_undo_refuses_what_is_not_superseded(arch: Archive) -> None:
    doc = documents(arch)[0]
    with pytest.raises(Conflict):
        arch.unsupersede(doc)
    with pytest.raises(NotFound):
        arch.unsupersede("t-nope")
    arch.supersede(doc)
    with pytest.raises(NotFound):
        arch.unsupersede(doc, project="another-project")
    arch.unsupersede(doc)
    with pytest.raises(Conflict):
        arch.unsupersede(doc)  # undone already: live again
    # A second supersede and undo work the same way, each with its own records.
    arch.supersede(doc, reason="second time")
    arch.unsupersede(doc)
    versions = arch.show_document(doc, include_superseded=True).versions
    assert [v.superseded is not None for v in versions] == [True, True, False]
    assert [v.unsuperseded is not None for v in versions] == [True, True, False]


def test_forget_removes_the_undo_records_too(arch: Archive) -> None:
    from cwcore.store import keys

    doc = documents(arch)[0]
    arch.supersede(doc)
    arch.unsupersede(doc)
    arch.forget(doc)
    engine = engine_of(arch)
    assert engine.store.get("supersession", keys.UNSUPERSESSION.encode(doc, 1)) is None


def test_cw_supersede_undo(arch: Archive) -> None:
    from typer.testing import CliRunner

    from cwtui.cli import app

    doc = documents(arch)[0]
    arch.supersede(doc)
    arch.close()
    runner = CliRunner()
    result = runner.invoke(app, ["supersede", "--undo", doc, "--reason", "oops", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["restored"] == 1
    again = runner.invoke(app, ["supersede", "--undo", doc, "--json"])
    assert again.exit_code == 4 and json.loads(again.output)["error"]["code"] == "conflict"
    bad = runner.invoke(app, ["supersede", "--undo", doc, "--by", "x"])
    assert bad.exit_code == 2

"""Each typed record of the memory block, the project-bound reads, the transcript, the
document view, the Markdown reads, the model answers and the daemon status rebuilds from its
golden answer and serializes back to exactly that answer, and the shapes the golden files do not
hold (a skipped turn, a bounded selection that cut its lists, a cut message text, a failed
self-test, an old manifest, a service that could not answer) round-trip too."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cwcore.contract.bound import BoundMessage, BoundMessages, BoundSessions
from cwcore.contract.markdown import MarkdownRead
from cwcore.contract.memory import MemoryContext, MemoryRecord
from cwcore.contract.models import ModelFolder, ModelsStatus, SelfTest
from cwcore.contract.recall import (
    Continuation,
    DocumentRead,
    MessageSpan,
    RecalledSource,
    RecallResponse,
    TurnHeader,
)
from cwcore.contract.views import (
    DocumentView,
    MessageSplit,
    SubagentLink,
    Supersession,
    Transcript,
    TranscriptMessage,
)
from cwcore.daemon.results import DaemonStatus
from cwcore.memory import diagnostics, injection
from tests.results import canonical

GOLDEN = Path(__file__).parent / "golden"


def _answers(name: str) -> dict[str, Any]:
    lines = (GOLDEN / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return {row["label"]: row["answer"] for row in map(json.loads, lines)}


HINTS = _answers("hints")
BROWSE = _answers("browse")
MARKDOWN = _answers("markdown")
MODELS = _answers("models")
DAEMON = _answers("daemon")
RECORDS: dict[str, Callable[[Any], Any]] = {
    "memory.context": MemoryContext.from_json,
    "bound.memory": MemoryContext.from_json,
    "bound.sessions": BoundSessions.from_json,
    "bound.messages": BoundMessages.from_json,
}
GOLDEN_ANSWERS = (
    [(label, HINTS[label], RECORDS[label]) for label in sorted(RECORDS)]
    + [
        (label, answer, DocumentView.from_json)
        for label, answer in BROWSE.items()
        if label.startswith("show.document")
    ]
    + [
        (label, answer, Transcript.from_json)
        for label, answer in BROWSE.items()
        if label.startswith("show ")
    ]
    + [(label, answer, MarkdownRead.from_json) for label, answer in MARKDOWN.items()]
    + [
        (label, answer, ModelsStatus.from_json if "status" in label else ModelFolder.from_json)
        for label, answer in MODELS.items()
    ]
    + [(label, answer, DaemonStatus.from_json) for label, answer in DAEMON.items()]
)


@pytest.mark.parametrize(("label", "answer", "record"), GOLDEN_ANSWERS, ids=lambda x: None)
def test_golden_answers_round_trip(
    label: str, answer: dict[str, Any], record: Callable[[Any], Any]
) -> None:
    typed = record(answer)
    assert canonical(typed.to_json()) == canonical(answer)


def test_the_bound_answer_carries_its_project_and_the_unbound_does_not() -> None:
    assert MemoryContext.from_json(HINTS["bound.memory"]).project == "alpha"
    assert MemoryContext.from_json(HINTS["memory.context"]).project is None


def _record(rid: str, statement: str) -> dict[str, Any]:
    return {
        "id": rid,
        "statement": statement,
        "tags": [],
        "status": "active",
        "profile_id": None,
        "scope": {"type": "global", "name": None},
        "does_not_apply_when": [],
        "known_exceptions": [],
        "layer": "L2",
        "confidence": 0.5,
        "ruleType": None,
        "created": "2026-11-01T00:00:00.000Z",
        "updated": "2026-11-01T00:00:00.000Z",
        "supersedes": None,
        "superseded_by": None,
        "history": [],
    }


def test_a_skipped_turn_round_trips_bound_and_unbound() -> None:
    skipped = injection.build([], "ok")
    assert skipped["skipped"] and "budgetBytes" not in skipped
    assert MemoryContext.from_json(skipped).to_json() == skipped
    bound = {"project": "p", "block": None, **diagnostics.summary(skipped)}
    typed = MemoryContext.from_json(bound)
    assert typed.budget_bytes is None and typed.ranking is None
    assert canonical(typed.to_json()) == canonical(bound)


def test_a_bounded_selection_keeps_its_cut_counts() -> None:
    records = [_record(f"mem_{n:02d}", f"queues hold {n} jobs") for n in range(6)]
    records += [{**_record("mem_gone", "retired"), "status": "deprecated"}]
    records += [{**_record("mem_old", "older"), "status": "deprecated"}]
    full = injection.build(records, "how many jobs do the queues hold?", budget=200)
    assert MemoryContext.from_json(full).to_json() == full
    bound = {"project": "p", "block": full["block"], **diagnostics.summary(full, limit=1)}
    typed = MemoryContext.from_json(bound)
    assert typed.traces[0].excluded_more == 1
    assert typed.unselected_more and typed.ranking and typed.ranking.scores_more
    assert canonical(typed.to_json()) == canonical(bound)


def test_a_cut_message_text_round_trips() -> None:
    body = {
        "n": 3,
        "role": "tool",
        "kind": "tool-result",
        "timestamp": None,
        "tool": "Bash",
        "messageKey": "tool:t1",
        "documentId": "r-1",
        "superseded": False,
        "text": "abc",
        "textCut": {"shown": 3, "chars": 10},
    }
    message = BoundMessage.from_json(body)
    assert message.text_cut is not None and message.text_cut.chars == 10
    assert canonical(message.to_json()) == canonical(body)


def test_a_markdown_read_has_a_place_only_for_markdown_and_a_heading_only_by_heading() -> None:
    session = MarkdownRead.from_json(MARKDOWN["read-entry session"])
    assert session.place is None and session.heading is None and session.truncated
    by_heading = MarkdownRead.from_json(MARKDOWN["read heading"])
    assert by_heading.heading is not None and by_heading.heading.title == "Layouts"
    assert by_heading.place is not None and by_heading.place.heading_path[-1] == "Layouts"
    assert MarkdownRead.from_json(MARKDOWN["read lines"]).heading is None


def test_model_answers_the_golden_files_do_not_hold_round_trip() -> None:
    failed = {"ok": False, "category": "model-missing", "error": "no model.onnx"}
    assert SelfTest.from_json(failed).to_json() == failed
    status = MODELS["status"]
    broken = {**status, "embedder": {**status["embedder"], "selfTest": failed}}
    semantic = {**status["semantic"], "state": "disabled", "enabled": False}
    broken["semantic"] = semantic
    typed = ModelsStatus.from_json(broken)
    assert canonical(typed.to_json()) == canonical(broken)
    assert typed.embedder.self_test == SelfTest(
        False, category="model-missing", error="no model.onnx"
    )
    assert not typed.semantic.enabled and typed.semantic.progress.state == "disabled"
    # A manifest field the engine does not know (older installs wrote others) is kept.
    old = {"kind": "reranker", "installed_at": "2025-01-01", "installed": True, "path": "/m"}
    folder = ModelFolder.from_json(old)
    assert folder.installed and folder.manifest["installed_at"] == "2025-01-01"
    assert canonical(folder.to_json()) == canonical(old)
    empty = ModelFolder.from_json(MODELS["status bare"]["embedder"])
    assert not empty.installed and empty.note is not None and empty.size_bytes is None


def test_a_daemon_whose_service_could_not_answer_round_trips() -> None:
    body = {**DAEMON["daemon.status"], "service": {"error": "TimeoutError: "}}
    status = DaemonStatus.from_json(body)
    assert canonical(status.to_json()) == canonical(body)
    assert status.service["error"] == "TimeoutError: " and status.build == "fake-1"


def test_a_transcript_message_writes_its_optional_keys_only_when_set() -> None:
    bare = TranscriptMessage("d-1", "user:u1", "user", "text", "hi", None, None, (3,), False)
    assert set(bare.to_json()) == {
        "documentId",
        "messageKey",
        "role",
        "kind",
        "text",
        "timestamp",
        "tool",
        "lines",
        "superseded",
    }
    # Empty values the source did not set are left out as unset ones are.
    blank = replace(bare, parent="", model="", usage=(), tool_call_id="")
    assert blank.to_json() == bare.to_json()
    # A tool input that is the text itself is not repeated.
    call = replace(bare, input_is_text=True, tool_input='{"x": 1}', meta=True, is_error=True)
    assert call.to_json()["inputIsText"] is True and "toolInput" not in call.to_json()
    full = replace(
        bare,
        supersession=Supersession("edited", None, None),
        split=MessageSplit(2, ("d-1", "d-2")),
        parent="user:u0",
        tool_call_id="t1",
        tool_input='{"x": 1}',
        meta=True,
        is_error=True,
        model="m",
        usage=(("input", 3), ("output", 4)),
        subagent=SubagentLink("child", None),
    )
    body = full.to_json()
    assert body["usage"] == {"input": 3, "output": 4} and body["meta"] is True
    assert TranscriptMessage.from_json(body) == full
    assert canonical(TranscriptMessage.from_json(body).to_json()) == canonical(body)


def test_a_transcript_names_the_sessions_it_is_shared_with_only_when_there_are_some() -> None:
    transcript = Transcript.from_json(BROWSE[next(k for k in BROWSE if k.startswith("show "))])
    assert "sharedWith" not in transcript.to_json()
    shared = replace(transcript, shared_with=(("codex", "s-2"),))
    body = shared.to_json()
    assert body["sharedWith"] == [{"agent": "codex", "sessionId": "s-2"}]
    assert Transcript.from_json(body) == shared


def _source(**changes: Any) -> RecalledSource:
    source = RecalledSource(
        document_id="d-1",
        version=1,
        kind="tool-result",
        archive_kind="session",
        session="s-1",
        project="p",
        agent="cw-jsonl",
        created="2026-11-01T00:00:00.000Z",
        range=(0, 3),
        match=(0, 3),
        text="abc",
        tokens=1,
        source_keys=("tool:t1",),
        messages=(MessageSpan("tool:t1", "tool", "tool-result", (0, 3), None),),
        chunks=(("0" * 32, 0, 3),),
        continuation=Continuation(),
        label="L",
    )
    return replace(source, **changes)


def test_a_recalled_source_says_its_parent_turn_could_not_be_read_with_null() -> None:
    plain = _source()
    assert "parentTurn" not in plain.to_json() and plain.to_json()["historical"] is True
    unreadable = _source(parent_unreadable=True)
    assert unreadable.to_json()["parentTurn"] is None
    assert RecalledSource.from_json(unreadable.to_json()) == unreadable
    parent = _source(parent_turn=TurnHeader("d-0", "user:u1", "user", "run it"))
    assert RecalledSource.from_json(parent.to_json()) == parent
    answer = RecallResponse("resolved", source=unreadable).to_json()
    assert RecallResponse.from_json(answer).source == unreadable


def test_a_large_document_read_is_a_table_of_contents_marked_truncated() -> None:
    toc = DocumentRead(
        "d-1", 1, "text", "s-1", "p", "2026-11-01T00:00:00.000Z", 10, "L", ("user:u1",)
    )
    body = toc.to_json()
    assert body["truncated"] is True and body["chunks"] == [] and "text" not in body
    whole = replace(toc, text="hello", continues="d-0")
    assert "truncated" not in whole.to_json() and "chunks" not in whole.to_json()
    for read in (replace(toc, chunks=()), whole, replace(toc, chunks=(("a" * 32, 0, 10),))):
        assert DocumentRead.from_json(read.to_json()) == read


def test_a_memory_record_keeps_the_stored_snake_case_keys() -> None:
    body = _record("mem_01", "rebase first")
    record = MemoryRecord.from_json(body)
    assert record.rule_type is None and record.scope.label == "global"
    assert canonical(record.to_json()) == canonical(body)

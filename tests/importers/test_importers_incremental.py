"""Incremental import: re-admitting a grown file adds exactly what is new.

For each format, a fixture is admitted, then the same file with lines appended: a new exchange
adds one new turn document and leaves every earlier document untouched (``Ack.new`` False); an
assistant message that continues the last turn gives that turn version 2, superseding version 1
with reason ``extended``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from cwcore.importers import base
from cwcore.importers.documents import build_documents, session_counts, session_spec
from cwcore.model import ParsedSession
from cwcore.store import codec, keys
from cwcore.store.admission import Admission, AdmitResult
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store
from tests.importers.golden_support import FIXTURES


def _claude(uuid: str, parent: str, kind: str, content: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": kind, "content": content}
    if kind == "assistant":
        message["id"] = f"msg-{uuid}"
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "isSidechain": False,
        "sessionId": "c1a0de00-0000-4000-8000-000000000001",
        "cwd": "/home/dev/src/parser-lib",
        "timestamp": "2026-02-10T10:00:00.000Z",
        "message": message,
    }


def _codex(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {
        "timestamp": "2026-03-01T11:00:00.000Z",
        "type": "response_item",
        "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]},
    }


def _pi(eid: str, parent: str, role: str, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2026-02-01T10:00:00Z",
        "message": {"role": role, "content": [{"type": "text", "text": text}]},
    }


def _gemini(gid: str, kind: str, text: str) -> dict[str, Any]:
    return {"id": gid, "timestamp": "2026-03-02T10:01:00.000Z", "type": kind, "content": text}


# fixture -> (lines continuing the last turn, lines of one more exchange)
GROWTH: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "claude_code/c1a0de00-0000-4000-8000-000000000001.jsonl": (
        [_claude("a-0009", "a-0008", "assistant", [{"type": "text", "text": "Pushed too."}])],
        [
            _claude("u-0009", "a-0009", "user", "and tag a release"),
            _claude("a-0010", "u-0009", "assistant", [{"type": "text", "text": "Tagged v1.2.0."}]),
        ],
    ),
    "codex/rollout-2026-03-01T10-00-00-0194a0b0-0000-7000-8000-00000000c0de.jsonl": (
        [_codex("assistant", "Also updated the changelog.")],
        [_codex("user", "Open a PR"), _codex("assistant", "Opened PR #7.")],
    ),
    "pi/2026-02-01T09-00-00-000Z_5e55a1b2-0000-4000-8000-0000000000a3.jsonl": (
        [_pi("e24", "e23", "assistant", "And the CI is green too.")],
        [_pi("e25", "e24", "user", "Ship it"), _pi("e26", "e25", "assistant", "Released.")],
    ),
    "gemini/tiny-proj/chats/session-2026-03-02T10-00-9f3c2a1b.jsonl": (
        [_gemini("g10", "gemini", "The link points to issue #12.")],
        [_gemini("g11", "user", "Thanks, close it"), _gemini("g12", "gemini", "Closed.")],
    ),
}


def _admit(store: Store, path: Path, fmt: str) -> tuple[ParsedSession, AdmitResult]:
    parsed = base.get(fmt).parse(path).sessions[0]
    result = Admission(store).admit(session_spec(parsed), parsed.events, build_documents(parsed))
    assert not result.rejected
    return parsed, result


def _append(path: Path, rows: list[dict[str, Any]]) -> None:
    data = path.read_bytes()
    # the codex fixture ends in a truncated line; a writer finishing it would restart the line
    if not data.endswith(b"\n"):
        data += b"\n"
    path.write_bytes(data + b"".join(json.dumps(r).encode() + b"\n" for r in rows))


@pytest.mark.parametrize("case", sorted(GROWTH))
def test_growing_file_adds_only_what_is_new(tmp_path: Path, case: str) -> None:
    fmt = base.detect(FIXTURES / case).name  # type: ignore[union-attr]
    path = tmp_path / Path(case).name
    shutil.copy(FIXTURES / case, path)
    continuation, exchange = GROWTH[case]
    with Store(tmp_path / "db") as store:
        first, result = _admit(store, path, fmt)
        assert all(ack.new and ack.version == 1 for ack in result.acks)
        turn_ids = [d.document_id for d in build_documents(first) if d.kind == "turn"]

        # 1. an assistant message continuing the last turn: that turn gets version 2
        _append(path, continuation)
        grown, result = _admit(store, path, fmt)
        assert result.new_events == len(continuation)
        changed = [(a.document_id, a.version) for a in result.acks if a.new]
        assert changed == [(turn_ids[-1], 2)]
        record = store.get("supersession", keys.SUPERSESSION.encode(turn_ids[-1], 1))
        assert record is not None
        assert codec.decode_record(record, "supersession")["reason"] == "extended"

        # 2. one more exchange: exactly one new turn document, nothing else touched
        _append(path, exchange)
        final, result = _admit(store, path, fmt)
        assert result.new_events == len(exchange)
        new = [a for a in result.acks if a.new]
        assert [(a.kind, a.version) for a in new] == [("turn", 1)]
        added = {m.key for m in final.messages} - {m.key for m in grown.messages}
        manifest = Reader(store).manifest(new[0].document_id)
        assert {p["key"] for p in manifest["parts"]} == added
        assert len(added) == len(exchange)

        session = Reader(store).session(final.session_id)
        counts = session_counts(final)
        assert (session["messages"], session["toolCalls"]) == (
            counts["messages"],
            counts["toolCalls"],
        )

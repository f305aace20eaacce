"""``cw export --format jsonl`` is lossless: over EVERY importer fixture, importing a session's
export into a fresh store gives the same sessions (ids, project, agent, parent, title, counts,
tokens, models, sub-agent link) and the same messages (keys, roles, kinds, texts, times, host
markers, parents, tool fields, model and usage, sub-agent links), and exporting again gives the
same bytes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.importers import base
from tests.importers.golden_support import FIXTURES

FILES = sorted(p for p in FIXTURES.rglob("*") if p.is_file() and base.detect(p) is not None)
SESSION_FIELDS = (
    "sessionId",
    "project",
    "agent",
    "parent",
    "parentToolCall",
    "title",
    "messages",
    "turns",
    "toolCalls",
    "tokens",
    "models",
)
MESSAGE_FIELDS = (
    "messageKey",
    "role",
    "kind",
    "text",
    "timestamp",
    "tool",
    "meta",
    "isError",
    "parent",
    "toolCallId",
    "inputIsText",
    "toolInput",
    "model",
    "usage",
    "subagent",
)


def snapshot(archive: Archive) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
    """Sessions and their messages. A session of metadata lines only has no line to export
    (cw-jsonl is one message a line) and is left out."""
    sessions, _ = archive.sessions(limit=1000)
    sessions = [s for s in sessions if s.documents]
    infos = {s.sessionId: {f: s.to_json()[f] for f in SESSION_FIELDS} for s in sessions}
    messages = {
        s.sessionId: [
            {f: m.to_json().get(f) for f in MESSAGE_FIELDS}
            for m in archive.show(s.sessionId).messages
        ]
        for s in sessions
    }
    return infos, messages


def test_every_fixture_is_covered() -> None:
    # one file per format at least, and the sub-agent layouts
    formats = {base.detect(p).name for p in FILES}  # type: ignore[union-attr]
    assert formats == set(base.formats()) - {"markdown", "cw-jsonl"}
    assert any(p.parent.name == "subagents" for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_jsonl_export_imports_back_to_the_same_sessions(path: Path, tmp_path: Path) -> None:
    with Archive.open(tmp_path / "first", embedded=True) as first:
        first.import_paths([path])
        before = snapshot(first)
        exported = "".join(first.export(sid, "jsonl") for sid in sorted(before[0]))
    dump = tmp_path / "export.jsonl"
    dump.write_text(exported, encoding="utf-8")
    with Archive.open(tmp_path / "second", embedded=True) as second:
        if exported:
            summary = second.import_paths([dump], fmt="cw-jsonl")
            assert summary.errors == []
        after = snapshot(second)
        again = "".join(second.export(sid, "jsonl") for sid in sorted(after[0]))
    assert after[0] == before[0]
    assert after[1] == before[1]
    assert again == exported

"""The JSON of ``show`` (a session's transcript) and ``show.document``, pinned to a golden file.

``cw show --json``, ``cw show --document --json`` and the daemon protocol carry these answers:
the typed records that carry them from the engine to the faces must serialize to exactly the
JSON the engine answered before they existed. The sessions cover every optional field of a
transcript message (sub-agent links, tool inputs, thinking, model and usage, host-generated
text, errors, a message cut into pieces, superseded documents) and the metadata events of
``--all``; the documents cover a live one, the audit view of a superseded and restored one, and
a piece of a cut message. Regenerate after a deliberate change of the JSON:
``CW_UPDATE_GOLDEN=1 pytest tests/results``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cwcore.api import Archive
from tests.helpers import write_jsonl
from tests.importers.golden_support import FIXTURES
from tests.results.test_archive_results_golden import Answers

CLAUDE = FIXTURES / "claude_code"
#: A session whose sub-agent is in its progress lines, and one whose sub-agent has its own file.
PROGRESS = "c1a0de00-0000-4000-8000-0000000000a9"
OWN = "c1a0de00-0000-4000-8000-0000000000b7"
#: More than one piece (32 KiB) of text: the message is cut over several documents.
LONG = "".join(f"line {n:05d} of the long tool output\n" for n in range(1_200))


def _rows() -> list[dict[str, Any]]:
    base = {"session": "g1", "project": "golden", "agent": "cw-jsonl"}
    stamp = "2026-11-18T12:0{}:00.000Z"
    return [
        {**base, "id": "u1", "role": "user", "text": "Rotate the keys",
         "timestamp": stamp.format(0), "title": "Key rotation"},
        {**base, "id": "a1", "role": "assistant", "text": "", "tool_name": "Bash",
         "tool_call_id": "call-1", "tool_input": {"command": "rotate --all"},
         "timestamp": stamp.format(1), "model": "m-1",
         "usage": {"input": 3, "output": 7, "cacheRead": 0, "cacheWrite": 1}},
        {**base, "id": "t1", "role": "tool", "text": LONG, "tool_name": "Bash",
         "tool_call_id": "call-1", "parent": "a1", "timestamp": stamp.format(2),
         "is_error": True},
        {**base, "id": "u2", "role": "user", "text": "<system-reminder>host text</system-reminder>",
         "meta": True, "timestamp": stamp.format(3)},
        {**base, "id": "a2", "role": "assistant", "text": "Keys rotated; the old ones expire.",
         "timestamp": stamp.format(4)},
        {**base, "id": "u3", "role": "user", "text": "Use the vault instead of env files.",
         "timestamp": stamp.format(5)},
        {**base, "id": "a3", "role": "assistant", "text": "Moved the secrets into the vault.",
         "timestamp": stamp.format(6)},
    ]  # fmt: skip


def test_show_and_show_document_json_is_unchanged(
    archive: Archive, cw_home: Path, tmp_path: Path
) -> None:
    a = archive
    out = Answers(a, cw_home)
    for name in (PROGRESS, OWN):
        a.import_paths([CLAUDE / f"{name}.jsonl"])
    summary = a.import_paths([write_jsonl(tmp_path / "g1.jsonl", _rows())])
    assert not summary.errors, summary.errors
    for session in (PROGRESS, f"{PROGRESS}/agent-f00d1", OWN):
        out.add(
            f"show {session}",
            "show",
            {"session": session, "all": False},
            lambda s=session: a.show(s),
        )
    out.add(
        "show all",
        "show",
        {"session": PROGRESS, "all": True},
        lambda: a.show(PROGRESS, include_all=True),
    )
    body = a.call("show", {"session": "g1"})
    documents = [d["documentId"] for d in body["documents"]]
    split = next(m for m in body["messages"] if "split" in m)
    pieces = split["split"]["documentIds"]
    assert len(pieces) > 1
    turns = [d["documentId"] for d in body["documents"] if d["kind"] == "turn"]
    old, new = turns[-2], turns[-1]
    a.supersede(old, by=new, reason="golden")
    out.add(
        "show superseded",
        "show",
        {"session": "g1", "all": True},
        lambda: a.show("g1", include_all=True),
    )
    out.add(
        "show hidden",
        "show",
        {"session": "g1", "hideSuperseded": True},
        lambda: a.show("g1", hide_superseded=True),
    )
    out.add("show older parameter", "show", {"session": "g1", "includeSuperseded": False})
    out.add("show prefix", "show", {"session": PROGRESS[:-1]}, lambda: a.show(PROGRESS[:-1]))
    out.add(
        "show.document",
        "show.document",
        {"documentId": documents[0]},
        lambda: a.show_document(documents[0]),
    )
    out.add(
        "show.document piece",
        "show.document",
        {"documentId": pieces[1]},
        lambda: a.show_document(pieces[1]),
    )
    out.add(
        "show.document superseded",
        "show.document",
        {"documentId": old, "includeSuperseded": True},
        lambda: a.show_document(old, include_superseded=True),
    )
    a.unsupersede(old, reason="back")
    out.add(
        "show.document restored",
        "show.document",
        {"documentId": old, "includeSuperseded": True},
        lambda: a.show_document(old, include_superseded=True),
    )
    out.add(
        "show.document restored head",
        "show.document",
        {"documentId": old},
        lambda: a.show_document(old),
    )
    assert all(json.dumps(raw) for _, raw in out.rows)
    out.check("browse")

"""Golden snapshots of the importer fixtures: what each parses into, in a reviewable JSON form.

Regenerate after an intended change (then review the diff of ``tests/importers/golden/``)::

    .venv/bin/python tests/importers/golden_support.py

``test_importers_golden.py`` compares :func:`snapshot` of every fixture with its golden file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
GOLDEN = HERE / "golden"
TEXT_PREFIX = 60

#: fixture (relative to FIXTURES) -> the importer that must detect it
CASES: dict[str, str] = {
    "claude_code/c1a0de00-0000-4000-8000-000000000001.jsonl": "claude-code",
    "claude_code/c1a0de00-0000-4000-8000-0000000000ff.jsonl": "claude-code",
    "claude_code/c1a0de00-0000-4000-8000-0000000000a9.jsonl": "claude-code",
    "claude_code/c1a0de00-0000-4000-8000-0000000000b7.jsonl": "claude-code",
    "claude_code/c1a0de00-0000-4000-8000-0000000000b7/subagents/agent-b7f00d1.jsonl": "claude-code",
    "codex/rollout-2026-03-01T10-00-00-0194a0b0-0000-7000-8000-00000000c0de.jsonl": "codex",
    "codex/rollout-2026-03-01T10-05-00-0194a0b0-0000-7000-8000-0000000000bb.jsonl": "codex",
    "codex/rollout-2026-03-01T11-00-00-0194a0b0-0000-7000-8000-0000000000ee.jsonl": "codex",
    "pi/2026-02-01T09-00-00-000Z_5e55a1b2-0000-4000-8000-0000000000a3.jsonl": "pi",
    "pi/2025-11-20T10-00-00-000Z_5e55a1b2-0000-4000-8000-0000000000a1.jsonl": "pi",
    "gemini/tiny-proj/chats/session-2026-03-02T10-00-9f3c2a1b.jsonl": "gemini",
    "gemini/tiny-proj/chats/session-2026-03-02T11-00-9f3c2a1c.jsonl": "gemini",
    "gemini/legacy-proj/chats/session-2025-08-01T09-00-7c1e9a00.json": "gemini",
    "copilot/3c0f11e2-7a4b-4d8e-9f10-0000000000c1/events.jsonl": "copilot",
    "opencode/opencode.db": "opencode",
    "opencode/storage/session/global/ses_2f00aa11bffeLegacyTree0001.json": "opencode",
    "kilo/kilo.db": "kilo",
    "cursor/projects/home-dev-src-tilemap/agent-transcripts/7d1c2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f/"
    "7d1c2e3f-4a5b-4c6d-8e9f-0a1b2c3d4e5f.jsonl": "cursor",
    "cursor/projects/home-dev-src-tilemap/agent-transcripts/"
    "0b9e8d7c-6f5a-4e3d-9c2b-1a0f9e8d7c6b.txt": "cursor",
    "cursor/User/globalStorage/state.vscdb": "cursor",
    "cursor/User/workspaceStorage/8f3e2a1b0c9d8e7f6a5b4c3d2e1f0a9b/state.vscdb": "cursor",
    "qwen/projects/-home-dev-src-ledger-api/chats/"
    "9a7e3c10-5b2d-4f6e-8a1c-00000000a001.jsonl": "qwen",
    "goose/sessions.db": "goose",
    "goose/legacy/20250610_142233.jsonl": "goose",
    "crush/.crush/crush.db": "crush",
    "droid/-home-dev-src-ledger-api/b7e2f0c4-1d3a-4b5c-9e8f-00000000d001.jsonl": "droid",
    "aider/invoice-cli/.aider.chat.history.md": "aider",
    "kiro/sessions/cli/e4d3c2b1-9a8f-4e7d-8c6b-00000000e001.jsonl": "kiro",
    "kiro/data.db": "kiro",
    "openclaw/agents/main/sessions/0c1a2b3c-4d5e-4f60-8a9b-00000000f001.jsonl": "openclaw",
    "cline/saoudrizwan.claude-dev/tasks/1772874000000/api_conversation_history.json": "cline",
    "roo-code/rooveterinaryinc.roo-cline/tasks/7f3c2a10-5e4d-4b2a-9c1e-00000000r001/"
    "api_conversation_history.json": "roo-code",
    "vscode-copilot/User/workspaceStorage/5b1e9c2f7a3d4e6f8091a2b3c4d5e6f7/chatSessions/"
    "2c9f4e1a-7b3d-4c5e-9f10-00000000vc01.json": "vscode-copilot",
    "vscode-copilot/User/globalStorage/emptyWindowChatSessions/"
    "8e7d6c5b-4a39-4281-9f00-00000000vc02.jsonl": "vscode-copilot",
    "zed/threads.db": "zed",
    "openhands/conversations/5a7c1e2f9d3b4c6a8e0f1a2b3c4d0b01/base_state.json": "openhands",
    "openhands/sessions/a41f0c2e9b7d4e58/events/0.json": "openhands",
    "amp/threads/T-7e4b2a19-5c3d-4f8e-9a61-00000000a301.json": "amp",
}


def golden_path(case: str) -> Path:
    return GOLDEN / (case.replace("/", "__") + ".json")


def snapshot(path: Path) -> dict[str, Any]:
    """The parse of ``path`` (detected format) and its documents, as plain JSON values."""
    from cwcore.importers.base import detect
    from cwcore.importers.documents import build_documents, session_title

    importer = detect(path)
    assert importer is not None, f"{path} not detected"
    parsed = importer.parse(path)
    sessions = []
    for s in parsed.sessions:
        docs = build_documents(s, segment_bytes=160)
        sessions.append(
            {
                "session_id": s.session_id,
                "agent": s.agent,
                "project": s.project,
                "started": s.started,
                "title": s.title,
                "cwd": s.cwd.replace(str(FIXTURES), "<fixtures>") if s.cwd else s.cwd,
                "parent_session": s.parent_session,
                "lineage": list(s.lineage),
                # the fixture's absolute path would tie the golden file to one checkout
                "resume_command": (s.resume_command or "").replace(str(FIXTURES), "<fixtures>"),
                "derived_title": session_title(s),
                "parent_tool_call": s.parent_tool_call,
                "metadata": s.metadata,
                "events": [[e.line, e.type, e.conversational] for e in s.events],
                "messages": [
                    {
                        "id": m.message_id,
                        "role": m.role,
                        "kind": m.kind,
                        "real_user": m.real_user,
                        "text": m.text[:TEXT_PREFIX],
                        "lines": list(m.lines),
                        "parent": m.parent_id,
                        "timestamp": m.timestamp,
                        "tool": [m.tool_name, m.tool_call_id, m.tool_input and m.tool_input[:40]],
                        "flags": [n for n in ("is_error", "sidechain") if getattr(m, n)],
                        **({"model": m.model} if m.model else {}),
                        **({"usage": m.usage.to_json()} if m.usage else {}),
                        **({"subagent": m.subagent} if m.subagent else {}),
                    }
                    for m in s.messages
                ],
                "documents": [
                    {
                        "id": d.document_id,
                        "kind": d.kind,
                        "parent": d.parent_document,
                        "metadata": d.metadata,
                        "parts": [p.message_key for p in d.parts],
                        **(
                            {"asides": [[a.after, a.part.message_key] for a in d.asides]}
                            if d.asides
                            else {}
                        ),
                    }
                    for d in docs
                ],
            }
        )
    return {
        "format": importer.name,
        "problems": [list(p) for p in parsed.problems],
        "sessions": sessions,
    }


def render(value: dict[str, Any]) -> str:
    return json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for case in CASES:
        golden_path(case).write_text(render(snapshot(FIXTURES / case)), encoding="utf-8")
        print("wrote", golden_path(case).relative_to(HERE.parent.parent))


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent.parent))
    main()

"""The real agent logs in the sibling ``shared/data/agent-logs`` (skipped when absent).

Each log is detected and parsed, and its message / turn / tool-call counts are compared with an
INDEPENDENT count written here straight from the raw JSON lines, following the BRIEF's
definitions (a few lines of plain counting per format; no importer code is used for it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cwcore.importers import base
from cwcore.importers.documents import build_documents, session_counts
from cwcore.store.admission import Admission

LOGS = Path(__file__).resolve().parents[3] / "shared/data/agent-logs"
pytestmark = pytest.mark.skipif(not LOGS.is_dir(), reason="shared/data/agent-logs is absent")

EXPECTED_FORMATS = {"claude_code": "claude-code", "codex": "codex", "pi": "pi"}


def logs() -> list[Path]:
    return sorted(LOGS.glob("*/*.jsonl")) if LOGS.is_dir() else []


def rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def texts(content: Any, kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") in kinds)


def tally(flags: list[bool], tools: int) -> dict[str, int]:
    """flags: one per message in file order, True for a real user message."""
    preamble = 1 if flags and not flags[0] else 0
    return {"messages": len(flags), "turns": sum(flags) + preamble, "toolCalls": tools}


CLAUDE_HOST = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-",
    "Caveat: The messages below",
    "<bash-stdout>",
    "<bash-stderr>",
    "<system-reminder>",
    "<task-notification>",
    "<user-prompt-submit-hook>",
    "[Request interrupted by user",
)


def count_claude(lines: list[dict[str, Any]], *, subagent: bool = False) -> dict[str, int]:
    """The main session's counts (``progress`` lines are not its messages); with ``subagent``,
    a sub-agent's lines, whose user text never is a real user message."""
    flags: list[bool] = []
    tools = 0
    groups_with_text: set[str] = set()
    for row in lines:
        kind = row.get("type")
        if kind == "summary" and row.get("summary"):
            flags.append(False)
        if kind not in ("user", "assistant"):
            continue
        content = row["message"]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if kind == "assistant":
            group = row["message"].get("id") or row["uuid"]
            if group not in groups_with_text and texts(blocks).strip():
                groups_with_text.add(group)
                flags.append(False)
            calls = sum(1 for b in blocks if b.get("type") == "tool_use")
            tools += calls
            flags += [False] * calls
            continue
        flags += [False] * sum(1 for b in blocks if b.get("type") == "tool_result")
        text = texts(blocks)
        if text.strip():
            host = any(
                row.get(f)
                for f in ("isMeta", "isSidechain", "isCompactSummary", "isVisibleInTranscriptOnly")
            )
            real = not host and not text.lstrip().startswith(CLAUDE_HOST)
            flags.append(real and not subagent)
    return tally(flags, tools)


def count_claude_agents(lines: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """agentId -> counts of the sub-agent messages nested in ``agent_progress`` lines (a
    message repeated on several lines once)."""
    nested: dict[str, list[dict[str, Any]]] = {}
    seen: set[str] = set()
    for row in lines:
        data = row.get("data") or {}
        if row.get("type") != "progress" or data.get("type") != "agent_progress":
            continue
        if data["message"]["uuid"] in seen:
            continue
        seen.add(data["message"]["uuid"])
        nested.setdefault(data["agentId"], []).append(data["message"])
    return {agent: count_claude(msgs, subagent=True) for agent, msgs in nested.items()}


CODEX_HOST = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions for",
    "<turn_aborted>",
)
CODEX_TEXT = ("input_text", "output_text", "text")


def count_codex(lines: list[dict[str, Any]]) -> dict[str, int]:
    flags: list[bool] = []
    tools = 0
    for row in lines:
        payload = row.get("payload") or {}
        if row["type"] == "compacted" and payload.get("message"):
            flags.append(False)
        if row["type"] != "response_item":  # event_msg duplicates are not messages
            continue
        kind = payload.get("type")
        if kind == "message":
            text = texts(payload["content"], CODEX_TEXT)
            if text.strip():
                user = payload["role"] == "user"
                flags.append(user and not text.lstrip().startswith(CODEX_HOST))
        elif kind in ("function_call", "custom_tool_call", "local_shell_call", "web_search_call"):
            tools += 1
            flags.append(False)
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            flags.append(False)
    return tally(flags, tools)


def count_pi(lines: list[dict[str, Any]]) -> dict[str, int]:
    flags: list[bool] = []
    tools = 0
    for row in lines:
        kind = row.get("type")
        if kind in ("compaction", "branch_summary") and row.get("summary"):
            flags.append(False)
        if kind == "custom_message" and texts(row.get("content")).strip():
            flags.append(False)
        if kind != "message":
            continue
        message = row["message"]
        role, content = message["role"], message.get("content")
        if role == "user" and texts(content).strip():
            flags.append(True)
        elif role == "assistant":
            if texts(content).strip():
                flags.append(False)
            calls = sum(1 for b in content or [] if b.get("type") == "toolCall")
            tools += calls
            flags += [False] * calls
        else:
            counted = (
                role in ("toolResult", "bashExecution")
                or (role in ("custom", "hookMessage") and texts(content).strip())
                or (role in ("branchSummary", "compactionSummary") and message.get("summary"))
            )
            if counted:
                flags.append(False)
    return tally(flags, tools)


COUNTERS = {"claude-code": count_claude, "codex": count_codex, "pi": count_pi}


def test_all_seven_logs_are_detected_and_sources_md_is_not() -> None:
    found = logs()
    assert len(found) == 7
    for path in found:
        importer = base.detect(path)
        assert importer is not None, path
        assert importer.name == EXPECTED_FORMATS[path.parent.name]
    sources = LOGS / "SOURCES.md"
    head = base.read_head(sources)
    for fmt in ("claude-code", "codex", "pi", "gemini", "cw-jsonl"):
        assert not base.get(fmt).sniff(sources, head)
    detected = base.detect(sources)
    assert detected is None or detected.name == "markdown"


@pytest.mark.parametrize("path", logs(), ids=lambda p: p.name[:24])
def test_counts_match_an_independent_count(path: Path) -> None:
    importer = base.detect(path)
    assert importer is not None
    result = importer.parse(path)
    assert result.problems == ()
    session, *children = result.sessions
    expected = COUNTERS[importer.name](rows(path))
    assert session_counts(session) == expected
    agents = count_claude_agents(rows(path)) if importer.name == "claude-code" else {}
    assert {c.session_id: session_counts(c) for c in children} == {
        f"{session.session_id}/agent-{agent}": counts for agent, counts in agents.items()
    }
    # every document is admissible as built (ids, roles, limits)
    for parsed in result.sessions:
        for doc in build_documents(parsed):
            Admission.validate(doc)


def test_sub_agent_progress_lines_are_the_sub_agents_messages_with_their_lines() -> None:
    # dev-19's only answer is a sub-agent's tool result, on a progress line of the parent
    path = LOGS / "claude_code/70c88cff-cb35-404f-a974-2a08bab4e4bc.jsonl"
    line = json.loads(path.read_text(encoding="utf-8").splitlines()[122])
    assert line["type"] == "progress" and line["data"]["type"] == "agent_progress"
    parent, *children = base.get("claude-code").parse(path).sessions
    [child] = children
    assert child.session_id == f"{parent.session_id}/agent-{line['data']['agentId']}"
    assert child.parent_tool_call == f"assistant:{line['parentToolUseID']}"
    [holder] = [m for m in child.messages if 123 in m.lines]
    assert "undefined: checkDisabledGuard (typecheck)" in holder.text
    assert all(123 not in m.lines for m in parent.messages)
    task = next(m for m in parent.messages if m.tool_call_id == line["parentToolUseID"])
    assert task.subagent == child.session_id
    # every agent_progress line of 07d86da7 (lines 22-45 and the rest) is in its sub-agent
    path = LOGS / "claude_code/07d86da7-2e39-4276-a0d5-7b46a85b8750.jsonl"
    progress = {
        n
        for n, row in enumerate(rows(path), start=1)
        if row.get("type") == "progress" and row["data"].get("type") == "agent_progress"
    }
    parent, child = base.get("claude-code").parse(path).sessions
    assert {23, 24, 45} <= progress
    assert progress == {n for m in child.messages for n in m.lines}

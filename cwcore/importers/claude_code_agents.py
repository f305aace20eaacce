"""Claude Code sub-agents (the Task / Agent tool): their lines, ids and links to the parent.

A sub-agent's conversation reaches the logs in one or both of two ways:

* ``progress`` lines of the parent session whose ``data.type`` is ``agent_progress``: each
  carries one message of the sub-agent in ``data.message`` (``{type, message: {role, content},
  uuid, timestamp}``: a Claude line nested), the sub-agent's ``data.agentId`` and, on the line,
  ``parentToolUseID`` (the parent's tool call). A message may be repeated on several lines.
* a transcript of its own, ``<project>/<session>/subagents/agent-<agentId>.jsonl`` (older
  versions: ``<project>/agent-<agentId>.jsonl``), whose lines are ordinary Claude lines marked
  ``isSidechain`` and ``agentId``, with the parent's ``sessionId``; newer versions write
  ``agent-<agentId>.meta.json`` beside it (``toolUseId``, ``description``).

Both map to ONE session, :func:`subagent_session_id` ``<parent session>/agent-<agentId>``. When
the transcript file exists it is the record (it also holds the final answer, which progress
lines never carry): the parent file then leaves the progress lines as metadata, so no message
is imported twice. The parent's tool call names the sub-agent's session (``subagent``), and the
sub-agent's session names that call (``parent_tool_call``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cwcore.importers.common import Line, jsonl_records, native_id


def subagent_session_id(parent: str, agent_id: str) -> str:
    return f"{parent}/agent-{agent_id}"


def transcript_paths(parent_file: Path, agent_id: str) -> list[Path]:
    """Where a sub-agent's own transcript may lie, given its parent session's file."""
    name = f"agent-{agent_id}.jsonl"
    return [parent_file.parent / parent_file.stem / "subagents" / name, parent_file.parent / name]


@dataclass
class Agent:
    """One sub-agent seen in a parent file: its progress lines (as Claude lines) and links."""

    agent_id: str
    tool_use_id: str | None = None
    lines: list[Line] = field(default_factory=list)
    #: a repeated message's first line -> the later lines that repeat it
    repeats: dict[int, list[Line]] = field(default_factory=dict)


def progress_message(obj: dict[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(agentId, nested line)`` for an ``agent_progress`` line that carries a readable
    sub-agent message, else None (the line stays metadata)."""
    if obj.get("type") != "progress":
        return None
    data = obj.get("data")
    if not isinstance(data, dict) or data.get("type") != "agent_progress":
        return None
    nested = data.get("message")
    agent_id = native_id(data.get("agentId"))
    if agent_id is None or not isinstance(nested, dict):
        return None
    if nested.get("type") not in ("user", "assistant") or native_id(nested.get("uuid")) is None:
        return None
    message = nested.get("message")
    if not isinstance(message, dict) or not isinstance(message.get("content"), str | list):
        return None
    return agent_id, nested


def collect_agents(lines: list[Line]) -> dict[str, Agent]:
    """The sub-agents of a parent file's lines, in first-seen order. A nested message repeated
    on later lines is read once, at its first line, with the content of its last (``repeats``
    keeps the later lines)."""
    agents: dict[str, Agent] = {}
    first: dict[tuple[str, str], int] = {}  # (agent, uuid) -> index in agent.lines
    for line in lines:
        found = progress_message(line.obj)
        if found is None:
            continue
        agent_id, nested = found
        agent = agents.setdefault(agent_id, Agent(agent_id))
        parent_call = native_id(line.obj.get("parentToolUseID"))
        agent.tool_use_id = agent.tool_use_id or parent_call
        uuid = nested["uuid"]
        index = first.get((agent_id, uuid))
        if index is not None:
            kept = agent.lines[index]
            agent.lines[index] = Line(kept.number, kept.raw, nested)
            agent.repeats.setdefault(kept.number, []).append(line)
            continue
        first[(agent_id, uuid)] = len(agent.lines)
        agent.lines.append(Line(line.number, line.raw, nested))
    return agents


def result_links(lines: list[Line]) -> dict[str, str]:
    """agentId -> the tool call that started it, from the tool results that report one
    (``toolUseResult.agentId`` beside a ``tool_result`` block)."""
    out: dict[str, str] = {}
    for line in lines:
        obj = line.obj
        result = obj.get("toolUseResult")
        if obj.get("type") != "user" or not isinstance(result, dict):
            continue
        agent_id = native_id(result.get("agentId"))
        content = obj.get("message", {}).get("content")
        calls = (
            [
                b.get("tool_use_id")
                for b in content
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
            if isinstance(content, list)
            else []
        )
        call = native_id(calls[0]) if len(calls) == 1 else None
        if agent_id and call:
            out.setdefault(agent_id, call)
    return out


def read_meta(transcript: Path) -> dict[str, Any]:
    """The ``agent-<id>.meta.json`` beside a sub-agent transcript ({} when absent or bad)."""
    meta = transcript.with_name(transcript.name.removesuffix(".jsonl") + ".meta.json")
    try:
        value = json.loads(meta.read_bytes())
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def meta_links(parent_file: Path) -> dict[str, str]:
    """agentId -> tool call, from the ``.meta.json`` files of a parent's ``subagents`` folder."""
    folder = parent_file.parent / parent_file.stem / "subagents"
    out: dict[str, str] = {}
    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".meta.json"))
    except OSError:
        return out
    for name in names:
        agent_id = native_id(name.removeprefix("agent-").removesuffix(".meta.json"))
        value = read_meta(folder / name.replace(".meta.json", ".jsonl"))
        call = native_id(value.get("toolUseId"))
        if agent_id and call:
            out[agent_id] = call
    return out


def call_inputs(lines: list[Line]) -> dict[str, dict[str, Any]]:
    """tool_use id -> input, for the tool calls of a file's assistant lines."""
    out: dict[str, dict[str, Any]] = {}
    for line in lines:
        if line.obj.get("type") != "assistant":
            continue
        content = line.obj.get("message", {}).get("content")
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                call = native_id(block.get("id"))
                if call and isinstance(block.get("input"), dict):
                    out[call] = block["input"]
    return out


def parent_link(transcript: Path, parent: str, agent_id: str) -> tuple[str | None, str | None]:
    """``(tool call id, description)`` of the parent's call that started the sub-agent whose
    transcript this is: from its ``.meta.json``, else from the parent session's file (progress
    lines or the tool result naming the agent)."""
    meta = read_meta(transcript)
    call = native_id(meta.get("toolUseId"))
    description = meta.get("description") if isinstance(meta.get("description"), str) else None
    if call and description:
        return call, description
    folder = transcript.parent.parent if transcript.parent.name == "subagents" else None
    candidates = [folder.parent / f"{folder.name}.jsonl"] if folder else []
    candidates.append(transcript.parent / f"{parent}.jsonl")
    for candidate in candidates:
        if not candidate.is_file():
            continue
        lines = [Line(n, raw, obj) for n, raw, obj, _ in jsonl_records(candidate) if obj]
        agents = collect_agents(lines)
        call = call or (agents[agent_id].tool_use_id if agent_id in agents else None)
        call = call or result_links(lines).get(agent_id)
        if call and description is None:
            said = call_inputs(lines).get(call, {}).get("description")
            description = said if isinstance(said, str) else None
        return call, description
    return call, description

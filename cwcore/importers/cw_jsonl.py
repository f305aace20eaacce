"""cw-jsonl: the interchange format (BRIEF §3), one message a line.

``{"session", "id", "role", "text", "timestamp"?, "project"?, "agent"?, "parent"?,
"parent_session"?, "tool_name"?, "tool_call_id"?, "tool_input"?}``. One file may hold many
sessions; each keeps its lines in file order. A ``user`` line is a real user message; an
``assistant`` line with ``tool_name`` is a tool call; a ``tool`` line is a tool result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cwcore.clock import iso, parse_time
from cwcore.errors import CwError, excerpt
from cwcore.importers.base import json_lines, register
from cwcore.importers.common import jsonl_records
from cwcore.model import ROLES, FileParse, Message, ParsedSession, SourceEvent
from cwcore.store.keys import check_id

DEFAULT_PROJECT = "default"


@dataclass
class _Session:
    session_id: str
    project: str
    agent: str
    parent_session: str | None = None
    events: list[SourceEvent] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


def _message(obj: dict[str, Any], line: int) -> Message:
    for name in ("session", "id", "role", "text"):
        if name not in obj:
            raise ValueError(f"missing field {excerpt(name)}")
    role = obj["role"]
    if role not in ROLES:
        raise ValueError(f"role must be one of {', '.join(ROLES)}, got {excerpt(role)}")
    if not isinstance(obj["text"], str):
        raise ValueError("text must be a string")
    message_id = check_id(obj["id"], "id")
    timestamp = obj.get("timestamp")
    if timestamp is not None:
        if not isinstance(timestamp, str):
            raise ValueError("timestamp must be an ISO-8601 string")
        timestamp = iso(parse_time(timestamp))
    tool_input = obj.get("tool_input")
    if tool_input is not None and not isinstance(tool_input, dict):
        raise ValueError("tool_input must be an object")
    tool_name = obj.get("tool_name")
    kind = "text"
    if role == "tool":
        kind = "tool-result"
    elif role == "assistant" and tool_name:
        kind = "tool-call"
    text = obj["text"]
    if kind == "tool-call" and tool_input is not None and not text:
        text = json.dumps(tool_input, ensure_ascii=False, sort_keys=True)
    return Message(
        message_id=message_id,
        role=role,
        kind=kind,  # type: ignore[arg-type]
        text=text,
        lines=(line,),
        timestamp=timestamp,
        real_user=role == "user",
        parent_id=obj.get("parent") if isinstance(obj.get("parent"), str) else None,
        tool_name=tool_name if isinstance(tool_name, str) else None,
        tool_call_id=obj.get("tool_call_id") if isinstance(obj.get("tool_call_id"), str) else None,
        tool_input=None if tool_input is None else json.dumps(tool_input, sort_keys=True),
    )


class CwJsonlImporter:
    name = "cw-jsonl"
    agent = "cw-jsonl"

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        objs = json_lines(head)
        return bool(objs) and all({"session", "id", "role", "text"} <= set(o) for o in objs)

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return any({"session", "id", "role"} <= set(o) for o in json_lines(head))

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        sessions: dict[str, _Session] = {}
        problems: list[tuple[int, str]] = []
        for number, raw, obj, reason in jsonl_records(path):
            if obj is None:
                problems.append((number, reason))
                continue
            try:
                message = _message(obj, number)
                session_id = check_id(obj["session"], "session")
            except (ValueError, CwError) as exc:
                problems.append((number, exc.message if isinstance(exc, CwError) else str(exc)))
                continue
            state = sessions.get(session_id)
            if state is None:
                line_project = obj.get("project")
                state = sessions[session_id] = _Session(
                    session_id=session_id,
                    project=project
                    or (line_project if isinstance(line_project, str) and line_project else None)
                    or DEFAULT_PROJECT,
                    agent=str(obj["agent"]) if isinstance(obj.get("agent"), str) else self.agent,
                    parent_session=obj.get("parent_session")
                    if isinstance(obj.get("parent_session"), str)
                    else None,
                )
            if message.message_id in state.seen:
                problems.append((number, f"duplicate id {excerpt(message.message_id)} in session"))
                continue
            state.seen.add(message.message_id)
            state.events.append(SourceEvent(number, raw, True, message.role))
            state.messages.append(message)
        parsed = []
        for state in sessions.values():
            stamps = [m.timestamp for m in state.messages if m.timestamp]
            parsed.append(
                ParsedSession(
                    session_id=state.session_id,
                    agent=state.agent,
                    project=state.project,
                    events=tuple(state.events),
                    messages=tuple(state.messages),
                    started=min(stamps) if stamps else None,
                    parent_session=state.parent_session,
                    lineage=(state.parent_session,) if state.parent_session else (),
                    source_path=str(path),
                )
            )
        return FileParse(tuple(parsed), tuple(problems))


register(CwJsonlImporter())

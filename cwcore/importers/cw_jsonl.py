"""cw-jsonl: the interchange format, one message a line.

``{"session", "id", "role", "text", "timestamp"?, "project"?, "agent"?, "parent"?,
"parent_session"?, "tool_name"?, "tool_call_id"?, "tool_input"?}``, and cw's own optional fields,
which ``cw export --format jsonl`` writes so that an export imports back to the same sessions,
turns and messages: ``kind`` (``text``, ``tool-call``, ``tool-result``, ``summary``,
``thinking``; by default implied by the role as below), ``meta`` (true: a user line the host
wrote, not a real user message), ``is_error``, ``model``, ``usage`` (``{"input", "output",
"cacheRead", "cacheWrite"}``), ``subagent`` (the session a tool call started), and, read from a
session's first line that has them, ``title`` and ``parent_tool_call``.

One file may hold many sessions; each keeps its lines in file order. A ``user`` line is a real
user message unless ``meta``; an ``assistant`` line with ``tool_name`` is a tool call; a
``tool`` line is a tool result.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cwcore.clock import iso, parse_time
from cwcore.errors import CwError, excerpt
from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import jsonl_records
from cwcore.model import ROLES, FileParse, Message, ParsedSession, SourceEvent, Usage
from cwcore.store.keys import check_id

DEFAULT_PROJECT = "default"
KINDS = ("text", "tool-call", "tool-result", "summary", "thinking")


@dataclass
class _Session:
    session_id: str
    project: str
    agent: str
    parent_session: str | None = None
    title: str | None = None
    parent_tool_call: str | None = None
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
    if "kind" in obj:
        if obj["kind"] not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {excerpt(obj['kind'])}")
        kind = obj["kind"]
    usage = Usage.from_json(obj["usage"]) if "usage" in obj else None
    if "usage" in obj and usage is None:
        raise ValueError("usage must be an object of non-negative token counts")
    meta = obj.get("meta") is True
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
        real_user=role == "user" and kind == "text" and not meta,
        parent_id=_text(obj, "parent"),
        tool_name=tool_name if isinstance(tool_name, str) else None,
        tool_call_id=_text(obj, "tool_call_id"),
        tool_input=None if tool_input is None else _input_json(tool_input, text),
        is_error=obj.get("is_error") is True,
        model=_text(obj, "model"),
        usage=usage or None,
        subagent=_text(obj, "subagent"),
    )


def _text(obj: dict[str, Any], name: str) -> str | None:
    value = obj.get(name)
    return value if isinstance(value, str) and value else None


def _input_json(tool_input: dict[str, Any], text: str) -> str:
    """The canonical JSON of a tool input; the line's text itself when it is that JSON (what
    the agent importers and ``cw export`` write), so an export keeps its bytes."""
    try:
        if json.loads(text) == tool_input:
            return text
    except ValueError:
        pass
    return json.dumps(tool_input, ensure_ascii=False, sort_keys=True)


class CwJsonlImporter:
    name = "cw-jsonl"
    agent = "cw-jsonl"
    priority = 1000  # the most permissive shape: tried last
    not_read = "fields outside the cw-jsonl schema (kept in the line's event)"
    locations: tuple[Location, ...] = ()

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
            if state.title is None and _text(obj, "title"):
                state.title = _text(obj, "title")
            if state.parent_tool_call is None and _text(obj, "parent_tool_call"):
                state.parent_tool_call = _text(obj, "parent_tool_call")
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
                    title=state.title,
                    parent_session=state.parent_session,
                    parent_tool_call=state.parent_tool_call,
                    lineage=(state.parent_session,) if state.parent_session else (),
                    source_path=str(path),
                )
            )
        return FileParse(tuple(parsed), tuple(problems))


register(CwJsonlImporter())

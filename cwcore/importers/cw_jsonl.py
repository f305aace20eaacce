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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from cwcore.clock import iso, parse_time
from cwcore.errors import CwError, excerpt
from cwcore.importers import streaming
from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import decode_object
from cwcore.importers.documents import is_command
from cwcore.importers.lines import Overlong, iter_lines
from cwcore.importers.streaming import LineProblem, SessionChunk
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
        for number, raw, obj, found in _records(path):
            if isinstance(found, str):
                problems.append((number, found))
                continue
            message, session_id = found
            state = sessions.get(session_id)
            if state is None:
                state = sessions[session_id] = _new_session(session_id, obj, project, self.agent)
            _note_session_fields(state, obj)
            if message.message_id in state.seen:
                problems.append((number, f"duplicate id {excerpt(message.message_id)} in session"))
                continue
            state.seen.add(message.message_id)
            state.events.append(SourceEvent(number, raw, True, message.role))
            state.messages.append(message)
        return FileParse(
            tuple(
                _parsed(state, path, state.events, state.messages) for state in sessions.values()
            ),
            tuple(problems),
        )

    def stream(
        self, path: Path, *, project: str | None = None, chunk_bytes: int | None = None
    ) -> Iterator[SessionChunk | LineProblem]:
        """The file as :mod:`~cwcore.importers.streaming` chunks, in two passes: the first reads
        only what plans the cuts (ids, parents, sizes, titles; about a hundred bytes a message,
        freed before the second), the second yields each session's chunks as their lines are
        read. Both read the same bytes: lines appended in between wait for the next import."""
        size = path.stat().st_size
        plans, duplicates = _plan(
            path, size, streaming.CHUNK_BYTES if chunk_bytes is None else chunk_bytes
        )
        sessions: dict[str, _Session] = {}
        for number, raw, obj, found in _records(path, size):
            if isinstance(found, str):
                yield LineProblem(number, found)
                continue
            message, session_id = found
            if number in duplicates:
                yield LineProblem(number, f"duplicate id {excerpt(message.message_id)} in session")
                continue
            plan = plans[session_id]
            state = sessions.get(session_id)
            if state is None:
                state = sessions[session_id] = _new_session(session_id, obj, project, self.agent)
            _note_session_fields(state, obj)
            if plan.position in plan.cuts and state.messages:
                yield self._chunk(state, plan, path)
            state.events.append(SourceEvent(number, raw, True, message.role))
            state.messages.append(message)
            plan.position += 1
            if plan.position == plan.count:
                yield self._chunk(state, plan, path)
        for session_id, state in sessions.items():
            if state.messages:  # only when the file changed under the plan
                yield self._chunk(state, plans[session_id], path)

    @staticmethod
    def _chunk(state: _Session, plan: _Plan, path: Path) -> SessionChunk:
        # The whole session's (its first line that has them, wherever that is in the file).
        state.title, state.parent_tool_call = plan.title, plan.parent_tool_call
        parsed = _parsed(state, path, state.events, state.messages, started=plan.started)
        chunk = SessionChunk(parsed, plan.chunks, plan.messages, tuple(plan.title_messages))
        plan.chunks += 1
        state.events, state.messages = [], []  # released: the next chunk starts empty
        return chunk


def _records(
    path: Path, limit: int | None = None
) -> Iterator[tuple[int, bytes, dict[str, Any], tuple[Message, str] | str]]:
    """``(number, raw, object, (message, session id))`` for each readable line, ``(number, raw,
    {}, reason)`` for the others; only the first ``limit`` bytes when given."""
    with path.open("rb") as fh:
        reader = fh if limit is None else _Bounded(fh, limit)
        for number, line in iter_lines(reader):  # type: ignore[arg-type]
            if isinstance(line, Overlong):
                yield number, b"", {}, line.reason()
                continue
            raw = line.rstrip(b"\r")
            if not raw.strip():
                continue
            obj, reason = decode_object(raw)
            if obj is None:
                yield number, raw, {}, reason
                continue
            try:
                message = _message(obj, number)
                session_id = check_id(obj["session"], "session")
            except (ValueError, CwError) as exc:
                yield number, raw, obj, exc.message if isinstance(exc, CwError) else str(exc)
                continue
            yield number, raw, obj, (message, session_id)


class _Bounded:
    """The first ``left`` bytes of a binary file."""

    def __init__(self, fh: BinaryIO, left: int) -> None:
        self._fh, self._left = fh, left

    def read(self, size: int) -> bytes:
        data = self._fh.read(min(size, self._left)) if self._left > 0 else b""
        self._left -= len(data)
        return data


def _new_session(session_id: str, obj: dict[str, Any], project: str | None, agent: str) -> _Session:
    line_project = obj.get("project")
    return _Session(
        session_id=session_id,
        project=project
        or (line_project if isinstance(line_project, str) and line_project else None)
        or DEFAULT_PROJECT,
        agent=str(obj["agent"]) if isinstance(obj.get("agent"), str) else agent,
        parent_session=obj.get("parent_session")
        if isinstance(obj.get("parent_session"), str)
        else None,
    )


def _note_session_fields(state: _Session, obj: dict[str, Any]) -> None:
    """A session takes its title and parent tool call from its first line that has them."""
    if state.title is None and _text(obj, "title"):
        state.title = _text(obj, "title")
    if state.parent_tool_call is None and _text(obj, "parent_tool_call"):
        state.parent_tool_call = _text(obj, "parent_tool_call")


def _parsed(
    state: _Session,
    path: Path,
    events: list[SourceEvent],
    messages: list[Message],
    started: str | None = None,
) -> ParsedSession:
    if started is None:
        stamps = [m.timestamp for m in messages if m.timestamp]
        started = min(stamps) if stamps else None
    return ParsedSession(
        session_id=state.session_id,
        agent=state.agent,
        project=state.project,
        events=tuple(events),
        messages=tuple(messages),
        started=started,
        title=state.title,
        parent_session=state.parent_session,
        parent_tool_call=state.parent_tool_call,
        lineage=(state.parent_session,) if state.parent_session else (),
        source_path=str(path),
    )


@dataclass
class _Plan:
    """What the first pass of :meth:`CwJsonlImporter.stream` learned about one session: its
    message count, the positions (0-based, among its messages) before which a chunk is cut,
    the whole session's first time, explicit title and parent tool call, and the few user
    messages a derived title can come from."""

    count: int = 0
    messages: int = 0  # non-thinking messages: the session's public count
    cuts: set[int] = field(default_factory=set)
    started: str | None = None
    title: str | None = None
    parent_tool_call: str | None = None
    title_messages: list[Message] = field(default_factory=list)
    # first pass only
    ids: dict[str, int] = field(default_factory=dict)
    forward: dict[str, int] = field(default_factory=dict)
    candidates: list[tuple[int, int]] = field(default_factory=list)  # (position, bytes before)
    bytes: int = 0
    chunks: int = 0  # second pass: chunks yielded so far
    position: int = 0  # second pass: messages read so far


def _plan(path: Path, limit: int, chunk_bytes: int) -> tuple[dict[str, _Plan], set[int]]:
    """First pass: each session's :class:`_Plan`, and the lines that repeat a message id.

    A cut before position ``i`` is safe when message ``i`` is a real user message (it opens a
    turn whatever its parent) and no later message of the session reaches back across it:
    neither a message that is not a real user message naming a parent before ``i`` (it would
    join or branch from an earlier turn) nor a thinking message anchored to a message before
    ``i`` or naming one after the cut that it precedes. Safe cuts are kept on a stack; a reach
    back to position ``p`` removes those after ``p``. Cuts are then chosen greedily, one each
    time ``chunk_bytes`` of source lines have gathered since the last."""
    plans: dict[str, _Plan] = {}
    duplicates: set[int] = set()
    for number, raw, obj, found in _records(path, limit):
        if isinstance(found, str):
            continue
        message, session_id = found
        plan = plans.get(session_id)
        if plan is None:
            plan = plans[session_id] = _Plan()
        # As in ``parse``: a line gives its session a title even when its id repeats.
        if plan.title is None and _text(obj, "title"):
            plan.title = _text(obj, "title")
        if plan.parent_tool_call is None and _text(obj, "parent_tool_call"):
            plan.parent_tool_call = _text(obj, "parent_tool_call")
        if message.message_id in plan.ids:
            duplicates.add(number)
            continue
        position = plan.count
        plan.count += 1
        thinking = message.kind == "thinking"
        if not thinking:
            plan.messages += 1
        if message.timestamp and (plan.started is None or message.timestamp < plan.started):
            plan.started = message.timestamp
        reach: int | None = None
        parent = message.parent_id
        if parent is not None and not message.real_user:
            reach = plan.ids.get(parent)
            if reach is None and thinking:
                plan.forward.setdefault(parent, position)
        pending = plan.forward.pop(message.message_id, None)
        if pending is not None and not thinking:
            reach = pending if reach is None else min(reach, pending)
        if reach is not None:
            while plan.candidates and plan.candidates[-1][0] > reach:
                plan.candidates.pop()
        if message.real_user and not thinking and position:
            plan.candidates.append((position, plan.bytes))
        if message.role == "user" and message.kind == "text":
            _title_candidate(plan.title_messages, message)
        plan.ids[message.message_id] = position
        plan.bytes += len(raw) + 1
    for plan in plans.values():
        start = 0
        for position, before in plan.candidates:
            if before - start >= chunk_bytes:
                plan.cuts.add(position)
                start = before
        plan.ids, plan.forward, plan.candidates = {}, {}, []
    return plans, duplicates


def _title_candidate(kept: list[Message], message: Message) -> None:
    """Keep ``message`` (a user text message) when a derived title could come from it:
    :func:`~cwcore.importers.documents.prompt_title` looks only at the first user text that is
    not a bare command and is real, the first that is not a bare command, the first real one
    and the first one. At most four are kept, in file order."""

    def slots(m: Message) -> tuple[bool, bool, bool, bool]:
        command = is_command(m.text)
        return (not command and m.real_user, not command, m.real_user, True)

    for slot, wanted in enumerate(slots(message)):
        if wanted and not any(slots(m)[slot] for m in kept):
            kept.append(message)
            return


register(CwJsonlImporter())

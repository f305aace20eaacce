"""Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-<ts>-<uuid>.jsonl``.

Each line is ``{timestamp, type, payload}``. What becomes what (docs/importers.md):

* ``response_item`` ``message`` lines are messages, id ``L<n>`` (n: their 1-based line).
  ``user`` text is a real user message unless host-generated (:data:`HOST_MARKERS`, e.g.
  ``<environment_context>``); ``developer`` and ``system`` messages are role ``system``.
* ``function_call`` / ``custom_tool_call`` / ``local_shell_call`` / ``web_search_call`` are
  tool-call messages; ``*_output`` lines are tool-result messages paired by ``call_id``, which
  gives them the call's ``tool_name``.
* ``compacted`` lines are ``system`` messages of kind ``summary``.
* ``reasoning`` items with readable text (their summary, else their ``reasoning_text``
  content; encrypted reasoning has none) are messages of kind ``thinking``, id ``L<n>``.
* ``event_msg`` lines are metadata: the visible ``user_message``/``agent_message`` events
  duplicate a ``response_item`` and are dropped as messages (always: a rollout records both, and
  dropping by kind keeps ids stable while a live file grows); ``session_meta``,
  ``turn_context``, ``token_count`` … are metadata events. A ``token_count`` event's growth of
  ``total_token_usage`` is the usage of the response before it (a repeated event adds
  nothing), kept on that response's first assistant message with the ``turn_context`` model;
  ``thread_name_updated`` names the session (its title).

Session id: ``session_meta.payload.id`` — the one the file name carries when several appear,
else the first. ``session_meta`` repeats when a session is resumed; one with another id is an
ancestor (lineage, nearest first). Codex records no tree, so messages carry no ``parent_id``.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    Line,
    Sink,
    blocks_text,
    canonical_json,
    host_wrapped,
    native_id,
    norm_time,
    parse_arguments,
    project_from_cwd,
    read_jsonl,
    tool_call_text,
    unwrapped_title,
)
from cwcore.model import FileParse, Message, ParsedSession, SourceEvent, Usage

CODEX_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})

#: The wrappers Codex puts around the text it injects as user messages (its contextual user
#: fragments: environment, instructions, plugin and skill lists, shell commands the user ran
#: with ``!``, aborted turns, sub-agent notifications, goal reminders): opening -> closing.
HOST_WRAPPERS = {
    **{
        f"<{tag}>": f"</{tag}>"
        for tag in (
            "environment_context",
            "user_instructions",
            "permissions instructions",
            "turn_aborted",
            "recommended_plugins",
            "plugins",
            "skill",
            "skills_instructions",
            "user_shell_command",
            "subagent_notification",
            "subagents",
            "app-context",
            "codex_internal_context",
            "goal_context",
            "INSTRUCTIONS",
        )
    },
    "# AGENTS.md instructions for": "</INSTRUCTIONS>",
    "# AGENTS.md": "</INSTRUCTIONS>",
}
#: User-role text starting with one of these is injected by the host (docs, tests).
HOST_MARKERS = tuple(HOST_WRAPPERS)


def is_host_text(text: str) -> bool:
    """Whether a user message is only host wrappers (see
    :func:`~cwcore.importers.common.host_wrapped`; one left open is host text, as cw always
    read a message starting with a Codex marker)."""
    return host_wrapped(text, HOST_WRAPPERS, open_is_host=True)


_CALLS = {
    "function_call": "arguments",
    "custom_tool_call": "input",
    "local_shell_call": "action",
    "web_search_call": "action",
}
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
_TEXT_TYPES = ("input_text", "output_text", "text", "summary_text")
_FILE_ID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)


def _check(obj: dict[str, Any]) -> str:
    if not isinstance(obj.get("type"), str):
        return "missing field 'type'"
    if obj["type"] in ("session_meta", "response_item", "compacted") and not isinstance(
        obj.get("payload"), dict
    ):
        return f"{obj['type']} line without a 'payload' object"
    return ""


def _output_text(output: Any) -> str:
    """A tool output: a string, a list of content items, or an object with ``content``."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return blocks_text(output, text_types=_TEXT_TYPES)
    if isinstance(output, dict):
        for name in ("content", "output"):
            if isinstance(output.get(name), str):
                return str(output[name])
        return canonical_json(output)
    return ""


def _token_total(info: Any) -> Usage | None:
    """``info.total_token_usage`` of a ``token_count`` event as :class:`Usage`: Codex counts
    cached prompt tokens inside ``input_tokens``, cw counts them apart."""
    total = info.get("total_token_usage") if isinstance(info, dict) else None
    if not isinstance(total, dict):
        return None

    def count(name: str) -> int:
        n = total.get(name)
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0

    cached = count("cached_input_tokens")
    return Usage(
        input=max(0, count("input_tokens") - cached),
        output=count("output_tokens"),
        cache_read=cached,
    )


def _flat_usage(payload: dict[str, Any]) -> Usage | None:
    """The counts of an older ``token_count`` event written flat in its payload
    (``input_tokens``, ``cached_input_tokens``, ``output_tokens``, no ``info``); None for
    the current shape."""
    if "info" in payload or not any(
        isinstance(payload.get(k), int) for k in ("input_tokens", "output_tokens")
    ):
        return None

    def count(name: str) -> int:
        n = payload.get(name)
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0

    cached = count("cached_input_tokens")
    usage = Usage(
        input=max(0, count("input_tokens") - cached),
        output=count("output_tokens"),
        cache_read=cached,
    )
    return usage or None


class _Reader:
    def __init__(self) -> None:
        self.sink = Sink()
        self.calls: dict[str, str] = {}  # call_id -> tool name
        self.meta_ids: list[str] = []
        self.cwd: str | None = None
        self.started: str | None = None
        self.title: str | None = None
        self.model: str | None = None
        self.total = Usage()  # the last token_count total
        self.owner: int | None = None  # index of the response awaiting its token count
        self.last_owner: int | None = None  # the response an older flat token_count went to

    def line(self, line: Line) -> None:
        kind = line.obj["type"]
        payload = line.obj.get("payload")
        payload = payload if isinstance(payload, dict) else {}
        stamp = norm_time(line.obj.get("timestamp"))
        if kind == "session_meta":
            sid = native_id(payload.get("id"))
            if sid and sid not in self.meta_ids:
                self.meta_ids.append(sid)
            if self.cwd is None and isinstance(payload.get("cwd"), str):
                self.cwd = payload["cwd"]
            self.started = self.started or norm_time(payload.get("timestamp")) or stamp
        elif kind == "turn_context":
            if self.cwd is None and isinstance(payload.get("cwd"), str):
                self.cwd = payload["cwd"]
            if isinstance(payload.get("model"), str) and payload["model"]:
                self.model = payload["model"]
        elif kind == "event_msg":
            self.event(payload)
        elif kind == "compacted":
            text = payload.get("message")
            if isinstance(text, str) and text.strip():
                self._add(line, "system", "summary", text, stamp)
        elif kind == "response_item":
            self.item(line, payload, stamp)

    def event(self, payload: dict[str, Any]) -> None:
        if payload.get("type") == "thread_name_updated":
            name = payload.get("thread_name")
            if isinstance(name, str) and name.strip():
                self.title = name.strip()
        if payload.get("type") != "token_count":
            return
        flat = _flat_usage(payload)
        if flat is not None:
            self._response_usage(flat)
            return
        total = _token_total(payload.get("info"))
        if total is None:
            return
        delta = total - self.total
        self.total = total
        if self.owner is None or min(delta.input, delta.output, delta.cache_read) < 0 or not delta:
            return
        index, self.owner = self.owner, None
        message = self.sink.messages[index]
        self.sink.messages[index] = dataclasses.replace(message, usage=delta, model=self.model)

    def _response_usage(self, usage: Usage) -> None:
        """An older ``token_count`` event's own counts: the usage of the response before it (a
        later event for the same response replaces them)."""
        if self.owner is not None:
            self.last_owner, self.owner = self.owner, None
        if self.last_owner is None:
            return
        message = self.sink.messages[self.last_owner]
        self.sink.messages[self.last_owner] = dataclasses.replace(
            message, usage=usage, model=message.model or self.model
        )

    def item(self, line: Line, payload: dict[str, Any], stamp: str | None) -> None:
        kind = payload.get("type")
        if kind == "message" or (kind is None and "role" in payload and "content" in payload):
            # Some writers leave out the item's "type": a role and content make a message.
            role = payload.get("role")
            text = blocks_text(payload.get("content"), text_types=_TEXT_TYPES)
            if not text.strip() or role not in ("user", "assistant", "developer", "system"):
                return
            if role == "user":
                host = is_host_text(text)
                self._add(line, "user", "text", text, stamp, real_user=not host)
            else:
                self._add(
                    line, "assistant" if role == "assistant" else "system", "text", text, stamp
                )
        elif kind in _CALLS:
            call_id = payload.get("call_id")
            call_id = call_id if isinstance(call_id, str) else None
            name = payload.get("name")
            name = name if isinstance(name, str) else kind.removesuffix("_call")
            value = parse_arguments(payload.get(_CALLS[kind]))
            if call_id:
                self.calls[call_id] = name
            self._add(
                line,
                "assistant",
                "tool-call",
                tool_call_text(value),
                stamp,
                tool_name=name,
                tool_call_id=call_id,
                # A free-form input (a patch) is the text itself; only an object is an input.
                tool_input=canonical_json(value) if isinstance(value, dict) else None,
            )
        elif kind in _OUTPUTS:
            call_id = payload.get("call_id")
            call_id = call_id if isinstance(call_id, str) else None
            output = payload.get("output")
            failed = payload.get("success") is False or (
                isinstance(output, dict) and output.get("success") is False
            )
            self._add(
                line,
                "tool",
                "tool-result",
                _output_text(output),
                stamp,
                tool_name=self.calls.get(call_id) if call_id else None,
                tool_call_id=call_id,
                is_error=failed,
            )
        elif kind == "reasoning":
            text = blocks_text(payload.get("summary"), text_types=_TEXT_TYPES)
            text = text or blocks_text(payload.get("content"), text_types=("reasoning_text",))
            if text.strip():
                self._add(line, "assistant", "thinking", text, stamp)

    def _add(
        self, line: Line, role: str, kind: str, text: str, stamp: str | None, **extra: Any
    ) -> None:
        added = self.sink.add(
            Message(
                message_id=f"L{line.number}",
                role=role,  # type: ignore[arg-type]
                kind=kind,  # type: ignore[arg-type]
                text=text,
                lines=(line.number,),
                timestamp=stamp,
                **extra,
            )
        )
        if added and role == "assistant" and kind != "thinking" and self.owner is None:
            self.owner = len(self.sink.messages) - 1  # the response's first output owns it


class CodexImporter:
    name = "codex"
    not_read = "legacy `.json` rollouts; `event_msg` copies of messages; `agent_message` items"
    agent = "codex"
    priority = 20
    locations: tuple[Location, ...] = (Location("~/.codex/sessions"),)

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        return any(
            isinstance(kind := obj.get("type"), str)
            and kind in CODEX_TYPES
            and isinstance(obj.get("payload"), dict)
            for obj in json_lines(head)
        )

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return self.sniff(path, head)  # sniffing already needs only one line of the format

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        lines, problems = read_jsonl(path)
        reader = _Reader()
        kept: list[Line] = []
        for line in lines:
            reason = _check(line.obj)
            if reason:
                problems.append((line.number, reason))
                continue
            kept.append(line)
            reader.line(line)
        if not kept:
            return FileParse((), tuple(problems))
        problems.extend(reader.sink.problems)
        match = _FILE_ID.search(path.stem)
        from_name = match.group(1) if match else None
        if from_name and (from_name in reader.meta_ids or not reader.meta_ids):
            session_id = from_name
        elif reader.meta_ids:
            session_id = reader.meta_ids[0]
        else:
            session_id = native_id(path.stem) or "codex-session"
        lineage = tuple(i for i in reversed(reader.meta_ids) if i != session_id)
        used = {n for m in reader.sink.messages for n in m.lines}
        events = tuple(
            SourceEvent(ln.number, ln.raw, ln.number in used, ln.obj["type"]) for ln in kept
        )
        session = ParsedSession(
            session_id=session_id,
            agent=self.agent,
            project=project or project_from_cwd(reader.cwd) or DEFAULT_PROJECT,
            events=events,
            messages=tuple(reader.sink.messages),
            started=reader.started,
            title=reader.title
            or unwrapped_title(reader.sink.messages, HOST_WRAPPERS, open_is_host=True),
            cwd=reader.cwd,
            parent_session=lineage[0] if lineage else None,
            lineage=lineage,
            source_path=str(path),
            resume_command=f"codex resume {session_id}",
        )
        return FileParse((session,), tuple(sorted(problems)))


register(CodexImporter())

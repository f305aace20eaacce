"""Qwen Code chat records: ``~/.qwen/projects/<project>/chats/<sessionId>.jsonl``.

Qwen Code (a Gemini CLI fork) writes one ``ChatRecord`` a line: ``{uuid, parentUuid, sessionId,
timestamp, type, subtype?, cwd, version, message?, usageMetadata?, model?, toolCallResult?,
systemPayload?, isSidechain?}``, ``type`` one of ``user``, ``assistant``, ``tool_result``,
``system``, and ``message`` a Gemini ``Content`` (``{role, parts}``). Records form a tree by
``parentUuid`` (a rewind or branch starts a new child of an earlier record).

What becomes what (docs/importers.md): a ``user`` record's text parts -> user message (id: the
uuid), real unless it has a ``subtype`` (slash and @ commands, notifications, cron, mid-turn
input are host-made); an ``assistant`` record's ``thought`` parts -> thinking
(``<uuid>#thinking<n>``), its text parts -> ONE assistant message (the uuid), each
``functionCall`` part -> a tool call (its ``id``); a ``tool_result`` record's
``functionResponse`` parts -> tool results (the uuid, ``<uuid>#<n>`` after the first) paired by
call id; ``usageMetadata`` and ``model`` -> usage of the record's text, else first call;
``system`` records are metadata (``custom_title`` gives the title, ``parent_session`` the
lineage).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    Line,
    Sink,
    canonical_json,
    native_id,
    norm_time,
    project_from_cwd,
    read_jsonl,
    tool_call_text,
)
from cwcore.importers.convo import count, obj, text_of
from cwcore.importers.gemini import parts_text
from cwcore.model import FileParse, Message, ParsedSession, SourceEvent, Usage

_TYPES = ("user", "assistant", "tool_result", "system")


def usage_of(value: object) -> Usage | None:
    """Gemini ``usageMetadata``: the prompt count includes cached tokens; thoughts are output."""
    meta = obj(value)
    cached = count(meta.get("cachedContentTokenCount"))
    usage = Usage(
        input=max(0, count(meta.get("promptTokenCount")) - cached),
        output=count(meta.get("candidatesTokenCount")) + count(meta.get("thoughtsTokenCount")),
        cache_read=cached,
    )
    return usage or None


def _parts(record: dict[str, Any]) -> list[dict[str, Any]]:
    parts = obj(record.get("message")).get("parts")
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def _response_text(response: dict[str, Any]) -> tuple[str, bool]:
    body = response.get("response")
    if isinstance(body, dict):
        if "error" in body:
            return text_of(body["error"]) or canonical_json(body["error"]), True
        if isinstance(body.get("output"), str):
            return body["output"], False
        return canonical_json(body), False
    return text_of(body), False


class _Reader:
    def __init__(self) -> None:
        self.sink = Sink()
        self.tail: dict[str, str | None] = {}  # record uuid -> the message its children follow
        self.tools: dict[str, str] = {}
        self.title: str | None = None
        self.parent: str | None = None

    def record(self, line: Line) -> None:
        rec = line.obj
        uuid = native_id(rec.get("uuid")) or f"L{line.number}"
        parent_ref = rec.get("parentUuid")
        parent = self.tail.get(parent_ref) if isinstance(parent_ref, str) else None
        if isinstance(parent_ref, str) and parent_ref not in self.tail:
            parent = self.sink.last_id
        ts = norm_time(rec.get("timestamp"))
        side = bool(rec.get("isSidechain"))
        kind = rec["type"]
        tail = parent
        add = self._adder(line, ts, side)
        if kind == "user":
            # A user record may carry the results of the model's calls (Gemini sends them
            # back as the user's turn): those parts are tool results, never the user's words.
            parts = _parts(rec)
            text = parts_text([p for p in parts if "functionResponse" not in p])
            real = not rec.get("subtype")
            new_tail = add(uuid, tail, "user", "text", text, real_user=real)
            tail = self._results(rec, uuid, new_tail, add, taken=new_tail != tail)
        elif kind == "assistant":
            tail = self._assistant(rec, uuid, tail, add)
        elif kind == "tool_result":
            tail = self._results(rec, uuid, tail, add, taken=False)
        elif kind == "system":
            payload = obj(rec.get("systemPayload"))
            if rec.get("subtype") == "custom_title":
                self.title = text_of(payload.get("customTitle")).strip() or self.title
            elif rec.get("subtype") == "parent_session":
                self.parent = native_id(payload.get("parentSessionId")) or self.parent
        self.tail[uuid] = tail

    def _results(
        self, rec: dict[str, Any], uuid: str, tail: str | None, add: Any, *, taken: bool
    ) -> str | None:
        """One tool result per ``functionResponse`` part, paired with its call by id: the
        record's uuid for the first (``<uuid>#<n>`` after it, or for all when the uuid is
        ``taken`` by the record's text)."""
        n = 0
        result = obj(rec.get("toolCallResult"))
        for part in _parts(rec):
            response = part.get("functionResponse")
            if not isinstance(response, dict):
                continue
            n += 1
            call = native_id(response.get("id")) or native_id(result.get("callId"))
            text, failed = _response_text(response)
            name = text_of(response.get("name")) or (self.tools.get(call) if call else None)
            tail = add(
                uuid if n == 1 and not taken else f"{uuid}#{n + taken}",
                tail,
                "tool",
                "tool-result",
                text,
                always=True,
                tool_call_id=call,
                tool_name=name or None,
                is_error=failed or result.get("status") == "error",
            )
        return tail

    def _adder(self, line: Line, ts: str | None, side: bool) -> Any:
        def add(
            mid: str,
            parent: str | None,
            role: str,
            kind: str,
            text: str,
            *,
            always: bool = False,
            **extra: Any,
        ) -> str | None:
            if not always and not text.strip():
                return parent
            message = Message(
                message_id=mid,
                role=role,  # type: ignore[arg-type]
                kind=kind,  # type: ignore[arg-type]
                text=text,
                lines=(line.number,),
                timestamp=ts,
                parent_id=None if kind == "thinking" and parent is None else parent,
                sidechain=side,
                **extra,
            )
            if not self.sink.add(message):
                return parent
            return parent if kind == "thinking" else mid

        return add

    def _assistant(self, rec: dict[str, Any], uuid: str, tail: str | None, add: Any) -> str | None:
        parts = _parts(rec)
        thoughts = [text_of(p.get("text")) for p in parts if p.get("thought")]
        for n, thought in enumerate((t for t in thoughts if t.strip()), start=1):
            add(f"{uuid}#thinking{n}", tail, "assistant", "thinking", thought)
        response: dict[str, Any] = {
            "model": text_of(rec.get("model")) or None,
            "usage": usage_of(rec.get("usageMetadata")),
        }
        text = "\n\n".join(
            text_of(p.get("text")) for p in parts if "text" in p and not p.get("thought")
        )
        new_tail = add(uuid, tail, "assistant", "text", text, **response)
        if new_tail != tail:
            response = {}
        tail = new_tail
        calls = 0
        for part in parts:
            call = part.get("functionCall")
            if not isinstance(call, dict):
                continue
            calls += 1
            call_id = native_id(call.get("id")) or f"{uuid}#call{calls}"
            name = text_of(call.get("name")) or None
            if name:
                self.tools[call_id] = name
            args = call.get("args")
            tail = add(
                call_id,
                tail,
                "assistant",
                "tool-call",
                tool_call_text(args),
                always=True,
                tool_name=name,
                tool_call_id=call_id,
                tool_input=None if args is None else canonical_json(args),
                **{k: v for k, v in response.items() if v is not None},
            )
            response = {}
        return tail


def _check(rec: dict[str, Any]) -> str:
    if rec.get("type") not in _TYPES:
        return "record without a known 'type'"
    if rec.get("type") != "system" and not isinstance(rec.get("message"), dict):
        return "record without a 'message' object"
    return ""


class QwenImporter:
    name = "qwen"
    not_read = (
        "`system` records other than `custom_title` and `parent_session` (telemetry, kept "
        "as events); `toolCallResult` fields besides `status` and `callId`"
    )
    agent = "qwen"
    priority = 5  # before claude-code: its records also carry uuid/parentUuid/sessionId
    locations: tuple[Location, ...] = (Location("~/.qwen/projects"),)

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        objs = json_lines(head)
        records = [o for o in objs if o.get("type") in _TYPES and "uuid" in o and "sessionId" in o]
        if not records:
            return False
        gemini_shaped = any(isinstance(obj(o.get("message")).get("parts"), list) for o in records)
        claude_shaped = any("content" in obj(o.get("message")) for o in records)
        return gemini_shaped and not claude_shaped

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return any(o.get("type") in _TYPES and "uuid" in o for o in json_lines(head))

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        lines, problems = read_jsonl(path)
        reader = _Reader()
        kept: list[Line] = []
        session_id = cwd = None
        for line in lines:
            reason = _check(line.obj)
            if reason:
                problems.append((line.number, reason))
                continue
            kept.append(line)
            session_id = session_id or native_id(line.obj.get("sessionId"))
            cwd = cwd or (text_of(line.obj.get("cwd")) or None)
            reader.record(line)
        if not kept:
            return FileParse((), tuple(problems))
        problems.extend(reader.sink.problems)
        sid = session_id or native_id(path.stem) or "qwen-session"
        used = {n for m in reader.sink.messages for n in m.lines}
        events = tuple(
            SourceEvent(ln.number, ln.raw, ln.number in used, str(ln.obj["type"])) for ln in kept
        )
        stamps = [m.timestamp for m in reader.sink.messages if m.timestamp]
        parent = reader.parent if reader.parent != sid else None
        session = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=events,
            messages=tuple(reader.sink.messages),
            started=min(stamps) if stamps else None,
            title=reader.title,
            cwd=cwd,
            parent_session=parent,
            lineage=(parent,) if parent else (),
            source_path=str(path),
            resume_command=f"qwen --resume {shlex.quote(sid)}",
        )
        return FileParse((session,), tuple(sorted(problems)))


register(QwenImporter())

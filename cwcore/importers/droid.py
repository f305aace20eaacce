"""Factory Droid: ``~/.factory/sessions/<workspace>/<sessionId>.jsonl`` (+ ``.settings.json``).

The first line is ``{type: "session_start", id, title, sessionTitle, owner, version, cwd}``; then
``{type: "message", id, timestamp, parentId?, message: {role, content: [blocks]}}`` lines whose
blocks are Anthropic-shaped (``text``, ``thinking``, ``tool_use``, ``tool_result``); other line
types (todo and compaction state…) are metadata. ``<sessionId>.settings.json`` beside it holds
the session's ``model`` and total token usage.

What becomes what (docs/importers.md): a ``user`` line's text -> user message (id: the line's
``id``), real unless it is only ``<system-reminder>`` blocks (which are cut from a real prompt);
its ``tool_result`` blocks -> tool results (``<tool_use_id>#result``); an ``assistant`` line's
``thinking`` -> thinking (``<id>#thinking<n>``), its text -> ONE assistant message, each
``tool_use`` -> a tool call (its ``id``).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    blocks_text,
    native_id,
    norm_time,
    project_from_cwd,
    read_jsonl,
)
from cwcore.importers.convo import Conversation, obj, text_of
from cwcore.model import FileParse, ParsedSession

_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>\s*", re.S)


SETTINGS = ".settings.json"


def _settings(path: Path) -> dict[str, Any]:
    side = path.with_name(path.stem + SETTINGS)
    try:
        value = json.loads(side.read_text(encoding="utf-8")) if side.is_file() else {}
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


class DroidImporter:
    name = "droid"
    agent = "droid"
    priority = 25  # before pi: both write {type: "message", message: {role}} lines
    locations: tuple[Location, ...] = (Location("~/.factory/sessions"),)

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        objs = json_lines(head)
        if not objs:
            return False
        if objs[0].get("type") == "session_start" and "cwd" in objs[0]:
            return True
        return ".factory" in path.parts and any(
            o.get("type") == "message" and isinstance(obj(o.get("message")).get("role"), str)
            for o in objs
        )

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return any(o.get("type") in ("session_start", "message") for o in json_lines(head))

    not_read = (
        "the sidecar's token totals and settings other than `model`; `todo_state` and "
        "compaction state lines (kept as events)"
    )

    def companions(self, path: Path) -> list[Path]:
        return [path.with_name(path.stem + ".settings.json")]

    def is_companion(self, path: Path) -> bool:
        """A session's ``<id>.settings.json`` sidecar: read with ``<id>.jsonl``, never on its
        own."""
        if not path.name.endswith(SETTINGS):
            return False
        session = path.with_name(path.name[: -len(SETTINGS)] + ".jsonl")
        return ".factory" in path.parts or session.is_file()

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        lines, problems = read_jsonl(path)
        convo = Conversation()
        records: list[tuple[int, bytes, str]] = []
        start: dict[str, Any] = {}
        settings = _settings(path)
        model = text_of(settings.get("model")) or None
        for line in lines:
            o = line.obj
            kind = o.get("type")
            if not isinstance(kind, str):
                problems.append((line.number, "line without a 'type'"))
                continue
            if kind == "message" and not isinstance(obj(o.get("message")).get("role"), str):
                problems.append((line.number, "message line without a 'message' with a 'role'"))
                continue
            records.append((line.number, line.raw, kind))
            if kind == "session_start" and not start:
                start = o
            if kind != "message":
                continue
            message = o["message"]
            base = native_id(o.get("id")) or f"L{line.number}"
            ts = norm_time(o.get("timestamp"))
            content = message.get("content")
            blocks = (
                [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
            )
            if message["role"] == "user":
                text = blocks_text(content)
                typed = _REMINDER.sub("", text).strip()
                convo.user(base, typed or text, line=line.number, ts=ts, real=bool(typed))
                for n, block in enumerate(blocks, start=1):
                    if block.get("type") != "tool_result":
                        continue
                    call = native_id(block.get("tool_use_id"))
                    out = block.get("content")
                    convo.result(
                        f"{call}#result" if call else f"{base}#{n}",
                        call,
                        out if isinstance(out, str) else blocks_text(out),
                        line=line.number,
                        ts=ts,
                        is_error=bool(block.get("is_error")),
                    )
            elif message["role"] == "assistant":
                convo.begin_response(text_of(message.get("model")) or model)
                thoughts = [
                    text_of(b.get("thinking")) for b in blocks if b.get("type") == "thinking"
                ]
                for n, said in enumerate((t for t in thoughts if t.strip()), start=1):
                    convo.thinking(f"{base}#thinking{n}", said, line=line.number, ts=ts)
                convo.assistant(base, blocks_text(content), line=line.number, ts=ts)
                for n, block in enumerate(blocks, start=1):
                    if block.get("type") == "tool_use":
                        call_id = native_id(block.get("id")) or f"{base}#call{n}"
                        name = text_of(block.get("name")) or None
                        convo.call(call_id, name, block.get("input"), line=line.number, ts=ts)
        if not records:
            return FileParse((), tuple(problems))
        problems.extend(convo.sink.problems)
        sid = native_id(start.get("id")) or native_id(path.stem) or "droid-session"
        cwd = text_of(start.get("cwd")) or None
        title = text_of(start.get("sessionTitle")).strip() or text_of(start.get("title")).strip()
        session = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=convo.started(),
            title=title or None,
            cwd=cwd,
            source_path=str(path),
            resume_command=f"droid --resume {shlex.quote(sid)}",
            # The sidecar's model is the session's even when no answer carries it yet.
            metadata={"model": model} if model else {},
        )
        return FileParse((session,), tuple(sorted(problems)))


register(DroidImporter())

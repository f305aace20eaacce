"""Goose: ``$XDG_DATA_HOME/goose/sessions/sessions.db`` (SQLite), earlier ``*.jsonl`` files.

The database has ``sessions`` (``id``, ``name``, ``description``, ``working_dir``,
``created_at``…) and ``messages`` (``id``, ``session_id``, ``role``, ``content_json``,
``created_timestamp`` in seconds, ``metadata_json``). ``content_json`` is a list of content items
tagged by ``type``: ``text``, ``image``, ``thinking``, ``redactedThinking``, ``toolRequest``
(``id``, ``toolCall: {status, value: {name, arguments}}``), ``toolResponse`` (``id``,
``toolResult: {status, value: [contents] | error}``), ``systemNotification``,
``summarizationRequested``…
An earlier JSONL session is a metadata line (``working_dir``, ``description``…) then one message
``{id?, role, created, content}`` a line.

What becomes what (docs/importers.md): a ``user`` message's text -> user message (real unless
``metadata.userVisible`` is false); an ``assistant`` message's ``thinking`` -> thinking, its text
-> ONE assistant message, each ``toolRequest`` -> a tool call (id: its ``id``); each
``toolResponse`` -> a tool result (``<id>#result``) paired by id; other items are kept in the
message's event only.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cwcore.importers import sqlite
from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    canonical_json,
    native_id,
    norm_time,
    project_from_cwd,
    read_jsonl,
)
from cwcore.importers.convo import Conversation, obj, text_of
from cwcore.model import FileParse, ParsedSession

_DB_TABLES = {
    "sessions": {"id", "working_dir"},
    "messages": {"session_id", "role", "content_json"},
}


@dataclass
class _Row:
    number: int
    raw: bytes
    role: str
    content: list[dict[str, Any]]
    ts: str | None
    message_id: str | None
    meta: dict[str, Any]


def _seconds(value: object) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return norm_time(value * 1000)
    return norm_time(value)


def _loads(text: object) -> Any:
    if not isinstance(text, str | bytes):
        return None
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _items(value: object) -> list[dict[str, Any]]:
    return [c for c in value if isinstance(c, dict)] if isinstance(value, list) else []


def _texts(items: list[dict[str, Any]]) -> str:
    out = []
    for item in items:
        if item.get("type") == "text":
            out.append(text_of(item.get("text")))
        elif item.get("type") == "image":
            out.append("[image]")
    return "\n\n".join(t for t in out if t)


def _build(rows: list[_Row]) -> Conversation:
    convo = Conversation()
    for row in rows:
        base = row.message_id or f"L{row.number}"
        items = row.content
        if row.role == "user":
            real = row.meta.get("userVisible", True) is not False
            convo.user(base, _texts(items), line=row.number, ts=row.ts, real=real)
            for item in items:
                if item.get("type") != "toolResponse":
                    continue
                call = native_id(item.get("id"))
                result = obj(item.get("toolResult"))
                failed = result.get("status") == "error"
                if failed:
                    value = result.get("error")
                    text = value if isinstance(value, str) else canonical_json(value)
                else:
                    value = result.get("value")
                    text = _texts(_items(value)) if isinstance(value, list) else text_of(value)
                convo.result(
                    f"{call or base}#result",
                    call,
                    text,
                    line=row.number,
                    ts=row.ts,
                    is_error=failed,
                )
            continue
        if row.role != "assistant":
            continue
        convo.begin_response()
        n = 0
        for item in items:
            if item.get("type") == "thinking":
                n += 1
                convo.thinking(
                    f"{base}#thinking{n}", text_of(item.get("thinking")), line=row.number, ts=row.ts
                )
        convo.assistant(base, _texts(items), line=row.number, ts=row.ts)
        for k, item in enumerate(items, start=1):
            if item.get("type") not in ("toolRequest", "frontendToolRequest"):
                continue
            call_id = native_id(item.get("id")) or f"{base}#{k}"
            value = obj(obj(item.get("toolCall")).get("value"))
            name = text_of(value.get("name")) or None
            convo.call(call_id, name, value.get("arguments"), line=row.number, ts=row.ts)
    return convo


class GooseImporter:
    name = "goose"
    agent = "goose"
    priority = 52
    locations: tuple[Location, ...] = (
        Location("$XDG_DATA_HOME/goose/sessions", ("sessions.db", "*.jsonl"), depth=0),
        Location("~/.goose/sessions", ("*.jsonl",), depth=0),
        Location("$APPDATA/Block/goose/data/sessions", ("sessions.db", "*.jsonl"), ("win32",), 0),
    )

    def _jsonl_shaped(self, head: list[bytes]) -> bool:
        objs = json_lines(head)
        if not objs:
            return False
        first = objs[0]
        if "working_dir" in first and ("description" in first or "message_count" in first):
            return True
        return any(
            o.get("role") in ("user", "assistant")
            and isinstance(o.get("content"), list)
            and isinstance(o.get("created"), int)
            for o in objs
        )

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if sqlite.looks_like_sqlite(head):
            return sqlite.has_tables(path, head, _DB_TABLES)
        return path.suffix == ".jsonl" and self._jsonl_shaped(head)

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return self.sniff(path, head)

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        with path.open("rb") as fh:
            # a .jsonl file is a session log whatever its first bytes say
            is_db = path.suffix != ".jsonl" and fh.read(len(sqlite.MAGIC)) == sqlite.MAGIC
        if is_db:
            return self._parse_db(path, project)
        return self._parse_jsonl(path, project)

    def _session(
        self,
        path: Path,
        sid: str,
        info: dict[str, Any],
        records: list[tuple[int, bytes, str]],
        rows: list[_Row],
        project: str | None,
    ) -> tuple[ParsedSession, list[tuple[int, str]]]:
        convo = _build(rows)
        cwd = text_of(info.get("working_dir")) or None
        title = text_of(info.get("name")).strip() or text_of(info.get("description")).strip()
        started = _seconds(info.get("created_at")) or convo.started()
        parsed = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=started,
            title=title or None,
            cwd=cwd,
            source_path=str(path),
            resume_command=f"goose session --resume --session-id {shlex.quote(sid)}",
        )
        return parsed, list(convo.sink.problems)

    def _parse_db(self, path: Path, project: str | None) -> FileParse:
        with sqlite.open_readonly(path) as conn:
            cur = conn.execute("SELECT * FROM sessions ORDER BY id")
            names = [d[0] for d in cur.description]
            sessions = [dict(zip(names, v, strict=True)) for v in cur]
            cur = conn.execute("SELECT * FROM messages ORDER BY session_id, id")
            names = [d[0] for d in cur.description]
            messages = [dict(zip(names, v, strict=True)) for v in cur]
        by_session: dict[str, list[dict[str, Any]]] = {}
        for row in messages:
            by_session.setdefault(str(row.get("session_id")), []).append(row)
        out = []
        problems: list[tuple[int, str]] = []
        for info in sessions:
            sid = native_id(str(info.get("id")))
            if sid is None:
                continue
            records = [(1, _event("sessions", info), "session")]
            rows = []
            for number, row in enumerate(by_session.get(str(info["id"]), []), start=2):
                content = _loads(row.get("content_json"))
                meta = obj(_loads(row.get("metadata_json")))
                decoded = {**row, "content_json": content, "metadata_json": meta or None}
                role = text_of(row.get("role"))
                records.append((number, _event("messages", decoded), role or "message"))
                rows.append(
                    _Row(
                        number,
                        b"",
                        role,
                        _items(content),
                        _seconds(row.get("created_timestamp")),
                        f"m{row['id']}" if row.get("id") is not None else None,
                        meta,
                    )
                )
            parsed, extra = self._session(path, sid, info, records, rows, project)
            out.append(parsed)
            problems.extend(extra)
        return FileParse(tuple(out), tuple(sorted(problems)))

    def _parse_jsonl(self, path: Path, project: str | None) -> FileParse:
        lines, problems = read_jsonl(path)
        info: dict[str, Any] = {}
        records: list[tuple[int, bytes, str]] = []
        rows: list[_Row] = []
        for line in lines:
            o = line.obj
            if not rows and not info and "working_dir" in o:
                info = o
                records.append((line.number, line.raw, "session"))
                continue
            role = o.get("role")
            if role not in ("user", "assistant") or not isinstance(o.get("content"), list):
                problems.append((line.number, "line without a 'role' and a 'content' list"))
                continue
            records.append((line.number, line.raw, str(role)))
            mid = native_id(o.get("id"))
            rows.append(
                _Row(
                    line.number,
                    line.raw,
                    str(role),
                    _items(o["content"]),
                    _seconds(o.get("created")),
                    mid,
                    obj(o.get("metadata")),
                )
            )
        if not records:
            return FileParse((), tuple(problems))
        sid = native_id(path.stem) or "goose-session"
        parsed, extra = self._session(path, sid, info, records, rows, project)
        return FileParse((parsed,), tuple(sorted(problems + extra)))


def _event(table: str, row: dict[str, Any]) -> bytes:
    return json.dumps({"table": table, **row}, ensure_ascii=False, sort_keys=True).encode()


register(GooseImporter())

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
-> ONE assistant message (with the session's model, ``model_config_json``), each
``toolRequest`` -> a tool call (id: its ``id``); each ``toolResponse`` -> a tool result
(``<id>#result``) paired by id, its ``value`` a content list or an MCP ``CallToolResult``
(``{content, isError}``); ``systemNotification`` / ``actionRequired`` items -> ``system``
notices (``<id>#notice<n>``); an assistant message with ``userVisible: false`` (text only the
model sees) -> a ``system`` message. ``parent_session_id`` is the lineage. Other items are kept
in the message's event only.
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
        # Goose writes seconds; a value this large is already milliseconds.
        return norm_time(value if value > 10**11 else value * 1000)
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


def _tool_contents(items: list[Any]) -> str:
    """The text of MCP content items (a tool's output): ``text``, a resource's text (else its
    uri), ``[image]``/``[audio]`` markers; an item of another shape as compact JSON."""
    out = []
    for item in items:
        if not isinstance(item, dict):
            out.append(item if isinstance(item, str) else canonical_json(item))
            continue
        kind = item.get("type")
        if kind == "text" and isinstance(item.get("text"), str):
            out.append(item["text"])
        elif kind in ("image", "audio"):
            out.append(f"[{kind}]")
        elif kind == "resource" and isinstance(item.get("resource"), dict):
            resource = item["resource"]
            out.append(text_of(resource.get("text")) or text_of(resource.get("uri")))
        elif kind == "resource_link":
            out.append(text_of(item.get("uri")) or canonical_json(item))
        else:
            out.append(canonical_json(item))
    return "\n\n".join(t for t in out if t)


def _tool_result(result: dict[str, Any]) -> tuple[str, bool]:
    """``(text, is_error)`` of a ``toolResponse``'s ``toolResult``: ``{status: success, value}``
    where ``value`` is the content list (earlier Goose) or an MCP ``CallToolResult``
    (``{content: [...], isError?, structuredContent?}``), or ``{status: error, error}``. Any
    other shape keeps its compact JSON, so no output is lost."""
    status = result.get("status")
    if status == "error":
        value = result.get("error")
        return (value if isinstance(value, str) else canonical_json(value)), True
    value = result.get("value")
    if isinstance(value, str):
        return value, False
    if isinstance(value, list):
        return _tool_contents(value), False
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        text = _tool_contents(value["content"])
        if not text and value.get("structuredContent") is not None:
            text = canonical_json(value["structuredContent"])
        return text, value.get("isError") is True
    return canonical_json(value if value is not None else result), False


#: Content items that are the host speaking (a notice, a request to confirm), not a party.
_NOTICES = {"systemNotification": "msg", "actionRequired": "message"}


def _notices(items: list[dict[str, Any]]) -> list[str]:
    out = []
    for item in items:
        key = _NOTICES.get(text_of(item.get("type")))
        if key is None:
            continue
        text = text_of(item.get(key)) or text_of(item.get("message"))
        if not text and isinstance(item.get("data"), dict):
            data = item["data"]
            text = text_of(data.get("message")) or text_of(data.get("prompt"))
        out.append(text or canonical_json(item))
    return out


def _build(rows: list[_Row], model: str | None = None) -> Conversation:
    convo = Conversation()
    for row in rows:
        base = row.message_id or f"L{row.number}"
        items = row.content
        # userVisible false: text Goose shows only to the model (a compaction summary, its
        # "continue" instruction, injected memory): the host speaking, never the user's own
        # words, and not the model's visible answer.
        hidden = row.meta.get("userVisible", True) is False
        _message(convo, row, base, items, hidden, model)
        for n, notice in enumerate(_notices(items), start=1):  # after what the row says
            convo.system(f"{base}#notice{n}", notice, line=row.number, ts=row.ts)
    return convo


def _message(
    convo: Conversation,
    row: _Row,
    base: str,
    items: list[dict[str, Any]],
    hidden: bool,
    model: str | None,
) -> None:
    if row.role == "user":
        convo.user(base, _texts(items), line=row.number, ts=row.ts, real=not hidden)
        for item in items:
            if item.get("type") != "toolResponse":
                continue
            call = native_id(item.get("id"))
            text, failed = _tool_result(obj(item.get("toolResult")))
            convo.result(
                f"{call or base}#result", call, text, line=row.number, ts=row.ts, is_error=failed
            )
        return
    if row.role != "assistant":
        return
    if hidden:
        convo.system(base, _texts(items), line=row.number, ts=row.ts)
        return
    convo.begin_response(model)
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


def _model(info: dict[str, Any]) -> str | None:
    """The session's model: ``model_config_json`` (``model_name``) of the sessions row, or a
    ``model_config`` object in a JSONL session's metadata line."""
    config = info.get("model_config_json", info.get("model_config"))
    config = _loads(config) if isinstance(config, str | bytes) else config
    for key in ("model_name", "modelName", "model"):
        name = text_of(obj(config).get(key)).strip()
        if name:
            return name
    return None


class GooseImporter:
    name = "goose"
    agent = "goose"
    priority = 52
    not_read = (
        "the `usage_ledger` table and token columns (no per-message usage); `redactedThinking`,"
        " recipes and extension data (kept as events)"
    )
    locations: tuple[Location, ...] = (
        Location("$XDG_DATA_HOME/goose/sessions", ("sessions.db", "*.jsonl"), depth=0),
        Location("~/.goose/sessions", ("*.jsonl",), depth=0),
        Location("$APPDATA/Block/goose/data/sessions", ("sessions.db", "*.jsonl"), ("win32",), 0),
    )

    def is_companion(self, path: Path) -> bool:
        """The database's ``-wal``/``-shm``/``-journal`` files: part of it, never read alone."""
        return path.name in ("sessions.db-wal", "sessions.db-shm", "sessions.db-journal")

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
        convo = _build(rows, _model(info))
        cwd = text_of(info.get("working_dir")) or None
        title = text_of(info.get("name")).strip() or text_of(info.get("description")).strip()
        started = _seconds(info.get("created_at")) or convo.started()
        parent = native_id(info.get("parent_session_id"))
        parent = parent if parent != sid else None
        parsed = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=started,
            title=title or None,
            cwd=cwd,
            parent_session=parent,
            lineage=(parent,) if parent else (),
            source_path=str(path),
            resume_command=f"goose session --resume --session-id {shlex.quote(sid)}",
        )
        return parsed, list(convo.sink.problems)

    def _parse_db(self, path: Path, project: str | None) -> FileParse:
        with sqlite.open_readonly(path) as conn:
            sessions = list(sqlite.rows(conn, "SELECT * FROM sessions ORDER BY id"))
            messages = list(sqlite.rows(conn, "SELECT * FROM messages ORDER BY session_id, id"))
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
    return json.dumps({"table": table, **row}, ensure_ascii=False, sort_keys=True).encode(
        "utf-8", "backslashreplace"
    )


register(GooseImporter())

"""Crush: ``crush.db`` (SQLite) in ``~/.crush/``, ``$XDG_DATA_HOME/crush/`` and each project's
``.crush/`` folder (projects listed in the ``syncProjects`` setting).

Tables ``sessions`` (``id``, ``parent_session_id``, ``title``, ``created_at``…) and ``messages``
(``id``, ``session_id``, ``role``, ``parts``, ``model``, ``created_at`` in seconds,
``is_summary_message``). ``parts`` is a JSON list of ``{type, data}``: ``text`` (``text``,
``hidden``), ``reasoning`` (``thinking``), ``image_url``, ``binary``, ``tool_call`` (``id``,
``name``, ``input`` as JSON text), ``tool_result`` (``tool_call_id``, ``name``, ``content``,
``is_error``), ``finish``.

What becomes what (docs/importers.md): a ``user`` message's text -> user message (id: the
message id), real unless ``hidden``; an ``assistant`` message's reasoning -> thinking
(``<id>#thinking``), its text -> ONE assistant message (the ``model`` on it, else on its first
call), each ``tool_call`` -> a tool call (its ``id``); a ``tool`` message's ``tool_result`` parts
-> tool results (``<tool_call_id>#result``); a summary message -> ``system`` summary.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from cwcore.config import Settings
from cwcore.importers import sqlite
from cwcore.importers.base import Location, project_locations, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    native_id,
    norm_time,
    parse_arguments,
    project_from_cwd,
)
from cwcore.importers.convo import Conversation, obj, text_of
from cwcore.model import FileParse, ParsedSession

_DB_TABLES = {"sessions": {"id", "title"}, "messages": {"session_id", "role", "parts"}}


def _seconds(value: object) -> str | None:
    if isinstance(value, int | float) and not isinstance(value, bool):
        # Crush writes seconds; a value this large is already milliseconds.
        return norm_time(value if value > 10**11 else value * 1000)
    return norm_time(value)


def _parts(raw: object) -> list[tuple[str, dict[str, Any]]]:
    try:
        value = json.loads(raw) if isinstance(raw, str | bytes) else None
    except (ValueError, RecursionError):
        return []
    out = []
    for part in value if isinstance(value, list) else ():
        if isinstance(part, dict) and isinstance(part.get("type"), str):
            out.append((part["type"], obj(part.get("data"))))
    return out


def _message(convo: Conversation, row: dict[str, Any], line: int) -> None:
    mid = native_id(str(row.get("id")))
    if mid is None:
        return
    ts = _seconds(row.get("created_at"))
    parts = _parts(row.get("parts"))
    role = row.get("role")
    texts = [d for t, d in parts if t == "text" and text_of(d.get("text")).strip()]
    text = "\n\n".join(text_of(d.get("text")) for d in texts)
    images = ["[image]" for t, _ in parts if t in ("image_url", "binary")]
    if row.get("is_summary_message"):
        convo.system(mid, text, line=line, ts=ts, kind="summary")
        return
    if role == "user":
        real = bool(texts) and not all(d.get("hidden") for d in texts)
        said = "\n\n".join(x for x in (text, *images) if x)
        convo.user(mid, said, line=line, ts=ts, real=real)
    elif role == "assistant":
        convo.begin_response(text_of(row.get("model")) or None)
        for t, d in parts:
            if t == "reasoning":
                convo.thinking(f"{mid}#thinking", text_of(d.get("thinking")), line=line, ts=ts)
        convo.assistant(mid, text, line=line, ts=ts)
        for n, (t, d) in enumerate(parts, start=1):
            if t == "tool_call":
                call_id = native_id(d.get("id")) or f"{mid}#call{n}"
                name = text_of(d.get("name")) or None
                convo.call(call_id, name, parse_arguments(d.get("input")), line=line, ts=ts)
    elif role == "tool":
        for n, (t, d) in enumerate(parts, start=1):
            if t == "tool_result":
                call = native_id(d.get("tool_call_id"))
                convo.result(
                    f"{call}#result" if call else f"{mid}#{n}",
                    call,
                    text_of(d.get("content")),
                    line=line,
                    ts=ts,
                    is_error=bool(d.get("is_error")),
                    name=text_of(d.get("name")) or None,
                )
    elif role == "system":
        convo.system(mid, text, line=line, ts=ts)


def _event(table: str, row: dict[str, Any]) -> bytes:
    decoded = dict(row)
    if isinstance(decoded.get("parts"), str):
        try:
            decoded["parts"] = json.loads(decoded["parts"])
        except (ValueError, RecursionError):
            pass
    return json.dumps({"table": table, **decoded}, ensure_ascii=False, sort_keys=True).encode(
        "utf-8", "backslashreplace"
    )


class CrushImporter:
    name = "crush"
    agent = "crush"
    priority = 53
    not_read = (
        "token counts and cost (`sessions` columns); `finish` parts (kept in the event);"
        " `binary`/`image_url` data (a marker only); the `files` table"
    )
    locations: tuple[Location, ...] = (
        Location("~/.crush", ("crush.db",), depth=0),
        Location("$XDG_DATA_HOME/crush", ("crush.db",), depth=0),
    )
    configured_note = "`<project>/.crush/crush.db` for each folder of the `syncProjects` setting"

    def is_companion(self, path: Path) -> bool:
        """The database's ``-wal``/``-shm``/``-journal`` files: part of it, never read alone."""
        return path.name in ("crush.db-wal", "crush.db-shm", "crush.db-journal")

    def configured_locations(self, settings: Settings | None) -> list[Location]:
        return project_locations(settings, ".crush", ("crush.db",))

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        return sqlite.has_tables(path, head, _DB_TABLES)

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return self.sniff(path, head)

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        with sqlite.open_readonly(path) as conn:
            sessions = list(sqlite.rows(conn, "SELECT * FROM sessions ORDER BY created_at, id"))
            messages = list(
                sqlite.rows(conn, "SELECT * FROM messages ORDER BY session_id, created_at, id")
            )
        by_session: dict[str, list[dict[str, Any]]] = {}
        for row in messages:
            by_session.setdefault(str(row.get("session_id")), []).append(row)
        # The database sits in <project>/.crush/: the project is that folder's parent.
        folder = path.parent.parent if path.parent.name == ".crush" else None
        cwd = str(folder) if folder is not None and folder != Path.home() else None
        out = []
        problems: list[tuple[int, str]] = []
        for info in sessions:
            sid = native_id(str(info.get("id")))
            if sid is None:
                continue
            convo = Conversation()
            records = [(1, _event("sessions", info), "session")]
            for number, row in enumerate(by_session.get(str(info["id"]), []), start=2):
                records.append((number, _event("messages", row), text_of(row.get("role"))))
                _message(convo, row, number)
            parent = native_id(info.get("parent_session_id"))
            out.append(
                ParsedSession(
                    session_id=sid,
                    agent=self.agent,
                    project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
                    events=convo.events(records),
                    messages=tuple(convo.messages),
                    started=_seconds(info.get("created_at")) or convo.started(),
                    title=text_of(info.get("title")).strip() or None,
                    cwd=cwd,
                    parent_session=parent,
                    lineage=(parent,) if parent else (),
                    source_path=str(path),
                    resume_command=(f"cd {shlex.quote(cwd)} && crush" if cwd else "crush"),
                )
            )
            problems.extend(convo.sink.problems)
        return FileParse(tuple(out), tuple(sorted(problems)))


register(CrushImporter())

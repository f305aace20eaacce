"""OpenCode and Kilo CLI: ``opencode.db`` / ``kilo.db`` (SQLite), and OpenCode's earlier JSON
``storage/`` tree.

The database has tables ``session`` (``id``, ``project_id``, ``parent_id``, ``directory``,
``title``, ``time_created``…), ``message`` (``id``, ``session_id``, ``time_created``, ``data``)
and ``part`` (``id``, ``message_id``, ``session_id``, ``data``); ``data`` is the JSON of the
record without its ids: a message's ``role``, ``time``, ``modelID``, ``tokens``, ``summary``; a
part's ``type`` and fields. The earlier tree holds the same records as files:
``storage/session/<projectID>/<sessionID>.json``, ``storage/message/<sessionID>/<msgID>.json``,
``storage/part/<msgID>/<partID>.json``.

What becomes what (docs/importers.md): a user message's text parts -> ONE user message (id: the
message id), real unless every text part is ``synthetic``; an assistant message's ``reasoning``
parts -> thinking (id: the part id); its text parts -> ONE assistant message (id: the message
id); each ``tool`` part -> a tool call (id: ``callID``) and, once its ``state`` is ``completed``
or ``error``, a result (id ``<callID>#result``); an assistant message marked ``summary`` ->
``system`` summary. ``modelID`` and ``tokens`` go on the message's text (else its first call).
Every row (or file) is an event; parts of other types are metadata.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cwcore.importers import sqlite
from cwcore.importers.base import Location, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    canonical_json,
    native_id,
    norm_time,
    project_from_cwd,
)
from cwcore.importers.convo import Conversation, count, obj, text_of
from cwcore.model import FileParse, ParsedSession, Usage

_DB_TABLES = {
    "session": {"id"},
    "message": {"id", "session_id", "data"},
    "part": {"id", "message_id", "data"},
}
#: Titles OpenCode gives a session before it has one of its own.
_PLACEHOLDER_TITLES = ("New session - ", "Child session - ")


@dataclass
class _Session:
    """One session's records, whatever the storage: the session, then each message with its
    parts, each with the exact event text it is kept as."""

    info: dict[str, Any]
    raw: bytes
    messages: list[tuple[dict[str, Any], bytes, list[tuple[dict[str, Any], bytes]]]] = field(
        default_factory=list
    )


def _loads(text: object) -> dict[str, Any]:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if not isinstance(text, str):
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _event(table: str, row: dict[str, Any]) -> bytes:
    """A row as one compact JSON event (``data`` decoded), so nothing of it is lost."""
    return json.dumps({"table": table, **row}, ensure_ascii=False, sort_keys=True).encode(
        "utf-8", "backslashreplace"
    )


def _read_db(path: Path) -> tuple[list[_Session], dict[str, str]]:
    with sqlite.open_readonly(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        projects: dict[str, str] = {}
        if "project" in tables:
            cols = [r[1] for r in conn.execute('PRAGMA table_info("project")')]
            if "id" in cols and "worktree" in cols:
                projects = {
                    str(i): str(w) for i, w in conn.execute("SELECT id, worktree FROM project")
                }
        sessions: dict[str, _Session] = {}
        for row in sqlite.rows(conn, "SELECT * FROM session ORDER BY id"):
            sessions[str(row["id"])] = _Session(row, _event("session", row))
        messages: dict[str, tuple[dict[str, Any], bytes, list[Any]]] = {}
        for row in sqlite.rows(conn, "SELECT * FROM message ORDER BY session_id, id"):
            data = _loads(row.get("data"))
            owner = sessions.get(str(row["session_id"]))
            if owner is None:
                continue
            record = {**data, "id": row["id"], "_created": _row_time(row)}
            entry: tuple[dict[str, Any], bytes, list[Any]] = (
                record,
                _event("message", {**row, "data": data}),
                [],
            )
            owner.messages.append(entry)
            messages[str(row["id"])] = entry
        for row in sqlite.rows(conn, "SELECT * FROM part ORDER BY message_id, id"):
            data = _loads(row.get("data"))
            parent = messages.get(str(row["message_id"]))
            if parent is not None:
                record = {**data, "id": row["id"], "_created": _row_time(row)}
                parent[2].append((record, _event("part", {**row, "data": data})))
    for session in sessions.values():
        _in_time_order(session)
    return list(sessions.values()), projects


def _row_time(row: dict[str, Any]) -> object:
    """A row's creation time: ``time_created`` (OpenCode), else ``created_at`` (other writers)."""
    value = row.get("time_created")
    return value if value is not None else row.get("created_at")


def _millis(value: object) -> float | None:
    """Epoch milliseconds; a number too small for that is seconds (some writers use them)."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    return float(value) * 1000 if abs(value) < 10**11 else float(value)


def _when(value: object) -> str | None:
    """An ISO time from epoch milliseconds (or seconds) or a date text."""
    millis = _millis(value)
    return norm_time(millis) if millis is not None else norm_time(value)


def _part_time(part: dict[str, Any]) -> float | None:
    """When a part began: its ``time.start`` (text, reasoning), else its ``time.created``, else
    the row's ``time_created``."""
    times = obj(part.get("time"))
    for value in (times.get("start"), times.get("created"), part.get("_created")):
        if _millis(value) is not None:
            return _millis(value)
    return None


def _message_time(message: dict[str, Any]) -> float | None:
    created = _millis(obj(message.get("time")).get("created"))
    return created if created is not None else _millis(message.get("_created"))


def _time_order(items: list[Any], when: Any) -> list[Any]:
    """``items`` (given in id order) in time order; an item without a time keeps its place
    after the item before it (it takes that one's time), and equal times keep id order."""
    keyed = []
    last = float("-inf")
    for index, item in enumerate(items):
        stamp = when(item)
        last = stamp if stamp is not None else last
        keyed.append((last, index, item))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [item for _, _, item in keyed]


def _in_time_order(session: _Session) -> None:
    """OpenCode ids are mostly, not always, in time order (peers' data has both): messages go
    by ``time.created``, a message's parts by their start, ids breaking ties."""
    session.messages = _time_order(session.messages, lambda m: _message_time(m[0]))
    for _, _, parts in session.messages:
        parts[:] = _time_order(parts, lambda p: _part_time(p[0]))


def _read_tree(path: Path) -> tuple[list[_Session], dict[str, str]]:
    """The earlier layout: ``path`` is ``storage/session/<projectID>/<sessionID>.json``."""
    storage = path.parent.parent.parent
    raw = path.read_bytes()
    info = _loads(raw)
    session = _Session(
        info,
        json.dumps(info, ensure_ascii=False, sort_keys=True).encode("utf-8", "backslashreplace"),
    )
    sid = text_of(info.get("id")) or path.stem
    folder = storage / "message" / sid
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for file in files:
        data = _loads(file.read_bytes())
        mid = text_of(data.get("id")) or file.stem
        parts = []
        part_dir = storage / "part" / mid
        for part_file in sorted(part_dir.glob("*.json")) if part_dir.is_dir() else []:
            part = _loads(part_file.read_bytes())
            parts.append(
                (
                    part,
                    json.dumps(part, ensure_ascii=False, sort_keys=True).encode(
                        "utf-8", "backslashreplace"
                    ),
                )
            )
        event = json.dumps(data, ensure_ascii=False, sort_keys=True).encode(
            "utf-8", "backslashreplace"
        )
        session.messages.append(({**data, "id": mid}, event, parts))
    _in_time_order(session)
    return [session], {}


def _usage(data: dict[str, Any]) -> Usage | None:
    tokens = data.get("tokens")
    if not isinstance(tokens, dict):
        return None
    cache = obj(tokens.get("cache"))
    usage = Usage(
        input=count(tokens.get("input")),
        output=count(tokens.get("output")) + count(tokens.get("reasoning")),
        cache_read=count(cache.get("read")),
        cache_write=count(cache.get("write")),
    )
    return usage or None


def _stamp(value: object) -> str | None:
    if isinstance(value, dict):
        value = value.get("created")
    return _when(value)


class _Builder:
    def __init__(self) -> None:
        self.convo = Conversation()
        self.records: list[tuple[int, bytes, str]] = []

    def record(self, raw: bytes, kind: str) -> int:
        number = len(self.records) + 1
        self.records.append((number, raw, kind))
        return number

    def message(
        self, data: dict[str, Any], raw: bytes, parts: list[tuple[dict[str, Any], bytes]]
    ) -> None:
        convo = self.convo
        mid = native_id(data.get("id"))
        line = self.record(raw, f"message:{text_of(data.get('role')) or '?'}")
        ts = _stamp(data.get("time")) or _when(data.get("_created"))
        numbered = [(p, self.record(r, f"part:{text_of(p.get('type')) or '?'}")) for p, r in parts]
        if mid is None:
            return
        role = data.get("role")
        texts = [
            (p, n)
            for p, n in numbered
            if p.get("type") == "text" and text_of(p.get("text")).strip() and not p.get("ignored")
        ]
        text = "\n\n".join(text_of(p.get("text")) for p, _ in texts)
        lines = tuple(n for _, n in texts) or (line,)
        if role == "user":
            real = any(not p.get("synthetic") for p, _ in texts)
            files = [
                f"[file: {text_of(p.get('filename')) or text_of(p.get('url'))}]"
                for p, _ in numbered
                if p.get("type") == "file"
            ]
            said = "\n\n".join(x for x in (text, *files) if x)
            convo.add(mid, "user", "text", said, line=lines, ts=ts, real_user=real and bool(text))
            return
        if role != "assistant":
            return
        if data.get("summary") is True:
            convo.add(mid, "system", "summary", text, line=lines, ts=ts)
            return
        model = text_of(data.get("modelID")) or None
        usage = _usage(data)
        if usage is None:  # older messages: only the steps' own counts (step-finish parts)
            steps = [_usage(p) for p, _ in numbered if p.get("type") == "step-finish"]
            usage = sum((u for u in steps if u), Usage()) or None
        response: dict[str, Any] = {"model": model, "usage": usage}
        thinking = 0
        for part, number in numbered:
            if part.get("type") == "reasoning":
                thinking += 1
                pid = native_id(part.get("id")) or f"{mid}#thinking{thinking}"
                convo.thinking(pid, text_of(part.get("text")), line=number, ts=ts)
        if convo.assistant(mid, text, line=lines, ts=ts, **response):
            response = {}
        for part, number in numbered:
            if part.get("type") != "tool":
                continue
            call_id = native_id(part.get("callID")) or native_id(part.get("id"))
            if call_id is None:
                continue
            state = obj(part.get("state"))
            name = text_of(part.get("tool")) or None
            # the task tool runs a sub-agent in a child session, named in its metadata
            child = native_id(obj(state.get("metadata")).get("sessionId"))
            response = {**response, "subagent": child} if child else response
            convo.call(call_id, name, state.get("input"), line=number, ts=ts, **response)
            response = {}
            status = state.get("status")
            if status not in ("completed", "error", "pending", "running") and (
                state.get("output") is not None or state.get("error") is not None
            ):  # no status but an outcome (other writers): read what is there
                status = "completed" if state.get("output") is not None else "error"
            if status in ("completed", "error"):
                output = state.get("output") if status == "completed" else state.get("error")
                if not isinstance(output, str):
                    output = "" if output is None else canonical_json(output)
                convo.result(
                    f"{call_id}#result",
                    call_id,
                    output,
                    line=number,
                    ts=_when(obj(state.get("time")).get("end")) or ts,
                    is_error=status == "error",
                )


class OpenCodeImporter:
    """OpenCode's database and JSON tree; Kilo CLI (an OpenCode fork) is the same schema."""

    not_read = (
        "costs; `step-finish` token counts when the message has its own; `patch`, `snapshot`,"
        " `agent`, `subtask`, `retry` parts (kept as events); `session_diff`, `todo`, `share`"
    )

    def __init__(self, name: str, db_name: str, locations: tuple[Location, ...], resume: str):
        self.name = self.agent = name
        self.priority = 50 if name == "kilo" else 51  # kilo first: it checks the file name
        self.locations = locations
        self.db_name = db_name
        self.resume = resume

    def _tree_info(self, path: Path) -> dict[str, Any]:
        if path.suffix != ".json":
            return {}
        try:
            with path.open("rb") as fh:
                return _loads(fh.read(1 << 20))
        except OSError:
            return {}

    def _is_tree(self, path: Path, head: list[bytes]) -> bool:
        """A session file of the tree: ``storage/session/<project>/<id>.json`` holding an object
        whose ``id`` is its file name (what OpenCode always writes; ``projectID``, ``time`` and
        the rest are optional)."""
        if path.parent.parent.name != "session":
            return False
        return self._tree_info(path).get("id") == path.stem

    def is_companion(self, path: Path) -> bool:
        """A message or part file of the JSON tree (``storage/message/<sessionID>/<id>.json``,
        ``storage/part/<messageID>/<id>.json``): part of a session whose file is
        ``storage/session/…``; or a database's ``-wal``/``-shm``."""
        if path.suffix == ".json":
            parts = path.parts
            if len(parts) >= 4 and parts[-3] in ("message", "part"):
                return (path.parent.parent.parent / "session").is_dir()
        return path.name.endswith(("-wal", "-shm", "-journal")) and path.name.startswith(
            self.db_name.split(".")[0]
        )

    def companions(self, path: Path) -> list[Path]:
        """Where a session of the JSON tree also lives: its message files and their parts'
        folders and files (so ``cw sync`` sees a message added without the session file
        changing). A database has none beyond its ``-wal``."""
        if path.suffix != ".json":
            return []
        storage = path.parent.parent.parent
        folder = storage / "message" / path.stem
        out = [folder]
        for message in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            parts = storage / "part" / message.stem
            out += [message, parts, *sorted(parts.glob("*.json"))]
        return out

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if sqlite.looks_like_sqlite(head):
            named = path.name.startswith("kilo")
            return named == (self.name == "kilo") and sqlite.has_tables(path, head, _DB_TABLES)
        if not self._is_tree(path, head):
            return False
        # Kilo CLI keeps the same tree under its own data folder (``…/kilo/storage/``).
        kilo = path.parent.parent.parent.parent.name.startswith("kilo")
        return kilo == (self.name == "kilo")

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        """Forced: the database's tables, or a ``.json`` object with a string ``id`` (a session
        file of the tree, wherever it was copied)."""
        if sqlite.has_tables(path, head, _DB_TABLES):
            return True
        return isinstance(self._tree_info(path).get("id"), str)

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        with path.open("rb") as fh:
            # a .json file is a session of the tree whatever its first bytes say
            is_db = path.suffix != ".json" and fh.read(len(sqlite.MAGIC)) == sqlite.MAGIC
        stored, projects = _read_db(path) if is_db else _read_tree(path)
        out = []
        problems: list[tuple[int, str]] = []
        for session in stored:
            parsed = self._session(path, session, projects, project)
            if parsed is not None:
                out.append(parsed[0])
                problems.extend(parsed[1])
        # A child session started by a task tool call names that call (its messageKey).
        calls = {
            m.subagent: f"assistant:{m.message_id}" for s in out for m in s.messages if m.subagent
        }
        out = [
            dataclasses.replace(s, parent_tool_call=calls[s.session_id])
            if s.session_id in calls
            else s
            for s in out
        ]
        return FileParse(tuple(out), tuple(sorted(problems)))

    def _session(
        self,
        path: Path,
        session: _Session,
        projects: dict[str, str],
        project: str | None,
    ) -> tuple[ParsedSession, list[tuple[int, str]]] | None:
        info = session.info
        sid = native_id(info.get("id"))
        if sid is None:
            return None
        builder = _Builder()
        builder.record(session.raw, "session")
        for data, raw, parts in session.messages:
            builder.message(data, raw, parts)
        convo = builder.convo
        cwd = text_of(info.get("directory")) or None
        project_id = text_of(info.get("project_id") or info.get("projectID"))
        cwd = cwd or projects.get(project_id) or None
        title = text_of(info.get("title")).strip() or None
        if title and title.startswith(_PLACEHOLDER_TITLES):
            title = None
        parent = native_id(info.get("parent_id") or info.get("parentID"))
        times = obj(info.get("time"))
        started = _when(_row_time(info)) or _when(times.get("created"))
        parsed = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(builder.records),
            messages=tuple(convo.messages),
            started=started or convo.started(),
            title=title,
            cwd=cwd,
            parent_session=parent,
            lineage=(parent,) if parent else (),
            source_path=str(path),
            resume_command=f"{self.resume} {shlex.quote(sid)}",
        )
        return parsed, list(convo.sink.problems)


register(
    OpenCodeImporter(
        "opencode",
        "opencode.db",
        (
            Location("$XDG_DATA_HOME/opencode", ("opencode*.db",), depth=0),
            Location("$XDG_DATA_HOME/opencode/storage/session", ("ses_*.json",)),
        ),
        "opencode --session",
    )
)
register(
    OpenCodeImporter(
        "kilo",
        "kilo.db",
        (
            Location("$XDG_DATA_HOME/kilo", ("kilo*.db",), depth=0),
            Location("$XDG_DATA_HOME/kilo/storage/session", ("ses_*.json",)),
        ),
        "kilo --session",
    )
)

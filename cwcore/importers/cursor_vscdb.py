"""Cursor's IDE chat in ``state.vscdb`` (SQLite key-value), read by the ``cursor`` importer.

``…/Cursor/User/globalStorage/state.vscdb`` has a table ``cursorDiskKV(key, value)``: each
``composerData:<composerId>`` value is one composer (chat/agent) session as JSON — ``name``,
``createdAt`` (ms), and either an inline ``conversation`` list of bubbles or
``fullConversationHeadersOnly`` (``[{bubbleId, type}]``) whose bubbles are the values of
``bubbleId:<composerId>:<bubbleId>``. A bubble has ``type`` 1 (user) or 2 (assistant), ``text``,
and may carry ``thinking.text`` and ``toolFormerData`` (``toolCallId``, ``name``, ``rawArgs``,
``result``, ``status``). ``…/workspaceStorage/<hash>/state.vscdb`` has ``ItemTable(key,
value)``; the older chat is the value of ``workbench.panel.aichat.view.aichat.chatdata``:
``{tabs: [{tabId, chatTitle, bubbles: [{id, type: "user" | "ai", text}]}]}``, and the
workspace's folder is in ``workspace.json`` beside the database.

Each composer and each chat tab is a session; each bubble (and each composer header) is an event,
numbered from 1 in the session's order.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from cwcore.errors import CwError
from cwcore.importers import sqlite
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    native_id,
    norm_time,
    parse_arguments,
    project_from_cwd,
)
from cwcore.importers.convo import Conversation, obj, text_of
from cwcore.model import FileParse, ParsedSession

CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"


def _json(value: object) -> Any:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return None


def _raw(value: object) -> bytes:
    decoded = _json(value)
    return json.dumps(decoded, ensure_ascii=False, sort_keys=True).encode(
        "utf-8", "backslashreplace"
    )


def sniff(path: Path, head: list[bytes]) -> bool:
    """A Cursor ``state.vscdb``: ``cursorDiskKV`` with composers, or ``ItemTable`` with the
    chat key."""
    if not sqlite.looks_like_sqlite(head):
        return False
    tables = sqlite.schema(path)
    if {"key", "value"} <= tables.get("cursorDiskKV", set()):
        return True
    if {"key", "value"} <= tables.get("ItemTable", set()):
        try:
            with sqlite.open_readonly(path) as conn:
                found = conn.execute("SELECT 1 FROM ItemTable WHERE key = ?", (CHAT_KEY,))
                return found.fetchone() is not None
        except (sqlite3.Error, CwError):
            return False
    return False


def _workspace_folder(path: Path) -> str | None:
    info = _json_file(path.with_name("workspace.json"))
    folder = text_of(info.get("folder"))
    if folder.startswith("file://"):
        return unquote(urlparse(folder).path) or None
    return folder or None


def _json_file(path: Path) -> dict[str, Any]:
    try:
        return obj(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError):
        return {}


def _bubble(convo: Conversation, bubble: dict[str, Any], line: int, fallback: str) -> None:
    bid = native_id(bubble.get("bubbleId")) or native_id(bubble.get("id")) or fallback
    kind = bubble.get("type")
    ts = norm_time(bubble.get("createdAt") or bubble.get("timestamp"))
    text = text_of(bubble.get("text")) or text_of(bubble.get("rawText"))
    if kind in (1, "user"):
        convo.user(bid, text, line=line, ts=ts)
        return
    if kind not in (2, "ai", "assistant"):
        return
    model = text_of(obj(bubble.get("modelInfo")).get("modelName")) or text_of(
        bubble.get("modelType")
    )
    convo.begin_response(model or None)
    convo.thinking(
        f"{bid}#thinking", text_of(obj(bubble.get("thinking")).get("text")), line=line, ts=ts
    )
    convo.assistant(bid, text, line=line, ts=ts)
    tool = obj(bubble.get("toolFormerData"))
    if tool:
        call_id = native_id(tool.get("toolCallId")) or f"{bid}#call"
        name = text_of(tool.get("name")) or None
        args = parse_arguments(tool.get("rawArgs") or tool.get("params"))
        convo.call(call_id, name, args, line=line, ts=ts)
        result = tool.get("result")
        if result is not None:
            out = result if isinstance(result, str) else json.dumps(result, sort_keys=True)
            failed = text_of(tool.get("status")).lower() in ("error", "failed")
            convo.result(f"{call_id}#result", call_id, out, line=line, ts=ts, is_error=failed)


def parse(path: Path, agent: str, project: str | None) -> FileParse:
    with sqlite.open_readonly(path) as conn:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        composers: list[tuple[str, Any]] = []
        bubbles: dict[str, Any] = {}
        if "cursorDiskKV" in tables:
            cur = conn.execute(
                "SELECT key, value FROM cursorDiskKV WHERE key LIKE 'composerData:%' "
                "OR key LIKE 'bubbleId:%' ORDER BY key"
            )
            for key, value in cur:
                if key.startswith("composerData:"):
                    composers.append((key, value))
                else:
                    bubbles[key] = value
        chat = None
        if "ItemTable" in tables:
            row = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (CHAT_KEY,)).fetchone()
            chat = _json(row[0]) if row else None
    cwd = _workspace_folder(path)
    sessions = []
    problems: list[tuple[int, str]] = []
    for key, value in composers:
        data = obj(_json(value))
        sid = native_id(data.get("composerId")) or native_id(key.split(":", 1)[1])
        if sid is None:
            continue
        convo = Conversation()
        header = {k: v for k, v in data.items() if k != "conversation"}
        records = [
            (
                1,
                json.dumps(header, ensure_ascii=False, sort_keys=True).encode(
                    "utf-8", "backslashreplace"
                ),
                "composer",
            )
        ]
        inline = data.get("conversation")
        if isinstance(inline, list) and inline:
            entries = [
                (
                    obj(b),
                    json.dumps(b, ensure_ascii=False, sort_keys=True).encode(
                        "utf-8", "backslashreplace"
                    ),
                )
                for b in inline
            ]
        else:
            entries = []
            heads = data.get("fullConversationHeadersOnly")
            for head in heads if isinstance(heads, list) else ():
                bid = text_of(obj(head).get("bubbleId"))
                stored = bubbles.get(f"bubbleId:{sid}:{bid}")
                if stored is not None:
                    entries.append((obj(_json(stored)), _raw(stored)))
        for number, (bubble, raw) in enumerate(entries, start=2):
            records.append((number, raw, "bubble"))
            _bubble(convo, bubble, number, f"L{number}")
        sessions.append(
            _session(
                path,
                sid,
                agent,
                project,
                cwd,
                convo,
                records,
                text_of(data.get("name")),
                data.get("createdAt"),
            )
        )
        problems.extend(convo.sink.problems)
    for tab in obj(chat).get("tabs") or ():
        tab = obj(tab)
        sid = native_id(tab.get("tabId"))
        if sid is None:
            continue
        convo = Conversation()
        header = {k: v for k, v in tab.items() if k != "bubbles"}
        records = [
            (
                1,
                json.dumps(header, ensure_ascii=False, sort_keys=True).encode(
                    "utf-8", "backslashreplace"
                ),
                "tab",
            )
        ]
        listed = tab.get("bubbles")
        for number, bubble in enumerate(listed if isinstance(listed, list) else (), start=2):
            records.append(
                (
                    number,
                    json.dumps(bubble, ensure_ascii=False, sort_keys=True).encode(
                        "utf-8", "backslashreplace"
                    ),
                    "bubble",
                )
            )
            _bubble(convo, obj(bubble), number, f"L{number}")
        sessions.append(
            _session(
                path,
                sid,
                agent,
                project,
                cwd,
                convo,
                records,
                text_of(tab.get("chatTitle")),
                tab.get("lastSendTime"),
            )
        )
        problems.extend(convo.sink.problems)
    return FileParse(tuple(s for s in sessions if s.events), tuple(sorted(problems)))


def _session(
    path: Path,
    sid: str,
    agent: str,
    project: str | None,
    cwd: str | None,
    convo: Conversation,
    records: list[tuple[int, bytes, str]],
    title: str,
    created: object,
) -> ParsedSession:
    return ParsedSession(
        session_id=sid,
        agent=agent,
        project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
        events=convo.events(records),
        messages=tuple(convo.messages),
        started=norm_time(created) or convo.started(),
        title=title.strip() or None,
        cwd=cwd,
        source_path=str(path),
    )

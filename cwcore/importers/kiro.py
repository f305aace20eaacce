"""Kiro CLI: ``~/.kiro/sessions/cli/<id>.jsonl`` with an ``<id>.json`` sidecar, and the earlier
SQLite store ``$XDG_DATA_HOME/kiro-cli/data.sqlite3`` (table ``conversations_v2``).

A JSONL line is ``{kind, data}``: ``Prompt``, ``AssistantMessage`` or ``ToolResults``, whose
``data.content`` is a list of ``{kind, data}`` blocks (``text`` with the text as ``data``,
``toolUse`` with ``{toolUseId, name, input}``, ``toolResult`` with ``{toolUseId, content,
status}``). The sidecar holds ``session_id``, ``cwd``, ``title``, ``created_at`` and the model.

A ``conversations_v2`` row (``key`` = the folder, ``conversation_id``, ``value``, times) holds
the whole conversation as JSON: ``history`` entries ``{user, assistant, request_metadata}`` (or
``[user, assistant]`` pairs), ``user.content`` being ``{Prompt: {prompt}}`` or
``{ToolUseResults: {tool_use_results: [{tool_use_id, content, status}]}}`` and ``assistant``
``{Response: {message_id, content}}`` or ``{ToolUse: {message_id, content, tool_uses}}``.

What becomes what (docs/importers.md): prompts -> real user messages; assistant text -> ONE
assistant message (its ``message_id``); each tool use -> a tool call (its id); each tool result
-> ``<id>#result``, an error when its status says so.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from cwcore.errors import excerpt
from cwcore.importers import sqlite
from cwcore.importers.base import Location, json_lines, read_head, register
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

_KINDS = ("Prompt", "AssistantMessage", "ToolResults")
_DB_TABLES = {"conversations_v2": {"key", "conversation_id", "value"}}


def _blocks(data: object) -> list[tuple[str, Any]]:
    content = obj(data).get("content")
    out = []
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and isinstance(block.get("kind"), str):
            out.append((block["kind"], block.get("data")))
    return out


def _result_text(content: object) -> str:
    """A tool result's content: text blocks (``{kind: text}`` or ``{Text: …}``) and JSON ones."""
    if isinstance(content, str):
        return content
    pieces = []
    for item in content if isinstance(content, list) else ():
        if not isinstance(item, dict):
            continue
        if item.get("kind") == "text" or "Text" in item:
            pieces.append(text_of(item.get("data", item.get("Text"))))
        elif item.get("kind") == "json" or "Json" in item:
            pieces.append(canonical_json(item.get("data", item.get("Json"))))
    return "\n\n".join(p for p in pieces if p)


def _failed(status: object) -> bool:
    return isinstance(status, str) and status.lower() in ("error", "failed", "failure")


def _sidecar(path: Path) -> dict[str, Any]:
    try:
        return obj(json.loads(path.with_suffix(".json").read_text(encoding="utf-8")))
    except (OSError, ValueError, RecursionError):
        return {}


def _model(meta: dict[str, Any]) -> str | None:
    info = obj(obj(obj(meta.get("session_state")).get("rts_model_state")).get("model_info"))
    info = info or obj(meta.get("model_info"))
    return text_of(info.get("model_id")) or text_of(info.get("model_name")) or None


class KiroImporter:
    name = "kiro"
    agent = "kiro"
    priority = 54
    locations: tuple[Location, ...] = (
        Location("~/.kiro/sessions/cli", ("*.jsonl",), depth=0),
        Location("$XDG_DATA_HOME/kiro-cli", ("data.sqlite3",), depth=0),
        Location("~/Library/Application Support/kiro-cli", ("data.sqlite3",), ("darwin",), 0),
    )

    not_read = (
        "Kiro IDE chat files; the SQLite row's `transcript` and `env_context` (the folder "
        "comes from the row's key); per-message token counts (Kiro records none)"
    )

    def companions(self, path: Path) -> list[Path]:
        return [path.with_suffix(".json")] if path.suffix == ".jsonl" else []

    def is_companion(self, path: Path) -> bool:
        """The ``<id>.json`` sidecar of a session ``<id>.jsonl``: read with it, never alone."""
        if path.suffix != ".json":
            return False
        session = path.with_suffix(".jsonl")
        if not session.is_file():
            return False
        return ".kiro" in path.parts or self.sniff(session, read_head(session))

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if sqlite.looks_like_sqlite(head):
            return sqlite.has_tables(path, head, _DB_TABLES)
        return any(
            o.get("kind") in _KINDS and isinstance(o.get("data"), dict) for o in json_lines(head)
        )

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        if sqlite.looks_like_sqlite(head):
            return self.sniff(path, head)
        return any(o.get("kind") in _KINDS for o in json_lines(head))

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        with path.open("rb") as fh:
            is_db = path.suffix != ".jsonl" and fh.read(len(sqlite.MAGIC)) == sqlite.MAGIC
        return self._parse_db(path, project) if is_db else self._parse_jsonl(path, project)

    def _parse_jsonl(self, path: Path, project: str | None) -> FileParse:
        lines, problems = read_jsonl(path)
        meta = _sidecar(path)
        model = _model(meta)
        convo = Conversation()
        records: list[tuple[int, bytes, str]] = []
        for line in lines:
            kind, data = line.obj.get("kind"), line.obj.get("data")
            if not isinstance(kind, str) or not isinstance(data, dict):
                problems.append((line.number, "line without a 'kind' and a 'data' object"))
                continue
            records.append((line.number, line.raw, kind))
            base = native_id(data.get("message_id")) or f"L{line.number}"
            ts = norm_time(data.get("timestamp") or line.obj.get("timestamp"))
            blocks = _blocks(data)
            text = "\n\n".join(text_of(d) for k, d in blocks if k == "text" and text_of(d).strip())
            if kind == "Prompt":
                convo.user(base, text, line=line.number, ts=ts)
            elif kind == "AssistantMessage":
                convo.begin_response(model)
                convo.assistant(base, text, line=line.number, ts=ts)
                for n, (k, d) in enumerate(blocks, start=1):
                    if k == "toolUse":
                        use = obj(d)
                        call_id = native_id(use.get("toolUseId")) or f"{base}#call{n}"
                        name = text_of(use.get("name")) or None
                        convo.call(call_id, name, use.get("input"), line=line.number, ts=ts)
            elif kind == "ToolResults":
                for n, (k, d) in enumerate(blocks, start=1):
                    if k != "toolResult":
                        continue
                    result = obj(d)
                    call = native_id(result.get("toolUseId"))
                    convo.result(
                        f"{call}#result" if call else f"{base}#{n}",
                        call,
                        _result_text(result.get("content")),
                        line=line.number,
                        ts=ts,
                        is_error=_failed(result.get("status")),
                    )
        if not records:
            return FileParse((), tuple(problems))
        problems.extend(convo.sink.problems)
        sid = native_id(meta.get("session_id")) or native_id(path.stem) or "kiro-session"
        cwd = text_of(meta.get("cwd")) or None
        parent = native_id(meta.get("parent_session_id"))
        session = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=norm_time(meta.get("created_at")) or convo.started(),
            title=text_of(meta.get("title")).strip() or None,
            cwd=cwd,
            parent_session=parent,
            lineage=(parent,) if parent else (),
            source_path=str(path),
            resume_command=f"cd {shlex.quote(cwd)} && kiro-cli chat --resume" if cwd else None,
        )
        return FileParse((session,), tuple(sorted(problems)))

    def _parse_db(self, path: Path, project: str | None) -> FileParse:
        with sqlite.open_readonly(path) as conn:
            rows = list(
                sqlite.rows(conn, "SELECT * FROM conversations_v2 ORDER BY conversation_id")
            )
        out = []
        problems: list[tuple[int, str]] = []
        for number, row in enumerate(rows, start=1):
            sid = native_id(row.get("conversation_id"))
            if sid is None:
                problems.append((number, "conversation row without a usable 'conversation_id'"))
                continue
            try:
                state = json.loads(row.get("value") or "{}")
            except (TypeError, ValueError, RecursionError) as exc:
                reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                said = f"conversation {excerpt(sid)}: value is not JSON: {reason}"
                problems.append((number, said))
                continue
            if not isinstance(state, dict):
                problems.append((number, f"conversation {excerpt(sid)}: value is not an object"))
                continue
            parsed = self._conversation(path, row, state, sid, project)
            out.append(parsed[0])
            problems.extend(parsed[1])
        return FileParse(tuple(out), tuple(sorted(problems)))

    def _conversation(
        self,
        path: Path,
        row: dict[str, Any],
        state: dict[str, Any],
        sid: str,
        project: str | None,
    ) -> tuple[ParsedSession, list[tuple[int, str]]]:
        listed = state.get("history")
        history: list[Any] = listed if isinstance(listed, list) else []
        header = {k: v for k, v in row.items() if k != "value"}
        header["value"] = {k: v for k, v in state.items() if k not in ("history", "transcript")}
        dump = json.dumps(header, ensure_ascii=False, sort_keys=True, default=str).encode(
            "utf-8", "backslashreplace"
        )
        records: list[tuple[int, bytes, str]] = [(1, dump, "conversation")]
        convo = Conversation()
        model = _model(state)
        for index, entry in enumerate(history):
            number = index + 2
            raw = json.dumps(entry, ensure_ascii=False, sort_keys=True).encode(
                "utf-8", "backslashreplace"
            )
            records.append((number, raw, "history"))
            if isinstance(entry, list):
                user = obj(entry[0]) if entry else {}
                assistant = obj(entry[1]) if len(entry) > 1 else {}
                meta: dict[str, Any] = {}
            else:
                user, assistant = obj(obj(entry).get("user")), obj(obj(entry).get("assistant"))
                meta = obj(obj(entry).get("request_metadata"))
            ts = norm_time(user.get("timestamp"))
            content = obj(user.get("content"))
            prompt = obj(content.get("Prompt"))
            if prompt:
                convo.user(f"u{index}", text_of(prompt.get("prompt")), line=number, ts=ts)
            results = obj(content.get("ToolUseResults")).get("tool_use_results")
            for n, result in enumerate(results if isinstance(results, list) else (), start=1):
                result = obj(result)
                call = native_id(result.get("tool_use_id"))
                convo.result(
                    f"{call}#result" if call else f"u{index}#{n}",
                    call,
                    _result_text(result.get("content")),
                    line=number,
                    ts=ts,
                    is_error=_failed(result.get("status")),
                )
            reply = obj(assistant.get("Response")) or obj(assistant.get("ToolUse"))
            if reply:
                convo.begin_response(text_of(meta.get("model_id")) or model)
                mid = native_id(reply.get("message_id")) or f"a{index}"
                # The answer's time: when its stream ended (else began), in milliseconds.
                said = norm_time(
                    meta.get("stream_end_timestamp_ms") or meta.get("request_start_timestamp_ms")
                )
                convo.assistant(mid, text_of(reply.get("content")), line=number, ts=said)
                uses = reply.get("tool_uses")
                for n, use in enumerate(uses if isinstance(uses, list) else (), start=1):
                    use = obj(use)
                    call_id = native_id(use.get("id")) or f"{mid}#call{n}"
                    name = text_of(use.get("name")) or None
                    convo.call(call_id, name, use.get("args"), line=number, ts=said)
        cwd = text_of(row.get("key")) or None
        started = norm_time(row.get("created_at")) or convo.started()
        parsed = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=started,
            cwd=cwd,
            source_path=str(path),
            resume_command=f"cd {shlex.quote(cwd)} && kiro-cli chat --resume" if cwd else None,
        )
        return parsed, list(convo.sink.problems)


register(KiroImporter())

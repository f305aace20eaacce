"""Zed's agent threads: ``threads/threads.db`` (SQLite) in Zed's data folder.

One row per thread in ``threads`` (``id``, ``summary``, ``updated_at``, ``data_type``,
``data``; later Zed versions add ``parent_id``, ``folder_paths``, ``folder_paths_order``,
``created_at``). ``data`` is the thread as JSON, compressed with zstd when ``data_type`` is
``zstd`` (what Zed writes). The thread (``DbThread``, version ``0.3.0``) holds ``title``,
``messages``, ``request_token_usage`` (per user message id), ``model`` (``{provider, model}``),
``initial_project_snapshot`` and ``subagent_context``. Each message is externally tagged:

* ``{"User": {"id", "content": [{"Text": s} | {"Mention": {"uri", "content"}} | {"Image": …}]}}``
* ``{"Agent": {"content": [{"Text": s} | {"Thinking": {"text", "signature"}} |
  {"RedactedThinking": s} | {"ToolUse": {"id", "name", "raw_input", "input", …}}],
  "tool_results": {id: {"tool_use_id", "tool_name", "is_error", "content", "output"}}}}``
* ``"Resume"`` (Zed's own "continue where you left off" prompt after a pause).

Earlier threads (versions ``0.1.0``/``0.2.0``, or none) use ``{"summary", "messages": [{"id",
"role", "segments": [{"type": "text"|"thinking", "text"}], "tool_uses", "tool_results",
"context", "is_hidden"}]}``; they are read too.

What becomes what (docs/importers.md): a user message -> a real user message (id: its ``id``);
an agent message (id ``a<index>``) -> its thinking (``a<index>#thinking<n>``), ONE assistant
message of its text, one tool call per ``ToolUse`` (id: the tool use id) and one tool result per
``tool_results`` entry (``<id>#result``); ``Resume`` -> host text (``system``), never a user
prompt.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cwcore.importers import sqlite
from cwcore.importers.base import Location, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    canonical_json,
    native_id,
    norm_time,
    parse_arguments,
    project_from_cwd,
)
from cwcore.importers.convo import Conversation, count, obj, text_of
from cwcore.model import FileParse, ParsedSession, Usage

_DB_TABLES = {"threads": {"id", "summary", "updated_at", "data_type", "data"}}

#: Zed's title for a thread not summarized yet.
_PLACEHOLDER_TITLES = frozenset({"New Thread", "New Agent Thread", ""})

#: The text Zed sends for a ``Resume`` message.
_RESUME_TEXT = "Continue where you left off"


def _decode(data_type: object, data: object) -> tuple[dict[str, Any] | None, str]:
    """The thread JSON of a row, or ``(None, reason)``."""
    if isinstance(data, str):
        data = data.encode()
    if not isinstance(data, bytes):
        return None, "no `data`"
    kind = text_of(data_type).lower()
    if kind == "zstd":
        try:
            import zstandard

            data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
        except ImportError:
            return None, "zstd-compressed thread and the `zstandard` package is not installed"
        except zstandard.ZstdError as exc:
            return None, f"zstd data that does not decompress: {exc}"
    elif kind not in ("json", ""):
        return None, f"unknown `data_type` {kind!r}"
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as exc:
        return None, f"`data` is not JSON: {exc}"
    if not isinstance(value, dict):
        return None, "`data` is not a JSON object"
    return value, ""


def _tagged(value: object) -> tuple[str, Any]:
    """``("Tag", payload)`` of an externally tagged enum value (``"Resume"`` -> ``("Resume",
    None)``)."""
    if isinstance(value, str):
        return value, None
    if isinstance(value, dict) and len(value) == 1:
        ((tag, payload),) = value.items()
        return str(tag), payload
    return "", None


def _mention(payload: dict[str, Any]) -> str:
    """A marker for an @-mention (the mentioned file's text is context Zed attached)."""
    uri = payload.get("uri")
    if isinstance(uri, str):
        return f"[@{uri}]"
    _, inner = _tagged(uri)
    fields = obj(inner)
    name = text_of(fields.get("abs_path")) or text_of(fields.get("name"))
    name = name or text_of(fields.get("url")) or text_of(fields.get("path"))
    return f"[@{name}]" if name else "[mention]"


def _user_text(content: object) -> str:
    pieces = []
    for item in content if isinstance(content, list) else [content]:
        tag, payload = _tagged(item)
        if tag == "Text":
            pieces.append(text_of(payload))
        elif tag == "Mention":
            pieces.append(_mention(obj(payload)))
        elif tag == "Image":
            pieces.append("[image]")
    return "".join(p for p in pieces if p).strip()


def _result_text(value: object) -> str:
    """A tool result's ``content`` (or ``output``) as text; an unknown shape as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(t for t in (_result_text(v) for v in value) if t)
    if isinstance(value, dict):
        for key in ("Text", "text"):
            if isinstance(value.get(key), str):
                return str(value[key])
        if any(k in value for k in ("Image", "image", "source")):
            return "[image]"
        return canonical_json(value)
    return "" if value is None else canonical_json(value)


def _usage(value: object) -> Usage | None:
    u = obj(value)
    usage = Usage(
        input=count(u.get("input_tokens")),
        output=count(u.get("output_tokens")),
        cache_read=count(u.get("cache_read_input_tokens")),
        cache_write=count(u.get("cache_creation_input_tokens")),
    )
    return usage or None


def _read_messages(
    thread: dict[str, Any], convo: Conversation, records: list[Any], real: bool
) -> None:
    """The messages of a current (0.3.0) thread; one event per message (line index + 2). In a
    sub-agent's thread (``real`` False) the prompts come from the parent agent."""
    model = text_of(obj(thread.get("model")).get("model")) or None
    usages = obj(thread.get("request_token_usage"))
    pending: Usage | None = None
    ids = (obj(_tagged(m)[1]).get("id") for m in _list(thread.get("messages")))
    users = {i for i in ids if isinstance(i, str)}
    # usage filed under no user message of the thread goes on its last response
    stray = [_usage(u) for k, u in usages.items() if k not in users]
    leftover = sum((u for u in stray if u), Usage()) or None
    for index, item in enumerate(_list(thread.get("messages"))):
        line = index + 2
        tag, payload = _tagged(item)
        records.append((line, _compact(item), tag or "message"))
        body = obj(payload)
        if tag == "User":
            mid = native_id(body.get("id")) or f"u{index}"
            convo.user(mid, _user_text(body.get("content")), line=line, ts=None, real=real)
            key = body.get("id")
            pending = _usage(usages.get(key)) if isinstance(key, str) else None
        elif tag == "Resume":
            convo.system(f"r{index}", _RESUME_TEXT, line=line, ts=None)
        elif tag == "Agent":
            convo.begin_response(model, pending)
            pending = None
            _agent(convo, f"a{index}", body, line)
    if leftover:
        convo.attach(None, leftover)


def _agent(convo: Conversation, base: str, body: dict[str, Any], line: int) -> None:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    n = 0
    for block in _list(body.get("content")):
        tag, payload = _tagged(block)
        if tag == "Text":
            texts.append(text_of(payload))
        elif tag == "Thinking":
            n += 1
            convo.thinking(
                f"{base}#thinking{n}", text_of(obj(payload).get("text")), line=line, ts=None
            )
        elif tag == "ToolUse":
            calls.append(obj(payload))
    convo.assistant(base, "".join(texts).strip(), line=line, ts=None)
    for k, call in enumerate(calls, start=1):
        call_id = native_id(call.get("id")) or f"{base}#call{k}"
        arguments = call.get("input")
        if arguments is None:
            arguments = parse_arguments(call.get("raw_input"))
        convo.call(call_id, text_of(call.get("name")) or None, arguments, line=line, ts=None)
    for key, result in obj(body.get("tool_results")).items():
        r = obj(result)
        answers = native_id(r.get("tool_use_id")) or native_id(key)
        text = _result_text(r.get("content"))
        if not text.strip() and r.get("output") is not None:
            text = _result_text(r.get("output"))
        convo.result(
            f"{answers or base}#result",
            answers,
            text,
            line=line,
            ts=None,
            is_error=bool(r.get("is_error")),
            name=text_of(r.get("tool_name")) or None,
        )


def _read_legacy(
    thread: dict[str, Any], convo: Conversation, records: list[Any], real: bool
) -> None:
    """The messages of a thread written before version 0.3.0 (``role`` and ``segments``)."""
    model = text_of(obj(thread.get("model")).get("model")) or None
    for index, item in enumerate(_list(thread.get("messages"))):
        line = index + 2
        m = obj(item)
        role = text_of(m.get("role"))
        records.append((line, _compact(item), role or "message"))
        base = f"m{m['id']}" if isinstance(m.get("id"), int) else f"m{index}"
        segments = [obj(s) for s in _list(m.get("segments"))]
        text = "".join(text_of(s.get("text")) for s in segments if s.get("type") == "text").strip()
        if role == "user":
            convo.user(base, text, line=line, ts=None, real=real and not m.get("is_hidden"))
            continue
        if role != "assistant":
            convo.system(base, text, line=line, ts=None)
            continue
        convo.begin_response(model)
        for n, s in enumerate((s for s in segments if s.get("type") == "thinking"), start=1):
            convo.thinking(f"{base}#thinking{n}", text_of(s.get("text")), line=line, ts=None)
        convo.assistant(base, text, line=line, ts=None)
        for k, use in enumerate(obj(u) for u in _list(m.get("tool_uses"))):
            call_id = native_id(use.get("id")) or f"{base}#call{k + 1}"
            convo.call(
                call_id, text_of(use.get("name")) or None, use.get("input"), line=line, ts=None
            )
        for r in (obj(r) for r in _list(m.get("tool_results"))):
            call = native_id(r.get("tool_use_id"))
            text = _result_text(r.get("content"))
            if not text.strip() and r.get("output") is not None:
                text = _result_text(r.get("output"))
            convo.result(
                f"{call or base}#result",
                call,
                text,
                line=line,
                ts=None,
                is_error=bool(r.get("is_error")),
            )


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _compact(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8", "backslashreplace")


def _folder(row: dict[str, Any], thread: dict[str, Any]) -> str | None:
    """The thread's first workspace folder: ``folder_paths`` (newline-separated), else the
    project snapshot's first worktree."""
    paths = text_of(row.get("folder_paths"))
    for entry in paths.splitlines():
        if entry.strip():
            return entry.strip()
    snapshot = obj(thread.get("initial_project_snapshot"))
    for tree in _list(snapshot.get("worktree_snapshots")):
        path = text_of(obj(tree).get("worktree_path"))
        if path:
            return path
    return None


class ZedImporter:
    name = "zed"
    agent = "zed"
    priority = 62
    locations: tuple[Location, ...] = (
        Location("$XDG_DATA_HOME/zed/threads", ("threads.db",), ("linux",), 0),
        Location("~/Library/Application Support/Zed/threads", ("threads.db",), ("darwin",), 0),
        Location("$LOCALAPPDATA/Zed/threads", ("threads.db",), ("win32",), 0),
    )
    not_read = (
        "the text of @-mentioned files (a `[@path]` marker stays); images; per-message "
        "times (Zed keeps none); the `context` of pre-0.3 threads; text threads "
        "(`conversations/*.zed.json`)"
    )

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        return sqlite.has_tables(path, head, _DB_TABLES)

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return self.sniff(path, head)

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        with sqlite.open_readonly(path) as conn:
            rows = list(sqlite.rows(conn, "SELECT * FROM threads ORDER BY updated_at, id"))
        out = []
        problems: list[tuple[int, str]] = []
        for number, row in enumerate(rows, start=1):
            sid = native_id(row.get("id"))
            if sid is None:
                problems.append((number, "thread without a usable `id`"))
                continue
            thread, reason = _decode(row.get("data_type"), row.get("data"))
            if thread is None:
                problems.append((number, f"thread {sid}: {reason}"))
                thread = {}
            parsed = self._session(path, sid, row, thread, project)
            out.append(parsed[0])
            problems.extend(parsed[1])
        return FileParse(tuple(out), tuple(sorted(problems)))

    def _session(
        self,
        path: Path,
        sid: str,
        row: dict[str, Any],
        thread: dict[str, Any],
        project: str | None,
    ) -> tuple[ParsedSession, list[tuple[int, str]]]:
        convo = Conversation()
        meta = {k: v for k, v in row.items() if k != "data"}
        summary = {k: v for k, v in thread.items() if k != "messages"}
        records: list[tuple[int, bytes, str]] = [
            (1, _compact({"table": "threads", **meta, "data": summary}), "thread")
        ]
        parent = native_id(row.get("parent_id")) or native_id(
            obj(thread.get("subagent_context")).get("parent_thread_id")
        )
        legacy = any(isinstance(m, dict) and "role" in m for m in _list(thread.get("messages")))
        (_read_legacy if legacy else _read_messages)(thread, convo, records, parent is None)
        cwd = _folder(row, thread)
        title = text_of(row.get("summary")).strip() or text_of(thread.get("title")).strip()
        title = title or text_of(thread.get("summary")).strip()
        started = norm_time(row.get("created_at")) or norm_time(row.get("updated_at"))
        parsed = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=started,
            title=None if title in _PLACEHOLDER_TITLES else title,
            cwd=cwd,
            parent_session=parent,
            lineage=(parent,) if parent else (),
            source_path=str(path),
        )
        return parsed, list(convo.sink.problems)


register(ZedImporter())

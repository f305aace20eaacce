"""Amp (Sourcegraph): one JSON file per thread, ``$XDG_DATA_HOME/amp/threads/T-<uuid>.json``
(earlier VS Code extension builds: ``…/globalStorage/sourcegraph.amp/threads3/``).

A thread is ``{v, id: "T-…", created (ms), title?, messages, env: {initial: {trees: [{displayName,
uri}]}}, meta: {traces}, …}``; each message is ``{role, messageId, content: [blocks], meta?:
{sentAt}, usage?, state?}`` with Anthropic-style blocks: ``text``, ``thinking``, ``tool_use``
(``id``, ``name``, ``input``), ``tool_result`` — Amp's own ``{toolUseID, run: {status, result |
error}}`` or the canonical ``{tool_use_id, content, is_error}`` — and ``image``.

What becomes what (docs/importers.md): a user message's text -> a real user message (id
``m<messageId>``, else ``i<index>``); its ``tool_result`` blocks -> tool results (``<tool use
id>#result``); an assistant message -> its thinking (``<id>#thinking<n>``), ONE assistant message
of its text (with ``usage`` and its ``model``), one tool call per ``tool_use`` block (its ``id``).
The file is one JSON object, so events are records, not lines: record 1 is the thread without its
messages, record ``index + 2`` is message ``index`` (compact JSON).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from cwcore.errors import InvalidInput
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

#: Largest thread file read whole (a thread is one JSON object).
MAX_THREAD_BYTES = 256 << 20
#: Largest file a sniff parses to look inside (bigger ``T-*.json`` files go by their name).
_SNIFF_BYTES = 32 << 20
_THREAD_NAME = re.compile(r"^T-[0-9A-Za-z-]+\.json$")
_VSCODE = "User/globalStorage/sourcegraph.amp/threads3"


def _load(path: Path, limit: int) -> Any:
    try:
        if path.stat().st_size > limit:
            return None
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


def _messages_of(thread: dict[str, Any]) -> list[Any] | None:
    messages = thread.get("messages")
    if not isinstance(messages, list):
        messages = obj(thread.get("thread")).get("messages")
    return messages if isinstance(messages, list) else None


def _is_thread(value: object) -> bool:
    """Amp's own thread shape: ``v``, a ``T-`` id and a ``messages`` list."""
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return False
    tid = value.get("id")
    return isinstance(value.get("v"), int) and isinstance(tid, str) and tid.startswith("T-")


def _blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, dict):
        content = [content]
    out = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            out.append({"type": "text", "text": block})
        elif isinstance(block, dict):
            out.append(block)
    return out


def _text(blocks: list[dict[str, Any]]) -> str:
    pieces = []
    for b in blocks:
        kind = b.get("type")
        if kind == "text":
            pieces.append(text_of(b.get("text")))
        elif kind == "image":
            pieces.append("[image]")
    return "\n\n".join(p for p in pieces if p.strip())


def _value_text(value: object) -> str:
    """A tool's ``result`` value as text: a string as is; Amp's usual result objects by their
    output field; a list of strings one a line; anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        for key in ("output", "content", "diff"):
            field = value.get(key)
            if field is not None and field != "":
                return field if isinstance(field, str) else canonical_json(field)
        if set(value) == {"success"} and isinstance(value["success"], bool):
            return "success" if value["success"] else "failed"
        return canonical_json(value)
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    if (
        isinstance(value, list)
        and value
        and all(isinstance(v, dict) and v.get("type") == "image" for v in value)
    ):
        return "[image]"
    if value == []:
        return ""
    return canonical_json(value)


def _result(block: dict[str, Any]) -> tuple[str | None, str, bool] | None:
    """``(tool use id, text, is_error)`` of a ``tool_result`` block; None for a run that has
    not produced anything yet."""
    canonical = native_id(block.get("tool_use_id"))
    if canonical is not None:
        content = block.get("content")
        text = content if isinstance(content, str) else _text(_blocks(content))
        if not text and content not in (None, "", []):
            text = canonical_json(content)
        return canonical, text, bool(block.get("is_error"))
    call = native_id(block.get("toolUseID"))
    run = obj(block.get("run"))
    status = text_of(run.get("status"))
    if status == "error":
        message = text_of(obj(run.get("error")).get("message")) or text_of(run.get("error"))
        return call, message or "[unknown error]", True
    if status in ("cancelled", "rejected-by-user"):
        return call, f"[{status}]", True
    if "result" in run and (run["result"] is not None or status == "done"):
        if run["result"] is None:
            return None
        return call, _value_text(run["result"]), False
    if "content" in block:
        return call, _value_text(block.get("content")), bool(block.get("is_error"))
    return None


def _openai_family(model: str) -> bool:
    name = model.lower().rsplit("/", 1)[-1]
    return name.startswith(("gpt", "o1", "o3", "o4", "codex")) or "openai" in model.lower()


def _usage(value: object) -> tuple[str | None, Usage | None]:
    u = obj(value)
    model = text_of(u.get("model")) or None
    input_tokens = count(u.get("inputTokens"))
    cache_write = count(u.get("cacheCreationInputTokens"))
    if model and _openai_family(model) and input_tokens == 0:
        # OpenAI-family threads put the whole uncached prompt under cache creation.
        input_tokens, cache_write = cache_write, 0
    usage = Usage(
        input=input_tokens,
        output=count(u.get("outputTokens")),
        cache_read=count(u.get("cacheReadInputTokens")),
        cache_write=cache_write,
    )
    return model, usage or None


def _cwd(thread: dict[str, Any]) -> tuple[str | None, str | None]:
    """``(cwd, display name)`` of the thread's first workspace tree."""
    trees = obj(obj(thread.get("env")).get("initial")).get("trees")
    first = obj(trees[0]) if isinstance(trees, list) and trees else {}
    uri = text_of(first.get("uri"))
    cwd = None
    if uri.startswith("file://"):
        cwd = unquote(urlparse(uri).path) or None
    for key in ("workspace", "cwd"):  # other writers' thread shapes
        cwd = cwd or text_of(thread.get(key)) or None
    return cwd, text_of(first.get("displayName")) or None


def _message_time(message: dict[str, Any]) -> str | None:
    meta = obj(message.get("meta"))
    usage = obj(message.get("usage"))
    stamps = (meta.get("sentAt"), message.get("timestamp"), message.get("created_at"))
    for value in (*stamps, usage.get("timestamp")):
        if isinstance(value, int | float) and not isinstance(value, bool):
            # milliseconds, or seconds when too small to be milliseconds of this century
            return norm_time(value if value > 10**11 else value * 1000)
        if isinstance(value, str) and norm_time(value):
            return norm_time(value)
    return None


class AmpImporter:
    name = "amp"
    agent = "amp"
    priority = 64
    locations: tuple[Location, ...] = (
        Location("$XDG_DATA_HOME/amp/threads", ("T-*.json",), depth=0),
        Location(f"$XDG_CONFIG_HOME/Code/{_VSCODE}", ("T-*.json",), ("linux",), 0),
        Location(f"~/Library/Application Support/Code/{_VSCODE}", ("T-*.json",), ("darwin",), 0),
        Location(f"$APPDATA/Code/{_VSCODE}", ("T-*.json",), ("win32",), 0),
    )
    not_read = (
        "`meta.traces` (timings), attachments beyond an `[image]` marker, thread sharing and "
        "handoff links"
    )

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if path.suffix != ".json" or not head or not head[0].lstrip().startswith(b"{"):
            return False
        if _THREAD_NAME.match(path.name):
            try:
                if path.stat().st_size > _SNIFF_BYTES:
                    return True
            except OSError:
                return False
            value = _load(path, _SNIFF_BYTES)
            return isinstance(value, dict) and isinstance(value.get("messages"), list)
        return _is_thread(_load(path, _SNIFF_BYTES))

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        if not head or not head[0].lstrip().startswith(b"{"):
            return False
        value = _load(path, MAX_THREAD_BYTES)
        return isinstance(value, dict) and _messages_of(value) is not None

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        try:
            size = path.stat().st_size
            if size > MAX_THREAD_BYTES:
                raise InvalidInput(
                    f"thread file is {size:,} bytes; the limit is {MAX_THREAD_BYTES:,}"
                )
            value = json.loads(path.read_bytes())
        except OSError as exc:
            raise InvalidInput(f"cannot read the thread: {exc}") from None
        except (ValueError, RecursionError) as exc:
            return FileParse((), ((1, f"not JSON: {exc}"),))
        if not isinstance(value, dict):
            return FileParse((), ((1, "not a JSON object"),))
        messages = _messages_of(value)
        problems: list[tuple[int, str]] = []
        if messages is None:
            problems.append((1, "no `messages` list"))
            messages = []
        convo = Conversation()
        top = {k: v for k, v in value.items() if k != "messages"}
        records: list[tuple[int, bytes, str]] = [(1, _compact(top), "thread")]
        for index, item in enumerate(messages):
            line = index + 2
            records.append((line, _compact(item), text_of(obj(item).get("role")) or "message"))
            if not isinstance(item, dict):
                problems.append((line, "message is not a JSON object"))
                continue
            self._message(convo, item, index, line, problems)
        sid = _session_id(path, value)
        cwd, display = _cwd(value)
        title = text_of(value.get("title")).strip() or None
        created = value.get("created")
        started = None
        if isinstance(created, int | float) and not isinstance(created, bool) and created > 0:
            started = norm_time(created)
        parsed = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or display or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=started or convo.started(),
            title=title,
            cwd=cwd,
            source_path=str(path),
            resume_command=f"amp threads continue {sid}" if sid.startswith("T-") else None,
        )
        return FileParse((parsed,), tuple(sorted(problems + convo.sink.problems)))

    def _message(
        self,
        convo: Conversation,
        message: dict[str, Any],
        index: int,
        line: int,
        problems: list[tuple[int, str]],
    ) -> None:
        role = message.get("role") or message.get("speaker") or message.get("type")
        mid = message.get("messageId", message.get("id"))
        base = f"m{mid}" if isinstance(mid, int) and not isinstance(mid, bool) else None
        base = base or native_id(mid if isinstance(mid, str) else None) or f"i{index}"
        blocks = _blocks(message.get("content", message.get("text", message.get("body"))))
        ts = _message_time(message)
        if role == "user":
            convo.user(base, _text(blocks), line=line, ts=ts)
            for k, block in enumerate(blocks, start=1):
                if block.get("type") != "tool_result":
                    continue
                found = _result(block)
                if found is None:
                    continue
                call, text, failed = found
                convo.result(
                    f"{call}#result" if call else f"{base}#{k}",
                    call,
                    text,
                    line=line,
                    ts=ts,
                    is_error=failed,
                )
        elif role == "assistant":
            model, usage = _usage(message.get("usage"))
            convo.begin_response(model, usage)
            n = 0
            for block in blocks:
                if block.get("type") == "thinking":
                    n += 1
                    text = text_of(block.get("thinking")) or text_of(block.get("text"))
                    convo.thinking(f"{base}#thinking{n}", text, line=line, ts=ts)
            convo.assistant(base, _text(blocks), line=line, ts=ts)
            for k, block in enumerate(blocks, start=1):
                if block.get("type") == "tool_use":
                    call_id = native_id(block.get("id")) or f"{base}#call{k}"
                    name = text_of(block.get("name")) or None
                    convo.call(call_id, name, block.get("input"), line=line, ts=ts)
        elif role in ("info", "system"):
            convo.system(base, _text(blocks), line=line, ts=ts)
        else:
            problems.append((line, f"message with an unknown role {role!r}"))


def _session_id(path: Path, thread: dict[str, Any]) -> str:
    """The file name's ``T-`` id (what Amp looks a thread up by), else the thread's ``id``,
    else the file stem."""
    if _THREAD_NAME.match(path.name):
        return path.stem
    return native_id(thread.get("id")) or native_id(path.stem) or "amp-thread"


def _compact(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8", "backslashreplace")


register(AmpImporter())

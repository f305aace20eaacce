"""VS Code's chat (GitHub Copilot Chat): ``<User>/workspaceStorage/<hash>/chatSessions/``.

VS Code keeps each chat session as ``<sessionId>.json`` — its ``ISerializableChatData``:
``{version, sessionId, creationDate, customTitle?, requesterUsername, responderUsername,
initialLocation, requests: [...]}`` — or, since 2025, as ``<sessionId>.jsonl``: a log of
mutations of that object, ``{"kind": 0, "v": <the object>}`` first, then ``{"kind": 1, "k":
<path>, "v": <value>}`` (set), ``{"kind": 2, "k": <path>, "v": [items], "i"?: <index>}`` (push
to the array at the path, after cutting it to ``i`` items when given) and ``{"kind": 3, "k":
<path>}`` (delete). Chats of a window without a folder are under
``<User>/globalStorage/emptyWindowChatSessions/``; a workspace's folder is in ``workspace.json``
beside its ``chatSessions``.

A request is ``{requestId, timestamp, message: {text, parts}, response: [parts], result?:
{errorDetails?, timings?, metadata?}, modelId?, isCanceled?…}``. Response parts: markdown
(``{value}``, no ``kind``), ``inlineReference``, ``thinking``, ``toolInvocationSerialized``
(``toolId``, ``toolCallId``, ``invocationMessage``, ``pastTenseMessage``, ``isComplete``,
``toolSpecificData``, ``resultDetails``), and kinds that show edits and progress. Copilot Chat
puts its own record of the request in ``result.metadata``: ``toolCallRounds`` (each ``{response,
toolCalls: [{id, name, arguments}], thinking?}``), ``toolCallResults`` (per call id, the
``LanguageModelToolResult`` the model read: ``{content: [{value}]}``), ``resolvedModel``,
``promptTokens`` and ``outputTokens``.

A ``.json`` session's events are its header (the object without ``requests``, line 1) and one
event per request (line ``index + 2``), as compact JSON; a ``.jsonl`` log's events are its lines,
and a request's messages name the lines that formed it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from cwcore.importers.base import read_head, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    canonical_json,
    jsonl_records,
    native_id,
    norm_time,
    parse_arguments,
    project_from_cwd,
)
from cwcore.importers.convo import Conversation, count, obj, text_of
from cwcore.importers.lines import read_prefix
from cwcore.importers.vscode_paths import user_locations
from cwcore.model import FileParse, ParsedSession, Usage

_UUID = "????????-????-????-????-????????????"
_FOLDERS = ("chatSessions", "emptyWindowChatSessions")
#: Keys every serialized chat session has, beside ``requests``.
_SESSION_KEYS = re.compile(
    rb'"(?:requesterUsername|responderUsername|initialLocation|creationDate|sessionId)"\s*:'
)
_REQUESTS = re.compile(rb'"requests"\s*:\s*\[')
_OBJECT = re.compile(rb"\A\s*\{")


def _is_session_json(data: bytes) -> bool:
    return bool(_OBJECT.match(data) and _REQUESTS.search(data) and _SESSION_KEYS.search(data))


def _first_op(head: list[bytes]) -> dict[str, Any] | None:
    """The first line of a mutation log when it is the initial state ``{"kind": 0, "v": {…}}``."""
    for raw in head:
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            return None
        if isinstance(value, dict) and value.get("kind") == 0 and isinstance(value.get("v"), dict):
            return value
        return None
    return None


@dataclass
class _Log:
    """A replayed mutation log: the final state, its lines as records, the lines that formed
    each request (by index), and the lines that could not be applied."""

    state: dict[str, Any]
    records: list[tuple[int, bytes, str]] = field(default_factory=list)
    formed: dict[int, set[int]] = field(default_factory=dict)
    problems: list[tuple[int, str]] = field(default_factory=list)


def _replay(path: Path) -> _Log:
    """The session a mutation log describes (see the module doc)."""
    state: Any = None
    log = _Log({})
    for number, raw, op, reason in jsonl_records(path):
        if op is None:
            log.problems.append((number, reason))
            continue
        kind = op.get("kind")
        if kind not in (0, 1, 2, 3) or isinstance(kind, bool):
            log.problems.append((number, "line without a `kind` of 0 to 3"))
            continue
        log.records.append((number, raw, f"kind{kind}"))
        if kind == 0:
            state = op.get("v")
            requests = obj(state).get("requests")
            log.formed = {i: {number} for i in range(len(requests or ()))}
            continue
        keys = op.get("k")
        if state is None or not isinstance(keys, list) or not keys:
            log.problems.append((number, "a change before the initial state, or without `k`"))
            continue
        if not _apply(state, kind, keys, op):
            log.problems.append((number, f"path {json.dumps(keys)[:80]} not found"))
            continue
        _formed(log.formed, number, kind, keys, op, obj(state).get("requests"))
    log.state = obj(state)
    return log


def _formed(
    formed: dict[int, set[int]],
    number: int,
    kind: int,
    keys: list[Any],
    op: dict[str, Any],
    requests: object,
) -> None:
    """Record which requests line ``number`` changed."""
    if keys[0] != "requests":
        return
    total = len(requests) if isinstance(requests, list) else 0
    if len(keys) == 1:  # the list itself: replaced, or cut and pushed to
        cut = op.get("i") if kind == 2 else 0
        start = cut if isinstance(cut, int) and not isinstance(cut, bool) else None
        if start is None:
            start = total - len(op.get("v") or ())
        for index in list(formed):
            if index >= start:
                del formed[index]
        for index in range(max(start, 0), total):
            formed[index] = {number}
        return
    if isinstance(keys[1], int) and not isinstance(keys[1], bool):
        formed.setdefault(keys[1], set()).add(number)


def _apply(state: Any, kind: int, keys: list[Any], op: dict[str, Any]) -> bool:
    target = state
    for key in keys[:-1]:
        target = _child(target, key)
        if target is None:
            return False
    last = keys[-1]
    if kind == 1:
        return _set(target, last, op.get("v"))
    if kind == 3:
        if isinstance(target, dict):
            target.pop(str(last), None)
            return True
        return False
    array = _child(target, last)
    if array is None:  # pushing to an array not there yet creates it
        if not _set(target, last, []):
            return False
        array = _child(target, last)
    if not isinstance(array, list):
        return False
    cut = op.get("i")
    if isinstance(cut, int) and not isinstance(cut, bool) and cut >= 0:
        del array[cut:]
    items = op.get("v")
    array.extend(items if isinstance(items, list) else [])
    return True


def _child(target: Any, key: Any) -> Any:
    if isinstance(target, dict):
        return target.get(str(key))
    if isinstance(target, list) and isinstance(key, int) and 0 <= key < len(target):
        return target[key]
    return None


def _set(target: Any, key: Any, value: Any) -> bool:
    if isinstance(target, dict):
        target[str(key)] = value
        return True
    if isinstance(target, list) and isinstance(key, int) and 0 <= key <= len(target):
        if key == len(target):
            target.append(value)
        else:
            target[key] = value
        return True
    return False


def _message_text(value: object) -> str:
    """A ``string | {value}`` message (invocation, past tense) as text."""
    if isinstance(value, str):
        return value
    return text_of(obj(value).get("value"))


def _reference(value: object) -> str:
    """An ``inlineReference`` part as the path (or name) it shows, in backticks."""
    part = obj(value)
    ref = part.get("inlineReference")
    ref = obj(ref)
    location = obj(ref.get("location")) or ref
    uri = obj(location.get("uri")) or location
    where = text_of(uri.get("fsPath")) or text_of(uri.get("path"))
    shown = text_of(part.get("name")) or text_of(ref.get("name")) or where
    return f"`{shown}`" if shown else ""


def _tool_result_text(value: object) -> str:
    """The text of a serialized ``LanguageModelToolResult`` (``{content: [{value}]}``); a part
    that is not text is kept as compact JSON."""
    content = obj(value).get("content")
    pieces = []
    for part in content if isinstance(content, list) else ():
        text = obj(part).get("value")
        if isinstance(text, str):
            pieces.append(text)
        elif text is not None:
            pieces.append(canonical_json(text))
    return "\n".join(p for p in pieces if p)


def _details_text(details: object) -> str:
    """``resultDetails``: ``{input, output: [{value}]}`` or a list of locations."""
    if isinstance(details, dict):
        outputs = details.get("output")
        texts = [
            text_of(obj(o).get("value")) for o in (outputs if isinstance(outputs, list) else ())
        ]
        if any(texts):
            return "\n".join(t for t in texts if t)
    if isinstance(details, list) and details:
        paths = [_reference({"inlineReference": d}).strip("`") for d in details]
        if all(paths):
            return "\n".join(paths)
    return canonical_json(details) if details not in (None, {}, []) else ""


def _workspace_folder(path: Path) -> str | None:
    """The folder of ``workspace.json`` in the workspace's storage (``<hash>/``)."""
    try:
        info = obj(json.loads((path.parent.parent / "workspace.json").read_text("utf-8")))
    except (OSError, ValueError, RecursionError):
        return None
    where = text_of(info.get("folder")) or text_of(info.get("workspace"))
    if where.startswith(("file://", "vscode-remote://")):
        where = unquote(urlparse(where).path)
    return where or None


class _Request:
    """One request's messages."""

    def __init__(
        self, convo: Conversation, lines: tuple[int, ...], request: dict[str, Any]
    ) -> None:
        self.convo = convo
        self.line = lines  # the source lines (records) that formed the request
        self.request = request
        self.rid = native_id(request.get("requestId")) or f"L{lines[0]}"
        self.ts = norm_time(request.get("timestamp"))
        result = obj(request.get("result"))
        self.meta = obj(result.get("metadata"))
        first = count(obj(result.get("timings")).get("firstProgress"))
        stamp = request.get("timestamp")
        answered = stamp + first if isinstance(stamp, int | float) and first else stamp
        self.answer_ts = norm_time(answered) or self.ts
        self.arguments: dict[str, Any] = {}
        for round_ in self.meta.get("toolCallRounds") or ():
            for call in obj(round_).get("toolCalls") or ():
                call = obj(call)
                if isinstance(call.get("id"), str):
                    self.arguments[call["id"]] = parse_arguments(call.get("arguments"))
        self.results = obj(self.meta.get("toolCallResults"))
        self.texts: list[str] = []
        self.runs = 0
        self.thoughts = 0

    def read(self) -> None:
        convo, request = self.convo, self.request
        message = request.get("message")
        said = message if isinstance(message, str) else text_of(obj(message).get("text"))
        convo.user(self.rid, said, line=self.line, ts=self.ts)
        model = text_of(self.meta.get("resolvedModel")) or text_of(request.get("modelId"))
        usage = Usage(
            input=count(self.meta.get("promptTokens")), output=count(self.meta.get("outputTokens"))
        )
        convo.begin_response(model or None, usage or None)
        response = request.get("response")
        for part in response if isinstance(response, list) else ():
            self.part(obj(part))
        self.flush()
        error = obj(obj(request.get("result")).get("errorDetails"))
        if text_of(error.get("message")):
            convo.system(f"{self.rid}#error", error["message"], line=self.line, ts=self.answer_ts)

    def part(self, part: dict[str, Any]) -> None:
        kind = part.get("kind")
        if kind in (None, "markdownContent", "markdownVuln"):
            value = part.get("value", obj(part.get("content")).get("value"))
            self.texts.append(text_of(value) if not isinstance(value, dict) else "")
        elif kind == "inlineReference":
            self.texts.append(_reference(part))
        elif kind == "thinking":
            value = part.get("value")
            if isinstance(value, list):
                text = "".join(v for v in value if isinstance(v, str))
            else:
                text = text_of(value)
            if text.strip():
                self.flush()
                self.thoughts += 1
                self.convo.thinking(
                    f"{self.rid}#thinking{self.thoughts}", text, line=self.line, ts=self.answer_ts
                )
        elif kind in ("toolInvocationSerialized", "toolInvocation"):
            self.flush()
            self.tool(part)
        elif kind in ("textEditGroup", "notebookEditGroup"):
            self.flush()  # the text before an edit and the text after it are apart

    def flush(self) -> None:
        text = "".join(self.texts).strip()
        self.texts = []
        if text:
            self.runs += 1
            mid = self.rid + ("#response" if self.runs == 1 else f"#response{self.runs}")
            self.convo.assistant(mid, text, line=self.line, ts=self.answer_ts)

    def tool(self, part: dict[str, Any]) -> None:
        call_id = native_id(part.get("toolCallId")) or f"{self.rid}#call{len(self.convo.tools)}"
        name = text_of(part.get("toolId")) or None
        data = obj(part.get("toolSpecificData"))
        invoked = _message_text(part.get("invocationMessage"))
        if call_id in self.arguments:
            arguments = self.arguments[call_id]
        else:
            command = text_of(obj(data.get("commandLine")).get("original")) or text_of(
                data.get("command")
            )
            shown = invoked or _message_text(part.get("pastTenseMessage"))
            arguments = {k: v for k, v in (("command", command), ("message", shown)) if v} or None
        self.convo.call(call_id, name, arguments, line=self.line, ts=self.answer_ts)
        output = ""
        if call_id in self.results:
            output = _tool_result_text(self.results[call_id])
        if not output:
            terminal = obj(data.get("terminalCommandOutput")) or obj(data.get("output"))
            output = text_of(terminal.get("text")) or text_of(data.get("output"))
        if not output:
            output = _details_text(part.get("resultDetails"))
        if not output and part.get("isComplete"):
            output = _message_text(part.get("pastTenseMessage"))
        if output:
            failed = bool(obj(part.get("resultDetails")).get("isError"))
            rid = f"{call_id}#result"
            self.convo.result(
                rid, call_id, output, line=self.line, ts=self.answer_ts, is_error=failed
            )


class VSCodeCopilotImporter:
    name = "vscode-copilot"
    agent = "vscode-copilot"
    priority = 58
    locations = user_locations("workspaceStorage", (f"{_UUID}.json", f"{_UUID}.jsonl"), 2) + (
        user_locations("globalStorage/emptyWindowChatSessions", ("*.json", "*.jsonl"), 0)
    )
    not_read = (
        "edits shown in the panel (`textEditGroup`), votes and follow-up suggestions; "
        "the rendered prompt Copilot sent"
    )

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if path.suffix == ".jsonl":
            first = _first_op(head)
            return first is not None and "requests" in first["v"] and "sessionId" in first["v"]
        if path.suffix != ".json":
            return False
        return path.parent.name in _FOLDERS and _is_session_json(read_prefix(path))

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        if _first_op(head) is not None:
            return True
        data = read_prefix(path)
        return bool(_OBJECT.match(data) and _REQUESTS.search(data))

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        problems: list[tuple[int, str]] = []
        log: _Log | None = None
        if path.suffix == ".jsonl" or _first_op(read_head(path)) is not None:
            log = _replay(path)
            state, problems = log.state, log.problems
        else:
            try:
                state = obj(json.loads(path.read_bytes()))
            except (ValueError, RecursionError) as exc:
                return FileParse((), ((1, f"not JSON: {exc}"),))
        if not isinstance(state.get("requests"), list):
            problems.append((1, "no `requests` list"))
        listed = state["requests"] if isinstance(state.get("requests"), list) else []
        header = {k: v for k, v in state.items() if k != "requests"}
        records = [
            (
                1,
                json.dumps(header, ensure_ascii=False, sort_keys=True).encode(
                    "utf-8", "backslashreplace"
                ),
                "session",
            )
        ]
        convo = Conversation()
        for index, request in enumerate(listed):
            if not isinstance(request, dict):
                continue
            if log is not None:  # a log's records are its lines
                lines = tuple(sorted(log.formed.get(index) or {1}))
            else:  # a whole file: one record per request
                lines = (index + 2,)
                raw = json.dumps(request, ensure_ascii=False, sort_keys=True).encode(
                    "utf-8", "backslashreplace"
                )
                records.append((index + 2, raw, "request"))
            _Request(convo, lines, request).read()
        if log is not None:
            records = log.records
        problems.extend(convo.sink.problems)
        sid = native_id(state.get("sessionId")) or path.stem
        cwd = _workspace_folder(path)
        title = text_of(state.get("customTitle")).strip() or None
        session = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=norm_time(state.get("creationDate")) or convo.started(),
            title=title,
            cwd=cwd,
            source_path=str(path),
        )
        return FileParse((session,), tuple(sorted(problems)))


register(VSCodeCopilotImporter())

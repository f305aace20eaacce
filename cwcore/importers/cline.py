"""Cline and Roo Code (VS Code extensions; Roo Code is a Cline fork): one folder per task.

``<User>/globalStorage/saoudrizwan.claude-dev/tasks/<taskId>/`` (Cline; its CLI and standalone
builds use ``~/.cline/data/tasks/<taskId>/``) and ``…/rooveterinaryinc.roo-cline/tasks/<taskId>/``
(Roo Code) hold ``api_conversation_history.json`` — the conversation sent to the model: a JSON
array of Anthropic ``MessageParam`` objects (``role``, ``content`` string or blocks) to which
Cline adds ``ts``, ``id``, ``modelInfo`` and ``metrics`` and Roo Code ``ts``, ``isSummary`` and
standalone ``type: "reasoning"`` items —, ``ui_messages.json`` (what the panel shows:
``ClineMessage`` objects ``{ts, type: "say" | "ask", say?, ask?, text?, reasoning?, partial?,
conversationHistoryIndex?}``), ``task_metadata.json`` (Cline: ``model_usage``,
``files_in_context``) and ``history_item.json`` (Roo Code: ``id``, ``workspace``,
``parentTaskId``…).

``api_conversation_history.json`` is the session's entry file; the others are companions read
for times, the model and the folder. A task folder without it (``ui_messages.json`` alone) is
read from ``ui_messages.json``.

What becomes what (docs/importers.md): each array entry is an event (numbered from 1) and its
messages have ids ``L<n>`` (``L<n>#<k>`` for its k-th part). In a ``user`` entry the user's words
are the text of ``<task>``, ``<feedback>``, ``<user_message>`` (real user messages) or a plain
text block; ``<environment_details>`` and the ``[TASK RESUMPTION]`` notice are host context (kept
in the event only); a ``[<tool> for '…'] Result:`` block with the text blocks after it, and each
``tool_result`` block, is a tool result. In an ``assistant`` entry ``thinking`` blocks and
``<thinking>`` text are thinking, text blocks ONE assistant message, each ``tool_use`` block —
or, in the older XML protocol, each ``<tool_name>…</tool_name>`` element of a known tool — a
tool call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cwcore.importers.base import Location, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    blocks_text,
    canonical_json,
    native_id,
    norm_time,
    project_from_cwd,
)
from cwcore.importers.convo import Conversation, count, obj, text_of
from cwcore.importers.lines import read_prefix
from cwcore.importers.vscode_paths import user_locations
from cwcore.model import FileParse, ParsedSession, Usage

API = "api_conversation_history.json"
UI = "ui_messages.json"
META = "task_metadata.json"
HISTORY = "history_item.json"
ROO_EXTENSION = "rooveterinaryinc.roo-cline"
CLINE_EXTENSION = "saoudrizwan.claude-dev"
#: How much of a file the sniffers look at: the arrays are written as one line.
_PREFIX = 64 * 1024

#: Tools of the XML protocol (Cline's and Roo Code's), written as ``<name><param>…</param></name>``.
XML_TOOLS = frozenset(
    {
        "access_mcp_resource",
        "act_mode_respond",
        "apply_diff",
        "apply_patch",
        "ask_followup_question",
        "attempt_completion",
        "browser_action",
        "codebase_search",
        "condense",
        "execute_command",
        "fetch_instructions",
        "generate_image",
        "insert_content",
        "list_code_definition_names",
        "list_files",
        "load_mcp_documentation",
        "new_rule",
        "new_task",
        "plan_mode_respond",
        "read_file",
        "replace_in_file",
        "report_bug",
        "run_slash_command",
        "search_and_replace",
        "search_files",
        "summarize_task",
        "switch_mode",
        "update_todo_list",
        "use_mcp_tool",
        "web_fetch",
        "web_search",
        "write_to_file",
    }
)
_XML_CALL = re.compile(r"<(" + "|".join(sorted(XML_TOOLS)) + r")>(.*?)(?:</\1>|\Z)", re.S)
_XML_PARAM = re.compile(r"<([a-z_]+)>(.*?)</\1>", re.S)
_THINKING = re.compile(r"<thinking>(.*?)(?:</thinking>|\Z)", re.S)
_RESULT_HEAD = re.compile(r"\s*\[([A-Za-z_-]+)(?: for [^\n]*?)?\] Result:[ \t]*\n?")
#: Wrappers around the user's own words (Cline: task, feedback; Roo Code: user_message).
_USER_WORDS = re.compile(r"<(task|feedback|user_message)>\n?(.*?)\n?</\1>", re.S)
#: Context Cline attaches to the user's words (mentions' contents).
_ATTACHED = re.compile(
    r"<(file_content|folder_content|url_content|workspace_diagnostics|git_working_changes|"
    r"terminal_output)\b[^>]*>.*?</\1>",
    re.S,
)
_ENVIRONMENT = "<environment_details>"
_RESUMPTION = "[TASK RESUMPTION]"
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")
_ERROR_RESULTS = ("The tool execution failed with the following error:", "The user denied this")


def _stamp(value: object) -> str | None:
    """A ``ts``: epoch milliseconds (a number too small for that is taken as seconds)."""
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value < 1e11:
        value = value * 1000
    return norm_time(value)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError):
        return None


_ARRAY = re.compile(rb"\A\s*\[\s*(?:\]|\{)")
_API_KEYS = re.compile(rb'"role"\s*:\s*"(?:user|assistant)"')
_UI_KEYS = re.compile(rb'"type"\s*:\s*"(?:say|ask)"')


def _shape(path: Path) -> str | None:
    """``api`` for an array of role messages, ``ui`` for an array of say/ask messages."""
    data = read_prefix(path, _PREFIX)
    if not _ARRAY.match(data):
        return None
    if _API_KEYS.search(data):
        return "api"
    if _UI_KEYS.search(data):
        return "ui"
    return None


def _is_roo(path: Path) -> bool:
    return ROO_EXTENSION in path.parts or (path.parent / HISTORY).is_file()


@dataclass
class _Companions:
    """What the task folder's other files tell: times per history index, models, the folder."""

    started: str | None = None
    times: dict[int, str] = field(default_factory=dict)  # api index -> earliest ui time
    models: list[tuple[str, str]] = field(default_factory=list)  # (time, model), in order
    history: dict[str, Any] = field(default_factory=dict)


def _companions(folder: Path) -> _Companions:
    out = _Companions()
    ui = _read_json(folder / UI)
    for item in ui if isinstance(ui, list) else ():
        item = obj(item)
        ts = _stamp(item.get("ts"))
        if ts is None:
            continue
        if out.started is None or ts < out.started:
            out.started = ts
        index = item.get("conversationHistoryIndex")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            continue
        if index not in out.times or ts < out.times[index]:
            out.times[index] = ts
    meta = obj(_read_json(folder / META))
    usage = meta.get("model_usage")
    for entry in usage if isinstance(usage, list) else ():
        entry = obj(entry)
        model = text_of(entry.get("model_id"))
        if model:
            out.models.append((_stamp(entry.get("ts")) or "", model))
    out.history = obj(_read_json(folder / HISTORY))
    return out


def _model_at(models: list[tuple[str, str]], ts: str | None) -> str | None:
    """The model in use at ``ts`` (the last one chosen before it), else the first one."""
    if not models:
        return None
    if ts:
        chosen = [m for t, m in models if t and t <= ts]
        if chosen:
            return chosen[-1]
    return models[0][1]


def _usage(metrics: object) -> Usage | None:
    tokens = obj(obj(metrics).get("tokens"))
    cached = count(tokens.get("cached"))
    usage = Usage(
        input=max(count(tokens.get("prompt")) - cached, 0),
        output=count(tokens.get("completion")),
        cache_read=cached,
    )
    return usage or None


def _xml_input(body: str) -> Any:
    params = {name: value.strip("\n") for name, value in _XML_PARAM.findall(body)}
    return params or body.strip()


class _Reader:
    """Turns the entries of an ``api_conversation_history.json`` into messages."""

    def __init__(self, companions: _Companions) -> None:
        self.convo = Conversation()
        self.extra = companions
        self.pending: dict[str, list[str]] = {}  # XML tool name -> unanswered call ids
        self.cwd: str | None = None

    def entry(self, n: int, item: dict[str, Any]) -> None:
        # the task's first message was said when the panel showed it
        ts = _stamp(item.get("ts")) or (self.extra.started if n == 1 else None)
        ts = ts or self.extra.times.get(n - 1)
        base = f"L{n}"
        if item.get("type") == "reasoning":  # Roo Code: a reasoning item of its own
            summary = item.get("summary")
            said = blocks_text(summary, text_types=("summary_text", "text")) or text_of(
                item.get("text")
            )
            self.convo.thinking(f"{base}#thinking", said, line=n, ts=ts)
            return
        role = item.get("role")
        content = item.get("content")
        if item.get("isSummary"):
            self.convo.system(base, blocks_text(content), line=n, ts=ts, kind="summary")
            return
        if role == "user":
            self.user(n, base, content, ts)
        elif role == "assistant":
            self.assistant(n, base, item, content, ts)

    # -- user entries ---------------------------------------------------------------------------

    def user(self, n: int, base: str, content: Any, ts: str | None) -> None:
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        words: list[str] = []  # the user's own words, in order
        host: list[str] = []  # host text that is neither context nor a result
        results: list[tuple[str | None, str | None, list[str], bool]] = []
        current: list[str] | None = None  # the text blocks of the open XML result
        for block in blocks:
            kind = block.get("type")
            if kind == "tool_result":
                current = None
                call = native_id(block.get("tool_use_id"))
                out = block.get("content")
                text = out if isinstance(out, str) else blocks_text(out)
                if not text and out not in (None, "", []):
                    text = canonical_json(out)
                results.append((call, None, [text], bool(block.get("is_error"))))
                words += [w for w in self._words(text) if w]
                continue
            if kind in ("image", "document"):
                (current if current is not None else words).append(f"[{kind}]")
                continue
            if kind != "text":
                continue
            text = text_of(block.get("text"))
            stripped = text.lstrip()
            if stripped.startswith(_ENVIRONMENT):
                current = None
                found = _CWD.search(text)
                if found and self.cwd is None:
                    self.cwd = found.group(1)
                continue
            if stripped.startswith(_RESUMPTION):  # host notice; new words in <user_message>
                current = None
                words += [w for w in self._words(text) if w]
                continue
            head = _RESULT_HEAD.match(text)
            if head:
                current = [text[head.end() :]] if text[head.end() :].strip() else []
                results.append((None, head.group(1), current, False))
                words += [w for w in self._words(text) if w]
                continue
            if current is not None:
                current.append(text)
                words += [w for w in self._words(text) if w]
                continue
            typed = self._words(text)
            if typed:
                words += [w for w in typed if w]
            elif stripped.startswith("<"):
                host.append(text.strip())
            elif stripped:
                words.append(_ATTACHED.sub("", text).strip())
        for k, (call, name, texts, failed) in enumerate(results, start=1):
            text = "\n\n".join(t for t in texts if t.strip())
            if call is None and name is not None:
                waiting = self.pending.get(name) or []
                call = waiting.pop(0) if waiting else None
            failed = failed or text.lstrip().startswith(_ERROR_RESULTS)
            rid = f"{call}#result" if call else f"{base}#{k}"
            if rid in self.convo.sink.ids:  # a call answered twice keeps both answers
                rid = f"{base}#{k}"
            self.convo.result(rid, call, text, line=n, ts=ts, is_error=failed, name=name)
        if host:
            self.convo.add(f"{base}#host", "user", "text", "\n\n".join(host), line=n, ts=ts)
        said = "\n\n".join(w for w in words if w.strip())
        if said.strip():
            self.convo.user(base, said, line=n, ts=ts)

    @staticmethod
    def _words(text: str) -> list[str]:
        return [_ATTACHED.sub("", inner).strip() for _, inner in _USER_WORDS.findall(text)]

    # -- assistant entries ----------------------------------------------------------------------

    def assistant(
        self, n: int, base: str, item: dict[str, Any], content: Any, ts: str | None
    ) -> None:
        convo = self.convo
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        blocks = [b for b in blocks if isinstance(b, dict)] if isinstance(blocks, list) else []
        model = text_of(obj(item.get("modelInfo")).get("modelId")) or _model_at(
            self.extra.models, ts
        )
        convo.begin_response(model, _usage(item.get("metrics")))
        thoughts: list[str] = []
        reasoning = text_of(item.get("reasoning_content"))
        if reasoning:
            thoughts.append(reasoning)
        texts: list[str] = []
        calls: list[tuple[str, str, Any]] = []  # (id, name, input)
        for k, block in enumerate(blocks, start=1):
            kind = block.get("type")
            if kind == "thinking":
                thoughts.append(text_of(block.get("thinking")))
            elif kind == "reasoning":  # Roo Code: the provider's reasoning, put first
                summary = blocks_text(block.get("summary"), text_types=("summary_text", "text"))
                thoughts.append(text_of(block.get("text")) or summary)
            elif kind == "text":
                text = text_of(block.get("text"))
                thoughts += [t.strip() for t in _THINKING.findall(text)]
                text = _THINKING.sub("", text)
                for name, body in _XML_CALL.findall(text):
                    calls.append((f"{base}#call{len(calls) + 1}", name, _xml_input(body)))
                texts.append(_XML_CALL.sub("", text).strip())
            elif kind == "tool_use":
                call_id = native_id(block.get("id")) or f"{base}#{k}"
                calls.append((call_id, text_of(block.get("name")), block.get("input")))
        for k, thought in enumerate((t for t in thoughts if t.strip()), start=1):
            convo.thinking(f"{base}#thinking{k}", thought, line=n, ts=ts)
        convo.assistant(base, "\n\n".join(t for t in texts if t), line=n, ts=ts)
        for call_id, name, arguments in calls:
            convo.call(call_id, name or None, arguments, line=n, ts=ts)
            if call_id.startswith(f"{base}#call"):
                self.pending.setdefault(name, []).append(call_id)


class _UiReader:
    """A task folder without its API history: the panel's ``ui_messages.json``."""

    def __init__(self) -> None:
        self.convo = Conversation()
        self.command: str | None = None  # the call waiting for its output
        self.seen_task = False

    def entry(self, n: int, item: dict[str, Any]) -> None:
        if item.get("partial"):
            return
        convo = self.convo
        base = f"L{n}"
        ts = _stamp(item.get("ts"))
        kind, say, ask = item.get("type"), item.get("say"), item.get("ask")
        what = say if kind == "say" else ask
        text = text_of(item.get("text"))
        if what == "api_req_started":
            info = _loads(text)
            usage = Usage(
                input=count(info.get("tokensIn")),
                output=count(info.get("tokensOut")),
                cache_read=count(info.get("cacheReads")),
                cache_write=count(info.get("cacheWrites")),
            )
            convo.begin_response(None, usage or None)
            return
        if what in ("task", "text") and not self.seen_task:
            self.seen_task = True
            convo.user(base, text, line=n, ts=ts)
            return
        if what == "user_feedback":
            convo.user(base, text, line=n, ts=ts)
            return
        reasoning = text_of(item.get("reasoning")) if what == "text" else ""
        if what == "reasoning" or reasoning:
            convo.thinking(f"{base}#thinking", reasoning or text, line=n, ts=ts)
        if what in ("text", "completion_result", "plan_mode_respond", "act_mode_respond"):
            said = text_of(_loads(text).get("response")) or text
            convo.assistant(base, said, line=n, ts=ts)
        elif what == "followup":
            convo.assistant(base, text_of(_loads(text).get("question")) or text, line=n, ts=ts)
        elif what in ("tool", "use_mcp_server", "command", "browser_action_launch"):
            args = _loads(text) or text
            name = text_of(obj(args).get("tool")) or (
                "execute_command" if what == "command" else what
            )
            convo.call(base, name, args, line=n, ts=ts)
            self.command = base
        elif what in ("command_output", "mcp_server_response", "browser_action_result"):
            call = self.command
            rid = f"{call}#result" if call and f"{call}#result" not in convo.sink.ids else base
            convo.result(rid, call, text, line=n, ts=ts)
            self.command = None
        elif what in ("error", "diff_error", "clineignore_error"):
            convo.system(base, text, line=n, ts=ts)


def _loads(text: str) -> dict[str, Any]:
    if not text.lstrip().startswith("{"):
        return {}
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


class ClineImporter:
    """Cline's task folders; Roo Code (a Cline fork) writes the same files."""

    def __init__(self, name: str, extension: str, locations: tuple[Location, ...]) -> None:
        self.name = self.agent = name
        self.extension = extension
        self.priority = 56 if name == "roo-code" else 57  # roo first: it checks the folder
        self.locations = locations
        self.not_read = (
            "the panel's own messages beside the API history (checkpoints, approvals, costs); "
            "`context_history.json`; images' data"
        )

    def _entry(self, path: Path) -> bool:
        """Whether ``path`` is the file a task is read from (the API history, else the panel
        messages of a folder without one)."""
        if path.name == API:
            return True
        return path.name == UI and not (path.parent / API).is_file()

    def is_companion(self, path: Path) -> bool:
        """True for a task folder's files that are read with its API history."""
        if path.name in (META, HISTORY, "context_history.json"):
            return (path.parent / API).is_file() or (path.parent / UI).is_file()
        return path.name == UI and (path.parent / API).is_file()

    def companions(self, path: Path) -> list[Path]:
        return [path.with_name(n) for n in (UI, META, HISTORY) if n != path.name]

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if not self._entry(path) or _shape(path) is None:
            return False
        return _is_roo(path) == (self.name == "roo-code")

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return _shape(path) is not None

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        data = _read_json(path)
        problems: list[tuple[int, str]] = []
        if not isinstance(data, list):
            return FileParse((), ((1, "not a JSON array of messages"),))
        folder = path.parent
        ui = _shape(path) == "ui"
        extra = (
            _Companions(history=obj(_read_json(folder / HISTORY))) if ui else _companions(folder)
        )
        reader: _Reader | _UiReader = _UiReader() if ui else _Reader(extra)
        records: list[tuple[int, bytes, str]] = []
        for n, item in enumerate(data, start=1):
            if not isinstance(item, dict):
                problems.append((n, f"entry {n} is not a JSON object"))
                continue
            raw = json.dumps(item, ensure_ascii=False, sort_keys=True).encode(
                "utf-8", "backslashreplace"
            )
            kind = text_of(item.get("role")) or text_of(item.get("say")) or text_of(item.get("ask"))
            records.append((n, raw, kind or text_of(item.get("type")) or "entry"))
            if not ui and "role" not in item and item.get("type") != "reasoning":
                problems.append((n, f"entry {n}: no `role`"))
                continue
            reader.entry(n, item)
        convo = reader.convo
        problems.extend(convo.sink.problems)
        history = extra.history
        sid = native_id(history.get("id")) or native_id(folder.name) or path.stem
        cwd = text_of(history.get("workspace")) or (
            reader.cwd if isinstance(reader, _Reader) else None
        )
        parent = native_id(history.get("parentTaskId"))
        started = _stamp(history.get("ts")) or extra.started or convo.started()
        session = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(convo.messages),
            started=started,
            cwd=cwd or None,
            parent_session=parent,
            lineage=(parent,) if parent else (),
            source_path=str(path),
        )
        return FileParse((session,), tuple(sorted(problems)))


def _task_locations(extension: str) -> tuple[Location, ...]:
    return user_locations(f"globalStorage/{extension}/tasks", (API,), 1)


register(
    ClineImporter(
        "cline",
        CLINE_EXTENSION,
        (Location("~/.cline/data/tasks", (API,), depth=1), *_task_locations(CLINE_EXTENSION)),
    )
)
register(ClineImporter("roo-code", ROO_EXTENSION, _task_locations(ROO_EXTENSION)))

"""OpenHands: a session is a folder holding one JSON file per event.

* The current CLI (built on the OpenHands agent SDK) writes ``~/.openhands/conversations/<id>/``:
  ``base_state.json`` (``id``, ``agent.llm.model``, ``workspace.working_dir``…) and
  ``events/event-<5-digit index>-<event id>.json`` (older SDK builds: ``event-<index>.json``).
  An event is ``{id, timestamp, source: user|agent|environment, kind, …}``: ``MessageEvent``
  (``llm_message: {role, content}``, ``reasoning_content``, ``thinking_blocks``),
  ``ActionEvent`` (``thought``, ``tool_name``, ``tool_call_id``, ``tool_call: {name,
  arguments}``, ``action``, ``llm_response_id``), ``ObservationEvent`` (``tool_call_id``,
  ``observation: {content, is_error}``), ``AgentErrorEvent``, ``UserRejectObservation``,
  ``SystemPromptEvent``, ``Condensation``…
* The earlier server and CLI (V0) wrote ``~/.openhands/sessions/<sid>/events/<id>.json``
  (FileStore ``sessions/{sid}/events/{id}.json``, ids from 0) and ``metadata.json``: an event
  is ``{id, timestamp, source, message, action, args, tool_call_metadata}`` or ``{…,
  observation, content, extras, cause, success}``.

The file ``cw import``/``cw sync`` starts from (the session's *entry*) is ``base_state.json``
when there is one, else the lowest-numbered event file; every other file of the folder is a
companion (``is_companion``). Events are records numbered by the event index (+2; record 1 is
``base_state.json`` or ``metadata.json``), so a session that grows keeps its numbers.

What becomes what (docs/importers.md): a user message -> a real user message (id: the event
id); an agent message -> thinking and ONE assistant message; an action -> its thought as
assistant text, then a tool call (id: the tool call id); an observation -> the tool result
(``<tool call id>#result``) paired by tool call id (V0: by ``cause``).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from cwcore.errors import InvalidInput
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

BASE_STATE = "base_state.json"
METADATA = "metadata.json"
#: Largest event or state file read (one event is one JSON object).
MAX_EVENT_BYTES = 64 << 20
_V1_NAME = re.compile(r"^event-(\d+)(?:-[0-9A-Za-z-]+)?\.json$")
_V0_NAME = re.compile(r"^(\d+)\.json$")
_V1_KINDS = frozenset(
    {
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
        "SystemPromptEvent",
        "AgentErrorEvent",
        "UserRejectObservation",
        "PauseEvent",
        "Condensation",
        "CondensationRequest",
        "CondensationSummaryEvent",
        "ConversationStateUpdateEvent",
    }
)
#: V0 actions and observations that carry no conversation (agent state, memory recall,
#: the system prompt): metadata events.
_V0_METADATA = frozenset(
    {"system", "recall", "change_agent_state", "agent_state_changed", "null", "condensation"}
)


def _index(name: str) -> int | None:
    match = _V1_NAME.match(name) or _V0_NAME.match(name)
    return int(match.group(1)) if match else None


def _session_dir(path: Path) -> Path | None:
    """The session folder a file belongs to, or None when it is not a session's file."""
    if path.name in (BASE_STATE, METADATA):
        return path.parent if (path.parent / "events").is_dir() else None
    if path.parent.name == "events" and _index(path.name) is not None:
        return path.parent.parent
    return None


def _event_files(folder: Path) -> list[tuple[int, Path]]:
    events = folder / "events"
    try:
        names = [p for p in events.iterdir() if p.is_file()]
    except OSError:
        return []
    out = []
    for p in names:
        index = _index(p.name)
        if index is not None:
            out.append((index, p))
    return sorted(out)


def _entry(folder: Path) -> Path | None:
    if (folder / BASE_STATE).is_file():
        return folder / BASE_STATE
    files = _event_files(folder)
    return files[0][1] if files else None


def _load(path: Path) -> tuple[Any, str]:
    try:
        if path.stat().st_size > MAX_EVENT_BYTES:
            return None, f"over {MAX_EVENT_BYTES:,} bytes (skipped)"
        return json.loads(path.read_bytes()), ""
    except OSError as exc:
        return None, f"unreadable: {exc}"
    except RecursionError:
        return None, "not JSON: nested too deeply"
    except ValueError as exc:
        return None, f"not JSON: {exc}"


def _is_event(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    if value.get("kind") in _V1_KINDS:
        return True
    has_kind = isinstance(value.get("action"), str) or isinstance(value.get("observation"), str)
    return has_kind and value.get("source") in ("user", "agent", "environment")


def _content_text(content: object) -> str:
    """Text of an SDK content list (``[{type: text, text}]``) or a plain string."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    pieces = []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, str):
            pieces.append(block)
        elif isinstance(block, dict):
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                pieces.append(block["text"])
            elif block.get("type") in ("image", "image_url") or "image_urls" in block:
                pieces.append("[image]")
    return "\n\n".join(p for p in pieces if p)


def _thinking(event: dict[str, Any]) -> list[str]:
    out = []
    message = obj(event.get("llm_message"))
    for source in (event, message):
        reasoning = text_of(source.get("reasoning_content"))
        if reasoning.strip() and reasoning not in out:
            out.append(reasoning)
        for block in source.get("thinking_blocks") or []:
            text = text_of(obj(block).get("thinking"))
            if text.strip() and text not in out:
                out.append(text)
    return out


def _observation_text(observation: object) -> str:
    """An observation's text: its ``content``, else an ``output``/``error`` field, else the
    whole observation as compact JSON (never dropped)."""
    o = obj(observation)
    if not o:
        return text_of(observation) or ("" if observation is None else canonical_json(observation))
    text = _content_text(o.get("content"))
    for key in ("output", "error", "text", "message"):
        if not text.strip() and isinstance(o.get(key), str):
            text = o[key]
    if not text.strip():
        rest = {k: v for k, v in o.items() if k != "kind"}
        text = canonical_json(rest) if rest else ""
    return text


class _Reader:
    """Builds one session's conversation from its events, in index order."""

    def __init__(self, model: str | None) -> None:
        self.convo = Conversation()
        self.model = model
        self.response: str | None = None  # the LLM response the last action belonged to
        self.calls: dict[str, str] = {}  # V0 action event id -> tool call id
        self.cwd: str | None = None

    # --- agent SDK (V1) -------------------------------------------------------------------

    def v1(self, event: dict[str, Any], line: int) -> None:
        kind = event.get("kind")
        eid = native_id(event.get("id")) or f"e{line}"
        ts = norm_time(event.get("timestamp"))
        convo = self.convo
        if kind == "MessageEvent":
            message = obj(event.get("llm_message"))
            text = _content_text(message.get("content"))
            if event.get("source") == "user" or message.get("role") == "user":
                convo.user(eid, text, line=line, ts=ts)
                return
            self._respond(event.get("llm_response_id") or eid)
            for n, thought in enumerate(_thinking(event), start=1):
                convo.thinking(f"{eid}#thinking{n}", thought, line=line, ts=ts)
            convo.assistant(eid, text, line=line, ts=ts)
        elif kind == "ActionEvent":
            self._respond(event.get("llm_response_id") or eid)
            for n, thought in enumerate(_thinking(event), start=1):
                convo.thinking(f"{eid}#thinking{n}", thought, line=line, ts=ts)
            convo.assistant(f"{eid}#text", _content_text(event.get("thought")), line=line, ts=ts)
            call = obj(event.get("tool_call"))
            call_id = native_id(event.get("tool_call_id")) or native_id(call.get("id")) or eid
            name = text_of(event.get("tool_name")) or text_of(call.get("name")) or None
            arguments = parse_arguments(call.get("arguments"))
            if arguments is None:
                action = obj(event.get("action"))
                arguments = {k: v for k, v in action.items() if k != "kind"} or None
            convo.call(call_id, name, arguments, line=line, ts=ts)
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            result_of = native_id(event.get("tool_call_id"))
            if kind == "ObservationEvent":
                observation = obj(event.get("observation"))
                text = _observation_text(event.get("observation"))
                failed = bool(observation.get("is_error"))
                working = text_of(obj(observation.get("metadata")).get("working_dir"))
                self.cwd = self.cwd or working or None
            elif kind == "AgentErrorEvent":
                text, failed = text_of(event.get("error")) or canonical_json(event), True
            else:
                text = text_of(event.get("rejection_reason")) or "rejected by the user"
                failed = True
            if result_of is None:
                convo.system(eid, text, line=line, ts=ts)
                return
            name = text_of(event.get("tool_name")) or None
            convo.result(
                f"{result_of}#result", result_of, text, line=line, ts=ts, is_error=failed, name=name
            )
        elif kind in ("Condensation", "CondensationSummaryEvent"):
            convo.system(eid, text_of(event.get("summary")), line=line, ts=ts, kind="summary")

    def _respond(self, response: object) -> None:
        key = str(response)
        if key != self.response:
            self.response = key
            self.convo.begin_response(self.model)

    # --- V0 server/CLI ---------------------------------------------------------------------

    def v0(self, event: dict[str, Any], line: int) -> None:
        convo = self.convo
        raw_id = event.get("id")
        eid = f"e{raw_id}" if isinstance(raw_id, int) else f"e{line}"
        ts = norm_time(event.get("timestamp"))
        source = event.get("source")
        action = event.get("action")
        observation = event.get("observation")
        if action in _V0_METADATA or observation in _V0_METADATA:
            return
        if isinstance(action, str):
            args = obj(event.get("args"))
            if action == "message":
                text = text_of(args.get("content")) or text_of(event.get("message"))
                if args.get("image_urls"):
                    text = "\n\n".join(t for t in (text, "[image]") if t)
                if source == "user":
                    convo.user(eid, text, line=line, ts=ts)
                else:
                    self._v0_response(event)
                    convo.assistant(eid, text, line=line, ts=ts)
                return
            self._v0_response(event)
            thought = text_of(args.get("thought"))
            if action == "finish":
                thought = "\n\n".join(
                    t for t in (thought, text_of(args.get("final_thought"))) if t.strip()
                )
            convo.assistant(f"{eid}#text", thought, line=line, ts=ts)
            meta = obj(event.get("tool_call_metadata"))
            call_id = native_id(meta.get("tool_call_id")) or eid
            name = text_of(meta.get("function_name")) or action
            arguments = self._v0_arguments(meta, call_id)
            if arguments is None:
                arguments = {k: v for k, v in args.items() if k != "thought"} or None
            if isinstance(raw_id, int):
                self.calls[str(raw_id)] = call_id
            convo.call(call_id, name, arguments, line=line, ts=ts)
        elif isinstance(observation, str):
            cause = event.get("cause")
            answers = native_id(obj(event.get("tool_call_metadata")).get("tool_call_id"))
            answers = answers or self.calls.get(str(cause))
            text = text_of(event.get("content")) or text_of(event.get("message"))
            failed = observation in ("error", "user_rejected") or event.get("success") is False
            if answers is None:
                convo.system(eid, text, line=line, ts=ts)
                return
            convo.result(f"{answers}#result", answers, text, line=line, ts=ts, is_error=failed)

    def _v0_response(self, event: dict[str, Any]) -> None:
        response = obj(obj(event.get("tool_call_metadata")).get("model_response"))
        key = text_of(response.get("id")) or f"event-{event.get('id')}"
        if key == self.response:
            return
        self.response = key
        u = obj(response.get("usage"))
        cached = count(obj(u.get("prompt_tokens_details")).get("cached_tokens"))
        usage = Usage(
            input=max(count(u.get("prompt_tokens")) - cached, 0),
            output=count(u.get("completion_tokens")),
            cache_read=cached,
        )
        model = text_of(response.get("model")) or self.model
        self.convo.begin_response(model, usage or None)

    @staticmethod
    def _v0_arguments(meta: dict[str, Any], call_id: str) -> Any:
        choices = obj(meta.get("model_response")).get("choices")
        for choice in choices if isinstance(choices, list) else []:
            for call in obj(obj(choice).get("message")).get("tool_calls") or []:
                if obj(call).get("id") == call_id:
                    return parse_arguments(obj(obj(call).get("function")).get("arguments"))
        return None


class OpenHandsImporter:
    name = "openhands"
    agent = "openhands"
    priority = 63
    locations: tuple[Location, ...] = (
        Location("~/.openhands/conversations", (BASE_STATE,), depth=1),
        Location("~/.openhands/sessions", ("0.json",), depth=2),
    )
    not_read = (
        "V0 `event_cache/` pages (copies of the events), `agent_state.pkl`, per-response "
        "usage of the agent SDK (kept in `base_state.json` statistics)"
    )

    def is_companion(self, path: Path) -> bool:
        """A file of a session folder that is not where the session is read from."""
        folder = _session_dir(path)
        return folder is not None and _entry(folder) != path

    def companions(self, path: Path) -> list[Path]:
        """The session's other files: its events folder, every event file, its state file."""
        folder = _session_dir(path)
        if folder is None or _entry(folder) != path:
            return []
        out = [folder / "events", *(p for _, p in _event_files(folder))]
        out += [folder / name for name in (BASE_STATE, METADATA)]
        return [p for p in out if p != path]

    def _looks_right(self, path: Path) -> bool:
        value, _ = _load(path)
        if path.name == BASE_STATE:
            return isinstance(value, dict) and isinstance(value.get("id"), str)
        if path.name == METADATA:
            return isinstance(value, dict)
        return _is_event(value)

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if path.suffix != ".json" or not head or not head[0].lstrip().startswith(b"{"):
            return False
        folder = _session_dir(path)
        return folder is not None and _entry(folder) == path and self._looks_right(path)

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        if not head or not head[0].lstrip().startswith(b"{"):
            return False
        return _session_dir(path) is not None and self._looks_right(path)

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        folder = _session_dir(path)
        if folder is None:
            raise InvalidInput("not a file of an OpenHands session folder")
        problems: list[tuple[int, str]] = []
        records: list[tuple[int, bytes, str]] = []
        state: dict[str, Any] = {}
        for name in (BASE_STATE, METADATA):
            if (folder / name).is_file():
                value, reason = _load(folder / name)
                if isinstance(value, dict):
                    state = value
                    records.append((1, _compact(value), name.removesuffix(".json")))
                else:
                    problems.append((1, f"{name}: {reason or 'not a JSON object'}"))
                break
        llm = obj(obj(state.get("agent")).get("llm"))
        reader = _Reader(text_of(llm.get("model")) or text_of(state.get("llm_model")) or None)
        for index, file in _event_files(folder):
            line = index + 2
            value, reason = _load(file)
            if not isinstance(value, dict):
                problems.append((line, f"{file.name}: {reason or 'not a JSON object'}"))
                continue
            kind = text_of(value.get("kind")) or text_of(value.get("action"))
            kind = kind or text_of(value.get("observation")) or "event"
            records.append((line, _compact(value), kind))
            if not _is_event(value):
                problems.append((line, f"{file.name}: no `kind`, `action` or `observation`"))
            elif "kind" in value:
                reader.v1(value, line)
            else:
                reader.v0(value, line)
        sid = native_id(state.get("id")) or native_id(state.get("conversation_id"))
        sid = sid or native_id(folder.name) or "openhands-session"
        workspace = obj(state.get("workspace"))
        cwd = text_of(workspace.get("working_dir")) or reader.cwd
        repo = text_of(state.get("selected_repository"))
        title = text_of(state.get("title")).strip() or None
        convo = reader.convo
        started = norm_time(state.get("created_at")) or convo.started()
        v1 = (folder / BASE_STATE).is_file()
        parsed = ParsedSession(
            session_id=sid,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or project_from_cwd(repo) or DEFAULT_PROJECT,
            events=convo.events(sorted(records)),
            messages=tuple(convo.messages),
            started=started,
            title=title,
            cwd=cwd,
            source_path=str(folder),
            resume_command=f"openhands --resume {shlex.quote(sid)}" if v1 else None,
        )
        return FileParse((parsed,), tuple(sorted(problems + convo.sink.problems)))


def _compact(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, sort_keys=True).encode("utf-8", "backslashreplace")


register(OpenHandsImporter())

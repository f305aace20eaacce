"""GitHub Copilot CLI: ``~/.copilot/session-state/<sessionId>/events.jsonl`` (older versions:
``~/.copilot/session-state/<sessionId>.jsonl``).

Every line is an event ``{type, data, id, timestamp, parentId}`` (``id`` optional: ``L<n>``
when absent). What becomes what (docs/importers.md): ``user.message`` -> real user message
(``data.content``), unless the host injected it (a skill's ``<skill-context …>``, or a
``source`` naming a skill: kept, not real); ``assistant.message`` -> its ``reasoningText`` as
thinking, its ``content`` as assistant text, and one tool-call message per ``toolRequests``
entry (id: ``toolCallId``); ``assistant.reasoning`` -> thinking; ``tool.execution_start`` -> a
tool call when no request announced that ``toolCallId``; ``tool.execution_complete`` -> the
tool result (id ``<toolCallId>#result``), paired with its call by ``toolCallId``, an error when
``success`` is false; ``assistant.usage`` -> model and usage of the response;
``session.shutdown`` -> the run's per-model token totals, used only for a run without
``assistant.usage``; ``session.error``/``session.warning`` -> ``system`` text. Every other
event (``session.start``, ``session.model_change``, deltas, turn markers, unknown types) is
metadata, kept verbatim. The session title is the ``name`` (else the ``summary``) of
``workspace.yaml`` beside ``events.jsonl`` when present.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    native_id,
    norm_time,
    parse_arguments,
    project_from_cwd,
    read_jsonl,
)
from cwcore.importers.convo import Conversation, count, text_of
from cwcore.model import FileParse, Message, ParsedSession, Usage

_KNOWN = ("session.start", "user.message", "assistant.message", "tool.execution_start")


def _result_text(data: dict[str, Any]) -> tuple[str, bool]:
    """The output the model saw, and whether the tool failed."""
    failed = data.get("success") is False
    error = data.get("error")
    result = data.get("result")
    if isinstance(result, dict) and ("content" in result or "detailedContent" in result):
        text = text_of(result.get("content")) or text_of(result.get("detailedContent"))
    elif isinstance(result, dict | list):
        text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))  # kept as written
    else:
        text = text_of(result)
    if failed and isinstance(error, dict):
        text = text or text_of(error.get("message"))
    elif failed:
        text = text or text_of(error)
    return text, failed


#: A user message whose text opens with one of these was written by the host (a skill's
#: instructions loaded into the conversation).
HOST_MARKERS = ("<skill-context",)


def _host_prompt(data: dict[str, Any], text: str) -> bool:
    """Whether a ``user.message`` was injected by the host: a skill's context (its ``source``
    names a skill, or its text is a ``<skill-context …>`` wrapper)."""
    source = data.get("source")
    if isinstance(source, str) and source.startswith("skill-"):
        return True
    return text.lstrip().startswith(HOST_MARKERS)


def _shutdown_usage(data: dict[str, Any]) -> list[tuple[str, Usage]]:
    """``(model, usage)`` per model of a ``session.shutdown`` event's ``modelMetrics``: the
    tokens of the run that ended. Its ``inputTokens`` include the cached prompt tokens, which
    cw counts apart."""
    metrics = data.get("modelMetrics")
    out: list[tuple[str, Usage]] = []
    if not isinstance(metrics, dict):
        return out
    for model, entry in metrics.items():
        usage = entry.get("usage") if isinstance(entry, dict) else None
        if not isinstance(model, str) or not isinstance(usage, dict):
            continue
        read, write = count(usage.get("cacheReadTokens")), count(usage.get("cacheWriteTokens"))
        total = Usage(
            input=max(0, count(usage.get("inputTokens")) - read - write),
            output=count(usage.get("outputTokens")),
            cache_read=read,
            cache_write=write,
        )
        if total:
            out.append((model, total))
    return out


def _workspace(path: Path) -> dict[str, str]:
    """The flat ``key: value`` lines of ``workspace.yaml`` beside the events (no YAML parser
    needed: the file is written flat)."""
    out: dict[str, str] = {}
    try:
        lines = (path.parent / "workspace.yaml").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return out
    for raw in lines[:200]:
        key, sep, value = raw.partition(":")
        if sep and key and not key.startswith((" ", "#")):
            out[key.strip()] = value.strip().strip("'\"")
    return out


def _with_shutdown_usage(
    messages: list[Message], shutdowns: list[tuple[int, list[tuple[str, Usage]]]]
) -> list[Message]:
    """The messages with each ``session.shutdown``'s per-model totals (of a run that reported
    no ``assistant.usage``) on that run's assistant messages, latest first: a model's totals go
    to the latest message of the run without usage whose model is that one or unknown, else
    are added to the run's last assistant message, so the session's sums stay whole."""
    out = list(messages)
    start = 0
    for end, totals in shutdowns:
        run = [
            i for i in range(start, end) if out[i].role == "assistant" and out[i].kind != "thinking"
        ]
        start = end
        for model, usage in totals:
            free = [i for i in run if out[i].usage is None and out[i].model in (None, model)]
            if free:
                i = free[-1]
                out[i] = dataclasses.replace(out[i], model=model, usage=usage)
            elif run:
                i = run[-1]
                before = out[i].usage
                summed = before + usage if before is not None else usage
                out[i] = dataclasses.replace(out[i], usage=summed, model=out[i].model or model)
    return out


class CopilotImporter:
    name = "copilot"
    not_read = (
        "shutdown cost (`totalNanoAiu`); `transformedContent`; attachments; `session.info` texts"
    )
    agent = "copilot"
    priority = 45
    locations: tuple[Location, ...] = (Location("~/.copilot/session-state"),)

    def is_companion(self, path: Path) -> bool:
        """A session folder's ``workspace.yaml`` (its title and folder): read with the
        ``events.jsonl`` beside it."""
        return path.name == "workspace.yaml" and (path.parent / "events.jsonl").is_file()

    def companions(self, path: Path) -> list[Path]:
        """A title renamed in ``workspace.yaml`` is a change of the session for ``cw sync``."""
        return [path.parent / "workspace.yaml"] if path.name == "events.jsonl" else []

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        """One event of the format: a known dotted ``type`` with a ``data`` object (the event
        ``id`` is optional: events without one get ``L<n>``)."""
        return any(
            o.get("type") in _KNOWN and isinstance(o.get("data"), dict) for o in json_lines(head)
        )

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return self.sniff(path, head)

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        lines, problems = read_jsonl(path)
        convo = Conversation()
        records: list[tuple[int, bytes, str]] = []
        session_id: str | None = None
        cwd: str | None = None
        started: str | None = None
        model: str | None = None
        reasoning: set[str] = set()
        run_usage = False  # the current run (up to a session.shutdown) reported assistant.usage
        shutdowns: list[tuple[int, list[tuple[str, Usage]]]] = []
        for line in lines:
            obj = line.obj
            kind, data = obj.get("type"), obj.get("data")
            if not isinstance(kind, str) or not isinstance(data, dict):
                problems.append((line.number, "event without a 'type' and a 'data' object"))
                continue
            records.append((line.number, line.raw, kind))
            base = native_id(obj.get("id")) or f"L{line.number}"
            ts = norm_time(obj.get("timestamp"))
            if kind == "session.start":
                session_id = session_id or native_id(data.get("sessionId"))
                context = data.get("context")
                if isinstance(context, dict):
                    cwd = cwd or text_of(context.get("cwd")) or None
                started = started or norm_time(data.get("startTime")) or ts
            elif kind == "session.model_change":
                model = text_of(data.get("newModel")) or model
            elif kind == "user.message":
                said = text_of(data.get("content"))
                real = not _host_prompt(data, said)
                convo.user(base, said, line=line.number, ts=ts, real=real)
            elif kind == "assistant.reasoning":
                said = text_of(data.get("content"))
                if said.strip() and said not in reasoning:
                    reasoning.add(said)
                    convo.thinking(f"{base}#thinking", said, line=line.number, ts=ts)
            elif kind == "assistant.message":
                convo.begin_response(text_of(data.get("model")) or model)
                said = text_of(data.get("reasoningText"))
                if said.strip() and said not in reasoning:
                    reasoning.add(said)
                    convo.thinking(f"{base}#thinking", said, line=line.number, ts=ts)
                convo.assistant(base, text_of(data.get("content")), line=line.number, ts=ts)
                for n, request in enumerate(data.get("toolRequests") or (), start=1):
                    if not isinstance(request, dict):
                        continue
                    request_id = native_id(request.get("toolCallId")) or f"{base}#call{n}"
                    name = text_of(request.get("name")) or None
                    args = parse_arguments(request.get("arguments"))
                    convo.call(request_id, name, args, line=line.number, ts=ts)
            elif kind == "tool.execution_start":
                call_id = native_id(data.get("toolCallId"))
                if call_id and call_id not in convo.sink.ids:
                    name = text_of(data.get("toolName")) or None
                    args = parse_arguments(data.get("arguments"))
                    convo.call(call_id, name, args, line=line.number, ts=ts)
            elif kind == "tool.execution_complete":
                call_id = native_id(data.get("toolCallId"))
                text, failed = _result_text(data)
                convo.result(
                    f"{call_id or base}#result",
                    call_id,
                    text,
                    line=line.number,
                    ts=ts,
                    is_error=failed,
                    name=text_of(data.get("toolName")) or None,
                )
            elif kind == "assistant.usage":
                usage = Usage(
                    input=count(data.get("inputTokens")),
                    output=count(data.get("outputTokens")),
                    cache_read=count(data.get("cacheReadTokens")),
                    cache_write=count(data.get("cacheWriteTokens")),
                )
                convo.attach(text_of(data.get("model")) or model, usage or None)
                run_usage = True
            elif kind == "session.shutdown":
                if not run_usage:  # per-response usage already counts this run's tokens
                    shutdowns.append((len(convo.messages), _shutdown_usage(data)))
                run_usage = False
            elif kind in ("session.error", "session.warning"):
                convo.system(base, text_of(data.get("message")), line=line.number, ts=ts)
        if not records:
            return FileParse((), tuple(problems))
        problems.extend(convo.sink.problems)
        messages = _with_shutdown_usage(convo.messages, shutdowns)
        # workspace.yaml sits in a session's own folder, beside events.jsonl (never beside the
        # older flat <sessionId>.jsonl files, which share one folder)
        workspace = _workspace(path) if path.name == "events.jsonl" else {}
        if path.name == "events.jsonl":
            fallback = native_id(path.parent.name)
        else:
            fallback = native_id(path.stem)
        session_id = session_id or native_id(workspace.get("id")) or fallback or "copilot"
        cwd = cwd or workspace.get("cwd") or None
        session = ParsedSession(
            session_id=session_id,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=convo.events(records),
            messages=tuple(messages),
            started=started or convo.started(),
            title=workspace.get("name") or workspace.get("summary") or None,
            cwd=cwd,
            source_path=str(path),
            resume_command=f"copilot --resume {shlex.quote(session_id)}",
        )
        return FileParse((session,), tuple(sorted(problems)))


register(CopilotImporter())

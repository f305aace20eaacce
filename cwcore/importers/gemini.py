"""Gemini CLI chat recordings: ``~/.gemini/tmp/<projectHash>/chats/session-*.jsonl``.

The JSONL file is an upsert log (gemini-cli ``chatRecordingService``): a metadata line
``{sessionId, projectHash, startTime, …}``, then message records ``{id, timestamp, type, content,
toolCalls?, thoughts?}`` — a record whose ``id`` was seen before REPLACES that message (tool
results and token counts arrive that way) — ``{"$set": {…}}`` metadata patches and
``{"$rewindTo": id}`` lines, which take that message and every later one off the active branch.
Older versions wrote one ``session-*.json`` object with a ``messages`` list (legacy).

What becomes what (docs/importers.md):

* ``user`` -> real user message; ``gemini`` -> assistant text (when visible text remains
  once ``thought`` parts are removed) plus, per ``toolCalls`` entry, a tool-call message (id:
  the call id) and, once it has a result, a tool-result message (id: ``<call id>#result``);
  ``info``/``error``/``warning`` -> ``system`` text (never real user). ``thoughts`` (and
  ``thought`` parts of the content) -> messages of kind ``thinking``, id
  ``<record id>#thinking<n>``, before the record's text; the record's ``model`` and ``tokens``
  (usage: Gemini's ``input`` counts ``cached`` tokens in it, ``thoughts`` are output) go on its
  text message, else its first tool call.
* One message per record id; its ``lines`` are every line that wrote it; it sits where the id
  first appeared.
* Rewound messages stay in the session (events and messages: they are evidence) but are listed
  in ``metadata["off_branch"]``: they keep their parent chain, the next message branches from
  the message before the rewind target, and turn grouping never mixes them with active ones.
  A rewound id written again later comes back as ``<id>#r<n>`` (ids stay unique).
* ``$set`` is metadata (``summary`` becomes the title). ``$set.messages`` rewrites the model's
  context (after compression) and is not re-imported: every message it holds was recorded under
  its own id before.

Legacy ``.json``: the top-level fields are one metadata event at line 1 (re-serialized
compactly — the file has no line of its own for them); each element of ``messages`` is an event
holding its exact source text, at the line where it starts.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    Line,
    Sink,
    canonical_json,
    native_id,
    norm_time,
    project_from_cwd,
    read_jsonl,
    tool_call_text,
)
from cwcore.importers.gemini_log import (
    LegacyShape,
    Record,
    UpsertLog,
    event_type,
    legacy_shape,
    read_legacy,
)
from cwcore.importers.lines import SNIFF_BYTES
from cwcore.model import FileParse, Message, ParsedSession, Role, SourceEvent, Usage

_ROLES: dict[str, Role] = {
    "user": "user",
    "gemini": "assistant",
    "model": "assistant",  # the Gemini API's role name, which some writers use as the type
    "info": "system",
    "error": "system",
    "warning": "system",
}
_HEX_HASH = re.compile(r"[0-9a-f]{40,}")


def parts_text(content: Any) -> str:
    """Visible text of a Gemini ``PartListUnion``: a string, a part, or a list of them.
    Thought parts are model reasoning, not text."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    pieces = []
    for part in content:
        if isinstance(part, str):
            pieces.append(part)
        elif isinstance(part, dict) and not part.get("thought"):
            if isinstance(part.get("text"), str):
                pieces.append(part["text"])
            elif isinstance(part.get("functionResponse"), dict):
                pieces.append(_response_text(part["functionResponse"].get("response")))
            elif isinstance(part.get("inlineData"), dict):
                pieces.append("[image]")
    return "\n\n".join(p for p in pieces if p)


def thought_texts(obj: dict[str, Any]) -> list[str]:
    """A record's reasoning: its ``thoughts`` (``subject: description``) and the text of the
    ``thought`` parts of its content."""
    out = []
    for thought in obj.get("thoughts") or ():
        if isinstance(thought, dict):
            words = [thought.get("subject"), thought.get("description")]
            said = ": ".join(w for w in words if isinstance(w, str) and w)
            if said.strip():
                out.append(said)
    content = obj.get("content")
    for part in content if isinstance(content, list) else ():
        text = part.get("text") if isinstance(part, dict) and part.get("thought") else None
        if isinstance(text, str) and text.strip():
            out.append(text)
    return out


def usage_of(value: object) -> Usage | None:
    """A record's ``tokens`` as :class:`Usage` (cached tokens apart, thoughts as output)."""
    if not isinstance(value, dict):
        return None

    def count(name: str) -> int:
        n = value.get(name)
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0

    cached = count("cached")
    usage = Usage(
        input=max(0, count("input") - cached),
        output=count("output") + count("thoughts"),
        cache_read=cached,
    )
    return usage or None


def _response_text(response: Any) -> str:
    if isinstance(response, dict):
        for name in ("output", "error", "content"):
            if isinstance(response.get(name), str):
                return str(response[name])
        return canonical_json(response)
    return response if isinstance(response, str) else ""


class _Builder:
    """Messages from a replayed log, in first-appearance order, chained through parents."""

    def __init__(self, log: UpsertLog) -> None:
        self.log = log
        self.sink = Sink()
        self.tails: dict[str, str | None] = {}  # record key -> its last message id
        self.off_ids: list[str] = []

    def build(self) -> None:
        for key in self.log.order:
            record = self.log.records[key]
            parent = self.tails.get(record.parent) if record.parent else None
            before = len(self.sink.messages)
            self.tails[key] = self._record(record, parent)
            if key in self.log.off:
                self.off_ids.extend(m.message_id for m in self.sink.messages[before:])

    def _record(self, record: Record, parent: str | None) -> str | None:
        """Emit one record's messages (text, then each call and its result) as a chain."""
        role = _ROLES.get(record.obj["type"])
        if role is None:
            return parent
        for n, thought in enumerate(thought_texts(record.obj), start=1):
            # Thinking precedes the record's output and stays out of the branch chain.
            self.sink.add(
                Message(
                    message_id=f"{record.key}#thinking{n}",
                    role="assistant",
                    kind="thinking",
                    text=thought,
                    lines=(record.lines[0],),
                    timestamp=norm_time(record.obj.get("timestamp")),
                    parent_id=parent,
                )
            )
        before = len(self.sink.messages)
        tail = self._messages(record, role, parent)
        model = record.obj.get("model")
        usage = usage_of(record.obj.get("tokens"))
        if role == "assistant" and len(self.sink.messages) > before and (model or usage):
            first = self.sink.messages[before]
            self.sink.messages[before] = dataclasses.replace(
                first, model=model if isinstance(model, str) and model else None, usage=usage
            )
        return tail

    def _messages(self, record: Record, role: Role, parent: str | None) -> str | None:
        obj = record.obj
        stamp = norm_time(obj.get("timestamp"))
        tail = parent
        text = parts_text(obj.get("content"))
        if text.strip():
            tail = (
                self._add(
                    Message(
                        message_id=record.key,
                        role=role,
                        kind="text",
                        text=text,
                        lines=tuple(record.lines),
                        timestamp=stamp,
                        real_user=role == "user",
                        parent_id=tail,
                    )
                )
                or tail
            )
        if role != "assistant":
            return tail
        for index, call in enumerate(obj.get("toolCalls") or (), start=1):
            if not isinstance(call, dict):
                continue
            call_id = native_id(call.get("id")) or f"{record.key}#{index}"
            name = call.get("name") if isinstance(call.get("name"), str) else None
            args = call.get("args")
            line = record.call_lines.get(str(call.get("id")), record.lines[0])
            tail = (
                self._add(
                    Message(
                        message_id=call_id,
                        role="assistant",
                        kind="tool-call",
                        text=tool_call_text(args),
                        lines=(line,),
                        timestamp=norm_time(call.get("timestamp")) or stamp,
                        parent_id=tail,
                        tool_name=name,
                        tool_call_id=call_id,
                        tool_input=None if args is None else canonical_json(args),
                    )
                )
                or tail
            )
            result = call.get("result")
            if result is None:
                continue
            output = parts_text(result)
            if not output and isinstance(call.get("resultDisplay"), str):
                output = call["resultDisplay"]
            line = record.result_lines.get(str(call.get("id")), line)
            tail = (
                self._add(
                    Message(
                        message_id=f"{call_id}#result",
                        role="tool",
                        kind="tool-result",
                        text=output,
                        lines=(line,),
                        timestamp=norm_time(call.get("timestamp")) or stamp,
                        parent_id=tail,
                        tool_name=name,
                        tool_call_id=call_id,
                        is_error=call.get("status") == "error",
                    )
                )
                or tail
            )
        return tail

    def _add(self, message: Message) -> str | None:
        return message.message_id if self.sink.add(message) else None


def _legacy(path: Path, head: list[bytes]) -> LegacyShape:
    """The legacy object's shape from the head; when the head (20 lines) ends before it shows
    enough — a pretty-printed file whose keys are sorted puts a long ``messages`` list first —
    from the file's first :data:`~cwcore.importers.lines.SNIFF_BYTES` bytes (the same bound as
    the head's)."""
    shape = legacy_shape(b"\n".join(head))
    if shape.conclusive() or not shape.is_object:
        return shape
    try:
        with path.open("rb") as fh:
            return legacy_shape(fh.read(SNIFF_BYTES))
    except OSError:
        return shape


class GeminiImporter:
    name = "gemini"
    not_read = (
        "`$set.messages` context rewrites (counted only); `resultDisplay` when a result has "
        "parts; `groundingMetadata` and other record fields (kept in the events)"
    )
    agent = "gemini"
    priority = 40
    locations: tuple[Location, ...] = (Location("~/.gemini/tmp", ("*.jsonl", "*.json")),)

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        if path.suffix == ".json":
            return _legacy(path, head).sniff(".gemini" in path.parts)
        for obj in json_lines(head):
            if (
                "type" not in obj
                and isinstance(obj.get("sessionId"), str)
                and ("projectHash" in obj)
            ):
                return True
            if isinstance(obj.get("$rewindTo"), str) or isinstance(obj.get("$set"), dict):
                return True
        return False

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        if path.suffix == ".json":
            return _legacy(path, head).accepts()
        return self.sniff(path, head)  # sniffing already needs only one line of the format

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        log = UpsertLog()
        events: list[SourceEvent] = []
        problems: list[tuple[int, str]] = []
        if path.suffix == ".json":  # the legacy single-object file
            records, header, problems = read_legacy(path.read_bytes())
            if header:
                log.meta.update({k: v for k, v in header.items() if k != "messages"})
                head = json.dumps(log.meta, ensure_ascii=False, separators=(",", ":"))
                events.append(
                    SourceEvent(1, head.encode("utf-8", "surrogatepass"), False, "metadata")
                )
            lines = records
        else:
            lines, problems = read_jsonl(path)
        kept: list[Line] = []
        for line in lines:
            reason = log.accept(line.number, line.obj)
            if reason:
                problems.append((line.number, reason))
            else:
                kept.append(line)
        if not kept and not events:
            return FileParse((), tuple(problems))
        builder = _Builder(log)
        builder.build()
        problems.extend(builder.sink.problems)
        used = {n for m in builder.sink.messages for n in m.lines}
        events.extend(
            SourceEvent(ln.number, ln.raw, ln.number in used, event_type(ln.obj)) for ln in kept
        )
        return FileParse(
            (self._session(path, project, log, builder, events),), tuple(sorted(problems))
        )

    def _session(
        self,
        path: Path,
        project: str | None,
        log: UpsertLog,
        builder: _Builder,
        events: list[SourceEvent],
    ) -> ParsedSession:
        meta = log.meta
        session_id = native_id(meta.get("sessionId")) or native_id(path.stem) or "gemini-session"
        directories = meta.get("directories")
        cwd = directories[0] if isinstance(directories, list) and directories else None
        cwd = cwd if isinstance(cwd, str) else None
        chats = path.parent if path.parent.name == "chats" else path.parent.parent
        folder = chats.parent.name if chats.name == "chats" else ""
        folder = folder[:12] if _HEX_HASH.fullmatch(folder) else folder
        lineage: tuple[str, ...] = ()
        if meta.get("kind") == "subagent" and path.parent.name != "chats":
            parent = native_id(path.parent.name)
            lineage = (parent,) if parent and parent != session_id else ()
        metadata: dict[str, Any] = {}
        if builder.off_ids:
            metadata["off_branch"] = builder.off_ids
        if log.context_rewrites:
            metadata["context_rewrites"] = log.context_rewrites
        stamps = [m.timestamp for m in builder.sink.messages if m.timestamp]
        summary = meta.get("summary")
        return ParsedSession(
            session_id=session_id,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or folder or DEFAULT_PROJECT,
            events=tuple(events),
            messages=tuple(builder.sink.messages),
            started=norm_time(meta.get("startTime")) or (min(stamps) if stamps else None),
            title=(summary.strip() or None) if isinstance(summary, str) else None,
            cwd=cwd,
            parent_session=lineage[0] if lineage else None,
            lineage=lineage,
            source_path=str(path),
            resume_command=f"gemini --resume {session_id}",
            metadata=metadata,
        )


register(GeminiImporter())

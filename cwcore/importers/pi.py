"""pi coding agent sessions: ``~/.pi/agent/sessions/--<cwd>--/<timestamp>_<uuid>.jsonl``.

A header ``{type: "session", version, id, timestamp, cwd, parentSession?}`` then entries. v1
entries have no ids (ids ``L<n>``; each follows the previous message); v2/v3 entries carry
``id``/``parentId`` and form a TREE: every branch lives in the same file. What becomes what
(docs/importers.md):

* ``message`` entries by role: ``user`` -> real user message; ``assistant`` -> an assistant text
  message (id: the entry id) when it has visible text, plus one tool-call message per
  ``toolCall`` block (id: the toolCall id); ``toolResult`` -> tool-result message;
  ``bashExecution`` (a ``!command`` the user ran) -> tool-result of tool ``bash``;
  ``custom``/``hookMessage`` -> ``system`` text; ``branchSummary``/``compactionSummary`` ->
  ``system`` summary. ``thinking`` blocks are messages of kind ``thinking`` (id
  ``<entry id>#thinking<n>``) before the entry's text; the entry's ``model`` and ``usage`` go
  on its text message, else its first tool call.
* ``compaction`` and ``branch_summary`` entries -> ``system`` messages of kind ``summary``;
  ``custom_message`` -> ``system`` text; ``model_change``, ``thinking_level_change``, ``label``,
  ``custom``, ``session_info`` (its name becomes the title) … are metadata events.

The parsed session holds ALL branches; each message's ``parent_id`` is the message its entry
follows (through metadata entries, and through the tool calls of an assistant entry, so a branch
is a chain). :func:`branch_path` and :func:`latest_leaf` resolve ``S@LEAF`` and ``S``.
``branchedFrom`` (the file of the session this one was branched from), else ``parentSession`` (a
path to the parent file, or an oh-my-pi session id), gives the lineage. Title: oh-my-pi's
``title`` slot line, else the last ``session_info`` name, else the header's ``title``.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from cwcore.errors import NotFound, excerpt
from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    Line,
    Sink,
    blocks_text,
    canonical_json,
    native_id,
    norm_time,
    project_from_cwd,
    read_jsonl,
    tool_call_text,
)
from cwcore.model import FileParse, Message, ParsedSession, SourceEvent, Usage

#: Entry types a pi session holds (sniffing).
PI_TYPES = frozenset(
    {
        "session",
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
    }
)
_SEPARATORS = re.compile(r"[\\/]")


def _check(obj: dict[str, Any]) -> str:
    if not isinstance(obj.get("type"), str):
        return "missing field 'type'"
    if "id" in obj and obj["type"] != "session" and native_id(obj["id"]) is None:
        return "entry 'id' is not a usable id"
    if obj["type"] == "message":
        message = obj.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return "message entry without a 'message' object with a 'role'"
    return ""


def _text(value: object) -> str | None:
    return value.strip() or None if isinstance(value, str) else None


def usage_of(value: object) -> Usage | None:
    """A pi ``usage`` object (``input``, ``output``, ``cacheRead``, ``cacheWrite``)."""
    if not isinstance(value, dict):
        return None
    counts = [value.get(k) for k in ("input", "output", "cacheRead", "cacheWrite")]
    usage = Usage(
        *(n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else 0 for n in counts)
    )
    return usage or None


def session_ref(value: object) -> str | None:
    """The session id a ``parentSession`` names: a path ``…/<ts>_<uuid>.jsonl`` or an id."""
    if not isinstance(value, str) or not value.strip():
        return None
    name = _SEPARATORS.split(value.strip())[-1].removesuffix(".jsonl")
    if "_" in name:
        name = name.rsplit("_", 1)[1]
    return native_id(name)


def _result_text(content: object) -> str:
    """A tool result's content as OpenClaw writes it: text blocks, ``toolResult`` blocks with a
    ``text``, Anthropic ``tool_result`` blocks (their ``content`` a string or blocks); any other
    non-empty content keeps its compact JSON, so no output is lost."""
    if isinstance(content, str):
        return content
    blocks = [content] if isinstance(content, dict) else content
    if not isinstance(blocks, list):
        return "" if content is None else canonical_json(content)
    pieces = []
    for block in blocks:
        if isinstance(block, str):
            pieces.append(block)
        elif not isinstance(block, dict):
            continue
        elif isinstance(block.get("text"), str) and block.get("type") in ("text", "toolResult"):
            pieces.append(block["text"])
        elif block.get("type") == "tool_result":
            pieces.append(_result_text(block.get("content")))
        elif block.get("type") in ("image", "input_image"):
            pieces.append("[image]")
        else:
            pieces.append(canonical_json(block))
    return "\n\n".join(p for p in pieces if p)


class _Reader:
    def __init__(self, *, claw: bool = False) -> None:
        self.sink = Sink()
        self.entry_tail: dict[str, str | None] = {}  # entry id -> message its children follow
        self.title: str | None = None
        self.slot_title: str | None = None  # oh-my-pi's title slot line (rewritten in place)
        # OpenClaw's variants of pi's blocks: Anthropic ``tool_use``/``tool_result`` blocks
        # and ``toolResult`` blocks inside ``toolResult`` messages.
        self.claw = claw
        self.tools: dict[str, str] = {}  # tool call id -> tool name
        self.model: str | None = None  # the header's or the last model_change's model

    def entry(self, line: Line) -> None:
        obj = line.obj
        eid = native_id(obj.get("id")) if obj["type"] != "session" else None
        if eid is not None:
            parent_ref = obj.get("parentId")
            parent = self.entry_tail.get(parent_ref) if isinstance(parent_ref, str) else None
        else:
            parent = self.sink.last_id  # v1: a linear chain in file order
        base = eid or f"L{line.number}"
        stamp = norm_time(obj.get("timestamp"))
        tail = self._messages(line, obj, base, parent, stamp)
        if eid is not None:
            self.entry_tail[eid] = tail

    def _messages(
        self, line: Line, obj: dict[str, Any], base: str, parent: str | None, stamp: str | None
    ) -> str | None:
        """Emit the entry's messages as a chain from ``parent``; return the chain's tail."""
        kind = obj["type"]
        if kind in ("compaction", "branch_summary"):
            return self._add(line, base, parent, stamp, "system", "summary", obj.get("summary"))
        if kind == "custom_message":
            text = blocks_text(obj.get("content"))
            return self._add(line, base, parent, stamp, "system", "text", text)
        if kind == "session_info" and isinstance(obj.get("name"), str):
            self.title = obj["name"].strip() or self.title
        if kind in ("session", "model_change"):
            # an assistant message without its own model ran on this one
            model = _text(obj.get("modelId")) or _text(obj.get("model"))
            self.model = model or self.model
        if kind == "title" and isinstance(obj.get("title"), str):
            self.slot_title = obj["title"].strip() or self.slot_title
        if kind != "message":
            return parent
        message = obj["message"]
        stamp = stamp or norm_time(message.get("timestamp"))
        role = message["role"]
        content = message.get("content")
        if role == "user":
            tail = self._add(
                line, base, parent, stamp, "user", "text", blocks_text(content), real_user=True
            )
            return self._claw_results(line, base, tail, stamp, content) if self.claw else tail
        if role == "assistant":
            return self._assistant(line, base, parent, stamp, message)
        if role == "toolResult":
            call_id = message.get("toolCallId")
            name = message.get("toolName")
            if self.claw and not isinstance(name, str) and isinstance(call_id, str):
                name = self.tools.get(call_id)
            return self._add(
                line,
                base,
                parent,
                stamp,
                "tool",
                "tool-result",
                _result_text(content) if self.claw else blocks_text(content),
                always=True,
                tool_call_id=call_id if isinstance(call_id, str) else None,
                tool_name=name if isinstance(name, str) else None,
                is_error=bool(message.get("isError")),
            )
        if role == "bashExecution":
            command = message.get("command") if isinstance(message.get("command"), str) else ""
            output = message.get("output") if isinstance(message.get("output"), str) else ""
            code = message.get("exitCode")
            return self._add(
                line,
                base,
                parent,
                stamp,
                "tool",
                "tool-result",
                f"$ {command}\n{output}",
                always=True,
                tool_name="bash",
                is_error=isinstance(code, int) and code != 0,
            )
        if role in ("custom", "hookMessage"):
            return self._add(line, base, parent, stamp, "system", "text", blocks_text(content))
        if role in ("branchSummary", "compactionSummary"):
            return self._add(line, base, parent, stamp, "system", "summary", message.get("summary"))
        return parent

    def _assistant(
        self, line: Line, base: str, parent: str | None, stamp: str | None, message: Any
    ) -> str | None:
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        thoughts = [
            b["thinking"]
            for b in blocks
            if b.get("type") == "thinking"
            and isinstance(b.get("thinking"), str)
            and b["thinking"].strip()
        ]
        for n, thought in enumerate(thoughts, start=1):
            # Thinking precedes the entry's output and stays out of the branch chain.
            self.sink.add(
                Message(
                    message_id=f"{base}#thinking{n}",
                    role="assistant",
                    kind="thinking",
                    text=thought,
                    lines=(line.number,),
                    timestamp=stamp,
                    parent_id=parent,
                )
            )
        model = _text(message.get("model")) or self.model
        usage = usage_of(message.get("usage"))
        response: dict[str, Any] = {"model": model or None, "usage": usage}
        text = blocks_text(content)
        tail = self._add(line, base, parent, stamp, "assistant", "text", text, **response)
        if tail == base:
            response = {}
        calls = 0
        kinds = ("toolCall", "tool_use") if self.claw else ("toolCall",)
        for block in blocks:
            if block.get("type") not in kinds:
                continue
            calls += 1
            call_id = native_id(block.get("id")) or f"{base}#{calls}"
            name = block.get("name") if isinstance(block.get("name"), str) else None
            args = block.get("arguments")
            if args is None and self.claw:
                args = block.get("input")  # tool_use blocks, and some toolCall blocks
            if name:
                self.tools[call_id] = name
            tail = self._add(
                line,
                call_id,
                tail,
                stamp,
                "assistant",
                "tool-call",
                tool_call_text(args),
                always=True,
                tool_name=name,
                tool_call_id=call_id,
                tool_input=None if args is None else canonical_json(args),
                **response,
            )
            response = {}
        return tail

    def _claw_results(
        self, line: Line, base: str, parent: str | None, stamp: str | None, content: object
    ) -> str | None:
        """Anthropic ``tool_result`` blocks in an OpenClaw user message: one tool result each
        (``<entry id>#result<n>``), after the message's own text."""
        tail = parent
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        for n, block in enumerate(results, start=1):
            call_id = native_id(block.get("tool_use_id"))
            tail = self._add(
                line,
                f"{base}#result{n}",
                tail,
                stamp,
                "tool",
                "tool-result",
                _result_text(block.get("content")),
                always=True,
                tool_call_id=call_id,
                tool_name=self.tools.get(call_id) if call_id else None,
                is_error=block.get("is_error") is True,
            )
        return tail

    def _add(
        self,
        line: Line,
        message_id: str,
        parent: str | None,
        stamp: str | None,
        role: str,
        kind: str,
        text: object,
        *,
        always: bool = False,
        **extra: Any,
    ) -> str | None:
        """Add one message; an empty text adds nothing (unless ``always``) and keeps ``parent``."""
        if not isinstance(text, str) or (not always and not text.strip()):
            return parent
        added = self.sink.add(
            Message(
                message_id=message_id,
                role=role,  # type: ignore[arg-type]
                kind=kind,  # type: ignore[arg-type]
                text=text,
                lines=(line.number,),
                timestamp=stamp,
                parent_id=parent,
                **extra,
            )
        )
        return message_id if added else parent


class PiImporter:
    name = "pi"
    agent = "pi"
    priority = 30
    not_read = (
        "`label`, `custom` and `thinking_level_change` entries (kept as events); usage `cost`;"
        " image data (a marker only)"
    )
    locations: tuple[Location, ...] = (Location("~/.pi/agent/sessions"),)

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        objs = json_lines(head)
        if not objs:
            return False
        first = objs[0]
        if first.get("type") == "session" and isinstance(first.get("id"), str):
            return "payload" not in first and "sessionId" not in first
        return any(
            o.get("type") == "message"
            and isinstance(o.get("message"), dict)
            and isinstance(o["message"].get("role"), str)
            and "sessionId" not in o
            for o in objs
        )

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return self.sniff(path, head)  # sniffing already needs only one line of the format

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        return self.read(path, project=project)

    def read(self, path: Path, *, project: str | None = None, claw: bool = False) -> FileParse:
        """The session of ``path``; ``claw`` also reads OpenClaw's variants of the blocks."""
        lines, problems = read_jsonl(path)
        reader = _Reader(claw=claw)
        kept: list[Line] = []
        header: dict[str, Any] = {}
        for line in lines:
            reason = _check(line.obj)
            if reason:
                problems.append((line.number, reason))
                continue
            kept.append(line)
            if line.obj["type"] == "session" and not header:
                header = line.obj
            reader.entry(line)
        if not kept:
            return FileParse((), tuple(problems))
        problems.extend(reader.sink.problems)
        session_id = native_id(header.get("id")) or session_ref(path.name) or "pi-session"
        # the session this one was branched (forked) from: ``branchedFrom`` (a path to its
        # file), else ``parentSession`` (a path, or oh-my-pi's session id)
        parent = session_ref(header.get("branchedFrom")) or session_ref(header.get("parentSession"))
        cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
        used = {n for m in reader.sink.messages for n in m.lines}
        events = tuple(
            SourceEvent(ln.number, ln.raw, ln.number in used, ln.obj["type"]) for ln in kept
        )
        ids = reader.sink.ids
        metadata: dict[str, Any] = {
            "version": header.get("version", 1),
            # entries that are not themselves messages -> the message a branch there ends at
            "entry_tail": {e: t for e, t in reader.entry_tail.items() if e not in ids and t},
        }
        stamps = [m.timestamp for m in reader.sink.messages if m.timestamp]
        session = ParsedSession(
            session_id=session_id,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=events,
            messages=tuple(reader.sink.messages),
            started=norm_time(header.get("timestamp")) or (min(stamps) if stamps else None),
            title=reader.slot_title or reader.title or _text(header.get("title")),
            cwd=cwd,
            parent_session=parent if parent != session_id else None,
            lineage=(parent,) if parent and parent != session_id else (),
            source_path=str(path),
            resume_command=f"pi --session {shlex.quote(str(path))}",
            metadata=metadata,
        )
        return FileParse((session,), tuple(sorted(problems)))


def latest_leaf(parsed: ParsedSession) -> str:
    """The id of the session's latest leaf: its last message in file order that is on a branch
    (Gemini messages moved off the branch by ``$rewindTo``, and thinking, are skipped)."""
    off = set(parsed.metadata.get("off_branch", ()))
    for message in reversed(parsed.messages):
        if message.message_id not in off and message.kind != "thinking":
            return message.message_id
    raise NotFound(f"session {parsed.session_id} has no messages")


def branch_path(parsed: ParsedSession, leaf_id: str) -> list[Message]:
    """The branch ending at ``leaf_id``: messages from the root to the leaf, following
    ``parent_id``. ``leaf_id`` may name a message or a pi entry that is not one (its branch
    ends at the message that entry follows). A session without any parent links is linear:
    its branch is every message up to the leaf. Thinking is on no branch. Raises NotFound
    for an unknown leaf."""
    by_id = {m.message_id: m for m in parsed.messages if m.kind != "thinking"}
    target = leaf_id if leaf_id in by_id else parsed.metadata.get("entry_tail", {}).get(leaf_id)
    if target not in by_id:
        raise NotFound(f"session {parsed.session_id} has no entry {excerpt(leaf_id)}")
    if all(m.parent_id is None for m in by_id.values()):
        out = []
        for message in by_id.values():
            out.append(message)
            if message.message_id == target:
                return out
    path: list[Message] = []
    seen: set[str] = set()
    current: str | None = target
    while current is not None and current in by_id and current not in seen:
        seen.add(current)
        path.append(by_id[current])
        current = by_id[current].parent_id
    path.reverse()
    return path


register(PiImporter())

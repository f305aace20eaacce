"""Claude Code session logs: ``~/.claude/projects/<project-dir>/<sessionId>.jsonl``.

Each line has a ``type``. What becomes what (docs/importers.md has the full table):

* ``assistant`` lines sharing one ``message.id`` are ONE assistant message whose text is their
  ``text`` blocks joined; its id is the ``uuid`` of the group's first line. A group without any
  visible text yields no assistant text message (it was only thinking and/or tool calls).
* each ``tool_use`` block is a tool-call message (id: the tool_use id); each ``tool_result`` block
  a tool-result message (role ``tool``; id: the user line's ``uuid``, or ``uuid#n`` for the n-th
  result when the line carries several results or also user text, which keeps the plain
  ``uuid``), its ``tool_name`` taken from the call.
* ``thinking`` blocks are not messages: they are kept in ``metadata["thinking"]`` (line, owning
  message key, text) and, verbatim, in the source events.
* ``user`` text is a real user message unless host-generated: ``isMeta``, compaction summaries
  (``isCompactSummary``: kind ``summary``), sidechain prompts (written by the main agent), and
  command/caveat/interrupt wrappers
  (:data:`~cwcore.importers.claude_code_messages.HOST_MARKERS`).
* ``summary`` lines (conversation titles) are ``system`` messages of kind ``summary`` with id
  ``L<n>``; every other type (``system``, ``progress``, ``file-history-snapshot``,
  ``queue-operation``, …) is a metadata event, not a message.

Parents and threads (main chain, sidechains, in-file forks) are described in
:mod:`cwcore.importers.claude_code_messages`, which turns lines into messages.

Session id: the file stem when a line carries it as ``sessionId`` (or when every message is a
sidechain: a subagent transcript), else the last ``sessionId`` seen. Lineage: the other
``sessionId`` values the file's own lines carry (history copied from ancestor sessions), nearest
first — nothing the file does not itself prove.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cwcore.importers.base import json_lines, register
from cwcore.importers.claude_code_messages import MessageReader
from cwcore.importers.common import (
    DEFAULT_PROJECT,
    Line,
    native_id,
    norm_time,
    project_from_cwd,
    read_jsonl,
)
from cwcore.model import FileParse, ParsedSession, SourceEvent

#: Record types Claude Code writes (sniffing); unknown types still parse, as metadata.
CLAUDE_TYPES = frozenset(
    {
        "user",
        "assistant",
        "summary",
        "system",
        "progress",
        "file-history-snapshot",
        "queue-operation",
        "custom-title",
        "attachment",
    }
)


def _check(obj: dict[str, Any]) -> str:
    """Why a line cannot be read ('' when it can)."""
    kind = obj.get("type")
    if not isinstance(kind, str):
        return "missing field 'type'"
    if kind in ("user", "assistant"):
        message = obj.get("message")
        if not isinstance(message, dict):
            return f"{kind} line without a 'message' object"
        if not isinstance(message.get("content"), str | list):
            return "message.content must be a string or a list"
        if native_id(obj.get("uuid")) is None:
            return f"{kind} line without a usable 'uuid'"
    return ""


def _session_id(path: Path, lines: list[Line]) -> str:
    seen = [ln.obj["sessionId"] for ln in lines if native_id(ln.obj.get("sessionId"))]
    stem = native_id(path.stem)
    if stem is not None and stem in seen:
        return stem
    talk = [ln for ln in lines if ln.obj["type"] in ("user", "assistant")]
    if stem is not None and talk and all(ln.obj.get("isSidechain") for ln in talk):
        return stem  # a subagent transcript: its lines carry the parent session's id
    if seen:
        return seen[-1]
    return stem or "claude-session"


class ClaudeCodeImporter:
    name = "claude-code"
    agent = "claude-code"

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        for obj in json_lines(head):
            if obj.get("type") not in CLAUDE_TYPES or "payload" in obj or "projectHash" in obj:
                continue
            if any(k in obj for k in ("uuid", "parentUuid", "leafUuid", "messageId", "sessionId")):
                return True
        return False

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return self.sniff(path, head)  # sniffing already needs only one line of the format

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        lines, problems = read_jsonl(path)
        kept: list[Line] = []
        for line in lines:
            reason = _check(line.obj)
            if reason:
                problems.append((line.number, reason))
            else:
                kept.append(line)
        if not kept:
            return FileParse((), tuple(problems))
        reader = MessageReader(kept)
        reader.run()
        problems.extend(reader.sink.problems)
        session_id = _session_id(path, kept)
        lineage: list[str] = []
        for line in reversed(kept):
            other = native_id(line.obj.get("sessionId"))
            if other and other != session_id and other not in lineage:
                lineage.append(other)
        used = {n for m in reader.sink.messages for n in m.lines}
        events = tuple(
            SourceEvent(ln.number, ln.raw, ln.number in used, ln.obj["type"]) for ln in kept
        )
        cwd = next((ln.obj["cwd"] for ln in kept if isinstance(ln.obj.get("cwd"), str)), None)
        stamps = [s for s in (norm_time(ln.obj.get("timestamp")) for ln in kept) if s]
        metadata: dict[str, Any] = {}
        thinking = reader.thinking_metadata()
        if thinking:
            metadata["thinking"] = thinking
        session = ParsedSession(
            session_id=session_id,
            agent=self.agent,
            project=project or project_from_cwd(cwd) or path.parent.name or DEFAULT_PROJECT,
            events=events,
            messages=tuple(reader.sink.messages),
            started=min(stamps) if stamps else None,
            title=reader.title,
            cwd=cwd,
            parent_session=lineage[0] if lineage else None,
            lineage=tuple(lineage),
            source_path=str(path),
            resume_command=f"claude --resume {session_id}",
            metadata=metadata,
        )
        return FileParse((session,), tuple(sorted(problems)))


register(ClaudeCodeImporter())

"""Claude Code session logs: ``~/.claude/projects/<project-dir>/<sessionId>.jsonl``.

Each line has a ``type``. What becomes what (docs/importers.md has the full table):

* ``assistant`` lines sharing one ``message.id`` are ONE assistant message whose text is their
  ``text`` blocks joined; its id is the ``uuid`` of the group's first line. A group without any
  visible text yields no assistant text message (it was only thinking and/or tool calls).
* each ``tool_use`` block is a tool-call message (id: the tool_use id); each ``tool_result`` block
  a tool-result message (role ``tool``; id: the user line's ``uuid``, or ``uuid#n`` for the n-th
  result when the line carries several results or also user text, which keeps the plain
  ``uuid``), its ``tool_name`` taken from the call.
* ``thinking`` blocks are messages of kind ``thinking`` (kept, shown on request, never
  searchable or counted); a response's ``model`` and ``usage`` go on the message that owns it.
* ``user`` text is a real user message unless host-generated: ``isMeta``, compaction summaries
  (``isCompactSummary``: kind ``summary``), sidechain prompts (written by the main agent), and
  command/caveat/interrupt wrappers
  (:data:`~cwcore.importers.claude_code_messages.HOST_MARKERS`).
* ``attachment`` lines of type ``queued_command`` (a prompt typed while the agent worked) are
  user messages. ``user``/``assistant`` lines without a ``uuid`` read with the id ``L<n>``.
* ``summary`` lines (conversation titles) are ``system`` messages of kind ``summary`` with id
  ``L<n>``; ``progress`` lines of type ``agent_progress`` are a sub-agent's conversation
  (:mod:`cwcore.importers.claude_code_agents`: its own session, ``<session>/agent-<agentId>``);
  every other type (``system``, other ``progress``, ``file-history-snapshot``,
  ``queue-operation``, …) is a metadata event, not a message.

Parents and threads (main chain, sidechains, in-file forks) are described in
:mod:`cwcore.importers.claude_code_messages`, which turns lines into messages.

Session id: the file stem when a line carries it as ``sessionId``, else the last ``sessionId``
seen. A sub-agent's own transcript (every message a sidechain) is the sub-agent's session,
``<parent sessionId>/agent-<agentId>``, read as one main thread. Lineage: the other
``sessionId`` values the file's own lines carry (history copied from ancestor sessions), nearest
first — nothing the file does not itself prove; a sub-agent's lineage is its parent.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from cwcore.importers import claude_code_agents as agents
from cwcore.importers.base import Location, json_lines, register
from cwcore.importers.claude_code_messages import MessageReader, title_past_wrappers
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
        if obj.get("uuid") is not None and native_id(obj.get("uuid")) is None:
            return f"{kind} line with an unusable 'uuid'"
    return ""


def _with_fallback_id(line: Line) -> Line:
    """A ``user``/``assistant`` line without a ``uuid`` (written by other tools, or trimmed)
    reads as if its uuid were ``L<n>``, n its 1-based line: the id formats without native ids
    use. Its raw bytes stay as written."""
    if line.obj["type"] in ("user", "assistant") and line.obj.get("uuid") is None:
        return Line(line.number, line.raw, {**line.obj, "uuid": f"L{line.number}"})
    return line


def _claude_message(obj: dict[str, Any]) -> bool:
    """A ``user``/``assistant`` line in Claude's shape: ``message`` an object whose
    ``content`` is a string or a list of blocks (Gemini-shaped ``parts`` are Qwen's)."""
    message = obj.get("message")
    return (
        obj.get("type") in ("user", "assistant")
        and isinstance(message, dict)
        and isinstance(message.get("content"), str | list)
        and "parts" not in message
    )


def _session_id(path: Path, lines: list[Line]) -> str:
    seen = [ln.obj["sessionId"] for ln in lines if native_id(ln.obj.get("sessionId"))]
    stem = native_id(path.stem)
    if stem is not None and stem in seen:
        return stem
    if seen:
        return seen[-1]
    return stem or "claude-session"


def _transcript_agent(path: Path, lines: list[Line]) -> tuple[str, str] | None:
    """``(parent session id, agentId)`` when the file is a sub-agent's own transcript: every
    message line is a sidechain. The parent comes from the lines' ``sessionId`` (else the
    ``<session>/subagents`` folder), the agent from their ``agentId`` (else the file name)."""
    talk = [ln for ln in lines if ln.obj["type"] in ("user", "assistant")]
    if not talk or not all(ln.obj.get("isSidechain") for ln in talk):
        return None
    parent = next((s for ln in talk if (s := native_id(ln.obj.get("sessionId")))), None)
    if parent is None and path.parent.name == "subagents":
        parent = native_id(path.parent.parent.name)
    agent = next((a for ln in talk if (a := native_id(ln.obj.get("agentId")))), None)
    agent = agent or native_id(path.stem.removeprefix("agent-"))
    if parent is None or agent is None:
        return None
    return parent, agent


def _numbers(agent: agents.Agent) -> set[int]:
    """Every line number of a sub-agent's progress lines, repeats included."""
    return {ln.number for ln in agent.lines} | {
        r.number for rs in agent.repeats.values() for r in rs
    }


def _with_repeats(lines: tuple[int, ...], agent: agents.Agent) -> tuple[int, ...]:
    """A message's lines plus the progress lines that repeat them."""
    repeated = {r.number for n in lines for r in agent.repeats.get(n, ())}
    return tuple(sorted({*lines, *repeated}))


def _cwd(lines: list[Line]) -> str | None:
    return next((ln.obj["cwd"] for ln in lines if isinstance(ln.obj.get("cwd"), str)), None)


def _started(lines: list[Line]) -> str | None:
    stamps = [s for s in (norm_time(ln.obj.get("timestamp")) for ln in lines) if s]
    return min(stamps) if stamps else None


class ClaudeCodeImporter:
    name = "claude-code"
    not_read = "`attachment` lines other than `queued_command`; `file-history-snapshot` contents"
    agent = "claude-code"
    priority = 10
    locations: tuple[Location, ...] = (Location("~/.claude/projects"),)

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        """One line of the format: a known type with Claude's ids, or a ``user``/``assistant``
        line with Claude's ``message`` object (ids are optional: tools that write Claude's
        shape often leave them out)."""
        for obj in json_lines(head):
            kind = obj.get("type")
            if not isinstance(kind, str) or kind not in CLAUDE_TYPES:
                continue
            if "payload" in obj or "projectHash" in obj:
                continue
            if any(k in obj for k in ("uuid", "parentUuid", "leafUuid", "messageId", "sessionId")):
                return True
            if _claude_message(obj) and "role" not in obj:
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
                kept.append(_with_fallback_id(line))
        if not kept:
            return FileParse((), tuple(problems))
        own = _transcript_agent(path, kept)
        if own is not None:
            session = self._subagent_transcript(path, kept, own, project, problems)
            return FileParse((session,), tuple(sorted(problems)))
        session_id = _session_id(path, kept)
        found = agents.collect_agents(kept)
        # A sub-agent with its own transcript is read from it: its progress lines stay metadata.
        read_here = {
            a: agent
            for a, agent in found.items()
            if not any(p.is_file() for p in agents.transcript_paths(path, a))
        }
        taken = {n for a in read_here.values() for n in _numbers(a)}
        main = [ln for ln in kept if ln.number not in taken]
        reader = MessageReader(main)
        reader.run()
        problems.extend(reader.sink.problems)
        calls = {**agents.result_links(kept), **agents.meta_links(path)}
        calls.update({a: x.tool_use_id for a, x in found.items() if x.tool_use_id})
        reader.link_subagents(
            {call: agents.subagent_session_id(session_id, a) for a, call in calls.items()}
        )
        lineage: list[str] = []
        for line in reversed(main):
            other = native_id(line.obj.get("sessionId"))
            if other and other != session_id and other not in lineage:
                lineage.append(other)
        used = {n for m in reader.sink.messages for n in m.lines}
        events = tuple(
            SourceEvent(ln.number, ln.raw, ln.number in used, ln.obj["type"]) for ln in main
        )
        cwd = _cwd(kept)
        project = project or project_from_cwd(cwd) or path.parent.name or DEFAULT_PROJECT
        session = ParsedSession(
            session_id=session_id,
            agent=self.agent,
            project=project,
            events=events,
            messages=tuple(reader.sink.messages),
            started=_started(main),
            title=reader.title or title_past_wrappers(reader.sink.messages),
            cwd=cwd,
            parent_session=lineage[0] if lineage else None,
            lineage=tuple(lineage),
            source_path=str(path),
            resume_command=f"claude --resume {session_id}",
        )
        inputs = agents.call_inputs(kept)
        children = []
        for agent in read_here.values():
            child = self._progress_session(path, session, agent, inputs, problems)
            if child is not None:
                children.append(child)
        return FileParse((session, *children), tuple(sorted(problems)))

    def _progress_session(
        self,
        path: Path,
        parent: ParsedSession,
        agent: agents.Agent,
        inputs: dict[str, dict[str, Any]],
        problems: list[tuple[int, str]],
    ) -> ParsedSession | None:
        """The sub-agent session read from its progress lines in the parent's file."""
        reader = MessageReader(agent.lines, subagent=True)
        reader.run()
        problems.extend(reader.sink.problems)
        if not reader.sink.messages:
            return None
        messages = [
            dataclasses.replace(m, lines=_with_repeats(m.lines, agent))
            for m in reader.sink.messages
        ]
        used = {n for m in messages for n in m.lines}
        raw = [*agent.lines, *(r for rs in agent.repeats.values() for r in rs)]
        events = tuple(
            SourceEvent(ln.number, ln.raw, ln.number in used, "progress")
            for ln in sorted(raw, key=lambda ln: ln.number)
        )
        call = agent.tool_use_id
        task = inputs.get(call or "", {})
        description = task.get("description")
        return ParsedSession(
            session_id=agents.subagent_session_id(parent.session_id, agent.agent_id),
            agent=self.agent,
            project=parent.project,
            events=events,
            messages=tuple(messages),
            started=_started(agent.lines),
            title=description.strip() or None if isinstance(description, str) else None,
            cwd=parent.cwd,
            parent_session=parent.session_id,
            lineage=(parent.session_id,),
            source_path=str(path),
            parent_tool_call=f"assistant:{call}" if call else None,
        )

    def _subagent_transcript(
        self,
        path: Path,
        lines: list[Line],
        own: tuple[str, str],
        project: str | None,
        problems: list[tuple[int, str]],
    ) -> ParsedSession:
        """A sub-agent's own transcript file as the sub-agent's session."""
        parent, agent_id = own
        reader = MessageReader(lines, subagent=True)
        reader.run()
        problems.extend(reader.sink.problems)
        used = {n for m in reader.sink.messages for n in m.lines}
        events = tuple(
            SourceEvent(ln.number, ln.raw, ln.number in used, ln.obj["type"]) for ln in lines
        )
        call, description = agents.parent_link(path, parent, agent_id)
        cwd = _cwd(lines)
        return ParsedSession(
            session_id=agents.subagent_session_id(parent, agent_id),
            agent=self.agent,
            project=project or project_from_cwd(cwd) or DEFAULT_PROJECT,
            events=events,
            messages=tuple(reader.sink.messages),
            started=_started(lines),
            title=reader.title or (description.strip() or None if description else None),
            cwd=cwd,
            parent_session=parent,
            lineage=(parent,),
            source_path=str(path),
            parent_tool_call=f"assistant:{call}" if call else None,
        )


register(ClaudeCodeImporter())

"""OpenClaw: ``~/.openclaw/agents/<agentId>/sessions/<sessionId>.jsonl``.

OpenClaw runs its agents on pi's agent core and writes pi's session format (a ``session`` header,
then ``message`` entries with roles ``user``, ``assistant`` and ``toolResult``, ``compaction``
and ``model_change`` entries…), so the file is read by the pi importer's rules
(:mod:`cwcore.importers.pi`); what differs is where it lives, the agent recorded on the session
(``openclaw``) and the OpenClaw agent id kept in the metadata. Archived sessions
(``<id>.jsonl.reset.<time>``, ``<id>.jsonl.deleted.<time>``) are read too: they are history.
OpenClaw's own variants of pi's blocks are read as well: Anthropic-style ``tool_use`` blocks
(tool calls, ``input``), ``tool_result`` blocks in user messages (tool results
``<entry id>#result<n>``), and ``toolResult`` messages whose content is ``toolResult`` blocks
with a ``text``.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cwcore.importers.base import Location, register
from cwcore.importers.pi import PiImporter
from cwcore.model import FileParse


def agent_id(path: Path) -> str | None:
    """The OpenClaw agent a session file belongs to: ``agents/<agentId>/sessions/<file>``."""
    parts = path.parts
    if len(parts) >= 3 and parts[-2] == "sessions" and parts[-4:-3] == ("agents",):
        return parts[-3]
    return None


class OpenClawImporter:
    name = "openclaw"
    agent = "openclaw"
    priority = 28  # before pi: the same lines, told apart by where they are
    locations: tuple[Location, ...] = (
        Location("~/.openclaw/agents", ("*.jsonl", "*.jsonl.reset.*", "*.jsonl.deleted.*")),
    )

    not_read = (
        "the `sessions.json` index (session keys, channels, delivery); `custom` entries (kept"
        " as events); usage `cost`"
    )

    def __init__(self) -> None:
        self._pi = PiImporter()

    def is_companion(self, path: Path) -> bool:
        """The agent's ``sessions/sessions.json`` index and a session's ``.lock``: part of the
        sessions, not sessions."""
        if agent_id(path) is None:
            return False
        return path.name == "sessions.json" or path.name.endswith(".jsonl.lock")

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        return (".openclaw" in path.parts or agent_id(path) is not None) and self._pi.sniff(
            path, head
        )

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return self._pi.accepts(path, head)

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        parsed = self._pi.read(path, project=project, claw=True)
        owner = agent_id(path)
        sessions = tuple(
            dataclasses.replace(
                s,
                agent=self.agent,
                resume_command=None,
                metadata={**s.metadata, **({"openclawAgent": owner} if owner else {})},
            )
            for s in parsed.sessions
        )
        return FileParse(sessions, parsed.problems)


register(OpenClawImporter())

"""The project-bound reads' records: the requests of ``bound.sessions``, ``bound.messages``
and ``bound.memory``, and the answers of the first two (:class:`BoundSessions`,
:class:`BoundMessages`; ``bound.memory`` answers a :class:`cwcore.contract.memory.MemoryContext`).

Each carries the caller's binding — ``project`` (required) and ``boundSession`` (optional) —
which the MCP server (:mod:`cwcore.hosts.mcp_server`) fills in itself: its tools' ``inputSchema``
is each record's JSON Schema without those two keys. The engine never answers beyond the binding
(:mod:`cwcore.reads`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cwcore.contract.codec import Record, field
from cwcore.contract.sessions import SessionInfo
from cwcore.errors import InvalidInput

#: Sessions per page, at most.
MAX_PAGE = 50
#: Messages per ``bound.messages`` call, at most.
MAX_RANGE = 100
#: Sessions per page, and messages per call, when the caller names no bound.
DEFAULT_RANGE = 20
#: The longest prompt ``bound.memory`` takes, in characters.
MAX_PROMPT_CHARS = 16_384
#: The longest session id or prefix, in characters (an id is at most
#: :data:`cwcore.store.keys.MAX_ID_BYTES` UTF-8 bytes, so at most as many characters).
MAX_SESSION_CHARS = 512

_PROJECT = "The bound project: nothing outside it is read or revealed."
_BOUND_SESSION = "The bound session: only its lineage is reachable."


class BoundSessionsRequest(Record):
    """A page of ``project``'s sessions, newest first, filtered by ``agent`` and ``since``;
    ``cursor`` is the previous page's ``nextCursor``."""

    project: str = field(min_length=1, doc=_PROJECT)
    agent: str | None = field(
        default=None,
        omit_none=True,
        min_length=1,
        max_length=64,
        doc="Only sessions of this agent (claude-code, codex, pi, gemini, …).",
    )
    since: str | None = field(
        default=None,
        omit_none=True,
        min_length=1,
        max_length=64,
        doc="Only sessions active since this ISO-8601 date or time.",
    )
    limit: int = field(default=DEFAULT_RANGE, minimum=1, maximum=MAX_PAGE)
    cursor: str | None = field(
        default=None,
        omit_none=True,
        min_length=1,
        max_length=1024,
        doc="nextCursor of the previous page.",
    )


class BoundMessagesRequest(Record):
    """Messages ``start``..``end`` (the wire's ``from``..``to``, numbered from 1, inclusive;
    ``end`` defaults to ``start`` + :data:`DEFAULT_RANGE` - 1) of the session ``session``
    names, among ``project``'s sessions (and ``bound_session``'s lineage); at most
    :data:`MAX_RANGE` messages."""

    session: str = field(
        min_length=1,
        max_length=MAX_SESSION_CHARS,
        doc="A session id, or a unique prefix of at least 4 characters.",
    )
    project: str = field(min_length=1, doc=_PROJECT)
    bound_session: str | None = field(default=None, omit_none=True, doc=_BOUND_SESSION)
    start: int = field(
        name="from",
        default=1,
        minimum=1,
        doc="First message number (messages are numbered from 1).",
    )
    end: int | None = field(
        name="to",
        default=None,
        omit_none=True,
        minimum=1,
        doc=f"Last message number (default from + {DEFAULT_RANGE - 1}; at most {MAX_RANGE} "
        "messages per call).",
    )

    def __post_init__(self) -> None:
        if self.end is not None and self.end < self.start:
            raise InvalidInput("to must not be before from")
        if self.last - self.start + 1 > MAX_RANGE:
            raise InvalidInput(f"at most {MAX_RANGE} messages per call (from..to)")

    @property
    def last(self) -> int:
        """The last message number asked for (``end``, or the default range's last)."""
        return self.start + DEFAULT_RANGE - 1 if self.end is None else self.end


class BoundMemoryRequest(Record):
    """The memory injection block of ``prompt`` over the records ``project`` (and
    ``bound_session``) may see."""

    prompt: str = field(
        max_length=MAX_PROMPT_CHARS,
        doc="The prompt (or task) to select memory records for.",
    )
    project: str = field(min_length=1, doc=_PROJECT)
    bound_session: str | None = field(default=None, omit_none=True, doc=_BOUND_SESSION)


def _sessions(items: tuple[SessionInfo, ...]) -> list[dict[str, Any]]:
    return [s.to_json() for s in items]


def _read_sessions(body: list[Mapping[str, Any]]) -> tuple[SessionInfo, ...]:
    return tuple(map(SessionInfo.from_json, body))


class BoundSessions(Record):
    """A page of the bound project's sessions, newest first, and the cursor of the next page
    (None on the last)."""

    project: str
    sessions: tuple[SessionInfo, ...] = field(encode=_sessions, decode=_read_sessions)
    next_cursor: str | None


class TextCut(Record):
    """A message text cut to fit the answer: ``shown`` characters of its ``chars``."""

    shown: int
    chars: int


class BoundMessage(Record):
    """Message number ``n`` (from 1) of a session: who and what it is, when (ISO-8601 UTC or
    None), its tool, source message key and document, whether it was superseded, and its text
    (cut when ``text_cut`` is set)."""

    n: int
    role: str
    kind: str
    timestamp: str | None
    tool: str | None
    message_key: str
    document_id: str
    superseded: bool
    text: str
    text_cut: TextCut | None = field(default=None, omit_none=True)


class BoundMessages(Record):
    """Messages ``start``..``end`` of a session (``end``: the last one shown, None when none
    is), of its ``total``; ``next`` is the number to ask for next (None at the end)."""

    session: SessionInfo = field(encode=SessionInfo.to_json, decode=SessionInfo.from_json)
    total: int
    start: int = field(name="from")
    end: int | None = field(name="to")
    messages: tuple[BoundMessage, ...]
    next: int | None

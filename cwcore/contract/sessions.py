"""The ``sessions`` and ``sessions.resolve`` methods' requests and answers, and
:class:`SessionInfo`, one row of ``cw sessions``: the record every session listing and read
answers with.

The row sits below :mod:`cwcore.browse` (which builds the rows from canonical session
records), :mod:`cwcore.contract.views` (the typed transcript that carries a row) and the faces
that render it, so none has to import another for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from cwcore.clock import parse_time
from cwcore.contract.codec import Record, fields_json
from cwcore.contract.codec import field as json_field
from cwcore.errors import InvalidInput
from cwcore.model import Usage

#: Rows one ``sessions`` page holds, at most.
MAX_LIMIT = 10_000
#: The orders a listing can take (``started`` walks the session-order index; the others read
#: every session that passes the filters).
SORT_KEYS = ("started", "ended", "messages", "tools", "duration")


@dataclass(frozen=True)
class SessionInfo:
    """One row of ``cw sessions``: the interface's fields plus ``title``, ``documents``,
    ``resume``, ``parentToolCall``, ``tokens`` and ``models``.

    ``messages`` counts messages (prompts, replies, tool calls and tool results; never thinking);
    ``turns`` counts turns; timestamps are ISO-8601 UTC or None when the source had none.
    A sub-agent's session has its parent session in ``parent`` and the messageKey of the
    parent's tool call that started it in ``parentToolCall``. ``tokens`` sums the token usage
    of the session's messages (``{"input", "output", "cacheRead", "cacheWrite"}``, zeros when
    the source records none); ``models`` lists the models that answered, in first-seen order.
    ``nativeId`` is the id the agent gave the session when the store's ``sessionId`` differs
    from it (another agent's session had the id first: ``<agent>:<id>``), else None (and
    absent from the JSON).
    """

    sessionId: str
    project: str
    agent: str
    started: str | None
    ended: str | None
    messages: int
    turns: int
    toolCalls: int
    parent: str | None
    title: str | None = None
    documents: int = 0
    resume: str | None = None
    parentToolCall: str | None = None
    tokens: dict[str, int] = field(default_factory=lambda: Usage().to_json())
    models: list[str] = field(default_factory=list)
    nativeId: str | None = None

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> SessionInfo:
        return cls(
            sessionId=record["id"],
            project=record["project"],
            agent=record["agent"],
            started=record.get("started"),
            ended=record.get("ended"),
            messages=int(record.get("messages", 0)),
            turns=int(record.get("turns", 0)),
            toolCalls=int(record.get("toolCalls", 0)),
            parent=record.get("parent"),
            title=record.get("title"),
            documents=int(record.get("documents", 0)),
            resume=record.get("resume"),
            parentToolCall=record.get("parentToolCall"),
            tokens=(Usage.from_json(record.get("tokens")) or Usage()).to_json(),
            models=list(record.get("models") or []),
            nativeId=record.get("nativeId"),
        )

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SessionInfo:
        """The row ``to_json()`` gave (every field present), its containers copied."""
        values: dict[str, Any] = {name: body.get(name) for name in _SESSION_FIELDS}
        values["tokens"] = dict(body["tokens"])
        values["models"] = list(body["models"])
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        # A plain dict, without asdict's recursive deep copy (a page of a thousand rows spent
        # most of its time there); the two containers are copied shallowly.
        out = {name: getattr(self, name) for name in _SESSION_FIELDS}
        out["tokens"] = dict(self.tokens)
        out["models"] = list(self.models)
        if self.nativeId is None:
            del out["nativeId"]  # only a session stored under another id than its agent's
        return out


_SESSION_FIELDS = tuple(f.name for f in fields(SessionInfo))


def _rows(rows: tuple[SessionInfo, ...]) -> list[dict[str, Any]]:
    return [row.to_json() for row in rows]


def _read_rows(body: list[Mapping[str, Any]]) -> tuple[SessionInfo, ...]:
    return tuple(SessionInfo.from_json(row) for row in body)


class SessionsRequest(Record):
    """``sessions``: the filters (``project``, ``agent``, ``since``: an ISO-8601 time or
    date), ``limit`` rows (1 to :data:`MAX_LIMIT`), the ``cursor`` of a previous page, the
    order (``sort``, one of :data:`SORT_KEYS`, largest or newest first unless ``ascending``)
    and ``match`` (a substring of the session id or title). Whether a cursor is one ``cw
    sessions`` made is the listing's check (it needs the store's key rules)."""

    project: str | None = json_field(default=None, omit_none=True)
    agent: str | None = json_field(default=None, omit_none=True)
    since: str | None = json_field(default=None, omit_none=True)
    limit: int = 50
    cursor: str | None = json_field(default=None, omit_none=True)
    sort: str = "started"
    ascending: bool = False
    match: str | None = json_field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if self.sort not in SORT_KEYS:
            raise InvalidInput(f"sort must be one of {', '.join(SORT_KEYS)}")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidInput(f"--limit must be between 1 and {MAX_LIMIT}")
        if self.since:
            parse_time(self.since)

    def to_json(self) -> dict[str, Any]:
        # As faces have always sent it (and the lean CLI still does): the order only when it
        # is not the default one.
        body = fields_json(self)
        if self.sort == "started":
            del body["sort"]
        if not self.ascending:
            del body["ascending"]
        return body


class SessionsPage(Record):
    """What ``sessions`` answers: a page of rows and the cursor of the next page (None at the
    end; the key is ``next_cursor`` and always present)."""

    sessions: tuple[SessionInfo, ...] = json_field(encode=_rows, decode=_read_rows)
    next_cursor: str | None = json_field(name="next_cursor")


class ResolveSessionRequest(Record):
    """``sessions.resolve``: a session id or a unique prefix of it (4+ characters)."""

    session: str

    def __post_init__(self) -> None:
        if not self.session:
            raise InvalidInput("session (a session id or unique prefix) is required")


class ResolvedSession(Record):
    """What ``sessions.resolve`` answers: the session's row."""

    session: SessionInfo = json_field(encode=SessionInfo.to_json, decode=SessionInfo.from_json)

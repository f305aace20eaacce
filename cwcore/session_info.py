"""One row of ``cw sessions``, the record every session listing and read answers with.

It sits below both :mod:`cwcore.browse` (which builds the rows from canonical session records)
and :mod:`cwcore.views` (the typed transcript and bound reads that carry a row), so neither has
to import the other for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from cwcore.model import Usage


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
    def from_record(cls, record: dict[str, Any]) -> SessionInfo:
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

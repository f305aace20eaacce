"""A turn's memory selection as the ``hints`` answers carry it, as frozen dataclasses: the
selection kept per (session, user-message key) (:class:`MemoryTurn`, the listing's ``memory``)
and the ``memory`` view of it (:class:`MemoryDecision`).

The records are what :func:`cwcore.hints.frozen.record_memory` keeps — ids, counts and reasons,
never the block's text. ``to_json()`` keeps exactly the keys, order and values the engine has
always answered, and ``from_json(x).to_json() == x``; a record read back from the store keeps
its sorted key order (``as_stored``, as in :mod:`cwcore.hints.results`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cwcore.memory.blocks import LeftOut, MemoryRanking, ProcessorTrace
from cwcore.store.codec import is_sorted, ordered

# -- a turn's memory selection, as kept -----------------------------------------------------------


@dataclass(frozen=True)
class MemoryTurn:
    """The memory selection kept for one turn (ids, counts and reasons, never the block's
    text): event, project, when (ISO-8601 UTC), how long it took (ms), skipped and why, block
    bytes and budget, record ids per section, sections cut by the budget, the processors'
    traces, the records left out (at most 100; ``unselected_more`` counts the rest) and the
    ranking."""

    session: str
    message_key: str
    event: str | None
    project: str | None
    created_at: str | None
    latency_ms: float | None
    skipped: bool
    reason: str | None
    bytes: int
    budget_bytes: int | None
    sections: tuple[tuple[str, tuple[str, ...]], ...]
    truncated: tuple[str, ...]
    traces: tuple[ProcessorTrace, ...]
    unselected: tuple[LeftOut, ...]
    unselected_more: int | None = None
    ranking: MemoryRanking | None = None
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "session": self.session,
            "messageKey": self.message_key,
            "event": self.event,
            "project": self.project,
            "createdAt": self.created_at,
            "latencyMs": self.latency_ms,
            "skipped": self.skipped,
            "reason": self.reason,
            "bytes": self.bytes,
            "budgetBytes": self.budget_bytes,
            "sections": {name: list(ids) for name, ids in self.sections},
            "truncated": list(self.truncated),
            "traces": [t.to_json() for t in self.traces],
            "unselected": [u.to_json() for u in self.unselected],
        }
        if self.unselected_more is not None:
            body["unselectedMore"] = self.unselected_more
        if self.ranking is not None:
            body["ranking"] = self.ranking.to_json()
        return ordered(body, self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MemoryTurn:
        ranking = body.get("ranking")
        return cls(
            session=body["session"],
            message_key=body["messageKey"],
            event=body["event"],
            project=body["project"],
            created_at=body["createdAt"],
            latency_ms=body["latencyMs"],
            skipped=body["skipped"],
            reason=body["reason"],
            bytes=body["bytes"],
            budget_bytes=body["budgetBytes"],
            sections=tuple((k, tuple(v)) for k, v in body["sections"].items()),
            truncated=tuple(body["truncated"]),
            traces=tuple(ProcessorTrace.from_json(t) for t in body["traces"]),
            unselected=tuple(LeftOut.from_json(u) for u in body["unselected"]),
            unselected_more=body.get("unselectedMore"),
            ranking=None if ranking is None else MemoryRanking.from_json(ranking),
            as_stored=is_sorted(body),
        )


# -- the memory view ------------------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryExclusion:
    """A memory record a turn left out: its reason and stage (a pipeline processor's name, or
    ``selection``)."""

    id: str
    reason: str | None
    stage: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "reason": self.reason, "stage": self.stage}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MemoryExclusion:
        return cls(body["id"], body["reason"], body["stage"])


@dataclass(frozen=True)
class TraceCounts:
    """A pipeline processor and how many records went in and came out."""

    processor: str
    input_count: int
    output_count: int

    def to_json(self) -> dict[str, Any]:
        return {
            "processor": self.processor,
            "input_count": self.input_count,
            "output_count": self.output_count,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TraceCounts:
        return cls(body["processor"], body["input_count"], body["output_count"])


@dataclass(frozen=True)
class MemoryDecision:
    """The ``memory`` view of one turn: what entered the block (ids per section) and what was
    left out and why (``excluded_more`` counts ids cut from the kept lists), bytes and budget,
    the ranking, each processor's counts and the latency (ms)."""

    session: str
    message_key: str
    event: str | None
    project: str | None
    created_at: str | None
    skipped: bool
    reason: str | None
    bytes: int
    budget_bytes: int | None
    selected: tuple[tuple[str, tuple[str, ...]], ...]
    truncated: tuple[str, ...]
    excluded: tuple[MemoryExclusion, ...]
    excluded_more: int
    ranking: MemoryRanking | None
    traces: tuple[TraceCounts, ...]
    latency_ms: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "messageKey": self.message_key,
            "event": self.event,
            "project": self.project,
            "createdAt": self.created_at,
            "skipped": self.skipped,
            "reason": self.reason,
            "bytes": self.bytes,
            "budgetBytes": self.budget_bytes,
            "selected": {name: list(ids) for name, ids in self.selected},
            "truncated": list(self.truncated),
            "excluded": [e.to_json() for e in self.excluded],
            "excludedMore": self.excluded_more,
            "ranking": None if self.ranking is None else self.ranking.to_json(),
            "traces": [t.to_json() for t in self.traces],
            "latencyMs": self.latency_ms,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MemoryDecision:
        ranking = body["ranking"]
        return cls(
            session=body["session"],
            message_key=body["messageKey"],
            event=body["event"],
            project=body["project"],
            created_at=body["createdAt"],
            skipped=body["skipped"],
            reason=body["reason"],
            bytes=body["bytes"],
            budget_bytes=body["budgetBytes"],
            selected=tuple((k, tuple(v)) for k, v in body["selected"].items()),
            truncated=tuple(body["truncated"]),
            excluded=tuple(MemoryExclusion.from_json(e) for e in body["excluded"]),
            excluded_more=body["excludedMore"],
            ranking=None if ranking is None else MemoryRanking.from_json(ranking),
            traces=tuple(TraceCounts.from_json(t) for t in body["traces"]),
            latency_ms=body["latencyMs"],
        )

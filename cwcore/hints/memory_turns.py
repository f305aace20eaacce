"""A turn's memory selection as the ``hints`` answers carry it, as frozen dataclasses: the
selection kept per (session, user-message key) (:class:`MemoryTurn`, the listing's ``memory``)
and the ``memory`` view of it (:class:`MemoryDecision`).

The records are what :func:`cwcore.hints.frozen.record_memory` keeps — ids, counts and reasons,
never the block's text. Their JSON is derived from the fields (:mod:`cwcore.contract.codec`):
the keys and values the engine has always answered, ``from_json(x).to_json() == x`` as parsed
JSON.
"""

from __future__ import annotations

from cwcore.contract.codec import Record, field, pairs
from cwcore.contract.memory import LeftOut, MemoryRanking, ProcessorTrace

# -- a turn's memory selection, as kept -----------------------------------------------------------


class MemoryTurn(Record):
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
    sections: tuple[tuple[str, tuple[str, ...]], ...] = pairs(tuple)
    truncated: tuple[str, ...]
    traces: tuple[ProcessorTrace, ...]
    unselected: tuple[LeftOut, ...]
    unselected_more: int | None = field(default=None, omit_none=True)
    ranking: MemoryRanking | None = field(default=None, omit_none=True)


# -- the memory view ------------------------------------------------------------------------------


class MemoryExclusion(Record):
    """A memory record a turn left out: its reason and stage (a pipeline processor's name, or
    ``selection``)."""

    id: str
    reason: str | None
    stage: str


class TraceCounts(Record):
    """A pipeline processor and how many records went in and came out (snake_case keys, as the
    pipeline writes them)."""

    processor: str
    input_count: int = field(name="input_count")
    output_count: int = field(name="output_count")


class MemoryDecision(Record):
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
    selected: tuple[tuple[str, tuple[str, ...]], ...] = pairs(tuple)
    truncated: tuple[str, ...]
    excluded: tuple[MemoryExclusion, ...]
    excluded_more: int
    ranking: MemoryRanking | None
    traces: tuple[TraceCounts, ...]
    latency_ms: float | None

"""The project-bound reads the MCP server uses (:mod:`cwcore.reads`):
``bound.sessions``, ``bound.messages``, ``bound.memory``. Each takes the caller's binding —
``project`` (required) and ``boundSession`` (optional) — and never answers beyond it; the
requests (and their bounds) are declared in :mod:`cwcore.contract.bound`."""

from __future__ import annotations

from cwcore import reads
from cwcore.contract.bound import (
    BoundMemoryRequest,
    BoundMessages,
    BoundMessagesRequest,
    BoundSessions,
    BoundSessionsRequest,
)
from cwcore.contract.memory import MemoryContext
from cwcore.contract.methods import BOUND_MEMORY, BOUND_MESSAGES, BOUND_SESSIONS
from cwcore.engine import Engine
from cwcore.methods.registry import Method, typed


def _sessions(engine: Engine, req: BoundSessionsRequest) -> BoundSessions:
    return reads.sessions_page(
        engine.reader,
        req.project,
        agent=req.agent,
        since=req.since,
        limit=req.limit,
        cursor=req.cursor,
    )


def _messages(engine: Engine, req: BoundMessagesRequest) -> BoundMessages:
    return reads.messages_range(
        engine.reader,
        req.session,
        req.project,
        bound=req.bound_session or None,
        start=req.start,
        end=req.end,
    )


def _memory(engine: Engine, req: BoundMemoryRequest) -> MemoryContext:
    return reads.memory_context(engine, req.prompt, req.project, bound=req.bound_session or None)


METHODS: tuple[Method, ...] = (
    typed(BOUND_SESSIONS, _sessions),
    typed(BOUND_MESSAGES, _messages),
    typed(BOUND_MEMORY, _memory),
)

"""The memory methods: ``memory.add``, ``memory.list``, ``memory.show``, ``memory.contest``,
``memory.deprecate``, ``memory.delete`` and ``memory.context`` (the injection block of a prompt,
:func:`cwcore.memory.context.context`).

The writes pass the daemon's request id down (:func:`current_request_id`): each records its
answer in the batch of its change, so a client's retry after a daemon restart gets the same
answer (never a second record, ``conflict`` or ``not-found``)."""

from __future__ import annotations

from cwcore.contract.memory import (
    MemoryAddRequest,
    MemoryContext,
    MemoryContextRequest,
    MemoryIdRequest,
    MemoryListing,
    MemoryListRequest,
    MemoryRecord,
    MemoryStatusRequest,
)
from cwcore.contract.methods import (
    MEMORY_ADD,
    MEMORY_CONTEST,
    MEMORY_CONTEXT,
    MEMORY_DELETE,
    MEMORY_DEPRECATE,
    MEMORY_LIST,
    MEMORY_SHOW,
)
from cwcore.daemon.service import current_request_id
from cwcore.engine import Engine
from cwcore.memory import records
from cwcore.memory.context import context
from cwcore.methods.registry import Method, typed


def _add(engine: Engine, req: MemoryAddRequest) -> MemoryRecord:
    record = records.add(engine.store, req, request_id=current_request_id())
    return MemoryRecord.from_json(record)


def _list(engine: Engine, req: MemoryListRequest) -> MemoryListing:
    rows = records.listing(engine.store, req)
    return MemoryListing(tuple(MemoryRecord.from_json(r) for r in rows))


def _show(engine: Engine, req: MemoryIdRequest) -> MemoryRecord:
    return MemoryRecord.from_json(records.get(engine.store, req.id or ""))


def _status(engine: Engine, req: MemoryStatusRequest, status: str) -> MemoryRecord:
    # A retry after a daemon restart answers the committed change (request id, spec 003).
    record = records.set_status(
        engine.store, req.id or "", status, req.reason or None, request_id=current_request_id()
    )
    return MemoryRecord.from_json(record)


def _contest(engine: Engine, req: MemoryStatusRequest) -> MemoryRecord:
    return _status(engine, req, "contested")


def _deprecate(engine: Engine, req: MemoryStatusRequest) -> MemoryRecord:
    return _status(engine, req, "deprecated")


def _delete(engine: Engine, req: MemoryStatusRequest) -> MemoryRecord:
    return _status(engine, req, "deleted")


def _context(engine: Engine, req: MemoryContextRequest) -> MemoryContext:
    """The injection block for a prompt, with processor traces and ranking. ``projectOnly``
    confines it to ``project`` (see :func:`cwcore.memory.context.context`)."""
    result = context(
        engine,
        req.prompt,
        project=req.project or None,
        session=req.session or None,
        profile=req.profile or None,
        cwd=req.cwd or None,
        with_daily_log=req.daily_log,
        project_only=req.project_only,
    )
    return MemoryContext.from_json(result)


METHODS: tuple[Method, ...] = (
    typed(MEMORY_ADD, _add),
    typed(MEMORY_LIST, _list),
    typed(MEMORY_SHOW, _show),
    typed(MEMORY_CONTEST, _contest),
    typed(MEMORY_DEPRECATE, _deprecate),
    typed(MEMORY_DELETE, _delete),
    typed(MEMORY_CONTEXT, _context),
)

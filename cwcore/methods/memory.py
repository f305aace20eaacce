"""The memory methods: ``memory.add``, ``memory.list``, ``memory.show``, ``memory.contest``,
``memory.deprecate``, ``memory.delete`` and ``memory.context`` (the injection block of a prompt,
:func:`cwcore.memory.context.context`).

The writes pass the daemon's request id down (:func:`current_request_id`): each records its
answer in the batch of its change, so a client's retry after a daemon restart gets the same
answer (never a second record, ``conflict`` or ``not-found``)."""

from __future__ import annotations

import threading
from typing import Any

from cwcore.daemon.service import current_request_id
from cwcore.engine import Emit, Engine, MiB
from cwcore.errors import InvalidInput
from cwcore.memory import records
from cwcore.memory.blocks import MemoryContext
from cwcore.memory.context import context
from cwcore.memory.results import MemoryListing, MemoryRecord
from cwcore.methods.registry import Method


def _opt(params: dict[str, Any], name: str) -> str | None:
    value = params.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


def _add(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    record = records.add(engine.store, params, request_id=current_request_id())
    return MemoryRecord.from_json(record).to_json()


def _list(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    limit = params.get("limit", 100)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
        raise InvalidInput("limit must be an integer from 1 to 10000")
    rows = records.listing(
        engine.store,
        status=_opt(params, "status"),
        tag=_opt(params, "tag"),
        scope=_opt(params, "scope"),
        layer=_opt(params, "layer"),
        limit=limit,
    )
    return MemoryListing(tuple(MemoryRecord.from_json(r) for r in rows)).to_json()


def _show(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return MemoryRecord.from_json(records.get(engine.store, _opt(params, "id") or "")).to_json()


def _status(engine: Engine, params: dict[str, Any], status: str) -> dict[str, Any]:
    # A retry after a daemon restart answers the committed change (request id, spec 003).
    record = records.set_status(
        engine.store,
        _opt(params, "id") or "",
        status,
        _opt(params, "reason"),
        request_id=current_request_id(),
    )
    return MemoryRecord.from_json(record).to_json()


def _contest(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return _status(engine, params, "contested")


def _deprecate(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return _status(engine, params, "deprecated")


def _delete(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return _status(engine, params, "deleted")


def _context(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """The injection block for a prompt, with processor traces and ranking. ``projectOnly``
    confines it to ``project`` (see :func:`cwcore.memory.context.context`)."""
    prompt = params.get("prompt")
    if not isinstance(prompt, str):
        raise InvalidInput("prompt must be a string")
    project_only = params.get("projectOnly", False)
    if not isinstance(project_only, bool):
        raise InvalidInput("projectOnly must be true or false")
    result = context(
        engine,
        prompt,
        project=_opt(params, "project"),
        session=_opt(params, "session"),
        profile=_opt(params, "profile"),
        cwd=_opt(params, "cwd"),
        with_daily_log=bool(params.get("dailyLog", True)),
        project_only=project_only,
    )
    return MemoryContext.from_json(result).to_json()


METHODS: tuple[Method, ...] = (
    Method("memory.add", _add),
    Method("memory.list", _list, output_bytes=8 * MiB),
    Method("memory.show", _show),
    Method("memory.contest", _contest),
    Method("memory.deprecate", _deprecate),
    Method("memory.delete", _delete),
    Method("memory.context", _context, output_bytes=4 * MiB),
)

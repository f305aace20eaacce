"""The preflight hint methods: ``preflight``, ``hook.turn`` (the hint and the memory block of
one hook event), ``hints`` (the frozen decisions and their views), ``hints.rotate``,
``hints.maintain`` and ``hints.locate`` (a recall locator for a decision's candidate)."""

from __future__ import annotations

import threading
from typing import Any

from cwcore import clock
from cwcore.engine import Emit, Engine, MiB
from cwcore.errors import InvalidInput, LimitExceeded
from cwcore.hints import frozen, locate, views
from cwcore.hints.listings import HintEntry, HintsListing, SessionBudget
from cwcore.hints.memory_turns import MemoryTurn
from cwcore.hints.preflight import preflight
from cwcore.hints.turn import turn
from cwcore.methods.registry import Method
from cwcore.retrieve.request import MAX_EXCLUDED_BYTES, MAX_EXCLUDED_KEYS
from cwcore.store.keys import check_id

MAX_LISTING = 10_000


def _preflight(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return preflight(engine, params).to_json()


def _turn(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """The preflight hint and the memory block of one hook event, in one round trip."""
    return turn(engine, params)


def _session(params: dict[str, Any], required: bool) -> str | None:
    session = params.get("session")
    if session is None or session == "":
        if required:
            raise InvalidInput("session is required")
        return None
    if not isinstance(session, str):
        raise InvalidInput("session must be a string")
    return check_id(session, "session id")


def _hints(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """Frozen decisions per user message (bytes, tokens, hashes, generation, outcome and the
    diagnostics kept with them, and the memory selection of the same turn under ``memory``),
    and each listed session's active budget. With ``view`` (``retrieved``, ``manifest``,
    ``included``, ``excluded``; ``all`` widens ``excluded``) the answer is that view of the same
    decisions instead (:mod:`cwcore.hints.views`); view ``memory`` lists the kept memory
    selections (session start included). ``messageKey`` keeps that user-message key only."""
    session = _session(params, required=False)
    limit = params.get("limit", 1_000)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LISTING:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_LISTING}")
    name = params.get("view")
    if name is not None and not isinstance(name, str):
        raise InvalidInput("view must be a string")
    everything = params.get("all", False)
    if not isinstance(everything, bool):
        raise InvalidInput("all must be true or false")
    message_key = params.get("messageKey")
    if message_key is not None and not isinstance(message_key, str):
        raise InvalidInput("messageKey must be a string")
    if name == "memory":
        rows = frozen.memory_listing(engine.store, session, limit)
    elif session is not None and message_key:
        found = frozen.frozen(engine.store, session, check_id(message_key, "messageKey"))
        rows = [found] if found is not None else []
    else:
        rows = frozen.listing(engine.store, session, limit)
    if message_key:
        rows = [r for r in rows if r["messageKey"] == message_key]
    truncated = len(rows) >= limit
    if name is not None:
        return views.view(name, rows, everything=everything, truncated=truncated).to_json()
    if everything:
        raise InvalidInput("all applies to the excluded view only")
    return _listing(engine, rows, truncated).to_json()


def _listing(engine: Engine, rows: list[dict[str, Any]], truncated: bool) -> HintsListing:
    """The frozen decisions with the memory selection of the same turn, and the active budget
    of every session they belong to (sorted by id)."""
    hints = tuple(
        HintEntry(
            session=r["session"],
            message_key=r["messageKey"],
            outcome=r["outcome"],
            reason=r.get("reason"),
            hint=r.get("hint"),
            bytes=int(r.get("bytes") or 0),
            tokens=int(r.get("tokens") or 0),
            query_hash=r.get("queryHash"),
            generation=r.get("generation"),
            created_at=r.get("createdAt"),
            diagnostics=views.diagnostics(r),
            memory=_memory_turn(engine, r["session"], r["messageKey"]),
            said=r.get("said"),
            said_withheld=r.get("saidWithheld"),
        )
        for r in rows
    )
    sessions = []
    for session in sorted({h.session for h in hints}):
        state = frozen.session_record(engine.store, session)
        active = state.get("active") or {}
        sessions.append(
            SessionBudget(
                session=session,
                active_keys=tuple(sorted(active)),
                active_tokens=sum(int(v) for v in active.values()),
                active_budget=engine.settings.hint_active_tokens,
                last_activity=state.get("lastActivity"),
            )
        )
    return HintsListing(hints, tuple(sessions), truncated)


def _memory_turn(engine: Engine, session: str, message_key: str) -> MemoryTurn | None:
    body = frozen.memory_record(engine.store, session, message_key)
    return None if body is None else views.memory_turn(body)


def _hints_rotate(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """Drop the hints of keys no longer in the active context; recompute the active budget."""
    session = _session(params, required=True)
    assert session is not None
    active = params.get("active")
    if not isinstance(active, list) or not all(isinstance(k, str) for k in active):
        raise InvalidInput("active must be a list of message keys")
    if len(active) > MAX_EXCLUDED_KEYS * 10:
        raise LimitExceeded(f"active has more than {MAX_EXCLUDED_KEYS * 10} keys")
    if sum(len(k.encode("utf-8", "surrogatepass")) for k in active) > MAX_EXCLUDED_BYTES * 10:
        raise LimitExceeded("active exceeds 10 MiB of keys")
    budget = engine.settings.hint_active_tokens
    return frozen.rotate(engine.store, session, active, clock.now(), budget).to_json()


def _hints_maintain(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """One bounded maintenance pass (exposure tombstones, abandoned-session reclaim)."""
    limit = params.get("limit", frozen.MAINTENANCE_BATCH)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 100_000:
        raise InvalidInput("limit must be an integer from 1 to 100000")
    return frozen.maintain(engine.store, engine.settings, clock.now(), limit).to_json()


def _hints_locate(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """A signed recall locator for a frozen decision's candidate (``candidate``: its id,
    ``<documentId>#<messageKey>``): ``{"locator", "documentId", "messageKey"}``."""
    return locate.locate(engine, params.get("candidate"))  # type: ignore[arg-type]


METHODS: tuple[Method, ...] = (
    Method("preflight", _preflight),
    Method("hook.turn", _turn, output_bytes=MiB),
    Method("hints", _hints, output_bytes=8 * MiB),
    Method("hints.rotate", _hints_rotate),
    Method("hints.maintain", _hints_maintain),
    Method("hints.locate", _hints_locate),
)

"""The preflight hint methods: ``preflight``, ``hook.turn`` (the hint and the memory block of
one hook event), ``hints`` (the frozen decisions and their views), ``hints.rotate``,
``hints.maintain`` and ``hints.locate`` (a recall locator for a decision's candidate)."""

from __future__ import annotations

from typing import Any

from cwcore import clock
from cwcore.contract.hints import (
    HintEntry,
    HintsAnswer,
    HintsListing,
    HintsRequest,
    HookTurn,
    HookTurnRequest,
    Located,
    LocateRequest,
    Maintained,
    MaintainRequest,
    MemoryTurn,
    PreflightRequest,
    Rotated,
    RotateRequest,
    SessionBudget,
)
from cwcore.contract.methods import (
    HINTS,
    HINTS_LOCATE,
    HINTS_MAINTAIN,
    HINTS_ROTATE,
    HOOK_TURN,
    PREFLIGHT,
)
from cwcore.contract.preflight import PreflightDecision
from cwcore.contract.search import MAX_EXCLUDED_BYTES, MAX_EXCLUDED_KEYS
from cwcore.engine import Engine
from cwcore.errors import LimitExceeded
from cwcore.hints import frozen, locate, views
from cwcore.hints.preflight import preflight
from cwcore.hints.turn import turn
from cwcore.methods.registry import Method, typed
from cwcore.store.keys import check_id


def _preflight(engine: Engine, req: PreflightRequest) -> PreflightDecision:
    return preflight(engine, req)


def _turn(engine: Engine, req: HookTurnRequest) -> HookTurn:
    """The preflight hint and the memory block of one hook event, in one round trip."""
    return turn(engine, req)


def _hints(engine: Engine, req: HintsRequest) -> HintsAnswer:
    """Frozen decisions per user message (bytes, tokens, hashes, generation, outcome and the
    diagnostics kept with them, and the memory selection of the same turn under ``memory``),
    and each listed session's active budget. With ``view`` (``retrieved``, ``manifest``,
    ``included``, ``excluded``; ``all`` widens ``excluded``) the answer is that view of the same
    decisions instead (:mod:`cwcore.hints.views`); view ``memory`` lists the kept memory
    selections (session start included). ``messageKey`` keeps that user-message key only."""
    session = check_id(req.session, "session id") if req.session else None
    limit, name, message_key = req.limit, req.view, req.message_key
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
        return HintsAnswer(views.view(name, rows, everything=req.everything, truncated=truncated))
    return HintsAnswer(_listing(engine, rows, truncated))


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


def _hints_rotate(engine: Engine, req: RotateRequest) -> Rotated:
    """Drop the hints of keys no longer in the active context; recompute the active budget."""
    session = check_id(req.session or "", "session id")
    active = req.active or ()
    if len(active) > MAX_EXCLUDED_KEYS * 10:
        raise LimitExceeded(f"active has more than {MAX_EXCLUDED_KEYS * 10} keys")
    if sum(len(k.encode("utf-8", "surrogatepass")) for k in active) > MAX_EXCLUDED_BYTES * 10:
        raise LimitExceeded("active exceeds 10 MiB of keys")
    budget = engine.settings.hint_active_tokens
    return frozen.rotate(engine.store, session, active, clock.now(), budget)


def _hints_maintain(engine: Engine, req: MaintainRequest) -> Maintained:
    """One bounded maintenance pass (exposure tombstones, abandoned-session reclaim)."""
    limit = frozen.MAINTENANCE_BATCH if req.limit is None else req.limit
    return frozen.maintain(engine.store, engine.settings, clock.now(), limit)


def _hints_locate(engine: Engine, req: LocateRequest) -> Located:
    """A signed recall locator for a frozen decision's candidate (``candidate``: its id,
    ``<documentId>#<messageKey>``)."""
    return Located.from_json(locate.locate(engine, req.candidate or ""))


METHODS: tuple[Method, ...] = (
    typed(PREFLIGHT, _preflight),
    typed(HOOK_TURN, _turn),
    typed(HINTS, _hints),
    typed(HINTS_ROTATE, _hints_rotate),
    typed(HINTS_MAINTAIN, _hints_maintain),
    typed(HINTS_LOCATE, _hints_locate),
)

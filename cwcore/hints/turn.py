"""What a host hook adds to one turn: the frozen preflight hint and the per-turn memory block.

``turn(engine, request)`` is the engine method ``hook.turn`` behind the lean hook client, so a
hook needs one round trip for both. Request fields: ``session`` (required), ``event``
(``prompt``, the default, or ``session-start``), ``message`` (required for ``prompt``), the
other :mod:`cwcore.hints.preflight` fields (``messageKey``, ``excludeVisibleSourceKeys``, …) and
``cwd`` (the host's working directory).

* ``prompt``: the preflight decision, unchanged (frozen per session and message key, the same
  bytes on every retry), and the memory injection block of that prompt
  (:func:`cwcore.memory.context.context`) — skipped for trivial prompts, within the 14 KB budget.
* ``session-start``: no preflight (there is no message yet) and the session-start block: what
  applies to any turn (hard rules, scratchpad, daily log).

The memory block is per turn and is never frozen: it reflects the records of the moment. Its
selection — ids per section, the records left out and why, the processors' traces, never the
block's text — is kept per (session, message key) in the hints family
(:func:`cwcore.hints.frozen.record_memory`, the session-start one under
:data:`~cwcore.hints.frozen.SESSION_START_KEY`), where ``cw hints memory`` reads it.

The memory half fails open like preflight: any failure gives no block (``memoryReason:
"failed"``), never an error and never a lost hint. The project of the memory records is the
archived session's, else the one cw's importers derive from ``cwd`` (a brand-new session is not
archived yet).

Response: ``{"event", "session", "messageKey", "hint", "outcome", "memory", "memoryReason",
"memoryBytes"}`` — ``hint``/``outcome`` are None at session start, ``memory`` None when no
block is given (``memoryReason`` says why: a trivial-prompt reason, ``nothing-to-inject``,
``failed``, or ``disabled`` with the ``memoryInjection`` setting off).
"""

from __future__ import annotations

import logging
import time

from cwcore import clock
from cwcore.contract.hints import HookTurn, HookTurnRequest
from cwcore.errors import NotFound
from cwcore.hints import frozen
from cwcore.hints.preflight import preflight
from cwcore.hints.services import SearchServices
from cwcore.memory import diagnostics
from cwcore.store.keys import check_id

log = logging.getLogger("cw.hints")


def _project(engine: SearchServices, session: str, cwd: str | None) -> str | None:
    try:
        project = engine.reader.session(session).get("project")
    except NotFound:
        project = None
    if project is None and cwd is not None:
        from cwcore.importers.common import project_from_cwd

        project = project_from_cwd(cwd)
    return project


def turn(engine: SearchServices, req: HookTurnRequest) -> HookTurn:
    """The hint (``prompt`` only) and the memory block of one hook event (module doc)."""
    session = check_id(req.session or "", "session id")
    cwd = req.cwd[:4096] if req.cwd else None
    hint: str | None = None
    outcome: str | None = None
    if req.event == "prompt":
        decision = preflight(engine, req.preflight(), prefixes=False)
        hint, outcome = decision.hint, decision.outcome
        message_key, prompt = decision.message_key, str(req.message)
    else:
        message_key, prompt = frozen.SESSION_START_KEY, ""
    if not engine.settings.memory_injection:  # turned off: no block, nothing kept
        return HookTurn(req.event, session, hint, outcome, message_key, None, "disabled", 0)
    block, reason = _memory(engine, session, message_key, req.event, prompt, cwd)
    size = len(block.encode("utf-8")) if block else 0
    return HookTurn(req.event, session, hint, outcome, message_key, block, reason, size)


def _memory(
    engine: SearchServices, session: str, message_key: str, event: str, prompt: str, cwd: str | None
) -> tuple[str | None, str | None]:
    """The block (or None) and why there is none; the selection is kept for diagnostics."""
    from cwcore.memory.context import context

    started = time.perf_counter()
    project: str | None = None
    try:
        project = _project(engine, session, cwd)
        result = context(
            engine,
            prompt,
            project=project,
            session=session,
            cwd=cwd,
            start=event == "session-start",
        )
    except Exception as exc:  # fail open: no block, the hint still goes out
        log.warning("memory for a turn failed: %s", type(exc).__name__)
        result = {"skipped": True, "reason": "failed", "block": None, "bytes": 0, "traces": []}
    now = clock.now()
    record = {
        "session": session,
        "messageKey": message_key,
        "event": event,
        "project": project,
        "createdAt": clock.iso(now),
        "latencyMs": round((time.perf_counter() - started) * 1000, 3),
        **diagnostics.summary(result),
    }
    try:
        frozen.record_memory(engine.store, record, now)
    except Exception as exc:  # diagnostics only: the block is still delivered
        log.warning("memory selection not kept: %s", type(exc).__name__)
    block = result.get("block")
    if isinstance(block, str) and block:
        return block, None
    return None, str(result.get("reason") or "nothing-to-inject")

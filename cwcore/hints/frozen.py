"""Frozen hints, active-context budgets and exposure suppression: a hint revealed for a user
message is frozen, so re-running retrieval against a newer index never changes an older prompt.

Records (column family ``hints``; tags 0xC0–0xCF):

* ``hint`` (0xC0) — session, messageKey → the frozen decision: outcome, exact hint bytes
  (separators included), tokens, query hash, index generation, diagnostics;
* ``hint-session`` (0xC1) — session → last hint activity and the active keys' hint tokens;
* ``hint-exposure`` (0xC2) — source documentId, session → when the source was revealed and
  until when it is suppressed;
* ``hint-expiry`` (0xC3) — until (ms), documentId, session → empty: the time index of
  exposures, for bounded maintenance;
* ``hint-memory`` (0xC4) — session, messageKey → the memory selection of that turn (the
  per-turn memory block is not frozen: the latest selection replaces the previous one; ids,
  counts and reasons only, never the block's text); the session-start block is kept under the
  key :data:`SESSION_START_KEY`;
* ``hint-meta`` (0xCF) — name → maintenance cursors.

A hint is computed once per (session, messageKey) and frozen: every later call returns the same
bytes, whatever the index has become since. A failed first attempt freezes the empty outcome.
The exposure record is separate from the hint record, so rotating the triggering message out
does not lift the 24-hour cooldown, and it is checked across verified fork lineage (a session
whose lineage contains the revealing session, or the reverse). After the cooldown, maintenance
tombstones (deletes) the exposure; after ``abandonedHintDays`` without hint activity a session's
hint records are reclaimed. Both passes are bounded per call.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from cwcore import clock
from cwcore.config import Settings
from cwcore.contract.hints import Maintained, Rotated
from cwcore.errors import NotFound
from cwcore.store import codec, keys
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store

HINT = keys.HINT
HINT_SESSION = keys.HINT_SESSION
EXPOSURE = keys.HINT_EXPOSURE
EXPIRY = keys.HINT_EXPIRY
MEMORY_TURN = keys.HINT_MEMORY
HINT_META = keys.HINT_META
#: The memory record of the block delivered when a session starts (no user message yet).
SESSION_START_KEY = "session-start"

FAMILY = "hints"
#: Activity is written at most this often for a session (seconds).
TOUCH_EVERY_S = 60.0
#: Records examined per maintenance pass and kind.
MAINTENANCE_BATCH = 1_000


def _get(store: Store, key: bytes, what: str) -> dict[str, Any] | None:
    raw = store.get(FAMILY, key)
    return None if raw is None else codec.decode_record(raw, what)


def frozen(store: Store, session: str, message_key: str) -> dict[str, Any] | None:
    """The frozen decision of a user message, or None when none was made yet."""
    return _get(store, HINT.encode(session, message_key), "hint")


def session_record(store: Store, session: str) -> dict[str, Any]:
    return _get(store, HINT_SESSION.encode(session), "hint session") or {
        "session": session,
        "active": {},
        "lastActivity": None,
    }


def active_tokens(store: Store, session: str, exclude: str | None = None) -> int:
    """Hint tokens charged to the session's active keys (``exclude`` left out)."""
    active = session_record(store, session).get("active") or {}
    return sum(int(v) for k, v in active.items() if k != exclude)


def freeze(
    store: Store,
    record: dict[str, Any],
    *,
    exposure_until: datetime | None,
    now: datetime,
    active_budget: int,
) -> dict[str, Any]:
    """Persist ``record`` unless the message already has a frozen decision (then that one is
    returned: the first decision wins a race). Charges the hint's tokens to the active keys and
    records the source's exposure, in one batch. If the active budget was used up by a
    concurrent call in the meantime, the decision is frozen as ``none`` without bytes."""
    session, message_key = record["session"], record["messageKey"]
    key = HINT.encode(session, message_key)
    with store.lock:
        existing = _get(store, key, "hint")
        if existing is not None:
            return existing
        state = session_record(store, session)
        active: dict[str, int] = dict(state.get("active") or {})
        tokens = int(record.get("tokens") or 0)
        used = sum(v for k, v in active.items() if k != message_key)
        if tokens and used + tokens > active_budget:
            record = {
                **record,
                "outcome": "none",
                "hint": None,
                "tokens": 0,
                "bytes": 0,
                "reason": "active-budget",
            }
            tokens = 0
            exposure_until = None
        batch = store.batch()
        batch.put(FAMILY, key, codec.encode_record(record))
        if tokens:
            active[message_key] = tokens
        state.update({"active": active, "lastActivity": clock.iso(now)})
        batch.put(FAMILY, HINT_SESSION.encode(session), codec.encode_record(state))
        source = record.get("source")
        if exposure_until is not None and source:
            body = {"at": clock.iso(now), "until": clock.iso(exposure_until)}
            batch.put(FAMILY, EXPOSURE.encode(source, session), codec.encode_record(body))
            batch.put(FAMILY, EXPIRY.encode(clock.epoch_ms(exposure_until), source, session), b"")
        store.commit(batch)
        return record


def touch(store: Store, session: str, now: datetime) -> None:
    """Note hint activity for a session (a returned frozen hint counts), at most once a minute."""
    state = session_record(store, session)
    last = state.get("lastActivity")
    if last and (now - clock.parse_time(last)).total_seconds() < TOUCH_EVERY_S:
        return
    with store.lock:
        state = session_record(store, session)
        state["lastActivity"] = clock.iso(now)
        batch = store.batch()
        batch.put(FAMILY, HINT_SESSION.encode(session), codec.encode_record(state))
        store.commit(batch)


def rotate(
    store: Store, session: str, active_keys: Iterable[str], now: datetime, budget: int
) -> Rotated:
    """Drop the hints of user-message keys that left the active context and recompute the
    active budget from the hints that stay (no second allowance for those); ``budget`` is the
    session's active hint budget (tokens), reported with the result."""
    keep = set(active_keys)
    dropped: list[str] = []
    with store.lock:
        batch = store.batch()
        remaining: dict[str, int] = {}
        for key, value in store.scan(FAMILY, HINT.prefix(session)):
            message_key = str(HINT.decode(key)[1])
            if message_key in keep:
                body = codec.decode_record(value, "hint")
                if int(body.get("tokens") or 0):
                    remaining[message_key] = int(body["tokens"])
                continue
            dropped.append(message_key)
            batch.delete(FAMILY, key)
        # The session-start block stays in the context as long as the session does.
        for key, _ in store.scan(FAMILY, MEMORY_TURN.prefix(session)):
            if str(MEMORY_TURN.decode(key)[1]) not in keep | {SESSION_START_KEY}:
                batch.delete(FAMILY, key)
        state = session_record(store, session)
        state.update({"active": remaining, "lastActivity": clock.iso(now)})
        batch.put(FAMILY, HINT_SESSION.encode(session), codec.encode_record(state))
        store.commit(batch)
    return Rotated(
        session=session,
        dropped=tuple(dropped),
        kept=len(keep & set(remaining)) if remaining else 0,
        active_tokens=sum(remaining.values()),
        active_budget=budget,
    )


class Exposures:
    """The exposure check of one preflight: is a source suppressed for this session's
    verified fork lineage? Session lineages read here are cached for the call."""

    def __init__(self, store: Store, reader: Reader, session: str, lineage: list[str]) -> None:
        self.store, self.reader, self.session = store, reader, session
        self.lineage = set(lineage)
        self._lineages: dict[str, set[str]] = {}

    def _related(self, other: str) -> bool:
        if other in self.lineage:
            return True
        ancestors = self._lineages.get(other)
        if ancestors is None:
            try:
                ancestors = set(self.reader.session(other).get("lineage") or [])
            except NotFound:
                ancestors = set()
            self._lineages[other] = ancestors
        return self.session in ancestors

    def suppressed(self, document_id: str, now: datetime) -> str | None:
        """``suppressed:<session>`` while a related session's exposure is in its cooldown."""
        for key, value in self.store.scan(FAMILY, EXPOSURE.prefix(document_id), limit=256):
            other = str(EXPOSURE.decode(key)[1])
            body = codec.decode_record(value, "exposure")
            if clock.parse_time(body["until"]) <= now:
                continue
            if self._related(other):
                return "suppressed:same-session" if other == self.session else "suppressed:lineage"
        return None


def exposure_until(now: datetime, settings: Settings) -> datetime:
    return now + timedelta(hours=settings.hint_suppression_hours)


def maintain(
    store: Store, settings: Settings, now: datetime | None = None, limit: int = MAINTENANCE_BATCH
) -> Maintained:
    """One bounded maintenance pass: tombstone exposures past their cooldown and reclaim the
    hint records of sessions without hint activity for ``abandonedHintDays``."""
    now = now or clock.now()
    expired = 0
    with store.lock:
        batch = store.batch()
        cutoff = clock.epoch_ms(now)
        for key, _ in store.scan(FAMILY, EXPIRY.prefix(), limit=limit):
            until, source, session = EXPIRY.decode(key)
            if int(until) > cutoff:
                break
            batch.delete(FAMILY, key)
            ekey = EXPOSURE.encode(str(source), str(session))
            body = _get(store, ekey, "exposure")
            # A later exposure of the same source re-armed the record: keep that one.
            if body is not None and clock.epoch_ms(clock.parse_time(body["until"])) <= cutoff:
                batch.delete(FAMILY, ekey)
                expired += 1
        store.commit(batch)
    reclaimed_sessions = reclaimed_hints = 0
    horizon = now - timedelta(days=settings.abandoned_hint_days)
    cursor_key = HINT_META.encode("reclaim-cursor")
    cursor = _get(store, cursor_key, "hint meta") or {}
    start = HINT_SESSION.encode(cursor["after"]) if cursor.get("after") else None
    seen = 0
    last: str | None = None
    with store.lock:
        batch = store.batch()
        for key, value in store.scan(FAMILY, HINT_SESSION.prefix(), start=start, limit=limit):
            session = str(HINT_SESSION.decode(key)[0])
            seen += 1
            last = session
            if start is not None and key == start:
                continue  # the cursor's own record was examined last time
            body = codec.decode_record(value, "hint session")
            at = body.get("lastActivity")
            if at and clock.parse_time(at) > horizon:
                continue
            for hkey, _ in store.scan(FAMILY, HINT.prefix(session)):
                batch.delete(FAMILY, hkey)
                reclaimed_hints += 1
            for mkey, _ in store.scan(FAMILY, MEMORY_TURN.prefix(session)):
                batch.delete(FAMILY, mkey)
            batch.delete(FAMILY, key)
            reclaimed_sessions += 1
        done = seen < limit
        batch.put(
            FAMILY,
            cursor_key,
            codec.encode_record({"after": None if done or last is None else last}),
        )
        store.commit(batch)
    return Maintained(expired, reclaimed_sessions, reclaimed_hints)


def record_memory(store: Store, body: dict[str, Any], now: datetime) -> None:
    """Keep the memory selection of one turn (``body`` has ``session`` and ``messageKey``),
    replacing the one kept before for that key, and note hint activity for the session so
    maintenance reclaims it with the session's hints."""
    key = MEMORY_TURN.encode(body["session"], body["messageKey"])
    with store.lock:
        batch = store.batch()
        batch.put(FAMILY, key, codec.encode_record(body))
        store.commit(batch)
    touch(store, body["session"], now)


def memory_record(store: Store, session: str, message_key: str) -> dict[str, Any] | None:
    return _get(store, MEMORY_TURN.encode(session, message_key), "memory turn")


def memory_listing(
    store: Store, session: str | None = None, limit: int = 1_000
) -> list[dict[str, Any]]:
    """Kept memory selections in key order (one session's, or every session's)."""
    prefix = MEMORY_TURN.prefix(session) if session else MEMORY_TURN.prefix()
    return [
        codec.decode_record(value, "memory turn")
        for _, value in store.scan(FAMILY, prefix, limit=limit)
    ]


def listing(store: Store, session: str | None = None, limit: int = 1_000) -> list[dict[str, Any]]:
    """Frozen decisions (newest sessions' records in key order), for ``cw hints``."""
    prefix = HINT.prefix(session) if session else HINT.prefix()
    out = []
    for _, value in store.scan(FAMILY, prefix, limit=limit):
        out.append(codec.decode_record(value, "hint"))
    return out

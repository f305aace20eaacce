"""Answers recorded by request id: a write retried after a daemon restart answers again.

The daemon's replay cache lives in memory, so a write whose daemon died between its commit and
its answer (``kill -9``, a crash, a restart) would run a second time when the client retries
the same request id: ``conflict`` for a supersede, ``not-found`` for a forget, a second memory
record for a ``memory.add``. So every write that is not idempotent by content records its answer
here **in the same batch as the change** (spec 003: duplicate client requests are idempotent by
source key or request id), and looks it up before doing anything else.

One record per request id in the ``requests`` family (layout ``request``)::

    {"op": method, "project": caller's project or null, "answer": {...}, "at": iso}

A recorded id reused for another method or project is :class:`InvalidInput`. Records are
bounded: :func:`expire` (the daemon's periodic maintenance) removes those older than
:data:`MAX_AGE` and then, oldest first, any beyond :data:`MAX_RECORDS`. Records without ``at``
(written by an older cw) have no known age: they count as the oldest for the count bound.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from cwcore import clock
from cwcore.errors import CorruptRecord, InvalidInput, excerpt
from cwcore.store import codec, keys
from cwcore.store.rocks import Batch, Store

FAMILY = "requests"
#: How long an answer stays retrievable. A client retries at once (twice, within about a
#: minute including a daemon start), so a day is far more than a retry needs.
MAX_AGE = timedelta(hours=24)
#: At most this many recorded answers survive a sweep (each is a small record).
MAX_RECORDS = 100_000
#: Deletions per committed batch of a sweep (bounded memory).
_SWEEP_BATCH = 4096


def answered(
    store: Store, request_id: str | None, op: str, project: str | None = None
) -> dict[str, Any] | None:
    """The answer an earlier ``op`` recorded for ``request_id`` (None: none, or no id).

    Raises :class:`InvalidInput` when the id was recorded for another method or project, and
    :class:`~cwcore.errors.UnsafeKey` for an id no key can hold."""
    if request_id is None:
        return None
    keys.check_id(request_id, "request id")
    raw = store.get(FAMILY, keys.REQUEST.encode(request_id))
    if raw is None:
        return None
    body = codec.decode_record(raw, "request")
    if body.get("op") != op or body.get("project") != project:
        raise InvalidInput(f"request id {excerpt(request_id)} was already used")
    answer: dict[str, Any] = body["answer"]
    return answer


def record(
    batch: Batch,
    request_id: str | None,
    op: str,
    project: str | None,
    answer: dict[str, Any],
    now: datetime | None = None,
) -> None:
    """Stage ``answer`` as ``op``'s answer to ``request_id`` in ``batch`` (nothing without an
    id). The caller commits it with the change it answers."""
    if request_id is None:
        return
    keys.check_id(request_id, "request id")
    body = {
        "op": op,
        "project": project,
        "answer": answer,
        "at": clock.iso(now or clock.now()),
    }
    batch.put(FAMILY, keys.REQUEST.encode(request_id), codec.encode_record(body))


def expire(
    store: Store,
    now: datetime | None = None,
    *,
    max_age: timedelta = MAX_AGE,
    max_records: int = MAX_RECORDS,
) -> int:
    """Delete recorded answers older than ``max_age``, then the oldest beyond ``max_records``;
    returns how many went. A record that does not decode goes too (it can answer nothing)."""
    cutoff = clock.iso((now or clock.now()) - max_age)
    kept: list[tuple[str, bytes]] = []
    doomed: list[bytes] = []
    for key, value in store.scan(FAMILY, keys.REQUEST.prefix()):
        try:
            at = str(codec.decode_record(value, "request").get("at") or "")
        except CorruptRecord:  # it can answer nothing: dropped, never served
            doomed.append(key)
            continue
        if at and at < cutoff:
            doomed.append(key)
        else:
            kept.append((at, key))
    if len(kept) > max_records:
        kept.sort()  # ISO instants of one clock sort by time; no instant ("") first
        doomed.extend(key for _, key in kept[: len(kept) - max_records])
    for start in range(0, len(doomed), _SWEEP_BATCH):
        with store.lock:
            batch = store.batch()
            for key in doomed[start : start + _SWEEP_BATCH]:
                batch.delete(FAMILY, key)
            store.commit(batch)
    return len(doomed)

"""Memory records and their storage (column family ``memory``; tags 0xD0–0xDF).

A record (its field names are part of the public memory format)::

    {"id": "mem_…", "statement": str, "tags": [str], "status": "active", "profile_id": str|null,
     "scope": {"type": "global"|"domain"|"project", "name": str|null},
     "does_not_apply_when": [phrase], "known_exceptions": [phrase], "layer": "L1"|"L2",
     "confidence": 0.0–1.0, "ruleType": null|"avoid_pattern"|"prefer_pattern"|"convention"|
     "correction", "created": iso, "updated": iso, "supersedes": id|null,
     "superseded_by": id|null, "history": [{"at", "op", "reason"}]}

Statuses: ``active``, ``contested`` (conflicting evidence — :mod:`cwcore.memory.conflicts` — or
an explicit ``contest``),
``deprecated``, ``superseded`` (a newer record replaced it), ``deleted``. Only active records are
injected; contested ones may appear as warnings. Records are never physically removed by these
operations: a status change is a new value of the record with a history entry.

Layouts: ``memory`` (0xD0) id → record; ``memory-meta`` (0xDF) name → counters.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterator, Sequence
from typing import Any

from cwcore import clock
from cwcore.contract.memory import STATUSES, MemoryAddRequest, MemoryListRequest
from cwcore.errors import Conflict, InvalidInput, LimitExceeded, NotFound, excerpt
from cwcore.memory import conflicts
from cwcore.store import codec, keys, request_ids
from cwcore.store.rocks import Store

MEMORY = keys.MEMORY
MEMORY_META = keys.MEMORY_META
FAMILY = "memory"

SCOPE_TYPES = ("global", "domain", "project")

MAX_STATEMENT = 4_000
MAX_TAGS = 32
MAX_TAG = 64
MAX_PHRASES = 32
MAX_PHRASE = 200
MAX_RECORDS = 100_000


def _clean(value: Any, what: str, limit: int) -> str:
    if not isinstance(value, str):
        raise InvalidInput(f"{what} must be a string")
    text = value.strip()
    if not text:
        raise InvalidInput(f"{what} is empty")
    if len(text) > limit:
        raise LimitExceeded(f"{what} is {len(text)} characters; the limit is {limit}")
    if any(unicodedata.category(ch) == "Cc" and ch not in "\n\t" for ch in text):
        raise InvalidInput(f"{what} contains a control character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # it could not be stored: it used to end in ``internal``
        raise InvalidInput(f"{what} is not valid Unicode (a lone surrogate)") from None
    return text


def _list(values: Sequence[str], what: str, count: int, limit: int) -> list[str]:
    """The cleaned phrases, duplicates dropped (the request checked that each is a string)."""
    if len(values) > count:
        raise LimitExceeded(f"{what} has {len(values)} entries; the limit is {count}")
    return list(dict.fromkeys(_clean(v, what, limit) for v in values))


def parse_scope(value: Any) -> dict[str, Any]:
    """``global``, ``domain:NAME`` or ``project:NAME`` (or the object form) as a scope object."""
    if value is None:
        return {"type": "global", "name": None}
    if isinstance(value, dict):
        kind, name = value.get("type"), value.get("name")
    elif isinstance(value, str):
        kind, _, name = value.partition(":")
        name = name or None
    else:
        raise InvalidInput("scope must be global, domain:NAME or project:NAME")
    if kind not in SCOPE_TYPES:
        raise InvalidInput("scope must be global, domain:NAME or project:NAME")
    if kind == "global":
        if name:
            raise InvalidInput("a global scope takes no name")
        return {"type": "global", "name": None}
    if not name:
        raise InvalidInput(f"scope {kind} needs a name ({kind}:NAME)")
    return {"type": kind, "name": _clean(name, "scope name", MAX_TAG)}


def scope_label(scope: dict[str, Any]) -> str:
    return "global" if scope.get("type") == "global" else f"{scope['type']}:{scope['name']}"


def get(store: Store, record_id: str) -> dict[str, Any]:
    if not isinstance(record_id, str) or not record_id:
        raise InvalidInput("a memory record id is required")
    raw = store.get(FAMILY, MEMORY.encode(record_id))
    if raw is None:
        raise NotFound(f"no memory record {excerpt(record_id)}")
    return codec.decode_record(raw, "memory record")


def scan(store: Store) -> Iterator[dict[str, Any]]:
    """Every record, in id order (bounded by :data:`MAX_RECORDS` at admission)."""
    for _, value in store.scan(FAMILY, MEMORY.prefix()):
        yield codec.decode_record(value, "memory record")


def _put(store: Store, batch: Any, record: dict[str, Any]) -> None:
    batch.put(FAMILY, MEMORY.encode(record["id"]), codec.encode_record(record))


def add(
    store: Store, request: MemoryAddRequest, *, request_id: str | None = None
) -> dict[str, Any]:
    """Clean and store a new record (active); the request checked its types, confidence, layer,
    rule type and id prefix. ``supersedes`` marks that record superseded.

    Conflicting evidence (:mod:`cwcore.memory.conflicts`) makes the new record and the records it
    conflicts with ``contested``, in the same batch: those named in ``contradicts``, and those
    of opposite polarity on the same pattern.

    ``request_id`` (the daemon request's) makes a retry idempotent across a daemon restart: the
    new record is recorded as the answer in the same batch, and a request id seen before
    answers that record again (never a second record, nor ``conflict`` for an explicit id)."""
    statement = _clean(request.statement, "statement", MAX_STATEMENT)
    layer = request.layer or "L1"
    profile = request.profile_id
    if profile is not None:
        profile = _clean(profile, "profileId", MAX_TAG)
    record_id = request.id
    contradicts = _list(request.contradicts, "contradicts", MAX_PHRASES, MAX_TAG)
    now = clock.iso(clock.now())
    with store.lock:
        answered = request_ids.answered(store, request_id, "memory.add")
        if answered is not None:
            return answered
        meta_key = MEMORY_META.encode("counters")
        raw = store.get(FAMILY, meta_key)
        counters = codec.decode_record(raw, "memory meta") if raw else {"seq": 0, "records": 0}
        if int(counters.get("records", 0)) >= MAX_RECORDS:
            raise LimitExceeded(f"the memory store holds {MAX_RECORDS} records already")
        seq = int(counters["seq"]) + 1
        if record_id is None:
            digest = hashlib.blake2b(f"{seq}\0{statement}\0{now}".encode(), digest_size=6)
            record_id = "mem_" + digest.hexdigest()
        if store.get(FAMILY, MEMORY.encode(record_id)) is not None:
            raise Conflict(f"memory record {record_id} exists")
        record: dict[str, Any] = {
            "id": record_id,
            "statement": statement,
            "tags": _list(request.tags, "tag", MAX_TAGS, MAX_TAG),
            "status": "active",
            "profile_id": profile,
            "scope": parse_scope(request.scope),
            "does_not_apply_when": _list(
                request.does_not_apply_when, "does_not_apply_when", MAX_PHRASES, MAX_PHRASE
            ),
            "known_exceptions": _list(
                request.known_exceptions, "known_exceptions", MAX_PHRASES, MAX_PHRASE
            ),
            "layer": layer,
            "confidence": round(float(request.confidence), 4),
            "ruleType": request.rule_type,
            "created": now,
            "updated": now,
            "supersedes": None,
            "superseded_by": None,
            "history": [{"at": now, "op": "add", "reason": None}],
        }
        batch = store.batch()
        old_id = request.supersedes
        if old_id is not None:
            old = get(store, old_id)
            if old["status"] in ("superseded", "deleted"):
                raise Conflict(f"memory record {old_id} is {old['status']} already")
            record["supersedes"] = old_id
            old.update(
                {
                    "status": "superseded",
                    "superseded_by": record_id,
                    "updated": now,
                    "history": [
                        *old.get("history", []),
                        {"at": now, "op": "supersede", "reason": f"by {record_id}"},
                    ],
                }
            )
            _put(store, batch, old)
        for other in _conflicting(store, record, contradicts, old_id):
            _contest(other, record_id, now)
            _contest(record, other["id"], now)
            _put(store, batch, other)
        _put(store, batch, record)
        counters.update({"seq": seq, "records": int(counters.get("records", 0)) + 1})
        batch.put(FAMILY, meta_key, codec.encode_record(counters))
        request_ids.record(batch, request_id, "memory.add", None, record)
        store.commit(batch)
    return record


def _conflicting(
    store: Store, record: dict[str, Any], contradicts: list[str], superseded: str | None
) -> list[dict[str, Any]]:
    """The records a new one conflicts with: the explicit links first (each must be evidence
    still: active or contested), then opposite polarity on the same pattern."""
    found: dict[str, dict[str, Any]] = {}
    for other_id in contradicts:
        if other_id == record["id"] or other_id == superseded:
            raise InvalidInput(f"a record cannot contradict {excerpt(other_id)}: it replaces it")
        other = get(store, other_id)
        if other["status"] not in conflicts.EVIDENCE_STATUSES:
            raise Conflict(f"memory record {other_id} is {other['status']}")
        found[other_id] = other
    for other in conflicts.opposing(record, scan(store)):
        if other["id"] != superseded:
            found.setdefault(other["id"], other)
    return list(found.values())


def _contest(record: dict[str, Any], other_id: str, now: str) -> None:
    record.update(
        {
            "status": "contested",
            "updated": now,
            "history": [
                *record.get("history", []),
                {"at": now, "op": "contest", "reason": conflicts.reason(other_id)},
            ],
        }
    )


def set_status(
    store: Store,
    record_id: str,
    status: str,
    reason: str | None,
    *,
    request_id: str | None = None,
) -> dict[str, Any]:
    """Move a record to ``status`` (contest, deprecate, delete), with a history entry. A
    record already in ``status`` is answered as it is (nothing written).

    ``request_id`` (the daemon request's) makes a retry idempotent across a daemon restart:
    the answer is recorded in the batch of the change, and a request id seen before answers it
    again, whatever happened to the record since."""
    if status not in STATUSES:
        raise InvalidInput(f"status must be one of {', '.join(STATUSES)}")
    if reason is not None:
        reason = _clean(reason, "reason", MAX_PHRASE * 5)
    op = {"contested": "contest", "deprecated": "deprecate", "deleted": "delete"}.get(
        status, status
    )
    method = f"memory.{op}"
    with store.lock:
        answered = request_ids.answered(store, request_id, method)
        if answered is not None:
            return answered
        record = get(store, record_id)
        if record["status"] == status:
            return record
        if record["status"] in ("superseded", "deleted"):
            raise Conflict(f"memory record {record_id} is {record['status']}")
        now = clock.iso(clock.now())
        record.update(
            {
                "status": status,
                "updated": now,
                "history": [*record.get("history", []), {"at": now, "op": op, "reason": reason}],
            }
        )
        batch = store.batch()
        _put(store, batch, record)
        request_ids.record(batch, request_id, method, None, record)
        store.commit(batch)
    return record


def listing(store: Store, request: MemoryListRequest) -> list[dict[str, Any]]:
    """The records ``request`` filters (an empty filter is none; the request checked the
    status and the limit), most recently updated first."""
    status, tag, scope = request.status or None, request.tag or None, request.scope or None
    layer, limit = request.layer or None, request.limit
    wanted_scope = parse_scope(scope) if scope is not None else None
    out = []
    for record in scan(store):
        if status is not None and record["status"] != status:
            continue
        if tag is not None and tag not in record.get("tags", []):
            continue
        if wanted_scope is not None and record.get("scope") != wanted_scope:
            continue
        if layer is not None and record.get("layer") != layer:
            continue
        out.append(record)
    out.sort(key=lambda r: (r["updated"], r["id"]), reverse=True)
    return out[:limit]


def ids(records: Sequence[dict[str, Any]]) -> list[str]:
    return [str(r["id"]) for r in records]

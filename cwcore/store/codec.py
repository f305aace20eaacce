"""Record codecs: a version byte, then the body.

Structured records (manifests, session records, outbox entries) are canonical JSON (sorted keys,
no white space) so one record has one serialization; events are a compact binary header followed
by the verbatim source bytes. Decoding failures raise :class:`CorruptRecord` naming the record
(``what``: the call site says which, e.g. ``session record of 'abc'``) and the reason, and
pointing at ``cw doctor``, which lists every corrupt canonical record.

Records are written by the standard library's encoder (the canonical bytes: content digests
depend on them) and read by orjson, which parses the same JSON about three times faster: a search
decodes dozens of window records and manifests.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any

import orjson

from cwcore.errors import CorruptRecord

RECORD_V1 = 1
EVENT_V1 = 1


def is_sorted(body: Mapping[str, Any], *, tail: tuple[str, ...] = ()) -> bool:
    """True when ``body``'s keys (``tail`` left out) are sorted, as a structured record read back
    from the store has them: the typed answers use it to remember which order to answer in."""
    keys = [k for k in body if k not in tail]
    return keys == sorted(keys)


def ordered(body: dict[str, Any], as_stored: bool) -> dict[str, Any]:
    """``body`` in build order, or with sorted keys when it was read back from the store."""
    return dict(sorted(body.items())) if as_stored else body


#: One encoder for every record: ``json.dumps`` with options builds a new one per call, which
#: costs more than encoding a small record (bulk admission writes several per message).
_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def dumps(body: Any) -> bytes:
    """Canonical JSON bytes: sorted keys, compact separators, UTF-8 (no ASCII escaping)."""
    return _ENCODER.encode(body).encode()


def encode_record(body: Mapping[str, Any]) -> bytes:
    """A record's stored bytes: the format byte, then its canonical JSON (a plain dict or a
    typed record of :mod:`cwcore.store.records`)."""
    return bytes((RECORD_V1,)) + dumps(body)


def corrupt(what: str, reason: str) -> CorruptRecord:
    """The error of a record that does not decode: ``WHAT is corrupt (REASON): see cw doctor``."""
    return CorruptRecord(f"{what} is corrupt ({reason}): see cw doctor", reason=reason)


def record_problem(data: bytes | None) -> str | None:
    """Why ``data`` is not a record :func:`decode_record` accepts, or None when it is."""
    try:
        decode_record(data)
    except CorruptRecord as exc:
        return str(exc.details["reason"])
    return None


def decode_record(data: bytes | None, what: str = "record") -> dict[str, Any]:
    if not data or data[0] != RECORD_V1:
        raise corrupt(what, "unknown record version")
    try:
        body = orjson.loads(memoryview(data)[1:])
    except (orjson.JSONDecodeError, ValueError, UnicodeDecodeError) as exc:
        raise corrupt(what, f"not JSON: {exc}") from None
    if not isinstance(body, dict):
        raise corrupt(what, "not an object")
    return body


_EVENT_HEADER = struct.Struct(">BIBH")  # version, line, flags, type length


def encode_event(line: int, conversational: bool, type_: str, raw: bytes) -> bytes:
    """Event value: header (version, 1-based line, flags, type) + the verbatim source bytes."""
    tbytes = type_.encode("utf-8")[:65535]
    return (
        _EVENT_HEADER.pack(EVENT_V1, line, 1 if conversational else 0, len(tbytes)) + tbytes + raw
    )


def event_problem(data: bytes) -> str | None:
    """Why ``data`` is not an event :func:`decode_event` accepts, or None when it is."""
    try:
        decode_event(data)
    except CorruptRecord as exc:
        return str(exc.details["reason"])
    return None


def decode_event(data: bytes, what: str = "event") -> tuple[int, bool, str, bytes]:
    """Inverse of :func:`encode_event`: ``(line, conversational, type, raw)``."""
    try:
        version, line, flags, tlen = _EVENT_HEADER.unpack_from(data, 0)
    except struct.error:
        raise corrupt(what, "truncated header") from None
    if version != EVENT_V1:
        raise corrupt(what, "unknown version")
    start = _EVENT_HEADER.size
    if start + tlen > len(data):
        raise corrupt(what, "truncated type")
    try:
        type_ = data[start : start + tlen].decode("utf-8")
    except UnicodeDecodeError:
        raise corrupt(what, "bad type") from None
    return line, bool(flags & 1), type_, bytes(data[start + tlen :])

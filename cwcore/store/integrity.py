"""Every canonical record decoded once: what ``cw doctor`` reports as ``checks.records``.

Canonical records (events, manifests and heads, chunks, session records and memberships,
ordinals and tombstones, the outbox, request acknowledgements, supersession records) are the
archive; every derived index is rebuilt from them, never the other way round. So a record that
does not decode is reported, never repaired: the check names it (family, layout and key) so the
user can restore ``CW_HOME`` from a backup or forget the damaged session and import its source
again. Chunks are checked against their content digest, events and records by decoding them.

The scan reads every canonical value once (the archived text included), in key order, holding
one value at a time; keys of layouts this module does not know (other features' records kept in
a canonical family) are skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cwcore.errors import UnsafeKey, excerpt
from cwcore.store import codec, keys
from cwcore.store.rocks import CANONICAL_FAMILIES, Store

#: Corrupt records named in the report; the count covers them all.
MAX_EXAMPLES = 5

#: Characters of a string key field quoted in an example.
_KEY_CHARS = 80

Check = Callable[[bytes, bytes], str | None]


def _record(key: bytes, value: bytes) -> str | None:
    return codec.record_problem(value)


def _event(key: bytes, value: bytes) -> str | None:
    return codec.event_problem(value)


def _empty(key: bytes, value: bytes) -> str | None:
    return None if value == b"" else f"holds {len(value)} byte(s); an empty value is expected"


def _sequence(key: bytes, value: bytes) -> str | None:
    return None if len(value) == 8 else f"holds {len(value)} byte(s); a u64 is expected"


def _chunk(key: bytes, value: bytes) -> str | None:
    digest = keys.CHUNK.decode(key)[0]
    return None if keys.digest16(value) == digest else "its bytes do not match its digest"


#: What each canonical family holds, by key layout.
LAYOUTS: dict[str, tuple[tuple[keys.KeyLayout, Check], ...]] = {
    "events": ((keys.EVENT, _event), (keys.EVENT_SOURCE, _sequence)),
    "documents": (
        (keys.DOC_VERSION, _record),
        (keys.DOC_HEAD, _record),
        (keys.MESSAGE_DOC, _record),
    ),
    "chunks": ((keys.CHUNK, _chunk), (keys.CHUNK_OWNER, _empty)),
    "scopes": (
        (keys.SESSION, _record),
        (keys.PROJECT_SESSION, _empty),
        (keys.SESSION_DOC, _record),
        (keys.BUCKET_SESSION, _empty),
        (keys.PROJECT, _record),
        (keys.SUBJECT_LIVE, _record),
    ),
    "ordinals": ((keys.ORDINAL, _record), (keys.TOMBSTONE, _record)),
    "outbox": ((keys.OUTBOX, _record),),
    "requests": ((keys.REQUEST, _record),),
    "supersession": ((keys.SUPERSESSION, _record),),
}
assert set(LAYOUTS) == set(CANONICAL_FAMILIES)

#: The one piece of advice for a corrupt canonical record (doctor shows it; nothing repairs it).
ADVICE = (
    "cw never repairs canonical records from derived data: restore CW_HOME from a backup, "
    "or forget the damaged session (cw forget ID --yes) and import its source again"
)


def describe_key(layout: keys.KeyLayout, key: bytes) -> str:
    """``LAYOUT FIELD…`` for people: ``session 'abc'``, ``document 't-1' 2``."""
    try:
        fields = layout.decode(key)
    except UnsafeKey:
        return f"{layout.name} key {key[:24].hex()}…"
    shown = []
    for value in fields:
        if isinstance(value, bytes):
            shown.append(value.hex())
        elif isinstance(value, str):
            shown.append(excerpt(value, _KEY_CHARS))
        else:
            shown.append(str(value))
    return " ".join([layout.name, *shown])


def check_records(store: Store) -> dict[str, Any]:
    """Decode every canonical record. Returns ``{"ok", "checked", "corrupt", "examples"}``:
    ``examples`` names the first :data:`MAX_EXAMPLES` (``family/layout key: reason``),
    ``corrupt`` counts them all; with ``advice`` when any is corrupt."""
    checked = corrupt = 0
    examples: list[str] = []
    for family, layouts in LAYOUTS.items():
        for layout, check in layouts:
            for key, value in store.scan(family, layout.prefix()):
                checked += 1
                try:
                    layout.decode(key)
                    problem = check(key, value)
                except UnsafeKey:
                    problem = "the key does not decode"
                if problem is None:
                    continue
                corrupt += 1
                if len(examples) < MAX_EXAMPLES:
                    examples.append(f"{family}/{describe_key(layout, key)}: {problem}")
    report: dict[str, Any] = {
        "ok": corrupt == 0,
        "checked": checked,
        "corrupt": corrupt,
        "examples": examples,
    }
    if corrupt:
        report["advice"] = ADVICE
    return report

"""The session order index: every session record's place in "newest first" order.

``session-order`` keys (scopes family) are ``started ↓, session id ↓`` (both ``desc`` fields, see
:mod:`cwcore.store.keys`), so a forward scan visits sessions in exactly the order ``cw sessions``
lists them: by start time (the stored ISO string, ``""`` when unknown), then id, descending. The
value is a small summary (project, agent, ended, the message count) that lets listing filters
and the facets' counts run on the index without reading session records; only the rows of the
page are read.

The index is maintained in the same batch as the session record it mirrors: admission puts (and
moves, when ``started`` changed) the entry, forgetting deletes it. Stores written before the
index existed (schema 1) get it from migration 1 → 2 (:func:`rebuild`), run once on open; stores
whose summaries have no message count (schema 3) get them from migration 3 → 4 (the same).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, NamedTuple

from cwcore.errors import CorruptRecord
from cwcore.store import codec, keys
from cwcore.store.records import SessionRecord, decode_session

if TYPE_CHECKING:
    from cwcore.store.rocks import Batch, Store

FAMILY = "scopes"

#: The start time's bytes kept in the key. Stored timestamps are ISO-8601 (24 bytes); a longer
#: value orders by its first 256 bytes (the session id still makes the key unique).
STARTED_BYTES = 256

#: Mutations per batch when rebuilding.
REBUILD_BATCH = 2048


class Entry(NamedTuple):
    """One index entry: where a session sorts, and what the listing filters need."""

    started: str
    session_id: str
    project: str
    agent: str
    ended: str | None
    messages: int = 0  # the session record's message count


def clip_started(started: str | None) -> str:
    """The start time as the key holds it: ``""`` when unknown, at most :data:`STARTED_BYTES`."""
    text = started or ""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= STARTED_BYTES:
        return text
    return data[:STARTED_BYTES].decode("utf-8", "ignore")


def order_key(started: str | None, session_id: str, project: str | None = None) -> bytes:
    """The key of a session in the whole-archive order, or in its project's order."""
    if project is None:
        return keys.SESSION_ORDER.encode(clip_started(started), session_id)
    return keys.PROJECT_SESSION_ORDER.encode(
        project_digest(project), clip_started(started), session_id
    )


def project_digest(project: str) -> bytes:
    """The project's key digest (as :func:`cwcore.store.admission.project_digest`)."""
    return keys.digest16("project", project)


def _keys_of(record: SessionRecord) -> tuple[bytes, bytes]:
    started, session_id = record.get("started"), record["id"]
    return order_key(started, session_id), order_key(started, session_id, record["project"])


def _summary(record: SessionRecord) -> bytes:
    # The key's fields again (so a scan never decodes keys), and what the filters read.
    return codec.encode_record(
        {
            "id": record["id"],
            "started": clip_started(record.get("started")),
            "project": record["project"],
            "agent": record["agent"],
            "ended": record.get("ended"),
            "messages": int(record.get("messages", 0)),
        }
    )


def put(batch: Batch, record: SessionRecord, previous: SessionRecord | None = None) -> None:
    """Stage the entries of ``record`` (a session record about to be written in ``batch``);
    ``previous`` is the record as stored before, whose entries are dropped if the keys moved."""
    new = _keys_of(record)
    if previous is not None:
        for old in _keys_of(previous):
            if old not in new:
                batch.delete(FAMILY, old)
    summary = _summary(record)
    for key in new:
        batch.put(FAMILY, key, summary)


def delete(batch: Batch, record: SessionRecord) -> None:
    """Stage the removal of ``record``'s entries (the session is being forgotten)."""
    for key in _keys_of(record):
        batch.delete(FAMILY, key)


def scan(
    store: Store, after: tuple[str, str] | None = None, *, project: str | None = None
) -> Iterator[Entry]:
    """Entries newest first, of every session or of ``project``'s; with ``after`` (a start time
    and session id), only those that sort strictly after it (older, or as old with a smaller
    id), whether or not that session still exists."""
    if project is None:
        prefix = keys.SESSION_ORDER.prefix()
    else:
        prefix = keys.PROJECT_SESSION_ORDER.prefix(project_digest(project))
    start = None if after is None else order_key(*after, project)
    for key, value in store.scan(FAMILY, prefix, start=start):
        if key == start:
            continue
        body = codec.decode_record(value, "session order")
        yield Entry(
            body["started"],
            body["id"],
            body["project"],
            body["agent"],
            body["ended"],
            int(body.get("messages", 0)),
        )


_LAYOUTS = (keys.SESSION_ORDER, keys.PROJECT_SESSION_ORDER)


def _records(store: Store) -> Iterator[tuple[str, SessionRecord | None]]:
    """``(session id, record)`` of every session record; None for one that does not decode
    (``cw doctor``'s records check names it; canonical records are never rewritten here)."""
    for key, value in store.scan(FAMILY, keys.SESSION.prefix()):
        session_id = str(keys.SESSION.decode(key)[0])
        try:
            yield session_id, decode_session(value, "session")
        except CorruptRecord:
            yield session_id, None


def rebuild(store: Store) -> int:
    """Drop every entry and index every session record again (migration 1 → 2, and repair).
    Commits in bounded batches; re-running after an interruption gives the same result. A
    session record that does not decode gets no entry (it cannot say where it sorts)."""
    with store.lock:
        batch = store.batch()
        for layout in _LAYOUTS:
            end = keys.prefix_end(layout.prefix())
            assert end is not None
            batch.delete_range(FAMILY, layout.prefix(), end)
        count = 0
        for _, record in _records(store):
            if record is None:
                continue
            put(batch, record)
            count += 1
            if batch.mutations >= REBUILD_BATCH:
                store.commit(batch)
                batch = store.batch()
        store.commit(batch)
    return count


def verify(store: Store) -> list[str]:
    """Differences between the index and the session records (empty when consistent). The
    entries of a session whose record does not decode are not judged: the records check
    reports that record, and no rebuild could place it."""
    expected: dict[bytes, bytes] = {}
    unreadable: set[str] = set()
    for session_id, record in _records(store):
        if record is None:
            unreadable.add(session_id)
            continue
        summary = _summary(record)
        expected.update((key, summary) for key in _keys_of(record))
    problems = []
    for layout in _LAYOUTS:
        for key, value in store.scan(FAMILY, layout.prefix()):
            want = expected.pop(key, None)
            if want is None and unreadable and layout.decode(key)[-1] in unreadable:
                continue
            if want is None:
                problems.append(f"stale {layout.name} entry {layout.decode(key)}")
            elif want != value:
                problems.append(f"outdated {layout.name} summary {layout.decode(key)}")
    problems += [f"missing entry {key.hex()}" for key in expected]
    return problems

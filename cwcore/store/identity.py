"""Session identity: a session is ``(agent, native id)``, never the native id alone.

Two agents can give sessions the same id (a Codex rollout and an OpenClaw session both
``quote-123``; a Kilo database copied from OpenCode's, with the same ``ses_…`` ids). The store
keeps them apart without renaming anything it already holds:

- the first agent to bring a native id keeps it as the store's session id (every existing
  session, and nearly every session ever: agents' ids are UUIDs);
- another agent's session with that native id is stored as ``<agent>:<native id>``
  (:func:`qualified`), with ``nativeId`` in its record;
- the ``session-native`` index maps ``(native id, agent)`` to the store's id, so an import finds
  the session its agent already has, and an id a user types resolves: a store id (what the
  listings show) to its session, a native id to the one agent's session that has it — or to a
  clear "shared by …" error — and ``<agent>:<native id>`` to that agent's (:func:`resolve`).

Stores written before this index are upgraded at writable open (:func:`backfill`, schema 3),
one page of sessions per write batch with a durable cursor, so a kill at any point resumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from cwcore.errors import NotFound, UnsafeKey, excerpt
from cwcore.store import keys
from cwcore.store.records import SessionRecord, decode_session

if TYPE_CHECKING:
    from cwcore.store.rocks import Store

__all__ = [
    "agents_of",
    "backfill",
    "qualified",
    "resolve",
    "resolve_prefix",
    "session_key",
    "session_what",
    "shared_with",
]

#: Sessions indexed per write batch by the upgrade (small batches, a cursor after each).
BACKFILL_PAGE = 256


def session_what(session_id: str) -> str:
    """How an error names a session's record."""
    return f"session record of {excerpt(session_id)}"


def qualified(agent: str, native_id: str) -> str:
    """The store id of ``agent``'s session ``native_id`` when another agent holds the bare id:
    ``<agent>:<native id>``, or ``<agent>:#<digest>`` when that would pass the id limit."""
    key = f"{agent}:{native_id}"
    if len(key.encode("utf-8", "surrogatepass")) <= keys.MAX_ID_BYTES:
        return key
    return f"{agent[:64]}:#{keys.digest16(native_id).hex()}"


def session_key(store: Store, native_id: str, agent: str) -> str:
    """The store id for ``agent``'s session ``native_id``: the one already assigned, else the
    bare id while no other agent's session holds it, else :func:`qualified`."""
    raw = store.get("scopes", keys.SESSION_NATIVE.encode(native_id, agent))
    if raw is not None:
        return raw.decode("utf-8")
    record = _record(store, native_id)
    if record is None or (record.get("agent") == agent and not record.get("nativeId")):
        return native_id
    return qualified(agent, native_id)


def agents_of(store: Store, native_id: str) -> list[tuple[str, str]]:
    """``(agent, store id)`` of every session whose agent gave it ``native_id``."""
    out = []
    for key, value in store.scan("scopes", keys.SESSION_NATIVE.prefix(native_id)):
        _, agent = keys.SESSION_NATIVE.decode(key)
        out.append((str(agent), value.decode("utf-8")))
    return out


def resolve(store: Store, name: str) -> str | None:
    """The store id ``name`` names exactly, or None.

    ``name`` is a store id (what every listing shows: it always names its own session), a
    native id (accepted when one agent's session has it), or ``<agent>:<native id>``. Raises
    :class:`NotFound` naming the agents when ``name`` is no store id and two agents' sessions
    have it as their native id."""
    if _record(store, name) is not None:
        return name
    try:
        owners = agents_of(store, name)
    except UnsafeKey:  # no key can hold it: it names no session
        return None
    if len(owners) > 1:
        names = ", ".join(f"{agent} ({sid})" for agent, sid in sorted(owners))
        raise NotFound(
            f"session {excerpt(name)} is shared by {len(owners)} agents: {names}; "
            "name one as <agent>:<id>"
        )
    if owners:
        return owners[0][1]
    agent, sep, native = name.partition(":")
    if sep and agent and native:
        try:
            raw = store.get("scopes", keys.SESSION_NATIVE.encode(native, agent))
        except UnsafeKey:
            return None
        if raw is not None:
            return raw.decode("utf-8")
    return None


def resolve_many(store: Store, names: Sequence[str]) -> list[str | None]:
    """:func:`resolve` of each of ``names``, in order (the same answers, the same first error):
    the store ids among them are found with one read for all."""
    encodable: list[int] = []
    found_keys: list[bytes] = []
    for i, name in enumerate(names):
        try:
            found_keys.append(keys.SESSION.encode(name))
        except UnsafeKey:
            continue
        encodable.append(i)
    raws: list[bytes | None] = [None] * len(names)
    if found_keys:
        for i, raw in zip(encodable, store.get_many("scopes", found_keys), strict=True):
            raws[i] = raw
    out: list[str | None] = []
    for name, raw in zip(names, raws, strict=True):
        if raw is None:
            out.append(resolve(store, name))
        else:
            decode_session(raw, session_what(name))  # a damaged record fails as in resolve
            out.append(name)
    return out


#: The shortest session-id prefix accepted where an id is typed (as ``cw show`` takes it).
PREFIX_MIN = 4


def resolve_prefix(store: Store, name: str) -> str | None:
    """The store id ``name`` names (:func:`resolve`), else the one session whose id starts
    with ``name`` (at least :data:`PREFIX_MIN` characters; a prefix shared by a session and its
    sub-agents, ``<parent>/agent-…``, names the parent); None when no session matches.
    Raises :class:`NotFound` (one line) when the prefix matches several sessions, or a native
    id is shared by two agents. Unlike ``Reader.find_session`` it tells "no such session"
    (None) from "ambiguous" (raised), for callers that accept sessions not imported yet."""
    exact = resolve(store, name)
    if exact is not None or len(name) < PREFIX_MIN:
        return exact
    matches = []
    for key, _ in store.scan("scopes", keys.SESSION.prefix()):
        sid = str(keys.SESSION.decode(key)[0])
        if sid.startswith(name):
            matches.append(sid)
    if len(matches) <= 1:
        return matches[0] if matches else None
    roots = [m for m in matches if all(o.startswith(m) for o in matches)]
    if len(roots) == 1:
        return roots[0]
    ids = ", ".join(sorted(matches)[:5])
    raise NotFound(f"session prefix {excerpt(name)} is ambiguous: {ids}")


def shared_with(store: Store, record: SessionRecord) -> list[tuple[str, str]]:
    """``(agent, store id)`` of the OTHER agents' sessions whose native id is this session's."""
    native = str(record.get("nativeId") or record["id"])
    return [(a, sid) for a, sid in agents_of(store, native) if sid != record["id"]]


def _record(store: Store, session_id: str) -> SessionRecord | None:
    try:
        raw = store.get("scopes", keys.SESSION.encode(session_id))
    except UnsafeKey:  # an id the key encoding refuses names no session
        return None
    return None if raw is None else decode_session(raw, session_what(session_id))


def backfill(store: Store) -> None:
    """Index every session record under ``(native id, agent)``: the schema-3 upgrade.

    Resumable and idempotent: each page's index entries and the cursor (the last session id
    indexed) commit in one batch, and an entry is a deterministic put."""
    state = store.meta_get("identity-backfill") or {}
    after = state.get("after")
    prefix = keys.SESSION.prefix()
    start = keys.SESSION.encode(after) if after else None
    while True:
        page = []
        for key, value in store.scan("scopes", prefix, start=start, limit=BACKFILL_PAGE + 1):
            sid = str(keys.SESSION.decode(key)[0])
            if sid == after:
                continue
            page.append((sid, decode_session(value, session_what(sid))))
            if len(page) == BACKFILL_PAGE:
                break
        if not page:
            return
        batch = store.batch()
        for sid, record in page:
            native = str(record.get("nativeId") or sid)
            agent = str(record.get("agent") or "")
            if agent:
                batch.put("scopes", keys.SESSION_NATIVE.encode(native, agent), sid.encode("utf-8"))
        after = page[-1][0]
        store.meta_put(batch, "identity-backfill", {"after": after})
        store.commit(batch)
        start = keys.SESSION.encode(after)

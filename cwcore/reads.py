"""Reads bound to one project (and optionally one session's lineage), for the MCP server.

The binding is enforced here, in the engine, before anything of another project is read into
an answer: the MCP adapter passes its binding and is not the only lock.

* :func:`sessions_page` — a page of the project's sessions (newest first), with the listing's
  filters (``agent``, ``since``, ``limit``, ``cursor``).
* :func:`messages_range` — messages ``from``..``to`` of one session named by id or unique
  prefix. A session of another project, or outside the bound session's lineage, answers exactly
  as a session that does not exist (``not-found``, the same message), and a prefix is matched
  among the reachable sessions only, so another project's ids never make it ambiguous.
* :func:`memory_context` — the injection block of a prompt from the records the project may see.

Message numbers count a session's messages as ``cw sessions`` does (thinking left out,
superseded messages kept and marked), from 1. Answers are bounded: at most
:data:`MAX_PAGE` sessions and :data:`MAX_RANGE` messages, and :data:`MAX_CHARS` characters of
rows or message text (a message longer than what is left is cut and says so; the page says where
to go on).

The answers are frozen dataclasses declared in :mod:`cwcore.contract.bound` with the requests
(:class:`BoundSessions`, :class:`BoundMessages`; the memory block is a
:class:`cwcore.contract.memory.MemoryContext`): the ``bound.*`` handlers serialize them
once with ``to_json()`` and :class:`cwcore.api.Archive` rebuilds them with ``from_json()``;
the JSON is derived from the fields (:mod:`cwcore.contract.codec`): the keys and values these
methods have always answered, ``from_json(x).to_json() == x`` as parsed JSON.
"""

from __future__ import annotations

import json
from dataclasses import replace

from cwcore import browse
from cwcore.contract.bound import (  # the answers, declared in the contract; bounds likewise
    DEFAULT_RANGE,
    BoundMessage,
    BoundMessages,
    BoundSessions,
    TextCut,
)
from cwcore.contract.memory import MemoryContext
from cwcore.contract.sessions import SessionInfo
from cwcore.errors import CwError, NotFound, excerpt
from cwcore.retrieve.scope import lineage
from cwcore.services import Services
from cwcore.store.reader import Reader
from cwcore.store.records import SessionRecord

__all__ = [
    "MAX_CHARS",
    "bound_session",
    "memory_context",
    "messages_range",
    "sessions_page",
]

#: Characters of session rows (a page) or of message text (a range) in one answer.
MAX_CHARS = 64_000
TITLE_CHARS = 200
#: Ids kept per list in a memory answer's selection (the block itself is at most 14 KB).
MEMORY_IDS = 20


def _cut(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


def _row(reader: Reader, row: SessionInfo, project: str) -> SessionInfo:
    """A listing row as a bound caller may see it: a parent in another project is not named."""
    out = replace(row, title=_cut(row.title, TITLE_CHARS))
    if out.parent is not None:
        try:
            same = reader.session(out.parent).get("project") == project
        except CwError:
            same = False
        if not same:
            out = replace(out, parent=None, parentToolCall=None)
    return out


def sessions_page(
    reader: Reader,
    project: str,
    *,
    agent: str | None = None,
    since: str | None = None,
    limit: int = DEFAULT_RANGE,
    cursor: str | None = None,
) -> BoundSessions:
    """One page of ``project``'s sessions, at most ``limit`` (1 to :data:`MAX_PAGE`, as
    :class:`~cwcore.contract.bound.BoundSessionsRequest` checks it) and :data:`MAX_CHARS`
    characters of row JSON (the first row is kept whatever its size)."""

    def page(n: int) -> tuple[list[SessionInfo], str | None]:
        body = browse.list_sessions(
            reader, project=project, agent=agent, since=since, limit=n, cursor=cursor
        )
        return [_row(reader, row, project) for row in body.sessions], body.next_cursor

    rows, next_cursor = page(limit)
    used, kept = 0, 0
    for row in rows:
        size = len(json.dumps(row.to_json(), ensure_ascii=False))
        if kept and used + size > MAX_CHARS:
            break
        used += size
        kept += 1
    if kept < len(rows):  # the same first rows again, so the cursor resumes after the last kept
        rows, next_cursor = page(kept)
    return BoundSessions(project, tuple(rows), next_cursor)


def bound_session(
    reader: Reader, session: str, project: str, bound: str | None = None
) -> SessionRecord:
    """The record of the session ``session`` names — an id or a unique prefix of at least 4
    characters — among ``project``'s sessions (and, with ``bound``, that session's lineage)."""
    allowed = set(lineage(reader, bound)) if bound is not None else None

    def reachable(record: SessionRecord) -> bool:
        return record.get("project") == project and (allowed is None or record["id"] in allowed)

    missing = NotFound(f"no session {excerpt(session)}")
    try:
        record = reader.session(session)
        if reachable(record):
            return record
    except NotFound:
        pass
    if len(session) < 4:
        raise missing
    matches: list[str] = []
    for sid in reader.session_ids():
        if sid == session or not sid.startswith(session):
            continue
        try:
            if reachable(reader.session(sid)):
                matches.append(sid)
        except CwError:
            continue
    # A sub-agent's id extends its parent's: a prefix naming a session names it.
    roots = [m for m in matches if all(o.startswith(m) for o in matches)]
    if len(matches) == 1 or len(roots) == 1:
        return reader.session(matches[0] if len(matches) == 1 else roots[0])
    if not matches:
        raise missing
    ids = ", ".join(sorted(matches)[:5])
    raise NotFound(f"session prefix {excerpt(session)} is ambiguous: {ids}")


def messages_range(
    reader: Reader,
    session: str,
    project: str,
    *,
    bound: str | None = None,
    start: int = 1,
    end: int | None = None,
) -> BoundMessages:
    """Messages ``start``..``end`` (1-based, inclusive; default 20 from ``start``; at most
    :data:`MAX_RANGE`, as :class:`~cwcore.contract.bound.BoundMessagesRequest` checks them) of a
    reachable session, at most :data:`MAX_CHARS` characters of text (the first message is cut
    to fit, a later one that does not fit is left for the next call)."""
    end = start + DEFAULT_RANGE - 1 if end is None else end
    record = bound_session(reader, session, project, bound)
    body = browse.transcript(reader, record["id"])
    listed = [m for m in body.messages if m.kind != "thinking"]
    out: list[BoundMessage] = []
    used = 0
    following: int | None = end + 1 if end < len(listed) else None
    for n in range(start, min(end, len(listed)) + 1):
        m = listed[n - 1]
        text = m.text or ""
        room = MAX_CHARS - used
        if out and len(text) > room:
            following = n
            break
        item = BoundMessage(
            n=n,
            role=m.role,
            kind=m.kind,
            timestamp=m.timestamp,
            tool=m.tool,
            message_key=m.message_key,
            document_id=m.document_id,
            superseded=m.superseded,
            text=text[:room],
            text_cut=TextCut(room, len(text)) if len(text) > room else None,
        )
        out.append(item)
        used += len(item.text)
    info = _row(reader, body.session, project)
    return BoundMessages(
        session=info,
        total=len(listed),
        start=start,
        end=out[-1].n if out else None,
        messages=tuple(out),
        next=following,
    )


def memory_context(
    engine: Services, prompt: str, project: str, *, bound: str | None = None
) -> MemoryContext:
    """The injection block of ``prompt`` over the records ``project`` may see (another
    project's records never enter the pipeline), with its bounded selection."""
    from cwcore.memory import diagnostics
    from cwcore.memory.context import context

    result = context(engine, prompt, project=project, session=bound, project_only=True)
    return MemoryContext.from_json(
        {
            "project": project,
            "block": result.get("block"),
            **diagnostics.summary(result, limit=MEMORY_IDS),
        }
    )

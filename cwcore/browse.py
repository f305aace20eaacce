"""Browsing: session listings, transcripts and exports, straight from canonical records."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from cwcore.clock import parse_time
from cwcore.contract.sessions import MAX_LIMIT, SORT_KEYS, SessionInfo, SessionsPage
from cwcore.contract.views import check_export_format
from cwcore.errors import InvalidInput, NotFound, UnsafeKey, excerpt
from cwcore.importers.documents import prompt_title
from cwcore.store import identity, session_order
from cwcore.store.parts import message_fields
from cwcore.store.reader import Reader
from cwcore.store.records import DocumentHead

if TYPE_CHECKING:  # recall pulls in retrieval: the sessions browser imports it only to run it
    from cwcore.contract.context import DocumentContext, Neighbor
    from cwcore.contract.views import DocumentView, Transcript, TranscriptMessage


def _cursor_encode(row: SessionInfo) -> str:
    raw = json.dumps([row.started or "", row.sessionId]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor_decode(cursor: str) -> tuple[str, str]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        started, session_id = json.loads(raw)
        return str(started), str(session_id)
    except (ValueError, TypeError):
        raise InvalidInput(f"not a cursor from cw sessions: {excerpt(cursor)}") from None


#: Sort keys of a session listing. ``started`` walks the session-order index page by page;
#: the others (and any ``match``) read every matching session record once per page.
#: Records read per multi-get on the sorted path.
_SORT_READ = 1_000


def check_page(
    *, limit: object = 50, since: str | None = None, cursor: str | None = None
) -> tuple[datetime | None, tuple[str, str] | None]:
    """The listing's own parameters, checked without the store: the ``since`` time and the
    cursor's position. :class:`InvalidInput` for a limit out of range, a date that does not
    parse, or a cursor ``cw sessions`` did not make."""
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"--limit must be between 1 and {MAX_LIMIT}")
    since_dt = parse_time(since) if since else None
    after = _cursor_decode(cursor) if cursor else None
    if after is not None:
        try:
            session_order.order_key(*after)
        except UnsafeKey:
            raise InvalidInput(f"not a cursor from cw sessions: {excerpt(cursor)}") from None
    return since_dt, after


def list_sessions(
    reader: Reader,
    *,
    project: str | None = None,
    agent: str | None = None,
    since: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
    sort: str = "started",
    ascending: bool = False,
    match: str | None = None,
) -> SessionsPage:
    """Sessions, filtered, one page at a time: newest first by default.

    By start time (``sort="started"``, newest first) the listing walks the ``session-order``
    index (with a project, that project's part of it) from the cursor, filtering on its
    summaries, and stops after ``limit + 1`` matches; only the page's session records are read.
    Another ``sort`` (``ended``, ``messages``, ``tools``, ``duration``: largest first), oldest
    first (``ascending``), or a ``match`` (a case-insensitive substring of the session id or
    title) read every session that passes the filters: a cost in the number of such sessions,
    paid per page. Ties go newest first, then by id.
    Returns the page and the cursor of the next one (None at the end).
    """
    if sort not in SORT_KEYS:
        raise InvalidInput(f"sort must be one of {', '.join(SORT_KEYS)}")
    match = match.strip() if match else None
    if sort != "started" or ascending or match:
        since_dt, _ = check_page(limit=limit, since=since)
        return _sorted_sessions(
            reader, project, agent, since_dt, limit, cursor, sort, ascending, match or None
        )
    since_dt, after = check_page(limit=limit, since=since, cursor=cursor)
    ids: list[str] = []
    for entry in _filtered(reader, project, agent, since_dt, after):
        ids.append(entry.session_id)
        if len(ids) > limit:
            break
    page = [SessionInfo.from_record(record) for record in reader.sessions_by_id(ids[:limit])]
    next_cursor = _cursor_encode(page[-1]) if len(ids) > limit else None
    return SessionsPage(tuple(page), next_cursor)


def _filtered(
    reader: Reader,
    project: str | None,
    agent: str | None,
    since: datetime | None,
    after: tuple[str, str] | None = None,
) -> Iterator[session_order.Entry]:
    """The session-order entries that pass the project, agent and since filters, in order."""
    for entry in session_order.scan(reader.store, after, project=project):
        if agent is not None and entry.agent != agent:
            continue
        if since is not None:
            last = entry.ended or entry.started
            if not last or parse_time(last) < since:
                continue
        yield entry


def _duration(row: SessionInfo) -> float:
    if not row.started or not row.ended:
        return -1.0
    try:
        return (parse_time(row.ended) - parse_time(row.started)).total_seconds()
    except InvalidInput:
        return -1.0


_SORT_VALUE: dict[str, Callable[[SessionInfo], Any]] = {
    "started": lambda r: r.started or "",
    "ended": lambda r: r.ended or r.started or "",
    "messages": lambda r: r.messages,
    "tools": lambda r: r.toolCalls,
    "duration": _duration,
}


def _sorted_sessions(
    reader: Reader,
    project: str | None,
    agent: str | None,
    since: datetime | None,
    limit: int,
    cursor: str | None,
    sort: str,
    ascending: bool,
    match: str | None,
) -> SessionsPage:
    offset = _offset_decode(cursor, sort, ascending, match) if cursor else 0
    wanted = match.casefold() if match else None
    rows: list[SessionInfo] = []
    ids = [entry.session_id for entry in _filtered(reader, project, agent, since)]
    for start in range(0, len(ids), _SORT_READ):
        for record in reader.sessions_by_id(ids[start : start + _SORT_READ]):
            row = SessionInfo.from_record(record)
            if wanted is not None and not (
                wanted in row.sessionId.casefold() or wanted in (row.title or "").casefold()
            ):
                continue
            rows.append(row)
    # ``ids`` is newest first: a stable sort keeps that order among equal values.
    value = _SORT_VALUE[sort]
    rows.sort(key=value, reverse=not ascending)
    page = rows[offset : offset + limit]
    more = offset + limit < len(rows)
    next_cursor = _offset_encode(offset + limit, sort, ascending, match) if more else None
    return SessionsPage(tuple(page), next_cursor)


def _offset_encode(offset: int, sort: str, ascending: bool, match: str | None) -> str:
    raw = json.dumps({"offset": offset, "sort": sort, "asc": ascending, "match": match})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _offset_decode(cursor: str, sort: str, ascending: bool, match: str | None) -> int:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        body = json.loads(raw)
        offset = body["offset"]
        same = (body["sort"], body["asc"], body["match"]) == (sort, ascending, match)
    except (ValueError, TypeError, KeyError):
        raise InvalidInput(f"not a cursor from cw sessions: {excerpt(cursor)}") from None
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0 or not same:
        raise InvalidInput(f"not a cursor of this listing: {excerpt(cursor)}")
    return offset


def resolve_session(reader: Reader, session: str) -> SessionInfo:
    """The session an id or a unique id prefix (4+ characters) names, as ``cw show`` resolves
    it; :class:`~cwcore.errors.NotFound` when none or several match."""
    return SessionInfo.from_record(reader.find_session(session))


def transcript(
    reader: Reader, session: str, *, include_all: bool = False, hide_superseded: bool = False
) -> Transcript:
    """A session as ordered messages from its documents, in order of first admission.

    A transcript shows what happened: the messages of superseded documents are listed too,
    each marked ``superseded: true`` with ``supersession: {"reason", "by", "at"}`` (why, and the
    replacing document when one was named). ``hide_superseded`` leaves them out instead and
    counts them in ``hiddenSuperseded``. With ``include_all``, metadata events (lines that carry
    no conversation) are listed too.

    Each message: ``{"documentId", "messageKey", "role", "kind", "text", "timestamp", "tool",
    "lines", "superseded"}`` (and ``supersession`` on superseded ones) plus, when set,
    ``parent``, ``toolCallId``, ``inputIsText`` or ``toolInput``, ``meta``, ``isError``,
    ``model``, ``usage`` and ``subagent`` (``{"sessionId", "messages"}``: the sub-agent a tool
    call started, ``messages`` None when that session is not in the store). Thinking (kind
    ``thinking``) is listed where it happened; faces hide it by default. A message cut over
    several documents is joined back into one, with ``split: {"pieces", "documentIds"}`` naming
    its documents in order. ``counts`` is ``{"messages", "superseded", "hiddenSuperseded"}``:
    messages listed, how many of them are superseded, and how many superseded ones were left
    out.
    """
    from cwcore.contract.views import (
        MetadataEvent,
        Transcript,
        TranscriptCounts,
        TranscriptDocument,
        TranscriptMessage,
    )

    record = reader.find_session(session)
    session_id = record["id"]
    messages: list[dict[str, Any]] = []  # built as JSON: cut messages are joined in place
    documents = []
    shown: set[str] = set()  # message keys already in the transcript
    hidden = 0
    for head in reader.session_heads(session_id, include_superseded=True):
        if head["kind"] not in ("turn", "tool-result", "decision", "note", "markdown"):
            continue
        state = head.get("state", "live")
        manifest = reader.manifest(head["documentId"], head["version"])
        if state != "live" and hide_superseded:
            hidden += sum(
                1 for part in manifest["parts"] if not part.get("piece") or not part["piece"][0]
            )
            continue
        documents.append(
            TranscriptDocument(head["documentId"], int(head["version"]), head["kind"], state)
        )
        supersession = _supersession(reader, head) if state != "live" else None
        asides: dict[int, list[tuple[dict[str, Any], str]]] = {}
        for aside, text in reader.aside_texts(manifest):
            asides.setdefault(int(aside["after"]), []).append((aside, text))
        for aside, text in asides.get(-1, ()):
            messages.append(_message(head["documentId"], aside, text, supersession))
        for index, (part, text) in enumerate(reader.part_texts(manifest)):
            if _continues_piece(messages, part, head["documentId"], text):
                pass
            elif part["key"] in shown and "piece" not in part:
                # A store written before turns were cut into small documents keeps a large
                # tool output both in its turn and in a tool-result document: show it once.
                continue
            else:
                shown.add(part["key"])
                messages.append(_message(head["documentId"], part, text, supersession))
                if "piece" in part:
                    messages[-1]["split"] = {
                        "pieces": int(part["piece"][1]),
                        "documentIds": [head["documentId"]],
                    }
                    messages[-1]["_piece"] = int(part["piece"][0])
            for aside, aside_text in asides.get(index, ()):
                messages.append(_message(head["documentId"], aside, aside_text, supersession))
    children = _subagents(reader, messages)
    for message in messages:
        message.pop("_piece", None)
        entry = message.pop("_entry")
        message.update(message_fields(entry))
        if "subagent" in message:
            child = message["subagent"]
            message["subagent"] = {"sessionId": child, "messages": children.get(child)}
    events = None
    if include_all:
        events = tuple(
            MetadataEvent(e.seq, e.line, e.type, e.conversational, e.raw.decode("utf-8", "replace"))
            for e in reader.events(session_id)
            if not e.conversational
        )
    return Transcript(
        session=SessionInfo.from_record(record),
        documents=tuple(documents),
        messages=tuple(TranscriptMessage.from_json(m) for m in messages),
        counts=TranscriptCounts(
            messages=len(messages),
            superseded=sum(1 for m in messages if m["superseded"]),
            hidden_superseded=hidden,
        ),
        events=events,
        shared_with=tuple(identity.shared_with(reader.store, record)),
    )


def _message(
    document_id: str, entry: dict[str, Any], text: str, supersession: dict[str, Any] | None
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "documentId": document_id,
        "messageKey": entry["key"],
        "role": entry["role"],
        "kind": entry["kind"],
        "text": text,
        "timestamp": entry.get("ts"),
        "tool": entry.get("tool"),
        "lines": entry.get("lines", []),
        "superseded": supersession is not None,
        "_entry": entry,
    }
    if supersession is not None:
        message["supersession"] = supersession
    return message


def _subagents(reader: Reader, messages: list[dict[str, Any]]) -> dict[str, int | None]:
    """The message count of each sub-agent session the messages' tool calls started (None for
    one that is not in the store)."""
    out: dict[str, int | None] = {}
    for message in messages:
        child = message["_entry"].get("subagent")
        if not isinstance(child, str) or child in out:
            continue
        try:
            out[child] = int(reader.session(child).get("messages", 0))
        except NotFound:
            out[child] = None
    return out


def _supersession(reader: Reader, head: DocumentHead) -> dict[str, Any]:
    """Why a superseded head was retired: the reason and replacement of its supersession
    record (the head's own fields when the record is gone)."""
    from cwcore.store import codec, keys

    raw = reader.store.get(
        "supersession", keys.SUPERSESSION.encode(head["documentId"], int(head["version"]))
    )
    record = codec.decode_record(raw, "supersession") if raw else {}
    return {
        "reason": record.get("reason") or head.get("reason") or "superseded",
        "by": record.get("by") or head.get("supersededBy") or None,
        "at": record.get("at") or head.get("supersededAt"),
    }


def _continues_piece(
    messages: list[dict[str, Any]], part: dict[str, Any], document_id: str, text: str
) -> bool:
    """Join piece ``i`` of a cut message to the message built from pieces ``0..i-1`` (True), so
    a transcript shows the message whole, exactly as admitted. A piece whose predecessor is
    missing (retention forgot that document) starts a message of its own, marked by ``split``:
    ``documentIds`` then lists fewer documents than ``pieces``."""
    piece = part.get("piece")
    if not piece or not int(piece[0]) or not messages:
        return False
    last = messages[-1]
    if last["messageKey"] != part["key"] or last.get("_piece") != int(piece[0]) - 1:
        return False
    last["text"] += text
    last["_piece"] = int(piece[0])
    last["split"]["documentIds"].append(document_id)
    return True


def export_session(reader: Reader, session: str, fmt: str) -> str:
    """A session as Markdown (for people) or cw-jsonl (the interchange format).

    The cw-jsonl export is lossless for what cw keeps of a message: every optional field of the
    format that the message has (``timestamp``, ``project``, ``agent``, ``parent``,
    ``parent_session``, ``tool_name``, ``tool_call_id``, ``tool_input``) and cw's own optional
    ones (``kind`` where the role does not imply it, ``meta`` for host-generated user text,
    ``is_error``, ``model``, ``usage``, ``subagent``; ``title`` and ``parent_tool_call`` on the
    session's first line), so importing it back gives the same sessions, turns and messages.
    Thinking is exported (kind ``thinking``); the Markdown export leaves it out.
    """
    check_export_format(fmt)
    body = transcript(reader, session, hide_superseded=True)
    info = body.session
    if fmt == "jsonl":
        users = [
            (m.text, not m.meta) for m in body.messages if m.role == "user" and m.kind == "text"
        ]
        # A title an import would derive again is not written.
        title = info.title if info.title != prompt_title(users) else None
        lines = [
            json.dumps(_jsonl_row(info, m, first=index == 0, title=title), ensure_ascii=False)
            for index, m in enumerate(body.messages)
        ]
        return "\n".join(lines) + ("\n" if lines else "")
    out = [f"# Session {info.sessionId}", ""]
    out.append(f"- project: {info.project}")
    out.append(f"- agent: {info.agent}")
    if info.started:
        out.append(f"- started: {info.started}")
    out.append(f"- messages: {info.messages}, turns: {info.turns}")
    out.append("")
    for m in body.messages:
        if m.kind == "thinking":
            continue
        label = {"user": "User", "assistant": "Assistant", "tool": "Tool", "system": "System"}[
            m.role
        ]
        if m.kind == "tool-call":
            label = f"Tool call `{m.tool or 'tool'}`"
        elif m.kind == "tool-result":
            label = "Tool result" + (f" `{m.tool}`" if m.tool else "")
        stamp = f" — {m.timestamp}" if m.timestamp else ""
        out.append(f"## {label}{stamp}")
        out.append("")
        if m.kind in ("tool-call", "tool-result"):
            fence = "````" if "```" in m.text else "```"
            out += [fence, m.text, fence]
        else:
            out.append(m.text)
        out.append("")
    return "\n".join(out)


def _jsonl_row(
    info: SessionInfo, m: TranscriptMessage, *, first: bool, title: str | None
) -> dict[str, Any]:
    """One cw-jsonl line for transcript message ``m`` of session ``info``; the session's first
    line carries ``title`` (a title an import would not derive again) and the sub-agent link."""
    row: dict[str, Any] = {
        "session": info.sessionId,
        "id": m.message_key.split(":", 1)[1],
        "role": m.role,
        "text": m.text,
    }
    implied = {"tool": "tool-result"}.get(m.role, "text")
    if m.role == "assistant" and m.tool:
        implied = "tool-call"
    if m.kind != implied:
        row["kind"] = m.kind
    if m.timestamp:
        row["timestamp"] = m.timestamp
    row["project"] = info.project
    row["agent"] = info.agent
    if info.parent:
        row["parent_session"] = info.parent
    if first and title:
        row["title"] = title
    if first and info.parentToolCall:
        row["parent_tool_call"] = info.parentToolCall
    if m.parent:
        row["parent"] = m.parent
    if m.tool:
        row["tool_name"] = m.tool
    if m.tool_call_id:
        row["tool_call_id"] = m.tool_call_id
    tool_input = _json_object(m.text if m.input_is_text else m.tool_input)
    if tool_input is not None:
        row["tool_input"] = tool_input
    if m.meta:
        row["meta"] = True
    if m.is_error:
        row["is_error"] = True
    if m.model:
        row["model"] = m.model
    usage = m.usage_json()
    if usage:
        row["usage"] = usage
    if m.subagent is not None:
        row["subagent"] = m.subagent.session_id
    return row


def _json_object(text: object) -> dict[str, Any] | None:
    """``text`` decoded when it is the JSON of an object (cw-jsonl's ``tool_input`` is one)."""
    if not isinstance(text, str):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def show_document(
    reader: Reader, document_id: str, *, include_superseded: bool = False
) -> DocumentView:
    """A document's text and provenance; superseded versions only with ``include_superseded``
    (the audit view: the old source stays readable until retention removes it). A version that
    holds a piece of a cut message carries its ``split`` metadata (message key, piece, count and
    every piece's document in order): joining those documents' pieces gives the message."""
    from cwcore.contract.recall import Split
    from cwcore.contract.views import DocumentVersion, DocumentView
    from cwcore.store import codec, keys

    head = reader.head(document_id)
    live = head.get("state", "live") == "live"
    if not live and not include_superseded:
        raise InvalidInput(
            f"{document_id} is {head.get('state')}; add --include-superseded to read it (audit)"
        )
    versions = reader.versions(document_id) if include_superseded else [int(head["version"])]
    out = []
    for version in versions:
        manifest = reader.manifest(document_id, version)
        raw, undone = reader.store.get_many(
            "supersession",
            [
                keys.SUPERSESSION.encode(document_id, version),
                keys.UNSUPERSESSION.encode(document_id, version),
            ],
        )
        split = (manifest.get("metadata") or {}).get("split")
        out.append(
            DocumentVersion(
                version=version,
                current=version == int(head["version"]),
                superseded=codec.decode_record(raw) if raw else None,
                unsuperseded=codec.decode_record(undone) if undone else None,
                kind=manifest["kind"],
                created=manifest["created"],
                message_keys=tuple(p["key"] for p in manifest["parts"]),
                text=reader.text(manifest),
                # Set when an undone supersession brought this version back.
                restores=manifest.get("restores") or None,
                # Set on a piece of a cut message: which, and where the others are.
                split=Split.from_json(split) if split else None,
            )
        )
    return DocumentView(
        document_id=document_id,
        state=head.get("state", "live"),
        superseded_by=head.get("supersededBy"),
        session=head["session"],
        project=head["project"],
        kind=head["kind"],
        versions=tuple(out),
    )


def document_context(reader: Reader, document_id: str, *, around: int = 1) -> DocumentContext:
    """The turns before and after a document in its session, as ``gather`` gives them for a
    hit (context: no score, no band): the document, its session, its turn and its neighbours.
    A tool-result document is placed at its parent turn; ``around`` turns on each side (the
    request, :class:`~cwcore.contract.context.ContextRequest`, bounds it).
    Raises :class:`~cwcore.errors.NotFound` for a document that does not exist."""
    from cwcore.contract.context import DocumentContext
    from cwcore.recall.gather import neighbor

    head = reader.head(document_id)
    manifest = reader.manifest(document_id, int(head["version"]))
    metadata = manifest.get("metadata") or {}
    turn = (
        manifest.get("parent") if manifest["kind"] == "tool-result" else metadata.get("continues")
    ) or document_id
    turns = [
        h
        for h in reader.session_heads(manifest["session"])
        if h["kind"] in ("turn", "decision") or h["documentId"] == turn
    ]
    index = next((i for i, h in enumerate(turns) if h["documentId"] == turn), None)
    before: tuple[Neighbor, ...] = ()
    after: tuple[Neighbor, ...] = ()
    if index is not None and around:
        before = tuple(neighbor(reader, h) for h in turns[max(0, index - around) : index])
        after = tuple(neighbor(reader, h) for h in turns[index + 1 : index + 1 + around])
    return DocumentContext(document_id, manifest["session"], turn, before, after)

"""Recall: materialize the exact source around one located hit.

Every recall runs for a :class:`Caller`: the project it is authenticated to (None for the store
owner's own CLI, which reaches every project) and, for session-scoped locators, its verified
sessions. The caller's scope is checked first, from the locator's signed fields or the document's
head, before any byte of source is read; a target outside it answers exactly like one that does
not exist (no status, text or metadata of it), so an answer is never an existence oracle.

Status first: ``locator-invalid`` (tampered, foreign, or out of the caller's scope; and a
document id that names no document the caller may read), ``lease-expired`` (the search lease ran
out), ``expired`` (retention or forget removed the source — also when the id and version now
hold other content, after a forget and a re-import), ``missing`` (no such document version),
``superseded`` (a newer version or an explicit correction replaced it — recall never substitutes
the replacement), else ``resolved``.

What a resolved recall returns depends on the kind of hit: a turn gives the complete
exchange when its manifest is at most 64 KiB, else the matching window with bounded neighbours;
a tool result gives its window, neighbours and the parent turn's header; a structural or decision
hit gives the exact message and its turn. Only chunks intersecting the returned range are read.
When neighbours do not fit ``maxTokens``, continuation locators point at the rest. A direct
document id gives the full source when small, else a chunk table of contents.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from cwcore.contract.recall import (
    LABEL,
    Continuation,
    DocumentRead,
    MessageSpan,
    RecalledSource,
    RecallResponse,
    Split,
    TurnContext,
    TurnHeader,
)
from cwcore.errors import LocatorInvalid, NotFound, UnsafeKey, excerpt
from cwcore.index import derived
from cwcore.retrieve.locator import (
    NOT_VALID_HERE,
    Locator,
    Signer,
    is_locator,
    lease_expired,
)
from cwcore.retrieve.scope import lineage
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.store.rocks import Store
from cwcore.text.tokens import estimate

WHOLE_TURN_BYTES = 64 * 1024
HEADER_CHARS = 600


@dataclass(frozen=True)
class Caller:
    """Whom a recall answers. ``project`` None reaches every project (the store owner's CLI);
    a project-bound caller (the MCP server) reaches that project only. ``sessions`` are the
    caller's verified sessions: a session-scoped locator resolves only when its session is in
    their lineage."""

    project: str | None = None
    sessions: tuple[str, ...] = ()


def _status(status: str, message: str) -> RecallResponse:
    return RecallResponse(status, message)


def _check_scope(reader: Reader, loc: Locator, caller: Caller) -> None:
    if caller.project is not None and loc.project != caller.project:
        raise LocatorInvalid(NOT_VALID_HERE)
    if loc.scope == "session":
        allowed: set[str] = set()
        for session in caller.sessions:
            allowed.update(lineage(reader, session))
        if loc.session not in allowed:
            raise LocatorInvalid(NOT_VALID_HERE)


def recall(
    store: Store,
    signer: Signer,
    target: str,
    *,
    neighbors: int = 1,
    max_tokens: int = 3000,
    caller: Caller = Caller(),
) -> RecallResponse:
    """Recall ``target`` — a locator, or a document id for a direct read — for ``caller``, with
    ``neighbors`` and ``max_tokens`` in the ranges :class:`~cwcore.contract.recall.RecallRequest`
    declares (the method's request is parsed before this runs)."""
    reader = Reader(store)
    if not is_locator(target):
        return read_document(store, target, caller=caller)
    try:
        loc = signer.verify(target)
        _check_scope(reader, loc, caller)
    except LocatorInvalid as exc:
        return _status("locator-invalid", exc.message)
    if lease_expired(loc):
        return _status("lease-expired", "the search lease ran out: search again for a new locator")
    try:
        head = reader.head(loc.document_id)
    except NotFound:
        return _status(
            "expired", "the source was removed (forgotten or expired by retention); search again"
        )
    try:
        manifest = reader.manifest(loc.document_id, loc.version)
    except NotFound:
        return _status("missing", f"{loc.document_id} v{loc.version} does not exist")
    if not _same_content(store, loc, manifest):
        return _status("expired", "the source this locator named was removed; search again")
    tomb = reader.tombstone(int(manifest["ordinal"]))
    if tomb is not None or head.get("state") != "live" or int(head["version"]) != loc.version:
        reason = (tomb or {}).get("reason") or head.get("state")
        replacement = head.get("supersededBy") or (
            loc.document_id if int(head["version"]) != loc.version else None
        )
        return RecallResponse(
            "superseded",
            f"this version was superseded ({reason}); search again",
            superseded_by=_visible(reader, replacement, caller),
        )
    # Continuations of a first-format locator are issued in the current one.
    loc = replace(loc, digest=str(manifest["digest"]))
    source = _materialize(store, reader, signer, loc, manifest, neighbors, max_tokens)
    return RecallResponse("resolved", source=source)


def _same_content(store: Store, loc: Locator, manifest: Manifest) -> bool:
    """Whether ``manifest`` is the version the locator was made for. A ``cwl2`` locator names
    the content digest. A ``cwl1`` one names only the index generation of its search: the
    version it saw was published at or before that generation (a version admitted later — a
    re-import after a forget reuses version numbers — was published after it, or not yet)."""
    if loc.digest:
        return bool(manifest.get("digest") == loc.digest)
    mark = derived.marker(store, int(manifest["ordinal"]))
    return mark is not None and int(mark.get("generation", 0)) <= loc.generation


def _visible(reader: Reader, document_id: str | None, caller: Caller) -> str | None:
    """``document_id`` when the caller may know of it (a replacement may sit in another
    project), else None."""
    if document_id is None or caller.project is None:
        return document_id
    try:
        head = reader.head(document_id)
    except (NotFound, UnsafeKey):
        return None
    return document_id if head.get("project") == caller.project else None


@dataclass(frozen=True)
class WindowRecord:
    """The part of a stored window record that recall and gather read: its document version,
    its index in the document, and its range as characters and as UTF-8 bytes of the text."""

    document_id: str
    version: int
    index: int
    start: int
    end: int
    byte_start: int
    byte_end: int

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> WindowRecord:
        return cls(
            document_id=str(record["documentId"]),
            version=int(record["version"]),
            index=int(record["index"]),
            start=int(record["start"]),
            end=int(record["end"]),
            byte_start=int(record["byteStart"]),
            byte_end=int(record["byteEnd"]),
        )


def _windows(store: Store, manifest: Manifest) -> list[WindowRecord]:
    mark = derived.marker(store, int(manifest["ordinal"]))
    if mark is None:
        return []
    first, n = int(mark["firstWid"]), int(mark["windows"])
    records = derived.window_records(store, list(range(first, first + n)))
    return [WindowRecord.from_record(r) for r in records if r]


def _materialize(
    store: Store,
    reader: Reader,
    signer: Signer,
    loc: Locator,
    manifest: Manifest,
    neighbors: int,
    max_tokens: int,
) -> RecalledSource:
    windows = _windows(store, manifest)
    total = int(manifest["bytes"])
    if manifest["kind"] in ("turn", "decision", "note") and total <= WHOLE_TURN_BYTES:
        ranges = [(0, total)]
    elif loc.window < 0:
        # Evidence past the document's windows (a Markdown paragraph): the match range itself.
        ranges = [(max(0, loc.start), min(total, max(loc.end, loc.start + 1)))]
    elif windows:
        centre = min(max(loc.window, 0), len(windows) - 1)
        lo, hi = max(0, centre - neighbors), min(len(windows), centre + neighbors + 1)
        ranges = [(w.byte_start, w.byte_end) for w in windows[lo:hi]]
    else:
        ranges = [(max(0, loc.start - 4096), min(total, loc.end + 4096))]
    start, end = ranges[0][0], ranges[-1][1]
    data = reader.read_bytes(manifest, start, end)
    text = data.decode("utf-8", "ignore")
    cont_before = cont_after = None
    if estimate(text) > max_tokens:
        # Keep the match and what fits around it; the rest is reachable by continuation.
        match_at = len(data[: max(0, loc.start - start)].decode("utf-8", "ignore"))
        match_len = len(
            data[max(0, loc.start - start) : max(0, loc.end - start)].decode("utf-8", "ignore")
        )
        half = max(100, max_tokens * 2)
        lo_c, hi_c = max(0, match_at - half), min(len(text), match_at + match_len + half)
        # Shrink around the match (never past it) until the estimate fits the budget.
        while estimate(text[lo_c:hi_c]) > max_tokens and half > 8:
            half = half * 3 // 4
            lo_c, hi_c = max(0, match_at - half), min(len(text), match_at + match_len + half)
        new_start = start + len(text[:lo_c].encode("utf-8", "surrogatepass"))
        new_end = start + len(text[:hi_c].encode("utf-8", "surrogatepass"))
        if new_start > 0:
            cont_before = signer.sign(_moved(loc, max(0, new_start - 1)))
        if new_end < total:
            cont_after = signer.sign(_moved(loc, new_end))
        text, start, end = text[lo_c:hi_c], new_start, new_end
    elif windows and manifest["kind"] == "tool-result" and len(ranges) < len(windows):
        if ranges[0][0] > 0:
            cont_before = signer.sign(_moved(loc, ranges[0][0] - 1))
        if ranges[-1][1] < total:
            cont_after = signer.sign(_moved(loc, ranges[-1][1]))
    parts = [p for p in manifest["parts"] if p["end"] > start and p["start"] < end]
    parent_turn, parent_unreadable = None, False
    if manifest["kind"] == "tool-result" and (parent := manifest.get("parent")):
        parent_turn = _header(reader, parent)
        parent_unreadable = parent_turn is None
    split = (manifest.get("metadata") or {}).get("split")
    turn = turn_context(reader, manifest)
    if turn is not None:
        # The turn goes on in the documents around this one: where the returned text reaches
        # an edge of its document, a continuation names the neighbouring document instead.
        if turn.before and start == 0 and cont_before is None:
            cont_before = _neighbour(reader, signer, loc, turn.before, last=True)
        if turn.after and end >= total and cont_after is None:
            cont_after = _neighbour(reader, signer, loc, turn.after, last=False)
    return RecalledSource(
        document_id=manifest["documentId"],
        version=int(manifest["version"]),
        kind=manifest["kind"],
        archive_kind="markdown" if manifest["kind"] == "markdown" else "session",
        session=manifest["session"],
        project=manifest["project"],
        agent=manifest["agent"],
        created=manifest["created"],
        range=(start, end),
        match=(loc.start, loc.end),
        text=text,
        tokens=estimate(text),
        source_keys=tuple(p["key"] for p in parts),
        messages=tuple(
            MessageSpan(p["key"], p["role"], p["kind"], (p["start"], p["end"]), p.get("ts"))
            for p in parts
        ),
        chunks=tuple(
            (str(c[0]), int(c[1]), int(c[2]))
            for p in parts
            for c in p["chunks"]
            if c[1] + c[2] > start and c[1] < end
        ),
        continuation=Continuation(cont_before, cont_after),
        label=LABEL,
        parent_turn=parent_turn,
        parent_unreadable=parent_unreadable,
        # A piece of a cut message: every piece's document, in order.
        split=Split.from_json(split) if split else None,
        turn=turn,
    )


#: Documents of a session read to find a turn's other documents (a turn longer than this is
#: reached document by document through continuations).
TURN_SCAN = 4_096


def turn_context(reader: Reader, manifest: Manifest) -> TurnContext | None:
    """For a document of a turn stored as several documents (layout 2): the turn's first
    document, its documents in order, this one's position, and its neighbours. None for a
    turn that is one document, and for documents of other kinds or layouts."""
    meta = manifest.get("metadata") or {}
    if meta.get("layout") != 2 or manifest["kind"] not in ("turn", "tool-result"):
        return None
    turn_id = meta.get("continues") or manifest["documentId"]
    heads = reader.session_heads(manifest["session"])[:TURN_SCAN]
    start = next((i for i, h in enumerate(heads) if h["documentId"] == turn_id), None)
    if start is None:
        return None
    members = [turn_id]
    for head in heads[start + 1 :]:
        if head["kind"] not in ("turn", "tool-result"):
            break
        other = reader.manifest(head["documentId"], int(head["version"]))
        if (other.get("metadata") or {}).get("continues") != turn_id:
            break
        members.append(head["documentId"])
    if len(members) < 2 or manifest["documentId"] not in members:
        return None
    index = members.index(manifest["documentId"])
    return TurnContext(
        turn_id=turn_id,
        documents=tuple(members),
        index=index,
        before=members[index - 1] if index else None,
        after=members[index + 1] if index + 1 < len(members) else None,
    )


def _neighbour(
    reader: Reader, signer: Signer, loc: Locator, document_id: str, *, last: bool
) -> str | None:
    """A continuation locator at the near edge of a neighbouring document of the turn."""
    try:
        head = reader.head(document_id)
        other = reader.manifest(document_id, int(head["version"]))
    except NotFound:
        return None
    size = int(other["bytes"])
    at = max(0, size - 1) if last else 0
    windows = int((derived.marker(reader.store, int(other["ordinal"])) or {}).get("windows", 1))
    window = max(0, windows - 1) if last else 0
    return signer.sign(
        replace(
            loc,
            document_id=document_id,
            version=int(other["version"]),
            window=window,
            start=at,
            end=min(size, at + 1),
            digest=str(other["digest"]),
        )
    )


def _moved(loc: Locator, byte_pos: int) -> Locator:
    return replace(loc, start=byte_pos, end=byte_pos + 1)


def _header(reader: Reader, document_id: str) -> TurnHeader | None:
    """The parent turn's first message, cut to a header."""
    try:
        manifest = reader.manifest(document_id)
    except NotFound:
        return None
    first = manifest["parts"][0] if manifest["parts"] else None
    if first is None:
        return None
    text = reader.read_bytes(
        manifest, first["start"], min(first["end"], first["start"] + 4 * HEADER_CHARS)
    )
    return TurnHeader(
        document_id, first["key"], first["role"], text.decode("utf-8", "ignore")[:HEADER_CHARS]
    )


def read_document(
    store: Store, document_id: str, max_bytes: int = 1024 * 1024, *, caller: Caller = Caller()
) -> RecallResponse:
    """Direct document read: the full source when at most 1 MiB, else a chunk table of contents
    (at most 256 occurrences and 16 source keys; no payload is fetched). A document the caller
    may not read (another project's, in any state) answers as one that does not exist."""
    reader = Reader(store)
    try:
        head = reader.head(document_id)
    except (NotFound, UnsafeKey):
        head = None
    if head is None or (caller.project is not None and head.get("project") != caller.project):
        return _status(
            "locator-invalid",
            f"not a cw locator, and no document {excerpt(document_id)} is within reach",
        )
    manifest = reader.manifest(document_id, int(head["version"]))
    metadata = manifest.get("metadata") or {}
    keys = [p["key"] for p in manifest["parts"]]
    small = int(manifest["bytes"]) <= max_bytes
    document = DocumentRead(
        document_id=document_id,
        version=manifest["version"],
        kind=manifest["kind"],
        session=manifest["session"],
        project=manifest["project"],
        created=manifest["created"],
        bytes=manifest["bytes"],
        label=LABEL,
        source_keys=tuple(keys if small else keys[:16]),
        text=reader.text(manifest) if small else None,
        chunks=None
        if small
        else tuple(
            (str(c[0]), int(c[1]), int(c[2])) for p in manifest["parts"] for c in p["chunks"]
        )[:256],
        # A piece of a cut message: where the others are.
        split=Split.from_json(metadata["split"]) if metadata.get("split") else None,
        continues=metadata.get("continues") or None,
    )
    return RecallResponse(
        "resolved" if head.get("state") == "live" else "superseded", document=document
    )

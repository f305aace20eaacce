"""Recall: materialize the exact source around one located hit (spec 000 "Recall").

Status first: ``locator-invalid`` (tampered, foreign, or out of the caller's scope),
``lease-expired`` (the search lease ran out), ``expired`` (retention removed the source),
``missing`` (no such document version), ``superseded`` (a newer version or an explicit correction
replaced it — recall never substitutes the replacement), else ``resolved``.

What a resolved recall returns depends on the hit (the spec's table): a turn gives the complete
exchange when its manifest is at most 64 KiB, else the matching window with bounded neighbours;
a tool result gives its window, neighbours and the parent turn's header; a structural or decision
hit gives the exact message and its turn. Only chunks intersecting the returned range are read.
When neighbours do not fit ``maxTokens``, continuation locators point at the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cwcore.errors import InvalidInput, NotFound
from cwcore.hints.tokens import estimate
from cwcore.index import derived
from cwcore.recall.locator import Locator, LocatorInvalid, Signer, lease_expired
from cwcore.retrieve.scope import lineage
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store

MAX_NEIGHBORS = 32
MAX_TOKENS = 100_000
WHOLE_TURN_BYTES = 64 * 1024
HEADER_CHARS = 600
LABEL = (
    "Archived historical evidence, quoted as data: it is not proof of the current files or "
    "state — verify before relying on it."
)


def _status(status: str, message: str) -> dict[str, Any]:
    return {"status": status, "message": message}


def _check_scope(
    reader: Reader, loc: Locator, project: str | None, session_ids: Sequence[str]
) -> None:
    if project is not None and loc.project != project:
        raise LocatorInvalid("the locator belongs to another project")
    if loc.scope == "session":
        allowed: set[str] = set()
        for session in session_ids:
            allowed.update(lineage(reader, session))
        if loc.session not in allowed:
            raise LocatorInvalid("a session-scoped locator needs its session in sessionIds")


def recall(
    store: Store,
    signer: Signer,
    locator: str,
    *,
    neighbors: int = 1,
    max_tokens: int = 3000,
    session_ids: Sequence[str] = (),
    project: str | None = None,
) -> dict[str, Any]:
    if not 0 <= neighbors <= MAX_NEIGHBORS:
        raise InvalidInput(f"neighbors must be from 0 to {MAX_NEIGHBORS}")
    if not 1 <= max_tokens <= MAX_TOKENS:
        raise InvalidInput(f"maxTokens must be from 1 to {MAX_TOKENS}")
    reader = Reader(store)
    try:
        loc = signer.verify(locator)
        _check_scope(reader, loc, project, session_ids)
    except LocatorInvalid as exc:
        return _status("locator-invalid", exc.message)
    if lease_expired(loc):
        return _status("lease-expired", "the search lease ran out: search again for a new locator")
    try:
        head = reader.head(loc.document_id)
    except NotFound:
        return _status("expired", "retention removed this source")
    try:
        manifest = reader.manifest(loc.document_id, loc.version)
    except NotFound:
        return _status("missing", f"{loc.document_id} v{loc.version} does not exist")
    tomb = reader.tombstone(int(manifest["ordinal"]))
    if tomb is not None or head.get("state") != "live" or int(head["version"]) != loc.version:
        reason = (tomb or {}).get("reason") or head.get("state")
        body = _status("superseded", f"this version was superseded ({reason}); search again")
        body["supersededBy"] = head.get("supersededBy") or (
            loc.document_id if int(head["version"]) != loc.version else None
        )
        return body
    return _materialize(store, reader, signer, loc, manifest, neighbors, max_tokens)


def _windows(store: Store, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    mark = derived.marker(store, int(manifest["ordinal"]))
    if mark is None:
        return []
    first, n = int(mark["firstWid"]), int(mark["windows"])
    return [r for r in derived.window_records(store, list(range(first, first + n))) if r]


def _materialize(
    store: Store,
    reader: Reader,
    signer: Signer,
    loc: Locator,
    manifest: dict[str, Any],
    neighbors: int,
    max_tokens: int,
) -> dict[str, Any]:
    windows = _windows(store, manifest)
    total = int(manifest["bytes"])
    if manifest["kind"] in ("turn", "decision", "note") and total <= WHOLE_TURN_BYTES:
        ranges = [(0, total)]
    elif windows:
        centre = min(max(loc.window, 0), len(windows) - 1)
        lo, hi = max(0, centre - neighbors), min(len(windows), centre + neighbors + 1)
        ranges = [(int(w["byteStart"]), int(w["byteEnd"])) for w in windows[lo:hi]]
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
    body: dict[str, Any] = {
        "status": "resolved",
        "documentId": manifest["documentId"],
        "version": int(manifest["version"]),
        "kind": manifest["kind"],
        "archiveKind": "markdown" if manifest["kind"] == "markdown" else "session",
        "session": manifest["session"],
        "project": manifest["project"],
        "agent": manifest["agent"],
        "created": manifest["created"],
        "range": [start, end],
        "match": [loc.start, loc.end],
        "text": text,
        "tokens": estimate(text),
        "sourceKeys": [p["key"] for p in parts],
        "messages": [
            {
                "messageKey": p["key"],
                "role": p["role"],
                "kind": p["kind"],
                "range": [p["start"], p["end"]],
                "timestamp": p.get("ts"),
            }
            for p in parts
        ],
        "chunks": [c for p in parts for c in p["chunks"] if c[1] + c[2] > start and c[1] < end],
        "continuation": {"before": cont_before, "after": cont_after},
        "historical": True,
        "label": LABEL,
    }
    if manifest["kind"] == "tool-result" and manifest.get("parent"):
        body["parentTurn"] = _header(reader, manifest["parent"])
    split = (manifest.get("metadata") or {}).get("split")
    if split:
        body["split"] = split  # a piece of a cut message: every piece's document, in order
    return body


def _moved(loc: Locator, byte_pos: int) -> Locator:
    return Locator(
        loc.document_id,
        loc.version,
        loc.window,
        byte_pos,
        byte_pos + 1,
        loc.generation,
        loc.lease,
        loc.lease_expires_ms,
        loc.project,
        loc.session,
        loc.scope,
    )


def _header(reader: Reader, document_id: str) -> dict[str, Any] | None:
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
    return {
        "documentId": document_id,
        "messageKey": first["key"],
        "role": first["role"],
        "text": text.decode("utf-8", "ignore")[:HEADER_CHARS],
    }


def read_document(store: Store, document_id: str, max_bytes: int = 1024 * 1024) -> dict[str, Any]:
    """Direct document read: the full source when at most 1 MiB, else a chunk table of contents
    (at most 256 occurrences and 16 source keys; no payload is fetched)."""
    reader = Reader(store)
    head = reader.head(document_id)
    manifest = reader.manifest(document_id, int(head["version"]))
    body: dict[str, Any] = {
        "status": "resolved" if head.get("state") == "live" else "superseded",
        "documentId": document_id,
        "version": manifest["version"],
        "kind": manifest["kind"],
        "session": manifest["session"],
        "project": manifest["project"],
        "created": manifest["created"],
        "bytes": manifest["bytes"],
        "historical": True,
        "label": LABEL,
    }
    metadata = manifest.get("metadata") or {}
    for name in ("split", "continues"):
        if metadata.get(name):
            body[name] = metadata[name]  # a piece of a cut message: where the others are
    if int(manifest["bytes"]) <= max_bytes:
        body["text"] = reader.text(manifest)
        body["sourceKeys"] = [p["key"] for p in manifest["parts"]]
    else:
        body["chunks"] = [c for p in manifest["parts"] for c in p["chunks"]][:256]
        body["sourceKeys"] = [p["key"] for p in manifest["parts"]][:16]
        body["truncated"] = True
    return body

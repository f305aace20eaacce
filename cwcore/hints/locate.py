"""A recall locator for a candidate of a frozen preflight decision (engine method ``hints.locate``).

A decision's diagnostics name their candidates by id only — ``<documentId>#<messageKey>``, or
``<documentId>@w<window id>`` for a row never verified down to a message — and automatic hints
never carry locators (spec 000). A person reading a decision (the TUI's Hints screen) who wants
the candidate's source asks for one explicitly: :func:`locate` signs a locator for the
candidate's message, as a search hit's would be, so ``recall`` resolves it like any hit — its
agent, byte range, tokens, messages with their roles, the message itself as the match. Recalling
the bare document id instead is a direct read, which has none of that.

The locator names the document's live version (a candidate superseded since answers
``superseded`` on recall, as any hit does), window ``-1`` with the message's byte range as the
match (recall returns a small turn whole, else that range, with continuations), project scope,
and a new search lease of ``leaseMinutes``.
"""

from __future__ import annotations

from typing import Any

from cwcore.errors import InvalidInput, NotFound, UnsafeKey, excerpt
from cwcore.hints.services import SearchServices
from cwcore.index import derived
from cwcore.retrieve.locator import Locator, create_lease
from cwcore.store.keys import check_id

#: The longest candidate id accepted (a document id, ``#`` and a message key).
MAX_CANDIDATE_CHARS = 4_096


def split_candidate(candidate: str) -> tuple[str, str | None, int | None]:
    """``(document id, message key or None, window id or None)`` of a candidate id."""
    document, sep, key = candidate.partition("#")
    if sep and key:
        return document, key, None
    document, sep, wid = candidate.rpartition("@w")
    if sep and document and wid.isdigit():
        return document, None, int(wid)
    return candidate, None, None


def locate(engine: SearchServices, candidate: str) -> dict[str, Any]:
    """``{"locator", "documentId", "messageKey"}`` for a decision's candidate id; raises
    :class:`NotFound` when its document is gone, :class:`InvalidInput` for a malformed id."""
    if not isinstance(candidate, str) or not candidate or len(candidate) > MAX_CANDIDATE_CHARS:
        raise InvalidInput("candidate must be a candidate id (<documentId>#<messageKey>)")
    document_id, message_key, wid = split_candidate(candidate)
    check_id(document_id, "document id")
    store, reader = engine.store, engine.reader
    try:
        head = reader.head(document_id)
    except (NotFound, UnsafeKey):
        raise NotFound(f"no document {excerpt(document_id)}: it was forgotten or expired") from None
    manifest = reader.manifest(document_id, int(head["version"]))
    parts = manifest["parts"]
    part = next((p for p in parts if p["key"] == message_key), None) if message_key else None
    start, end = (int(part["start"]), int(part["end"])) if part is not None else (0, 0)
    if part is None and wid is not None:
        record = (derived.window_records(store, [wid]) or [None])[0]
        if record is not None and record.get("documentId") == document_id:
            start, end = int(record["byteStart"]), int(record["byteEnd"])
    if end <= start:  # the message is no longer in this version: the document's first message
        first = parts[0] if parts else None
        start, end = (int(first["start"]), int(first["end"])) if first else (0, 0)
        message_key = str(first["key"]) if first else None
    ctx = engine.search_context()
    generation = int(derived.generation(store)["n"])
    lease, expires = create_lease(store, ctx.lease_minutes, [document_id])
    locator = ctx.signer.sign(
        Locator(
            document_id,
            int(manifest["version"]),
            -1,  # no window: recall takes the message's range itself
            start,
            end,
            generation,
            lease,
            expires,
            str(manifest["project"]),
            str(manifest["session"]),
            "project",
            str(manifest["digest"]),
        )
    )
    return {"locator": locator, "documentId": document_id, "messageKey": message_key}

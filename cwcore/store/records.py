"""The stored records the read path takes apart, typed by their keys.

A record is stored as JSON (:mod:`cwcore.store.codec`) and read back as a plain dictionary: no
decoding step on the hot path. These ``TypedDict`` declarations name each key and its type, so
mypy checks every subscript of a record it can see (a misspelt key, a string used as a number)
at no cost when the code runs. Keys a record of an older store may lack, or that only some
records carry, are ``NotRequired``: read them with ``.get``.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict, cast

from cwcore.store import codec


class Manifest(TypedDict):
    """One document version (family ``documents``, key ``DOC_VERSION`` id, version), as
    admission writes it: its identity and ordinal, the session, project and agent it belongs
    to, its time, its text's size in UTF-8 bytes and digest, and its parts in text order (each
    a message's byte range and content chunks; see :mod:`cwcore.store.parts`)."""

    documentId: str
    version: int
    ordinal: int
    kind: str
    session: str
    project: str
    agent: str
    created: str
    bytes: int
    digest: str
    parts: list[dict[str, Any]]
    admitted: NotRequired[str]
    title: NotRequired[str | None]
    parent: NotRequired[str | None]
    metadata: NotRequired[dict[str, Any] | None]
    annotations: NotRequired[list[list[Any]]]
    supersedes: NotRequired[str | None]
    subjectKey: NotRequired[str | None]
    pinned: NotRequired[bool]
    startsTurn: NotRequired[bool]
    #: Messages kept beside the text (not in it), each after the part it follows.
    asides: NotRequired[list[dict[str, Any]]]
    #: On a version an undone supersession brought back: the supersession it undid.
    restores: NotRequired[dict[str, Any] | None]


class DocumentHead(TypedDict):
    """A document's current version (family ``documents``, key ``DOC_HEAD`` id), as admission
    writes it afresh on each new version and supersede / unsupersede rewrite it. Forget deletes it:
    no head is ever stored in a third state. Every head since the first store carries the
    required keys; the supersession keys appear only on a head supersession touched."""

    #: The document's id (the key's one field).
    documentId: str
    #: The version that is current: the highest ``DOC_VERSION`` of the document, from 1.
    version: int
    #: The ordinal of that version (a new one per version, never reused).
    ordinal: int
    #: The session and project of the document (fixed by its first version: admission refuses
    #: a version in another session) and the kind of its current version.
    session: str
    project: str
    kind: str
    #: The content digest of the current version (hex BLAKE2b-128, 32 characters):
    #: re-admitting a document with this digest is a no-op.
    digest: str
    #: ``live`` (searchable) or ``superseded`` (retired, kept for audit until retention).
    state: str
    #: The current version's time (ISO 8601 UTC): its manifest's ``created``.
    created: str
    #: The replacement that retired it (``supersede --by``, or the document admitted with
    #: ``supersedes``); None when superseded without one. Dropped when the head is restored.
    supersededBy: NotRequired[str | None]
    #: When ``supersede`` retired it (ISO 8601 UTC) and why (None: no reason given); a
    #: document retired by an admission's ``supersedes`` has neither. Dropped on restore.
    supersededAt: NotRequired[str]
    reason: NotRequired[str | None]
    #: When ``supersede --undo`` made it live again (ISO 8601 UTC). A later supersede keeps
    #: it; a new admitted version writes a fresh head, without it or the keys above.
    restoredAt: NotRequired[str]


class SessionRecord(TypedDict):
    """One session (family ``scopes``, key ``SESSION`` id), as admission writes and updates it:
    its id, project and agent (fixed by its first admission: membership is immutable), its time
    span, title and working folder, its lineage (a sub-agent's parent session and the parent's
    tool call), where it came from and how to resume it, and the counts that grow with each
    admitted document. Keys a store of an older cw may lack are ``NotRequired``."""

    id: str
    project: str
    agent: str
    started: NotRequired[str | None]
    ended: NotRequired[str | None]
    updated: NotRequired[str]
    title: NotRequired[str | None]
    cwd: NotRequired[str | None]
    parent: NotRequired[str | None]
    lineage: NotRequired[list[str]]
    source: NotRequired[str | None]
    resume: NotRequired[str | None]
    parentToolCall: NotRequired[str | None]
    created: NotRequired[str]
    nextSeq: NotRequired[int]
    messages: NotRequired[int]
    turns: NotRequired[int]
    toolCalls: NotRequired[int]
    documents: NotRequired[int]
    #: The id the agent gave the session, when cw's differs (two agents' sessions with one id).
    nativeId: NotRequired[str]
    #: Token sums (:class:`cwcore.model.Usage` JSON) and the models the session used.
    tokens: NotRequired[dict[str, Any] | None]
    models: NotRequired[list[str]]


def decode_head(data: bytes | None, what: str = "document head") -> DocumentHead:
    """A stored document head (:func:`cwcore.store.codec.decode_record`, which raises
    :class:`~cwcore.errors.CorruptRecord` for bytes that are no record), typed."""
    return cast(DocumentHead, codec.decode_record(data, what))


def decode_session(data: bytes | None, what: str = "session") -> SessionRecord:
    """A stored session record, typed, as :func:`decode_head`."""
    return cast(SessionRecord, codec.decode_record(data, what))

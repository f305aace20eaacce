"""The ``recall`` method's records: its request (a locator or a document id, and the answer's
budget) and its answer (:class:`RecallResponse`).

``cw recall``, the MCP recall tool (:mod:`cwcore.hosts.mcp_server`, whose ``inputSchema`` is
this record's JSON Schema without ``project``) and the TUI send it; the engine parses it once
(:meth:`~cwcore.contract.codec.Record.parse`), so a budget out of range is refused before any
store is read.

The answer's JSON is a contract (``cw recall --json``, the MCP tools): the keys and values the
engine has always answered, and ``from_json(x).to_json() == x`` as parsed JSON. The key orders
listed below are the historical ones; answers compare as parsed JSON. By shape:

- not resolved: ``{"status", "message"}``, plus ``supersededBy`` (a document id or null) when
  the status is ``superseded``;
- a located hit (:class:`RecalledSource`): ``status``, ``documentId``, ``version``, ``kind``,
  ``archiveKind``, ``session``, ``project``, ``agent``, ``created``, ``range`` and ``match``
  (byte ranges), ``text``, ``tokens``, ``sourceKeys``, ``messages``, ``chunks``,
  ``continuation {before, after}``, ``historical``, ``label``, then when they apply
  ``parentTurn``, ``split`` and ``turn``;
- a direct document read (:class:`DocumentRead`): ``status``, ``documentId``, ``version``,
  ``kind``, ``session``, ``project``, ``created``, ``bytes``, ``historical``, ``label``, then
  ``split`` / ``continues`` when it is a piece of a cut message, then ``text`` and
  ``sourceKeys``, or for a large document ``chunks``, ``sourceKeys`` and ``truncated``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Self

from cwcore.contract.codec import Record, field, fields_from_json, fields_json

#: Neighbouring windows a recall may include around its match, at most.
MAX_NEIGHBORS = 32
#: The largest token budget of a recall's text.
MAX_TOKENS = 100_000

#: The label every recalled text carries (and the MCP tools' answers): what archived text is.
LABEL = (
    "Archived historical evidence, quoted as data: it is not proof of the current files or "
    "state — verify before relying on it."
)


class RecallRequest(Record):
    """Recall ``locator`` — the opaque locator of a search or gather hit, or a document id for
    a direct read — with ``neighbors`` windows around the match and at most ``max_tokens`` of
    text. ``session_ids`` are the caller's session and its verified parents (a session-scoped
    locator resolves only in their lineage); ``project``, when set, is the caller's
    authenticated project, outside which nothing is read or revealed."""

    locator: str = field(
        min_length=1,
        doc="The opaque locator of a search or gather hit (never build one).",
    )
    neighbors: int = field(
        default=1,
        minimum=0,
        maximum=MAX_NEIGHBORS,
        doc="Neighbouring windows to include around the match.",
    )
    max_tokens: int = field(
        default=3000,
        minimum=1,
        maximum=MAX_TOKENS,
        doc="Token budget of the returned source; the rest is reachable by the continuation "
        "locators.",
    )
    session_ids: tuple[str, ...] | None = field(
        default=None,
        omit_none=True,
        doc="Your session and its verified parents, for session-scoped locators.",
    )
    project: str | None = field(default=None, omit_none=True)


#: A stored chunk of a document's text: (content digest, byte start, byte length).
Chunk = tuple[str, int, int]


class MessageSpan(Record):
    """One source message inside the returned range: its key, role, kind, byte range in the
    document text and timestamp (None when the format has none)."""

    message_key: str
    role: str
    kind: str
    range: tuple[int, int]
    timestamp: str | None


class Split(Record):
    """Where the other pieces of a cut message are: the message, this piece's index, the piece
    count and every piece's document, in order."""

    documents: tuple[str, ...]
    message_key: str
    piece: int
    pieces: int


class TurnContext(Record):
    """A turn stored as several documents: its first document, its documents in order, this
    document's position among them and its neighbours (None at either end)."""

    turn_id: str
    documents: tuple[str, ...]
    index: int
    before: str | None
    after: str | None


class TurnHeader(Record):
    """A tool result's parent turn, cut to its first message's start."""

    document_id: str
    message_key: str
    role: str
    text: str


class Continuation(Record):
    """Locators of the text just before and just after the returned range (None when the
    answer reaches that edge of the turn)."""

    before: str | None = None
    after: str | None = None


class RecalledSource(Record):
    """The exact source materialized around a located hit (byte ranges are of the document's
    UTF-8 text; ``tokens`` is the conservative estimate of ``text``). ``historical`` is always
    True: the text is past evidence, not instructions."""

    document_id: str
    version: int
    kind: str
    archive_kind: str  # "markdown" for a Markdown document, else "session"
    session: str
    project: str
    agent: str
    created: str
    range: tuple[int, int]
    match: tuple[int, int]
    text: str
    tokens: int
    source_keys: tuple[str, ...]
    messages: tuple[MessageSpan, ...]
    chunks: tuple[Chunk, ...]
    continuation: Continuation
    label: str
    historical: bool = True
    parent_turn: TurnHeader | None = field(default=None, omit_none=True)
    #: A tool result names a parent turn that could not be read: ``parentTurn`` is null.
    parent_unreadable: bool = field(default=False, skip=True)
    split: Split | None = field(default=None, omit_none=True)
    turn: TurnContext | None = field(default=None, omit_none=True)

    def to_json(self) -> dict[str, Any]:
        body = fields_json(self)
        if self.parent_turn is None and self.parent_unreadable:
            body["parentTurn"] = None
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        unreadable = "parentTurn" in body and body["parentTurn"] is None
        return cls(**fields_from_json(cls, body), parent_unreadable=unreadable)


class DocumentRead(Record):
    """A document read by id: its whole text when small (``text`` and every source key), else
    a table of contents (``chunks`` and the first source keys, ``truncated`` True; no text).
    ``historical`` is always True."""

    document_id: str
    version: int
    kind: str
    session: str
    project: str
    created: str
    bytes: int
    label: str
    source_keys: tuple[str, ...]
    text: str | None = field(default=None, omit_none=True)
    chunks: tuple[Chunk, ...] | None = field(default=None, omit_none=True)
    split: Split | None = field(default=None, omit_none=True)
    #: A later piece's document: the turn's first document.
    continues: str | None = field(default=None, omit_none=True)
    historical: bool = True

    @property
    def truncated(self) -> bool:
        return self.text is None

    def to_json(self) -> dict[str, Any]:
        body = fields_json(self)
        if self.text is None:  # a table of contents, marked as such
            body.setdefault("chunks", [])
            body["truncated"] = True
        return body


@dataclass(frozen=True)
class RecallResponse:
    """A recall's answer. ``status`` is ``resolved``, ``superseded``, ``expired``, ``missing``,
    ``lease-expired`` or ``locator-invalid``. A resolved located hit has ``source``; a direct
    read has ``document`` (its status ``resolved``, or ``superseded`` for a retired document);
    any other answer has only ``message`` (and for a superseded locator, ``superseded_by``: the
    replacement the caller may know of, else None)."""

    status: str
    message: str | None = None
    superseded_by: str | None = None
    source: RecalledSource | None = None
    document: DocumentRead | None = None

    @property
    def resolved(self) -> bool:
        return self.status == "resolved"

    @property
    def document_id(self) -> str | None:
        """The document the answer shows, if it shows one."""
        part = self.source or self.document
        return None if part is None else part.document_id

    @property
    def project(self) -> str | None:
        part = self.source or self.document
        return None if part is None else part.project

    @property
    def continuation(self) -> Continuation:
        return self.source.continuation if self.source is not None else Continuation()

    def to_json(self) -> dict[str, Any]:
        if self.source is not None:
            return {"status": self.status, **self.source.to_json()}
        if self.document is not None:
            return {"status": self.status, **self.document.to_json()}
        body: dict[str, Any] = {"status": self.status, "message": self.message}
        if self.status == "superseded":
            body["supersededBy"] = self.superseded_by
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        status = body["status"]
        if "range" in body:
            return cls(status, source=RecalledSource.from_json(body))
        if "bytes" in body:
            return cls(status, document=DocumentRead.from_json(body))
        return cls(status, body.get("message"), body.get("supersededBy"))

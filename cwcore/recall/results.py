"""What recall, direct reads, gather and document context return, as frozen dataclasses.

The engine builds these; its method handlers serialize them once with ``to_json()`` (the daemon
protocol and ``--json`` carry that JSON), and :class:`cwcore.api.Archive` turns the JSON back
into them with ``from_json()``, so every face renders from attributes. The JSON is a contract
(``cw recall --json``, ``cw gather --json``, the MCP tools): ``to_json()`` produces exactly the
keys, order and values the engine has always answered, and ``from_json(x).to_json() == x``.

Recall JSON, by shape:

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
from typing import Any

from cwcore.retrieve.results import SearchHit, SearchResponse

#: A stored chunk of a document's text: (content digest, byte start, byte length).
Chunk = tuple[str, int, int]


def _chunks(raw: Any) -> tuple[Chunk, ...]:
    return tuple((str(c[0]), int(c[1]), int(c[2])) for c in raw)


def _chunks_json(chunks: tuple[Chunk, ...]) -> list[list[Any]]:
    return [list(c) for c in chunks]


@dataclass(frozen=True)
class MessageSpan:
    """One source message inside the returned range: its key, role, kind, byte range in the
    document text and timestamp (None when the format has none)."""

    message_key: str
    role: str
    kind: str
    range: tuple[int, int]
    timestamp: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "messageKey": self.message_key,
            "role": self.role,
            "kind": self.kind,
            "range": list(self.range),
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MessageSpan:
        lo, hi = body["range"]
        return cls(body["messageKey"], body["role"], body["kind"], (lo, hi), body["timestamp"])


@dataclass(frozen=True)
class Split:
    """Where the other pieces of a cut message are: the message, this piece's index, the piece
    count and every piece's document, in order."""

    documents: tuple[str, ...]
    message_key: str
    piece: int
    pieces: int

    def to_json(self) -> dict[str, Any]:
        # The stored metadata's key order (sorted), as every answer has carried it.
        return {
            "documents": list(self.documents),
            "messageKey": self.message_key,
            "piece": self.piece,
            "pieces": self.pieces,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Split:
        return cls(tuple(body["documents"]), body["messageKey"], body["piece"], body["pieces"])


@dataclass(frozen=True)
class TurnContext:
    """A turn stored as several documents: its first document, its documents in order, this
    document's position among them and its neighbours (None at either end)."""

    turn_id: str
    documents: tuple[str, ...]
    index: int
    before: str | None
    after: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "turnId": self.turn_id,
            "documents": list(self.documents),
            "index": self.index,
            "before": self.before,
            "after": self.after,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TurnContext:
        return cls(
            body["turnId"], tuple(body["documents"]), body["index"], body["before"], body["after"]
        )


@dataclass(frozen=True)
class TurnHeader:
    """A tool result's parent turn, cut to its first message's start."""

    document_id: str
    message_key: str
    role: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "messageKey": self.message_key,
            "role": self.role,
            "text": self.text,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TurnHeader:
        return cls(body["documentId"], body["messageKey"], body["role"], body["text"])


@dataclass(frozen=True)
class Continuation:
    """Locators of the text just before and just after the returned range (None when the
    answer reaches that edge of the turn)."""

    before: str | None = None
    after: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before, "after": self.after}


@dataclass(frozen=True)
class RecalledSource:
    """The exact source materialized around a located hit (byte ranges are of the document's
    UTF-8 text; ``tokens`` is the conservative estimate of ``text``)."""

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
    parent_turn: TurnHeader | None = None
    #: A tool result names a parent turn that could not be read: ``parentTurn`` is null.
    parent_unreadable: bool = False
    split: Split | None = None
    turn: TurnContext | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "documentId": self.document_id,
            "version": self.version,
            "kind": self.kind,
            "archiveKind": self.archive_kind,
            "session": self.session,
            "project": self.project,
            "agent": self.agent,
            "created": self.created,
            "range": list(self.range),
            "match": list(self.match),
            "text": self.text,
            "tokens": self.tokens,
            "sourceKeys": list(self.source_keys),
            "messages": [m.to_json() for m in self.messages],
            "chunks": _chunks_json(self.chunks),
            "continuation": self.continuation.to_json(),
            "historical": True,
            "label": self.label,
        }
        if self.parent_turn is not None or self.parent_unreadable:
            body["parentTurn"] = None if self.parent_turn is None else self.parent_turn.to_json()
        if self.split is not None:
            body["split"] = self.split.to_json()
        if self.turn is not None:
            body["turn"] = self.turn.to_json()
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> RecalledSource:
        parent = body.get("parentTurn")
        cont = body["continuation"]
        return cls(
            document_id=body["documentId"],
            version=body["version"],
            kind=body["kind"],
            archive_kind=body["archiveKind"],
            session=body["session"],
            project=body["project"],
            agent=body["agent"],
            created=body["created"],
            range=(body["range"][0], body["range"][1]),
            match=(body["match"][0], body["match"][1]),
            text=body["text"],
            tokens=body["tokens"],
            source_keys=tuple(body["sourceKeys"]),
            messages=tuple(MessageSpan.from_json(m) for m in body["messages"]),
            chunks=_chunks(body["chunks"]),
            continuation=Continuation(cont["before"], cont["after"]),
            label=body["label"],
            parent_turn=None if parent is None else TurnHeader.from_json(parent),
            parent_unreadable="parentTurn" in body and parent is None,
            split=Split.from_json(body["split"]) if "split" in body else None,
            turn=TurnContext.from_json(body["turn"]) if "turn" in body else None,
        )


@dataclass(frozen=True)
class DocumentRead:
    """A document read by id: its whole text when small (``text`` and every source key), else
    a table of contents (``chunks`` and the first source keys, ``truncated`` True; no text)."""

    document_id: str
    version: int
    kind: str
    session: str
    project: str
    created: str
    bytes: int
    label: str
    source_keys: tuple[str, ...]
    text: str | None = None
    chunks: tuple[Chunk, ...] | None = None
    split: Split | None = None
    continues: str | None = None  # a later piece's document: the turn's first document

    @property
    def truncated(self) -> bool:
        return self.text is None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "documentId": self.document_id,
            "version": self.version,
            "kind": self.kind,
            "session": self.session,
            "project": self.project,
            "created": self.created,
            "bytes": self.bytes,
            "historical": True,
            "label": self.label,
        }
        if self.split is not None:
            body["split"] = self.split.to_json()
        if self.continues:
            body["continues"] = self.continues
        if self.text is not None:
            body["text"] = self.text
            body["sourceKeys"] = list(self.source_keys)
        else:
            body["chunks"] = _chunks_json(self.chunks or ())
            body["sourceKeys"] = list(self.source_keys)
            body["truncated"] = True
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DocumentRead:
        return cls(
            document_id=body["documentId"],
            version=body["version"],
            kind=body["kind"],
            session=body["session"],
            project=body["project"],
            created=body["created"],
            bytes=body["bytes"],
            label=body["label"],
            source_keys=tuple(body["sourceKeys"]),
            text=body.get("text"),
            chunks=_chunks(body["chunks"]) if "chunks" in body else None,
            split=Split.from_json(body["split"]) if "split" in body else None,
            continues=body.get("continues"),
        )


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
    def from_json(cls, body: Mapping[str, Any]) -> RecallResponse:
        status = body["status"]
        if "range" in body:
            return cls(status, source=RecalledSource.from_json(body))
        if "bytes" in body:
            return cls(status, document=DocumentRead.from_json(body))
        return cls(status, body.get("message"), body.get("supersededBy"))


@dataclass(frozen=True)
class Neighbor:
    """A document next to an anchor in its session, as context (no score, no band): its id,
    kind, creation time, message keys and its text's start (``truncated`` when cut)."""

    document_id: str
    kind: str
    created: str
    message_keys: tuple[str, ...]
    text: str
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "kind": self.kind,
            "created": self.created,
            "messageKeys": list(self.message_keys),
            "text": self.text,
            "truncated": self.truncated,
            "historical": True,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Neighbor:
        return cls(
            body["documentId"],
            body["kind"],
            body["created"],
            tuple(body["messageKeys"]),
            body["text"],
            body["truncated"],
        )


def _neighbors(raw: Any) -> tuple[Neighbor, ...]:
    return tuple(Neighbor.from_json(n) for n in raw)


@dataclass(frozen=True)
class GatherAnchor:
    """One gather anchor: a search hit (or, for a Markdown evidence unit, its hit JSON) with
    the documents just before and after it in its session."""

    hit: SearchHit | None
    before: tuple[Neighbor, ...]
    after: tuple[Neighbor, ...]
    evidence: Mapping[str, Any] | None = None  # a Markdown evidence hit's JSON (no SearchHit)

    def hit_json(self) -> dict[str, Any]:
        return self.hit.to_json() if self.hit is not None else dict(self.evidence or {})

    @property
    def search_hit(self) -> SearchHit:
        """The anchor read as a :class:`SearchHit` (an evidence hit parsed from its JSON, its
        Markdown fields in ``extra``): for faces that render hits, not for re-serializing."""
        return self.hit if self.hit is not None else SearchHit.from_json(self.evidence or {})

    # The hit contract's fields, the same for a window hit and an evidence hit.

    @property
    def document_id(self) -> str:
        return self.hit.document_id if self.hit is not None else str(self._evidence("documentId"))

    @property
    def score(self) -> float:
        return self.hit.score if self.hit is not None else float(self._evidence("score"))

    @property
    def band(self) -> str:
        return self.hit.band if self.hit is not None else str(self._evidence("band"))

    @property
    def match_type(self) -> str:
        return self.hit.match_type if self.hit is not None else str(self._evidence("matchType"))

    @property
    def snippet(self) -> str:
        return self.hit.snippet if self.hit is not None else str(self._evidence("snippet"))

    @property
    def locator(self) -> str:
        return self.hit.locator if self.hit is not None else str(self._evidence("locator"))

    @property
    def project(self) -> str | None:
        if self.hit is not None:
            return self.hit.source.project
        source = self._evidence("source") or {}
        return None if source.get("project") is None else str(source["project"])

    def _evidence(self, name: str) -> Any:
        return (self.evidence or {}).get(name)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.hit_json(),
            "before": [n.to_json() for n in self.before],
            "after": [n.to_json() for n in self.after],
        }


@dataclass(frozen=True)
class GatherResponse:
    """A gather: the anchors' search (its status, generation, timings) and each anchor, in the
    search's order, with its neighbours."""

    search: SearchResponse
    anchors: tuple[GatherAnchor, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.search.to_json(), "results": [a.to_json() for a in self.anchors]}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> GatherResponse:
        anchors = []
        bare = []
        for row in body["results"]:
            hit = {k: v for k, v in row.items() if k not in ("before", "after")}
            bare.append(hit)
            before, after = _neighbors(row["before"]), _neighbors(row["after"])
            if SearchHit.is_evidence(hit):
                anchors.append(GatherAnchor(None, before, after, evidence=hit))
            else:
                anchors.append(GatherAnchor(SearchHit.from_json(hit), before, after))
        search = SearchResponse.from_json({**body, "results": bare})
        return cls(search, tuple(anchors))


@dataclass(frozen=True)
class DocumentContext:
    """The documents before and after one document in its session (``gather``'s context for a
    single document): the document, its session, the turn it is placed at, and its
    neighbours."""

    document_id: str
    session: str
    turn: str
    before: tuple[Neighbor, ...]
    after: tuple[Neighbor, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "session": self.session,
            "turn": self.turn,
            "before": [n.to_json() for n in self.before],
            "after": [n.to_json() for n in self.after],
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DocumentContext:
        return cls(
            body["documentId"],
            body["session"],
            body["turn"],
            _neighbors(body["before"]),
            _neighbors(body["after"]),
        )

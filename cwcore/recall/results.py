"""What recall, direct reads and gather return, as frozen dataclasses (a gather anchor's
:class:`~cwcore.contract.context.Neighbor` is the contract's, shared with ``context``).

The engine builds these; its method handlers serialize them once with ``to_json()`` (the daemon
protocol and ``--json`` carry that JSON), and :class:`cwcore.api.Archive` turns the JSON back
into them with ``from_json()``, so every face renders from attributes. The JSON is a contract
(``cw recall --json``, ``cw gather --json``, the MCP tools), derived from the fields
(:mod:`cwcore.contract.codec`; the answers whose shape varies with their content write it by
hand): the keys and values the engine has always answered, and ``from_json(x).to_json() == x``
as parsed JSON. The key orders listed below are the historical ones; answers compare as parsed
JSON.

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
from typing import Any, Self

from cwcore.contract.codec import Record, field, fields_from_json, fields_json
from cwcore.contract.context import Neighbor
from cwcore.contract.recall import Split
from cwcore.retrieve.results import SearchHit, SearchResponse

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
    def from_json(cls, body: Mapping[str, Any]) -> RecallResponse:
        status = body["status"]
        if "range" in body:
            return cls(status, source=RecalledSource.from_json(body))
        if "bytes" in body:
            return cls(status, document=DocumentRead.from_json(body))
        return cls(status, body.get("message"), body.get("supersededBy"))


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

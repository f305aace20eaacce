"""What explicit search returns: :class:`SearchHit` and :class:`SearchResponse`, built once by
:func:`cwcore.retrieve.page.materialize` from the collapsed candidates and serialized by
``to_json`` at the edge. This module holds only the records (no store, numpy or signer), so a
face that renders them imports little.

A hit's JSON is the contract of ``cw search --json`` (fields may be added, none renamed):
``documentId``, ``version``, ``kind``, ``score`` (the mode's calibrated score), ``band``,
``matchType``, ``margin``, ``snippet`` (+ ``highlights``), ``historical``, ``superseded``,
``locator``, ``reranked``, ``matchedTerms``, ``expandedTerms``, ``score_metadata`` and ``source``
``{sessionId, turnId, messageKey, messageKeys, project, agent, timestamp}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cwcore import bands

EMPTY_ADVICE = (
    "No archived evidence matched. Do not answer from memory as if it were found: check the "
    "current files and state, try other words or a wider scope, or ask the user."
)
#: ``score_metadata.mode`` of a Markdown evidence hit (see :mod:`cwcore.retrieve.evidence`).
EVIDENCE_MODE = "markdown-evidence"
#: The keys :meth:`SearchHit.to_json` writes from its own fields (the rest are ``extra``).
_HIT_FIELDS = frozenset(
    (
        "documentId",
        "version",
        "kind",
        "score",
        "band",
        "matchType",
        "margin",
        "snippet",
        "highlights",
        "historical",
        "superseded",
        "locator",
        "reranked",
        "matchedTerms",
        "expandedTerms",
        "score_metadata",
        "source",
    )
)
#: The keys :meth:`SearchResponse.to_json` writes from its own fields (the rest are ``extra``);
#: ``advice`` is written whenever the page is empty, so it is read back as a function of that.
_RESPONSE_FIELDS = frozenset(
    (
        "query",
        "relation",
        "results",
        "retrieval_status",
        "semantic_search_used",
        "generation",
        "timing_ms",
        "stages",
        "semantic_failure",
        "advice",
    )
)


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


@dataclass(frozen=True)
class Source:
    session_id: str
    turn_id: str
    message_key: str
    message_keys: tuple[str, ...]
    project: str
    agent: str
    timestamp: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "messageKey": self.message_key,
            "messageKeys": list(self.message_keys),
            "project": self.project,
            "agent": self.agent,
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Source:
        return cls(
            session_id=body["sessionId"],
            turn_id=body["turnId"],
            message_key=body["messageKey"],
            message_keys=tuple(body["messageKeys"]),
            project=body["project"],
            agent=body["agent"],
            timestamp=body["timestamp"],
        )


@dataclass(frozen=True)
class SearchHit:
    """One search result (see the module docstring for the JSON fields)."""

    document_id: str
    version: int
    kind: str
    score: float  # the mode's calibrated score in [0, 1]: what bands are computed from
    match_type: str
    margin: float  # the score's lead over the best other hit's score
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    locator: str
    reranked: bool
    matched_terms: tuple[str, ...]
    expanded_terms: tuple[str, ...]
    score_metadata: dict[str, Any]
    source: Source
    extra: dict[str, Any] = field(default_factory=dict)  # kind-specific fields (Markdown)

    @property
    def band(self) -> str:
        return bands.band(self.score)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "documentId": self.document_id,
            "version": self.version,
            "kind": self.kind,
            "score": self.score,
            "band": self.band,
            "matchType": self.match_type,
            "margin": self.margin,
            "snippet": self.snippet,
            "highlights": [list(h) for h in self.highlights],
            "historical": True,
            "superseded": False,
            "locator": self.locator,
            "reranked": self.reranked,
            "matchedTerms": list(self.matched_terms),
            "expandedTerms": list(self.expanded_terms),
            "score_metadata": self.score_metadata,
            "source": self.source.to_json(),
        }
        body.update(self.extra)
        return body

    @staticmethod
    def is_evidence(body: Mapping[str, Any]) -> bool:
        """Whether hit JSON is a Markdown evidence unit's (built as JSON, not a SearchHit)."""
        return bool((body.get("score_metadata") or {}).get("mode") == EVIDENCE_MODE)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SearchHit:
        """The hit of :meth:`to_json`'s JSON; fields it does not name are ``extra``. The band
        is not read: it is a function of the score."""
        return cls(
            document_id=body["documentId"],
            version=body["version"],
            kind=body["kind"],
            score=body["score"],
            match_type=body["matchType"],
            margin=body["margin"],
            snippet=body["snippet"],
            highlights=tuple((int(a), int(b)) for a, b in body["highlights"]),
            locator=body["locator"],
            reranked=body["reranked"],
            matched_terms=tuple(body["matchedTerms"]),
            expanded_terms=tuple(body["expandedTerms"]),
            score_metadata=dict(body["score_metadata"]),
            source=Source.from_json(body["source"]),
            extra={k: v for k, v in body.items() if k not in _HIT_FIELDS},
        )


@dataclass(frozen=True)
class SearchResponse:
    """A whole answer: ``retrieval_status`` is ``ok``, ``lexical_fallback`` (the semantic mode
    should have run and could not), ``empty`` or ``partial`` (the generation in use is).

    ``to_json`` is the contract of ``cw search --json``: for an answer the engine gave,
    ``SearchResponse.from_json(body).to_json()`` is ``body`` with its keys in the same order, so
    a face may rebuild the JSON from the record without changing a byte."""

    query: str | None
    relation: str | None
    results: tuple[SearchHit, ...]
    retrieval_status: str
    semantic_search_used: bool
    generation: int
    timing_ms: float
    stages: dict[str, Any]
    semantic_failure: str | None = None
    #: Markdown evidence hits that filled a short page (JSON already; see retrieve/evidence.py).
    #: They follow ``results`` on the page and keep their own key order, so they stay JSON.
    evidence: tuple[dict[str, Any], ...] = ()
    #: Top-level fields the record does not name, written last: ``id``, the request's echo
    #: under ``--batch``, and whatever a newer engine adds.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def advice(self) -> str | None:
        """What to do about an empty page (``None`` when there are hits)."""
        return None if self.results or self.evidence else EMPTY_ADVICE

    def hits(self) -> tuple[SearchHit, ...]:
        """Every hit in page order, the evidence hits read as :class:`SearchHit` too (their
        Markdown fields in ``extra``): for faces that render hits, not for re-serializing —
        :meth:`to_json` keeps the evidence JSON as the engine wrote it."""
        return self.results + tuple(SearchHit.from_json(h) for h in self.evidence)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "query": self.query,
            "relation": self.relation,
            "results": [h.to_json() for h in self.results] + list(self.evidence),
            "retrieval_status": self.retrieval_status,
            "semantic_search_used": self.semantic_search_used,
            "generation": self.generation,
            "timing_ms": self.timing_ms,
            "stages": self.stages,
        }
        if self.semantic_failure:
            body["semantic_failure"] = self.semantic_failure
        if self.advice is not None:
            body["advice"] = self.advice
        body.update(self.extra)
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SearchResponse:
        """The response of :meth:`to_json`'s JSON (Markdown evidence hits stay JSON; fields it
        does not name are ``extra``)."""
        rows = list(body["results"])
        return cls(
            query=body["query"],
            relation=body["relation"],
            results=tuple(SearchHit.from_json(h) for h in rows if not SearchHit.is_evidence(h)),
            retrieval_status=body["retrieval_status"],
            semantic_search_used=body["semantic_search_used"],
            generation=body["generation"],
            timing_ms=body["timing_ms"],
            stages=dict(body["stages"]),
            semantic_failure=body.get("semantic_failure"),
            evidence=tuple(dict(h) for h in rows if SearchHit.is_evidence(h)),
            extra={k: v for k, v in body.items() if k not in _RESPONSE_FIELDS},
        )

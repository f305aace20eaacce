"""What explicit search returns: :class:`SearchHit` and :class:`SearchResponse`, built once by
:func:`materialize` from the collapsed candidates and serialized by ``to_json`` at the edge.

A hit's JSON is the contract of ``cw search --json`` (fields may be added, none renamed):
``documentId``, ``version``, ``kind``, ``score`` (the mode's calibrated score), ``band``,
``matchType``, ``margin``, ``snippet`` (+ ``highlights``), ``historical``, ``superseded``,
``locator``, ``reranked``, ``matchedTerms``, ``expandedTerms``, ``score_metadata`` and ``source``
``{sessionId, turnId, messageKey, messageKeys, project, agent, timestamp}``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from cwcore import bands
from cwcore.retrieve.candidates import Candidate
from cwcore.retrieve.locator import Locator, Signer, create_lease
from cwcore.retrieve.snippets import fit_snippet, literal_spans, make_snippet, term_spans
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store

TIER = {"exact": 0, "structural": 1, "lexical": 2, "semantic": 2}
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
class Ranked:
    """A candidate that survived the collapse, with its window record and fusion trace."""

    cand: Candidate
    record: dict[str, Any]
    trace: dict[str, Any] = field(default_factory=dict)


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
    should have run and could not), ``empty`` or ``partial`` (the generation in use is)."""

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
    evidence: tuple[dict[str, Any], ...] = ()

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
        if not self.results and not self.evidence:
            body["advice"] = EMPTY_ADVICE
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SearchResponse:
        """The response of :meth:`to_json`'s JSON (Markdown evidence hits stay JSON)."""
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
        )


def materialize(
    store: Store,
    reader: Reader,
    signer: Signer,
    lease_minutes: float,
    ranked: list[Ranked],
    *,
    generation: int,
    scope: str,
    search_terms: list[str],
    idfs: dict[str, float],
    budget_tokens: int | None = None,
    texts: Callable[[int], tuple[dict[str, Any], str]] | None = None,
) -> tuple[SearchHit, ...]:
    """Snippets, locators (one lease for the page) and provenance for the final hits. Each
    window's text is read once. ``budget_tokens`` (the request's ``hintBudgetTokens``) bounds
    the page's snippets together, by the conservative token estimator: each hit's snippet gets
    an equal share and is narrowed until it fits. ``texts`` (the search's
    :meth:`~cwcore.retrieve.candidates.Visible.text`) serves windows another stage already
    read."""
    if not ranked:
        return ()
    share = None if budget_tokens is None else budget_tokens // len(ranked)
    lease, expires = create_lease(store, lease_minutes, [r.record["documentId"] for r in ranked])
    scores = [r.cand.score for r in ranked]
    hits = []
    for i, item in enumerate(ranked):
        cand, record = item.cand, item.record
        if texts is not None:
            manifest, text = texts(cand.wid)
        else:
            manifest = reader.manifest(record["documentId"], int(record["version"]))
            data = reader.read_bytes(manifest, record["byteStart"], record["byteEnd"])
            text = data.decode("utf-8", "surrogatepass")
        if cand.literals:
            spans = literal_spans(text, cand.literals)
        elif cand.spans:
            spans = [
                (s - record["start"], e - record["start"])
                for s, e in cand.spans
                if record["start"] <= s < record["end"]
            ]
        else:
            spans = term_spans(text, search_terms or cand.matched_terms)
        if share is None:
            snippet, highlights = make_snippet(text, spans, weights=idfs)
        else:
            snippet, highlights = fit_snippet(text, spans, share, weights=idfs)
        first = spans[0] if spans else (0, 0)
        match_start = record["byteStart"] + len(text[: first[0]].encode("utf-8", "surrogatepass"))
        match_end = record["byteStart"] + len(text[: first[1]].encode("utf-8", "surrogatepass"))
        message_key = _message_at(manifest, match_start) or (
            record["keys"][0] if record["keys"] else ""
        )
        others = [s for j, s in enumerate(scores) if j != i]
        locator = signer.sign(
            Locator(
                record["documentId"],
                int(record["version"]),
                int(record["index"]),
                match_start,
                match_end,
                generation,
                lease,
                expires,
                record["project"],
                record["session"],
                scope,
                str(manifest["digest"]),
            )
        )
        extra: dict[str, Any] = {}
        if record["kind"] == "markdown":
            from cwcore.markdown.hits import markdown_fields

            extra = markdown_fields(manifest, record, match_start)
        hits.append(
            SearchHit(
                document_id=record["documentId"],
                version=int(record["version"]),
                kind=record["kind"],
                score=cand.score,
                match_type=cand.match_type,
                margin=round(max(0.0, cand.score - max(others, default=0.0)), 4),
                snippet=snippet,
                highlights=tuple((int(a), int(b)) for a, b in highlights),
                locator=locator,
                reranked=cand.reranked,
                matched_terms=tuple(cand.matched_terms),
                expanded_terms=tuple(cand.expanded_terms),
                score_metadata=score_metadata(cand, item.trace),
                source=Source(
                    session_id=record["session"],
                    turn_id=record.get("turn") or record["documentId"],
                    message_key=message_key,
                    message_keys=tuple(record["keys"]),
                    project=record["project"],
                    agent=record["agent"],
                    timestamp=_timestamp(manifest, message_key) or record["created"],
                ),
                extra=extra,
            )
        )
    return tuple(hits)


def _message_at(manifest: dict[str, Any], byte_pos: int) -> str | None:
    for part in manifest["parts"]:
        if part["start"] <= byte_pos < max(part["end"], part["start"] + 1):
            return str(part["key"])
    return None


def _timestamp(manifest: dict[str, Any], key: str) -> str | None:
    for part in manifest["parts"]:
        if part["key"] == key:
            ts = part.get("ts")
            return str(ts) if ts is not None else None
    return None


def score_metadata(cand: Candidate, trace: dict[str, Any]) -> dict[str, Any]:
    """Each stage's value with its type and direction (``score_metadata``: every stage states
    whether higher or lower is better and what kind of number it is)."""
    raw_type = {
        "exact": "anchor-coverage",
        "lexical": "bm25f",
        "structural": "bm25f",
        "semantic": "cosine",
    }[cand.mode]
    stages: list[dict[str, Any]] = [
        {
            "stage": cand.mode,
            "type": raw_type,
            "direction": "higher-is-better",
            "value": round(cand.raw, 6),
        },
        {
            "stage": "calibrated",
            "type": "calibrated-confidence",
            "direction": "higher-is-better",
            "value": cand.score,
        },
    ]
    if trace:
        stages += [
            {
                "stage": "fusion",
                "type": "rrf-blend",
                "direction": "higher-is-better",
                "value": trace["fused"],
                "ranks": trace["ranks"],
            },
            {
                "stage": "importance",
                "type": "multiplier",
                "direction": "higher-is-better",
                "value": trace["importance"],
            },
        ]
    return {"mode": cand.mode, "tier": TIER[cand.mode], "presented": "calibrated", "stages": stages}

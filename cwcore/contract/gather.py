"""The ``gather`` method's records: its request (:class:`GatherRequest`, a search request and
the turns to gather around each hit) and its answer (:class:`GatherResponse`: the search's
status, generation and timings, and each hit with its chronological neighbours).

A gather's JSON is the search answer's (:mod:`cwcore.contract.search`) with each hit carrying
``before`` and ``after`` (:class:`~cwcore.contract.context.Neighbor` turns, which have no score
or band); ``cw gather --json`` and the MCP gather tool print it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cwcore.contract.context import Neighbor
from cwcore.contract.search import (
    SearchHit,
    SearchRequest,
    SearchResponse,
    json_schema,
    parse_request,
)
from cwcore.errors import InvalidInput

#: Turns gathered around each hit: at most this many before and after.
MAX_GATHER_NEIGHBORS = 8


def gather_neighbors(around: object) -> int:
    """A gather's ``neighbors``: turns before and after each hit, from 0 to 8."""
    if not isinstance(around, int) or not 0 <= around <= MAX_GATHER_NEIGHBORS:
        raise InvalidInput(f"neighbors must be from 0 to {MAX_GATHER_NEIGHBORS}")
    return around


@dataclass(frozen=True)
class GatherRequest:
    """Gather the hits of ``search`` with ``neighbors`` turns (0 to 8) before and after each.
    A gather always runs the semantic mode: :meth:`parse` sets ``semanticPolicy`` to
    ``always`` whatever the call named, so the engine's request has it. On the wire it is the
    search request's keys and ``neighbors``."""

    search: SearchRequest
    neighbors: int = 1

    def __post_init__(self) -> None:
        gather_neighbors(self.neighbors)

    @classmethod
    def parse(cls, params: Any, *, where: str = "") -> GatherRequest:
        """The request of a call's JSON: the search request's checks first (with its
        messages), then ``neighbors``. ``where`` is not used (a gather request is never
        nested)."""
        if not isinstance(params, Mapping):
            raise InvalidInput("a search request must be a JSON object")
        rest = dict(params)
        around = rest.pop("neighbors", 1)
        search = parse_request({**rest, "semanticPolicy": "always"})
        return cls(search, gather_neighbors(around))

    @classmethod
    def of(cls, search: SearchRequest | Mapping[str, Any], neighbors: int = 1) -> GatherRequest:
        """A gather of ``search``: a typed search request, or a mapping of the public search
        fields, parsed as the engine parses a gather's (its ``semanticPolicy`` is ``always``
        whatever it names; ``neighbors`` is this argument)."""
        if isinstance(search, SearchRequest):
            return cls(search, neighbors)
        return cls.parse({**search, "neighbors": neighbors})

    def to_json(self) -> dict[str, Any]:
        return {**self.search.to_json(), "neighbors": self.neighbors}

    @staticmethod
    def json_schema(
        names: tuple[str, ...], overrides: dict[str, dict[str, Any]] | None = None
    ) -> dict[str, Any]:
        """The JSON Schema of a gather offering the search fields ``names`` (each generated
        from its declaration and ``overrides``, as :func:`~cwcore.contract.search.json_schema`
        does) and ``neighbors`` with the bound :func:`gather_neighbors` checks; ``query`` is
        required."""
        schema = json_schema(names, overrides)
        schema["properties"]["neighbors"] = {
            "type": "integer",
            "minimum": 0,
            "maximum": MAX_GATHER_NEIGHBORS,
            "default": 1,
            "description": "Turns to include before and after each hit.",
        }
        schema["required"] = ["query"]
        return schema


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

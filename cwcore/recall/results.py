"""What recall, direct reads and gather return, as frozen dataclasses (the recall answer itself
is declared in :mod:`cwcore.contract.recall`, and named here too; a gather anchor's
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
from typing import Any

from cwcore.contract.context import DocumentContext, Neighbor
from cwcore.contract.recall import (  # the recall answer, declared in the contract
    Chunk,
    Continuation,
    DocumentRead,
    MessageSpan,
    RecalledSource,
    RecallResponse,
    Split,
    TurnContext,
    TurnHeader,
)
from cwcore.retrieve.results import SearchHit, SearchResponse

__all__ = [
    "Chunk",
    "Continuation",
    "DocumentContext",
    "DocumentRead",
    "GatherAnchor",
    "GatherResponse",
    "MessageSpan",
    "Neighbor",
    "RecallResponse",
    "RecalledSource",
    "Split",
    "TurnContext",
    "TurnHeader",
]


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

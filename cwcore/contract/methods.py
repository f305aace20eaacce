"""The catalogue of engine methods declared by their contract: a method's protocol name, its
request record, its answer record, and its limits. A face asks with
:meth:`cwcore.api.Archive.ask` and gets the answer record back; the method table answers it
through :func:`cwcore.methods.registry.typed`, which parses the request once and serializes the
answer once. Adding such a method touches two places: its declaration here (with its records)
and its handler (docs/architecture.md, "Adding a method").

Methods not declared here yet keep the older form (a handler over a JSON dict and an ``Archive``
method that builds it); they move here one by one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

from cwcore.contract.bound import (
    BoundMessages,
    BoundMessagesRequest,
    BoundSessions,
    BoundSessionsRequest,
)
from cwcore.contract.facets import Facets, FacetsRequest
from cwcore.contract.index import (
    IndexStatus,
    IndexStatusRequest,
    IndexVerification,
    PartialDocuments,
    PartialRequest,
    VerifyRequest,
)
from cwcore.contract.recall import RecallRequest, RecallResponse
from cwcore.contract.sources import SourcesReport, SourcesRequest
from cwcore.contract.supersession import (
    Restored,
    Superseded,
    SupersedeRequest,
    UnsupersedeRequest,
)


class Request(Protocol):
    """What a method's request is: parsed from the call's JSON at the edge (``invalid-input``
    naming the key) and sent as JSON. Every codec :class:`~cwcore.contract.codec.Record` is
    one."""

    @classmethod
    def parse(cls, params: Any, *, where: str = "") -> Self: ...

    def to_json(self) -> dict[str, Any]: ...


class Answer(Protocol):
    """What a method's answer is: written as JSON once and read back by a face. A codec
    :class:`~cwcore.contract.codec.Record` is one; so is an answer whose JSON has several
    shapes and writes them itself (e.g. :class:`~cwcore.contract.recall.RecallResponse`)."""

    def to_json(self) -> dict[str, Any]: ...

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self: ...


Req = TypeVar("Req", bound=Request)
Ans = TypeVar("Ans", bound=Answer)


@dataclass(frozen=True)
class Spec(Generic[Req, Ans]):
    """One declared method: ``name`` on the wire, the ``request`` and ``answer`` records,
    ``output_bytes`` (the bound the daemon reserves for the answer, None for the default) and
    ``passive`` (a cheap status read a UI polls; it does not hold off background work)."""

    name: str
    request: type[Req]
    answer: type[Ans]
    output_bytes: int | None = None
    passive: bool = False


#: ``facets``: the agents and projects with their counts under the other filters.
FACETS = Spec("facets", FacetsRequest, Facets)

#: ``sources``: a row per registered location with what the last sync found there (a cheap
#: status read the TUI polls).
SOURCES = Spec("sources", SourcesRequest, SourcesReport, passive=True)

#: ``index.status``: the lexical generation and handlers and the semantic progress (polled).
INDEX_STATUS = Spec("index.status", IndexStatusRequest, IndexStatus, passive=True)

#: ``index.partial``: the documents a limit cut, a page at a time (polled by the TUI).
INDEX_PARTIAL = Spec("index.partial", PartialRequest, PartialDocuments, passive=True)

#: ``index.verify``: the derived index against the canonical records (problems listed, 4 MiB).
INDEX_VERIFY = Spec("index.verify", VerifyRequest, IndexVerification, output_bytes=4 * 1024 * 1024)

#: ``recall``: the source around a located hit, or a document read by id (up to 16 MiB).
RECALL = Spec("recall", RecallRequest, RecallResponse, output_bytes=16 * 1024 * 1024)

#: ``supersede``: retire a reversed decision from search (kept for audit).
SUPERSEDE = Spec("supersede", SupersedeRequest, Superseded)

#: ``supersede.undo``: make a superseded document live again, as a new version.
SUPERSEDE_UNDO = Spec("supersede.undo", UnsupersedeRequest, Restored)

#: ``bound.sessions``: a page of the bound project's sessions (the MCP sessions tool).
BOUND_SESSIONS = Spec("bound.sessions", BoundSessionsRequest, BoundSessions)

#: ``bound.messages``: a range of one bound session's messages (the MCP messages tool, 2 MiB).
BOUND_MESSAGES = Spec(
    "bound.messages", BoundMessagesRequest, BoundMessages, output_bytes=2 * 1024 * 1024
)

#: Every declared method (``tests/test_method_table.py`` checks the engine's table answers each).
DECLARED: tuple[Spec[Any, Any], ...] = (
    FACETS,
    SOURCES,
    INDEX_STATUS,
    INDEX_PARTIAL,
    INDEX_VERIFY,
    RECALL,
    SUPERSEDE,
    SUPERSEDE_UNDO,
    BOUND_SESSIONS,
    BOUND_MESSAGES,
)

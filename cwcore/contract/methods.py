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

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cwcore.contract.codec import Record
from cwcore.contract.context import ContextRequest, DocumentContext
from cwcore.contract.doctor import CountsRequest, DoctorReport, DoctorRequest, StoreCounts
from cwcore.contract.facets import Facets, FacetsRequest
from cwcore.contract.imports import ImportReport, ImportRequest, SyncRequest
from cwcore.contract.index import (
    IndexStatus,
    IndexStatusRequest,
    IndexVerification,
    PartialDocuments,
    PartialRequest,
    VerifyRequest,
)
from cwcore.contract.retention import ForgetRequest, ForgetResolveRequest, ForgetTarget, Forgotten
from cwcore.contract.sessions import (
    ResolvedSession,
    ResolveSessionRequest,
    SessionsPage,
    SessionsRequest,
)
from cwcore.contract.sources import SourcesReport, SourcesRequest
from cwcore.contract.views import (
    DocumentView,
    Exported,
    ExportRequest,
    ShowDocumentRequest,
    ShowRequest,
    Transcript,
)
from cwcore.large_results import MAX_INLINE_BYTES  # a larger answer travels in parts

Req = TypeVar("Req", bound=Record)
Ans = TypeVar("Ans", bound=Record)


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

# -- the archive's methods (cwcore/methods/archive.py) ------------------------------------------

#: ``doctor``: the store's summary and consistency checks (``repair`` fixes what they found).
DOCTOR = Spec("doctor", DoctorRequest, DoctorReport)

#: ``counts``: the store's record counts, one meta read (polled by the TUI).
COUNTS = Spec("counts", CountsRequest, StoreCounts, passive=True)

#: ``context``: the turns before and after one document in its session.
CONTEXT = Spec("context", ContextRequest, DocumentContext)

#: ``sessions``: a page of sessions, filtered and sorted, and the next page's cursor.
SESSIONS = Spec("sessions", SessionsRequest, SessionsPage)

#: ``sessions.resolve``: the session an id or a unique prefix names.
SESSIONS_RESOLVE = Spec("sessions.resolve", ResolveSessionRequest, ResolvedSession)

#: ``forget``: remove a session or document for good (idempotent by request id).
FORGET = Spec("forget", ForgetRequest, Forgotten)

#: ``forget.resolve``: what a forget would remove, nothing removed.
FORGET_RESOLVE = Spec("forget.resolve", ForgetResolveRequest, ForgetTarget)

#: ``show``: a session's transcript (in parts when large).
SHOW = Spec("show", ShowRequest, Transcript, output_bytes=MAX_INLINE_BYTES)

#: ``show.document``: a document's versions, text and provenance (in parts when large).
SHOW_DOCUMENT = Spec(
    "show.document", ShowDocumentRequest, DocumentView, output_bytes=MAX_INLINE_BYTES
)

#: ``export``: a session as Markdown or cw-jsonl (in parts when large).
EXPORT = Spec("export", ExportRequest, Exported, output_bytes=MAX_INLINE_BYTES)

#: ``import``: files and folders into the archive (progress events as it goes).
IMPORT = Spec("import", ImportRequest, ImportReport)

#: ``sync``: what is new at every registered location (progress events as it goes).
SYNC = Spec("sync", SyncRequest, ImportReport)

ARCHIVE: tuple[Spec[Any, Any], ...] = (
    DOCTOR,
    COUNTS,
    CONTEXT,
    SESSIONS,
    SESSIONS_RESOLVE,
    FORGET,
    FORGET_RESOLVE,
    SHOW,
    SHOW_DOCUMENT,
    EXPORT,
    IMPORT,
    SYNC,
)

#: Every declared method (``tests/test_method_table.py`` checks the engine's table answers each).
DECLARED: tuple[Spec[Any, Any], ...] = (
    FACETS,
    SOURCES,
    INDEX_STATUS,
    INDEX_PARTIAL,
    INDEX_VERIFY,
    *ARCHIVE,
)

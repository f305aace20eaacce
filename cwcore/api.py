"""``Archive``: the one facade every face (CLI, TUI, MCP server, hooks) calls.

An Archive talks to the daemon that owns the store (starting it on demand), or — in tests and
with ``CW_EMBEDDED=1`` — opens the store in-process. Both paths run the same engine method table
(:mod:`cwcore.methods`) with the same JSON-able params and results, so a face never knows which
one it has.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, overload

from cwcore import config, large_results
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
    DEFAULT_MAX_RESULTS,
    HintsRequest,
    LocateRequest,
    MaintainRequest,
    PreflightRequest,
    RotateRequest,
)
from cwcore.contract.imports import ImportReport, ImportRequest, SyncRequest
from cwcore.contract.index import (
    IndexRunRequest,
    IndexStatusRequest,
    PartialRequest,
    RebuildRequest,
    VerifyRequest,
)
from cwcore.contract.markdown import ReadEntryRequest, ReadMarkdownRequest
from cwcore.contract.memory import (
    MemoryAddRequest,
    MemoryContextRequest,
    MemoryIdRequest,
    MemoryListRequest,
    MemoryStatusRequest,
)
from cwcore.contract.methods import (
    BOUND_MEMORY,
    BOUND_MESSAGES,
    BOUND_SESSIONS,
    CONTEXT,
    COUNTS,
    DOCTOR,
    EXPORT,
    FACETS,
    FORGET,
    FORGET_RESOLVE,
    GATHER,
    HINTS,
    HINTS_LOCATE,
    HINTS_MAINTAIN,
    HINTS_ROTATE,
    IMPORT,
    INDEX_PARTIAL,
    INDEX_REBUILD,
    INDEX_RUN,
    INDEX_STATUS,
    INDEX_VERIFY,
    MARKDOWN_READ,
    MARKDOWN_READ_ENTRY,
    MEMORY_ADD,
    MEMORY_CONTEST,
    MEMORY_CONTEXT,
    MEMORY_DEPRECATE,
    MEMORY_LIST,
    MEMORY_SHOW,
    MODELS_INSTALL,
    MODELS_INSTALL_RERANKER,
    MODELS_STATUS,
    PREFLIGHT,
    RECALL,
    SEARCH,
    SEMANTIC_EMBED_PENDING,
    SEMANTIC_STATUS,
    SESSIONS,
    SESSIONS_RESOLVE,
    SHOW,
    SHOW_DOCUMENT,
    SOURCES,
    SUPERSEDE,
    SUPERSEDE_UNDO,
    SYNC,
    Ans,
    Req,
    Spec,
    answer_json,
    received,
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
from cwcore.contract.recall import RecallRequest, RecallResponse
from cwcore.contract.retention import (
    ForgetRequest,
    ForgetResolveRequest,
    ForgetTarget,
    Forgotten,
)
from cwcore.contract.search import SearchRequest, SearchResponse
from cwcore.contract.sessions import ResolveSessionRequest, SessionInfo, SessionsRequest
from cwcore.contract.sources import SourcesReport, SourcesRequest
from cwcore.contract.supersession import (
    Restored,
    Superseded,
    SupersedeRequest,
    UnsupersedeRequest,
)
from cwcore.contract.views import (
    DocumentView,
    ExportRequest,
    ShowDocumentRequest,
    ShowRequest,
    Transcript,
)
from cwcore.errors import InvalidInput

# The result records load when a face first asks for them: `cw` starts on every command, and
# most commands need one of them or none.
if TYPE_CHECKING:
    from cwcore.contract.hints import HintsListing, HintsView, Maintained, Rotated
    from cwcore.contract.index import IndexStatus, IndexVerification, PartialDocuments
    from cwcore.contract.markdown import MarkdownRead
    from cwcore.contract.memory import MemoryContext, MemoryListing, MemoryRecord
    from cwcore.contract.preflight import PreflightDecision
    from cwcore.daemon.results import DaemonStatus
    from cwcore.engine import Engine

OnEvent = Callable[[dict[str, Any]], None]


class Transport(Protocol):
    def call(
        self, method: str, params: dict[str, Any], on_event: OnEvent | None = None
    ) -> dict[str, Any]: ...

    def close(self) -> None: ...

    @property
    def notices(self) -> list[str]: ...


class EmbeddedTransport:
    """The engine in this process (tests, ``CW_EMBEDDED=1``, and the daemon itself)."""

    def __init__(self, home: Path) -> None:
        from cwcore.methods import make_service

        self.engine = make_service(home)

    def call(
        self, method: str, params: dict[str, Any], on_event: OnEvent | None = None
    ) -> dict[str, Any]:
        return self.engine.call(method, params, on_event or (lambda e: None), threading.Event())

    def close(self) -> None:
        self.engine.close()

    @property
    def notices(self) -> list[str]:
        return list(self.engine.notices)


class DaemonTransport:
    """The daemon behind its Unix socket, started on demand."""

    def __init__(self, home: Path) -> None:
        from cwcore.daemon.client import connect

        self.client = connect(home)

    def call(
        self, method: str, params: dict[str, Any], on_event: OnEvent | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.client.call(method, params, on_event=on_event)
        return result

    def close(self) -> None:
        self.client.close()

    @property
    def notices(self) -> list[str]:
        return list(self.client.notices)


def _embedded_by_default() -> bool:
    return os.environ.get("CW_EMBEDDED", "").lower() in ("1", "true", "yes")


class Archive:
    """Typed access to one store. Use as a context manager or call :meth:`close`."""

    #: Called with each notice of opening the store (permissions tightened), if set: a face
    #: that has a user to tell sets it once (the CLI prints to stderr).
    notice_sink: Callable[[str], None] | None = None

    def __init__(self, transport: Transport, home: Path) -> None:
        self._transport = transport
        self.home = home

    @property
    def engine(self) -> Engine:
        """The in-process engine of an embedded archive, for the test suite, the benches and the
        evaluation harness, which read its store and workers directly. A daemon's archive has
        none here: :class:`InvalidInput`."""
        if not isinstance(self._transport, EmbeddedTransport):
            raise InvalidInput("this archive talks to a daemon: its engine runs there")
        return self._transport.engine

    @classmethod
    def open(cls, home: Path | None = None, *, embedded: bool | None = None) -> Archive:
        home = (home or config.default_home()).expanduser().resolve()
        config.check_home(home)
        if embedded is None:
            embedded = _embedded_by_default()
        if not embedded:
            # A running daemon read its settings when it started: a config.toml broken since
            # then is reported here, by every command, not only when a daemon next starts.
            config.load(home)
        transport: Transport = EmbeddedTransport(home) if embedded else DaemonTransport(home)
        sink = cls.notice_sink
        if sink is not None:
            for text in transport.notices:
                sink(text)
        return cls(transport, home)

    @staticmethod
    def check(method: str, params: dict[str, Any]) -> None:
        """Refuse now, without opening the store, a request the engine would certainly refuse
        (a limit out of range, an unknown scope or relation, a date that does not parse): a
        face calls it before :meth:`open`, so such a request creates no ``CW_HOME`` and starts
        no daemon. The error is the one the engine would raise (:mod:`cwcore.precheck`)."""
        from cwcore import precheck

        precheck.check(method, params)

    @property
    def embedded(self) -> bool:
        """True when the store is open in this process (no daemon)."""
        return isinstance(self._transport, EmbeddedTransport)

    def __enter__(self) -> Archive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._transport.close()

    def call(
        self, method: str, params: dict[str, Any] | None = None, on_event: OnEvent | None = None
    ) -> dict[str, Any]:
        """A method by name with a JSON body, answered as JSON (what :meth:`ask` sends a declared
        method through, and the daemon's own ``daemon.*`` methods). A result too large for one
        frame arrives in parts (:mod:`cwcore.large_results`) and is joined here."""
        collector = large_results.Collector(on_event)
        return collector.result(self._transport.call(method, params or {}, collector))

    # -- typed methods ------------------------------------------------------------------------

    def import_paths(
        self,
        paths: Sequence[str | Path],
        *,
        fmt: str = "auto",
        project: str | None = None,
        on_event: OnEvent | None = None,
    ) -> ImportReport:
        """Import files/folders; ``on_event`` sees each ack, progress and notice as it happens."""
        request = ImportRequest(tuple(_absolute(p) for p in paths), fmt, project)
        return self.ask(IMPORT, request, on_event)

    def doctor(self, *, repair: bool = False) -> DoctorReport:
        """Store summary and consistency checks; ``repair`` rebuilds what a check found stale."""
        return self.ask(DOCTOR, DoctorRequest(repair))

    def counts(self) -> StoreCounts:
        """The store's record counts (one read; :meth:`doctor` also runs every check)."""
        return self.ask(COUNTS, CountsRequest())

    def sessions(
        self,
        *,
        project: str | None = None,
        agent: str | None = None,
        since: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        sort: str = "started",
        ascending: bool = False,
        match: str | None = None,
    ) -> tuple[list[SessionInfo], str | None]:
        """A page of sessions and the cursor of the next (see
        :func:`cwcore.browse.list_sessions` for ``sort``, ``ascending`` and ``match``)."""
        request = SessionsRequest(project, agent, since, limit, cursor, sort, ascending, match)
        page = self.ask(SESSIONS, request)
        return list(page.sessions), page.next_cursor

    def facets(
        self,
        *,
        project: str | None = None,
        agent: str | None = None,
        since: str | None = None,
        until: str | None = None,
        activity_days: int = 0,
    ) -> Facets:
        """The archive's agents and projects, each with its sessions and messages under the
        other filters (``since`` / ``until``: ISO-8601), and with ``activity_days`` each
        project's sessions per day (see :func:`cwcore.facets.facets`)."""
        return self.ask(FACETS, FacetsRequest(project, agent, since, until, activity_days))

    def ask(self, spec: Spec[Req, Ans], request: Req, on_event: OnEvent | None = None) -> Ans:
        """A declared method (:mod:`cwcore.contract.methods`): ``request`` sent as its JSON,
        the answer read back as the method's answer record (which keeps that JSON for
        :func:`~cwcore.contract.methods.answer_json`); ``on_event`` sees a streaming method's
        progress events as they happen."""
        body = self.call(spec.name, request.to_json(), on_event)
        return received(spec.answer.from_json(body), body)

    def resolve_session(self, session: str) -> SessionInfo:
        """The session an id or a unique prefix of 4+ characters names (NotFound otherwise)."""
        return self.ask(SESSIONS_RESOLVE, ResolveSessionRequest(session)).session

    def show(
        self, session: str, *, include_all: bool = False, hide_superseded: bool = False
    ) -> Transcript:
        """A session's transcript; superseded messages are listed (marked) unless
        ``hide_superseded``, metadata events only with ``include_all`` (see
        :func:`cwcore.browse.transcript`)."""
        return self.ask(SHOW, ShowRequest(session, include_all, hide_superseded))

    def export(self, session: str, fmt: str = "md") -> str:
        """A session as Markdown (``md``) or cw-jsonl (``jsonl``)."""
        return self.ask(EXPORT, ExportRequest(session, fmt)).text

    def forget(self, target: str) -> Forgotten:
        """Remove the session or document whose id is exactly ``target`` for good; returns
        what was removed (the target, then counts)."""
        return self.ask(FORGET, ForgetRequest(target))

    def forget_target(self, target: str, *, prefix: bool = False) -> ForgetTarget:
        """What ``forget`` would remove, without removing it. ``prefix`` also accepts a unique
        session id prefix (for a confirmation that names the full id)."""
        return self.ask(FORGET_RESOLVE, ForgetResolveRequest(target, prefix))

    def sync(
        self, *, since: str | None = None, home: str | None = None, on_event: OnEvent | None = None
    ) -> ImportReport:
        """Import what is new from the agents' standard locations under ``home`` (default ~)."""
        return self.ask(SYNC, SyncRequest(since, home), on_event)

    def sources(self, *, home: str | None = None) -> SourcesReport:
        """Per-source coverage: a row per registered location with what the last ``sync``
        found there, and their summary (see :class:`cwcore.contract.sources.SourceRow`)."""
        return self.ask(SOURCES, SourcesRequest(home))

    # -- index ----------------------------------------------------------------------------------

    def index_run(self, *, wait: bool = False, on_event: OnEvent | None = None) -> IndexStatus:
        """Publish pending index work (all of it with ``wait``); returns the index status."""
        return self.ask(INDEX_RUN, IndexRunRequest(wait), on_event)

    def index_status(self, document: str | None = None) -> IndexStatus:
        """The index's generation, handlers and semantic progress (``document``: with that
        document's state too)."""
        return self.ask(INDEX_STATUS, IndexStatusRequest(document))

    def index_partial(self, *, limit: int = 100, after: int = 0) -> PartialDocuments:
        """The documents with a partial or skipped handler outcome and the limits behind them
        (see :func:`cwcore.index.maintenance.partial_documents`)."""
        return self.ask(INDEX_PARTIAL, PartialRequest(limit, after))

    def index_verify(self) -> IndexVerification:
        """The derived index checked against the canonical records."""
        return self.ask(INDEX_VERIFY, VerifyRequest())

    def index_rebuild(self, *, wait: bool = False) -> IndexStatus:
        """Rebuild the derived index from the canonical records (``queued``: documents
        re-enqueued); with ``wait``, returns after they are all published."""
        return self.ask(INDEX_REBUILD, RebuildRequest(wait))

    # -- retrieval ------------------------------------------------------------------------------

    def search(self, request: SearchRequest | Mapping[str, Any]) -> SearchResponse:
        """Explicit search. A face passes the :class:`SearchRequest` it validated at its edge
        (:meth:`~cwcore.contract.search.SearchRequest.parse`) or a mapping of the public request
        fields (``cw search --json``'s keys, as the benches and the eval send them), checked
        here with the engine's own messages before it is sent."""
        return self.ask(SEARCH, SearchRequest.of(request))

    def search_json(self, request: SearchRequest | Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`search`'s answer as the engine's JSON, not decoded: what ``cw search --json``
        and ``--batch`` print (a typed record is built only for a face that renders it). A
        mapping is sent as it is, for the engine to check."""
        body = dict(request) if isinstance(request, Mapping) else request.to_json()
        return self.call(SEARCH.name, body)

    def recall(
        self,
        locator: str,
        *,
        neighbors: int = 1,
        max_tokens: int = 3000,
        session_ids: Sequence[str] = (),
        project: str | None = None,
    ) -> RecallResponse:
        """Materialize the source around a located hit (or read a document by id); ``status``
        says if it resolved. ``project`` confines it to that project: anything outside answers
        as if it did not exist."""
        request = RecallRequest(locator, neighbors, max_tokens, tuple(session_ids), project)
        return self.ask(RECALL, request)

    def gather(
        self, request: SearchRequest | Mapping[str, Any], *, neighbors: int = 1
    ) -> GatherResponse:
        """Search hits with their chronological before/after neighbours (no score on those);
        ``request`` as :meth:`search` takes it (gather always runs the semantic mode)."""
        return self.ask(GATHER, GatherRequest.of(request, neighbors))

    def context(self, document_id: str, *, neighbors: int = 1) -> DocumentContext:
        """The turns before and after ``document_id`` in its session (context, not ranked)."""
        return self.ask(CONTEXT, ContextRequest(document_id, neighbors))

    def supersede(
        self,
        document_id: str,
        *,
        by: str | None = None,
        reason: str | None = None,
        subject_key: str | None = None,
        project: str | None = None,
    ) -> Superseded:
        """Retire a reversed decision; ``project`` confines it (and ``by``) to that project:
        another project's document is ``not-found``, as if it did not exist."""
        return self.ask(SUPERSEDE, SupersedeRequest(document_id, by, reason, subject_key, project))

    def unsupersede(
        self, document_id: str, *, reason: str | None = None, project: str | None = None
    ) -> Restored:
        """Undo the supersession of ``document_id``: it is searchable again, as a new version;
        the audit view keeps both records (``restored``: the version that had been
        superseded)."""
        return self.ask(SUPERSEDE_UNDO, UnsupersedeRequest(document_id, reason, project))

    def show_document(self, document_id: str, *, include_superseded: bool = False) -> DocumentView:
        """A document's text and provenance: its head version, or with ``include_superseded``
        every version (the audit view; see :func:`cwcore.browse.show_document`)."""
        return self.ask(SHOW_DOCUMENT, ShowDocumentRequest(document_id, include_superseded))

    # -- Markdown evidence ---------------------------------------------------------------

    def read_entry(self, entry: str, *, max_chars: int | None = None) -> MarkdownRead:
        """Expand a hit: the exact characters of ``DOC#md:S:E`` (or of a whole document ``DOC``;
        ``DOC@vN#md:S:E`` reads an older version), at most ``max_chars`` of them."""
        return self.ask(MARKDOWN_READ_ENTRY, ReadEntryRequest(entry, max_chars))

    def read_markdown(
        self,
        document: str,
        *,
        lines: str | None = None,
        heading: str | None = None,
        max_chars: int | None = None,
    ) -> MarkdownRead:
        """One-based inclusive ``lines`` (``A-B``) or one unique ``heading``'s section of a live
        Markdown document named by id or by the imported file's path; exactly one of the two."""
        return self.ask(MARKDOWN_READ, ReadMarkdownRequest(document, lines, heading, max_chars))

    # -- the semantic tier's models -------------------------------------------------------

    def models_status(self, *, self_test: bool = True) -> ModelsStatus:
        """The embedding model, the reranker and the semantic index; with ``self_test`` one
        test embedding (loads the model)."""
        return self.ask(MODELS_STATUS, ModelsStatusRequest(self_test))

    def models_install(self, *, int8: bool = False) -> ModelFolder:
        """Assemble the MiniLM embedding model from the installed packages (offline), then
        self-test it; ``int8``: the variant computing in int8 (:class:`ModelsInstallRequest`)."""
        return self.ask(MODELS_INSTALL, ModelsInstallRequest(int8))

    def install_reranker(
        self, source: str | Path, *, name: str | None = None, revision: str | None = None
    ) -> ModelFolder:
        """Copy a local cross-encoder folder into place (the only way a reranker is installed);
        ``name``/``revision`` default to the settings' ``rerankerModel``/``…Revision``."""
        folder = str(Path(source).expanduser().resolve())
        return self.ask(MODELS_INSTALL_RERANKER, InstallRerankerRequest(folder, name, revision))

    def semantic_status(self) -> SemanticStatus:
        """The semantic index handler's progress (cheap: no model is loaded)."""
        return self.ask(SEMANTIC_STATUS, SemanticStatusRequest())

    def embed_pending(self, *, max_windows: int = 16) -> EmbedPending:
        """Embed at most ``max_windows`` pending windows now (1..4096); the progress after."""
        return self.ask(SEMANTIC_EMBED_PENDING, EmbedPendingRequest(max_windows))

    # -- the daemon -------------------------------------------------------------------------

    def daemon_status(self) -> DaemonStatus:
        """The serving daemon's status (an embedded archive has no daemon: the method is not
        in its table, and the call fails as an unknown method does)."""
        from cwcore.daemon.results import DaemonStatus

        return DaemonStatus.from_json(self.call("daemon.status"))

    # -- project-bound reads (cwcore.reads: the MCP server's) -----------------------------

    def bound_sessions(self, project: str, **filters: Any) -> BoundSessions:
        """A page of ``project``'s sessions (filters: agent, since, limit, cursor)."""
        return self.ask(BOUND_SESSIONS, BoundSessionsRequest(project=project, **filters))

    def bound_messages(
        self,
        session: str,
        *,
        project: str,
        bound_session: str | None = None,
        start: int = 1,
        end: int | None = None,
    ) -> BoundMessages:
        """Messages ``start``..``end`` of a session of ``project`` (and of ``bound_session``'s
        lineage): another project's session answers as a missing one."""
        request = BoundMessagesRequest(session, project, bound_session, start, end)
        return self.ask(BOUND_MESSAGES, request)

    def bound_memory(
        self, prompt: str, *, project: str, bound_session: str | None = None
    ) -> MemoryContext:
        """The memory injection block of ``prompt`` over the records ``project`` may see, with
        its selection's ids bounded (``project`` set on the answer)."""
        return self.ask(BOUND_MEMORY, BoundMemoryRequest(prompt, project, bound_session))

    # -- preflight hints (cwcore.hints) -----------------------------------------------------------

    def preflight(
        self,
        message: str,
        *,
        session: str,
        message_key: str | None = None,
        visible: Sequence[str] = (),
        max_results: int | None = None,
        hint_budget_tokens: int | None = None,
    ) -> PreflightDecision:
        """The frozen preflight decision for one real user message (the public preflight JSON)."""
        request = PreflightRequest(
            message,
            session,
            message_key,
            tuple(visible) or None,
            DEFAULT_MAX_RESULTS if max_results is None else max_results,
            hint_budget_tokens,
        )
        return self.ask(PREFLIGHT, request)

    @overload
    def hints(
        self,
        *,
        session: str | None = ...,
        limit: int = ...,
        view: None = ...,
        everything: bool = ...,
        message_key: str | None = ...,
    ) -> HintsListing: ...

    @overload
    def hints(
        self,
        *,
        session: str | None = ...,
        limit: int = ...,
        view: str,
        everything: bool = ...,
        message_key: str | None = ...,
    ) -> HintsView: ...

    def hints(
        self,
        *,
        session: str | None = None,
        limit: int = 1000,
        view: str | None = None,
        everything: bool = False,
        message_key: str | None = None,
    ) -> HintsListing | HintsView:
        """Frozen hints per user message, with their diagnostics and each session's budget;
        with ``view`` (``retrieved``, ``manifest``, ``included``, ``excluded``) that view of them
        instead (``everything``: the excluded view lists filtered rows too); view ``memory``
        lists the memory selections the hooks kept per turn."""
        answered = self.ask(
            HINTS, request=HintsRequest(session, limit, view, everything, message_key)
        )
        # The answer is written as the one it holds: that one keeps the JSON.
        return received(answered.answer, answer_json(answered))

    def hints_rotate(self, session: str, active: Sequence[str]) -> Rotated:
        """Drop hints of keys that left the active context; recompute the active budget."""
        return self.ask(HINTS_ROTATE, RotateRequest(session, tuple(active)))

    def hints_maintain(self, *, limit: int | None = None) -> Maintained:
        """One bounded maintenance pass: exposure tombstones, abandoned-session reclaim."""
        return self.ask(HINTS_MAINTAIN, MaintainRequest(limit))

    def hint_locator(self, candidate: str) -> str:
        """A recall locator for a frozen decision's candidate id (``<documentId>#<messageKey>``,
        as its diagnostics name it): ``recall`` then resolves it like a search hit's."""
        return self.ask(HINTS_LOCATE, LocateRequest(candidate)).locator

    # -- memory records (cwcore.memory) -----------------------------------------------------------

    def memory_add(self, statement: str, **fields: Any) -> MemoryRecord:
        """Add a memory record; ``fields`` are the ``memory.add`` request fields (ruleType,
        confidence, layer, scope, tags, doesNotApplyWhen, knownExceptions, profileId,
        supersedes, contradicts, id)."""
        return self.ask(MEMORY_ADD, MemoryAddRequest.parse({"statement": statement, **fields}))

    def memory_list(self, **filters: Any) -> MemoryListing:
        """Memory records (filters: status, scope, tag, layer, limit)."""
        return self.ask(MEMORY_LIST, MemoryListRequest.parse(filters))

    def memory_show(self, record_id: str) -> MemoryRecord:
        return self.ask(MEMORY_SHOW, MemoryIdRequest(record_id))

    def memory_contest(self, record_id: str, *, reason: str | None = None) -> MemoryRecord:
        return self.ask(MEMORY_CONTEST, MemoryStatusRequest(record_id, reason))

    def memory_deprecate(self, record_id: str, *, reason: str | None = None) -> MemoryRecord:
        return self.ask(MEMORY_DEPRECATE, MemoryStatusRequest(record_id, reason))

    def memory_context(self, prompt: str, **context: Any) -> MemoryContext:
        """The injection block for ``prompt`` (context: project, profile, cwd, session,
        dailyLog, projectOnly) with the processor traces."""
        return self.ask(MEMORY_CONTEXT, MemoryContextRequest.parse({"prompt": prompt, **context}))


def _absolute(path: str | Path) -> str:
    """``path`` made absolute for the daemon (whose working folder is not the caller's), links
    resolved where they lead to a file or folder (a file imported through a link and by its own
    name is one source). A link that loops, dangles or leads to something else (a FIFO) is passed
    on as the user named it, so the import's one-line problem names that path, not a target the
    user never typed."""
    expanded = Path(path).expanduser()
    try:
        resolved = expanded.resolve()
    except (RuntimeError, OSError):  # a symlink loop: Python 3.11 raises RuntimeError
        return str(expanded.absolute())
    if resolved.is_file() or resolved.is_dir():
        return str(resolved)
    return str(expanded.absolute())

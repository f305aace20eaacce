"""The engine: the store and everything that answers requests, behind one method table.

:class:`Engine` is what the daemon serves (it satisfies :class:`cwcore.daemon.service.Service`)
and what tests open embedded. Every request is ``(method, params) -> JSON-able dict``; the method
table below is the protocol's vocabulary, and :class:`cwcore.api.Archive` is its typed face.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cwcore
from cwcore import browse, clock, config, large_results, private
from cwcore.errors import CorruptRecord, InvalidInput, ModelUnavailable, excerpt
from cwcore.importers import pipeline
from cwcore.index import maintenance
from cwcore.index.worker import IndexWorker
from cwcore.store.admission import Admission
from cwcore.store.reader import Reader
from cwcore.store.retention import Retention
from cwcore.store.rocks import FAMILIES, Store
from cwcore.workers import Periodic

Emit = Callable[[dict[str, Any]], None]
Handler = Callable[["Engine", dict[str, Any], Emit, threading.Event], dict[str, Any]]

log = logging.getLogger("cwcore.engine")

CAPABILITIES = frozenset({"archive/1", "import/1", "browse/1"})
MiB = 1024 * 1024
#: Background embedding starts only after this long without a service call (seconds).
FOREGROUND_QUIET_S = 0.2

_METHODS: dict[str, Handler] = {}
_OUTPUT_BOUNDS: dict[str, int] = {}


#: Methods that do not count as foreground activity: cheap status reads a UI polls, which must
#: not hold off the idle-time work (the quiet-time merge) for as long as a window stays open.
_PASSIVE: set[str] = set()


def method(
    name: str, *, output_bytes: int = 1 * MiB, passive: bool = False
) -> Callable[[Handler], Handler]:
    """Register an engine method with the output bound the daemon reserves for it; a
    ``passive`` method leaves :meth:`Engine.quiet_for` running."""

    def wrap(fn: Handler) -> Handler:
        _METHODS[name] = fn
        _OUTPUT_BOUNDS[name] = output_bytes
        if passive:
            _PASSIVE.add(name)
        return fn

    return wrap


_extensions_loaded = False


def load_method_modules() -> None:
    """Import ``cwcore.<package>.methods`` for every subpackage that has one: a feature adds
    engine methods by defining them there with :func:`method`, without editing this file."""
    global _extensions_loaded
    if _extensions_loaded:
        return
    _extensions_loaded = True
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(cwcore.__path__):
        if not info.ispkg:
            continue
        name = f"cwcore.{info.name}.methods"
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise


def _build_fingerprint() -> str:
    root = Path(cwcore.__file__).parent
    h = hashlib.blake2b(digest_size=8)
    for path in sorted(root.rglob("*.py")):
        h.update(path.read_bytes())
    return f"{cwcore.__version__}+{h.hexdigest()}"


def store_path(home: Path) -> Path:
    return home / "store"


class Engine:
    """One open store and its services. Not thread-safe for writes without ``store.lock``."""

    capabilities = CAPABILITIES

    def __init__(self, home: Path) -> None:
        load_method_modules()
        self.home = home
        #: One-line notices of the open (permissions tightened), for the face to show once.
        self.notices: list[str] = []
        private.hold()  # RocksDB creates files from its own threads while the store is open
        self._private = True
        try:
            home.mkdir(parents=True, exist_ok=True)
            self.permissions = private.tighten(home)
            self.settings, _ = config.load(home)
            self.store = Store(store_path(home), sync=self.settings.durable_sync)
        except BaseException:
            self._release_private()
            raise
        self._record_permissions()
        self.admission = Admission(self.store)
        self.reader = Reader(self.store)
        self.retention = Retention(self.store)
        self.indexer = IndexWorker(self.store, self.settings)
        self.background = False  # True once the daemon started the workers
        self._search_ctx: Any = None
        self.build = _build_fingerprint()
        self._workers: list[Periodic] = []
        self.compaction: dict[str, Any] = {}
        self._foreground = 0  # service calls running now
        self._foreground_end = 0.0  # time.monotonic() when the last one ended
        self._foreground_lock = threading.Lock()
        self._index_busy_at = time.monotonic()  # last indexing work (or merge) of the worker
        self._semantic_backoff = 0.0  # seconds before the next embedding attempt after a failure
        self._semantic_retry_at = 0.0
        self.semantic_error: str | None = None  # the last embedding failure, for status

    # -- Service protocol ---------------------------------------------------------------------

    def call(
        self, name: str, params: dict[str, Any], emit: Emit, cancel: threading.Event
    ) -> dict[str, Any]:
        handler = _METHODS.get(name)
        if handler is None:
            raise InvalidInput(f"unknown method {excerpt(name)}")
        if not isinstance(params, dict):
            raise InvalidInput("params must be an object")
        if name in _PASSIVE:
            return handler(self, params, emit, cancel)
        with self._foreground_lock:
            self._foreground += 1
        try:
            return handler(self, params, emit, cancel)
        finally:
            with self._foreground_lock:
                self._foreground -= 1
                self._foreground_end = time.monotonic()

    def quiet_for(self) -> float:
        """Seconds since the last service call ended; 0 while one runs."""
        with self._foreground_lock:
            if self._foreground:
                return 0.0
            return time.monotonic() - self._foreground_end

    def wait_for_quiet(self, quiet_s: float = FOREGROUND_QUIET_S, limit_s: float = 5.0) -> bool:
        """Block a background worker until no service call ran for ``quiet_s`` seconds (True),
        or ``limit_s`` seconds passed (False): CPU-heavy background work yields to requests,
        and a steady stream of them slows it down without starving it."""
        deadline = time.monotonic() + limit_s
        while True:
            with self._foreground_lock:
                busy = self._foreground > 0
                wait = 0.0 if busy else self._foreground_end + quiet_s - time.monotonic()
            if not busy and wait <= 0:
                return True
            now = time.monotonic()
            if now >= deadline:
                return False
            time.sleep(min(max(wait, 0.01), deadline - now, quiet_s))

    def max_output_bytes(self, name: str, params: dict[str, Any]) -> int:
        return _OUTPUT_BOUNDS.get(name, 1 * MiB)

    def status(self) -> dict[str, Any]:
        return {
            "store": str(self.store.path),
            "outbox_depth": self.indexer.depth(),
            "rocksdb_bytes": self.store.size_on_disk(),
            "pending_compaction_bytes": sum(
                self.store.property_int("rocksdb.estimate-pending-compaction-bytes", f)
                for f in FAMILIES
            ),
            "workers": {w.name: w.status() for w in self._workers},
            "semantic_error": self.semantic_error,
        }

    def start_workers(self) -> None:
        """Background workers: indexing, retention (expiry by archive kind), compaction monitor."""
        self.background = True
        self._index_worker = Periodic("index", self._index_step, 1.0)
        self._workers = [
            self._index_worker,
            Periodic("retention", self._maintenance_step, 600.0),
            Periodic("compaction", self._sample_compaction, 60.0),
        ]
        if self.settings.semantic_retrieval:
            self._semantic_worker = Periodic("semantic", self._semantic_step, 5.0, background=True)
            self._workers.append(self._semantic_worker)
        for worker in self._workers:
            worker.start()

    def _index_step(self) -> int:
        """One page of indexing; more pending work wakes the worker again at once, an idle
        worker merges BM25 segments; retryable failures back off (50 ms doubling to 5 s). The
        backoff is a wakeable wait: an admission (which wakes the worker) retries at once, and
        shutdown cancels it."""
        done = self.indexer.step()
        if self.indexer.backoff:
            self._index_worker.pause(self.indexer.backoff)
        if done or self.indexer.backoff:
            self._index_busy_at = time.monotonic()
            self._index_worker.wake()
        elif self.indexer.depth() == 0:
            idle = min(time.monotonic() - self._index_busy_at, self.quiet_for())
            if self.indexer.merge(idle):
                self._index_busy_at = time.monotonic()  # a merge is work too: settle again
        return done

    def _maintenance_step(self) -> dict[str, Any]:
        """Bounded maintenance: retention by archive kind, expired search leases, hint
        exposures past their cooldown and abandoned sessions' hint records."""
        from cwcore.hints import frozen
        from cwcore.retrieve.locator import expire_leases, leased_documents

        leases = expire_leases(self.store)
        report = self.retention.expire(
            self.settings, protected=leased_documents(self.store)
        ).to_json()
        report["leases"] = leases
        report["hints"] = frozen.maintain(self.store, self.settings)
        return report

    def _semantic_step(self) -> int:
        """Embed a batch of published windows after lexical publication (it never delays it);
        more pending work wakes the worker again."""
        if self.indexer.depth():
            return 0  # lexical work first: search must never wait for embeddings
        from cwcore.semantic.runtime import for_engine

        now = time.monotonic()
        if now < self._semantic_retry_at:
            return 0
        self.wait_for_quiet()
        semantic = for_engine(self)
        try:
            done = semantic.embed_pending()
            if not done:
                semantic.warm()  # nothing to embed: have the model ready for the first search
        except ModelUnavailable as exc:
            # A missing or broken model does not heal in 5 s: retry at doubling intervals
            # (up to 10 minutes) instead of failing every tick; search degrades meanwhile.
            self._semantic_backoff = min(600.0, max(5.0, self._semantic_backoff * 2))
            self._semantic_retry_at = time.monotonic() + self._semantic_backoff
            self.semantic_error = f"{exc.details.get('category', exc.code)}: {exc}"
            log.warning(
                "semantic embedding unavailable (%s); retrying in %.0f s",
                exc,
                self._semantic_backoff,
            )
            return 0
        self._semantic_backoff = 0.0
        self.semantic_error = None
        if done:
            self._semantic_worker.wake()
        return done

    def after_admission(self, imported: int) -> None:
        """Make new documents searchable: the daemon's worker is woken (a single small document
        gets a foreground page first); embedded, the outbox is drained before returning."""
        if not imported:
            return
        if not self.background:
            self.indexer.drain()
            return
        if imported == 1:
            try:
                self.indexer.run_once(max_entries=8)
            except Exception as exc:  # a publication fault never turns an admission into an error
                self.indexer.faults.append({"at": time.time(), "error": str(exc)})
        self._index_worker.wake()

    def search_context(self) -> Any:
        """What explicit search reads: store, postings, the locator signer, lease length."""
        from cwcore.retrieve.locator import Signer, load_key
        from cwcore.retrieve.search import SearchContext

        if self._search_ctx is None:
            self._search_ctx = SearchContext(
                store=self.store,
                reader=self.reader,
                postings=self.indexer.bm25,
                signer=Signer(load_key(self.home)),
                lease_minutes=self.settings.lease_minutes,
                rerank_candidates=self.settings.reranker_candidates,
            )
            if self.settings.semantic_retrieval or self.settings.reranker_enabled:
                from cwcore.semantic.runtime import for_engine

                self._search_ctx.semantic = for_engine(self)
        self._search_ctx.postings = self.indexer.bm25  # a rebuild replaces it
        return self._search_ctx

    def _sample_compaction(self) -> dict[str, Any]:
        """Record RocksDB's own view of pending compaction; RocksDB compacts in the background."""
        self.compaction = {
            "pending_compaction_bytes": sum(
                self.store.property_int("rocksdb.estimate-pending-compaction-bytes", f)
                for f in FAMILIES
            ),
            "running_compactions": self.store.property_int("rocksdb.num-running-compactions"),
            "sampled_at": time.time(),
        }
        return self.compaction

    def _record_permissions(self) -> None:
        """Log and keep (for ``cw doctor``) what the open's permission walk changed."""
        done = self.permissions
        if done.changed:
            text = private.notice(self.home, done.changed)
            self.notices.append(text)
            log.info("%s", text)  # the daemon's log; faces show ``notices`` themselves
            batch = self.store.batch()
            record = {"tightened": done.changed, "at": clock.iso(clock.now())}
            self.store.meta_put(batch, "permissions", record)
            self.store.commit(batch)
        if done.refused:
            log.warning(
                "cw: %d path(s) under %s stay readable by others (cannot change them): %s",
                done.refused,
                self.home,
                ", ".join(done.examples),
            )

    def _release_private(self) -> None:
        if self._private:
            self._private = False
            private.release()

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        try:
            self.store.close()
        finally:
            self._release_private()


def make_service(home: Path) -> Engine:
    """The daemon's service factory."""
    return Engine(home)


# -- methods --------------------------------------------------------------------------------------


def param_str(params: dict[str, Any], name: str, default: str | None = None) -> str | None:
    """``params[name]`` (``default`` when absent); :class:`InvalidInput` unless a string."""
    value = params.get(name, default)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


def required_str(params: dict[str, Any], name: str, what: str = "") -> str:
    """A non-empty string parameter; :class:`InvalidInput` ``NAME (WHAT) is required`` when it
    is absent or empty. The method handlers of every feature module share these two."""
    value = param_str(params, name)
    if not value:
        raise InvalidInput(f"{name}{f' ({what})' if what else ''} is required")
    return value


@method("import")
def _import(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    paths = params.get("paths")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise InvalidInput("paths must be a non-empty list of strings")
    fmt = param_str(params, "format", "auto") or "auto"
    pipeline.check_format(fmt)
    summary = pipeline.import_paths(
        engine.admission,
        paths,
        fmt=fmt,
        project=param_str(params, "project"),
        settings=engine.settings,
        emit=emit,
        cancelled=cancel.is_set,
    )
    engine.after_admission(summary.imported)
    return summary.to_json()


@method("doctor")
def _doctor(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    from cwcore.store import integrity, session_order

    repair = params.get("repair", False)
    if not isinstance(repair, bool):
        raise InvalidInput("repair must be a boolean")
    # Every check runs whatever the others find: a record that does not decode fails the check
    # that met it (and ``records`` names it) instead of the whole report.
    records = integrity.check_records(engine.store)
    order = _check(lambda: _session_order(engine, repair, session_order), repaired=False)
    index = _check(lambda: _index(engine, repair), checked=0, retired=0)
    counts = engine.store.meta_get("counts") or {}
    sizes = {
        family: engine.store.property_int("rocksdb.estimate-live-data-size", family)
        for family in FAMILIES
    }
    sizes["disk"] = engine.store.size_on_disk()
    try:
        projects = sorted(engine.reader.projects())
    except CorruptRecord:
        projects = []  # a project record is named by the records check
    return {
        "store": str(engine.store.path),
        "version": cwcore.__version__,
        "schema": engine.store.schema_version,
        "sizes": sizes,
        "counts": {
            "sessions": int(counts.get("sessions", 0)),
            "documents": int(counts.get("documents", 0)),
            "messages": int(counts.get("messages", 0)),
            "chunks": int(counts.get("chunks", 0)),
            "events": int(counts.get("events", 0)),
        },
        "projects": projects,
        "checks": {
            "permissions": private.check(engine.home, engine.store.meta_get("permissions")),
            "records": records,
            "sessionOrder": order,
            # The same check as ``cw index verify``: doctor is unhealthy whenever verify fails.
            "index": index,
        },
    }


def _check(run: Callable[[], dict[str, Any]], **defaults: Any) -> dict[str, Any]:
    """A check's report, or a failed one naming the corrupt record it could not read past
    (``defaults`` fill the check's other fields)."""
    try:
        return run()
    except CorruptRecord as exc:
        return {"ok": False, "problems": 1, "examples": [exc.message], **defaults}


def _session_order(engine: Engine, repair: bool, session_order: Any) -> dict[str, Any]:
    problems = session_order.verify(engine.store)
    repaired = False
    if problems and repair:
        session_order.rebuild(engine.store)
        repaired, problems = True, session_order.verify(engine.store)
    return {
        "ok": not problems,
        "problems": len(problems),
        "examples": problems[:5],
        "repaired": repaired,
    }


def _index(engine: Engine, repair: bool) -> dict[str, Any]:
    with engine.indexer.paused():  # a page in flight has markers beyond the published view
        index = maintenance.verify(engine.store)
    retired = 0
    if not index["ok"] and repair:
        retired = maintenance.retire_orphans(engine.store)
        engine.after_admission(retired)  # the retirements reach the index like any other
        with engine.indexer.paused():
            index = maintenance.verify(engine.store)
    return {
        "ok": bool(index["ok"]),
        "checked": int(index["checked"]),
        "problems": len(index["problems"]),
        "examples": index["problems"][:5],
        "retired": retired,
    }


@method("sessions")
def _sessions(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    limit = params.get("limit", 50)
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise InvalidInput("limit must be an integer")
    ascending = params.get("ascending", False)
    if not isinstance(ascending, bool):
        raise InvalidInput("ascending must be a boolean")
    return browse.list_sessions(
        engine.reader,
        project=param_str(params, "project"),
        agent=param_str(params, "agent"),
        since=param_str(params, "since"),
        limit=limit,
        cursor=param_str(params, "cursor"),
        sort=param_str(params, "sort", "started") or "started",
        ascending=ascending,
        match=param_str(params, "match"),
    )


@method("sessions.resolve")
def _sessions_resolve(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """The session an id or unique prefix names: ``{"session": <a sessions row>}``."""
    session = required_str(params, "session", "a session id or unique prefix")
    return {"session": browse.resolve_session(engine.reader, session).to_json()}


@method("show", output_bytes=large_results.MAX_INLINE_BYTES)
def _show(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    session = required_str(params, "session")
    if "hideSuperseded" in params:
        hide = bool(params["hideSuperseded"])
    else:  # the older parameter: superseded messages only when asked for
        hide = not bool(params.get("includeSuperseded", True))
    body = browse.transcript(
        engine.reader, session, include_all=bool(params.get("all", False)), hide_superseded=hide
    )
    return large_results.send(body, emit)


@method("export", output_bytes=large_results.MAX_INLINE_BYTES)
def _export(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    session = required_str(params, "session")
    fmt = param_str(params, "format", "md") or "md"
    return large_results.send({"text": browse.export_session(engine.reader, session, fmt)}, emit)


@method("forget")
def _forget(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    target = required_str(params, "target", "a session or document id")
    return engine.retention.forget(target).to_json()


@method("forget.resolve")
def _forget_resolve(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    target = required_str(params, "target", "a session or document id")
    prefix = params.get("prefix", False)
    if not isinstance(prefix, bool):
        raise InvalidInput("prefix must be a boolean")
    return engine.retention.resolve(target, prefix=prefix).to_json()


@method("sync")
def _sync(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    from cwcore.clock import parse_time
    from cwcore.importers import sync

    since = param_str(params, "since")
    home = param_str(params, "home")
    summary = sync.sync(
        engine.store,
        engine.admission,
        engine.settings,
        since=parse_time(since) if since else None,
        home=Path(home) if home else None,
        emit=emit,
        cancelled=cancel.is_set,
    )
    engine.after_admission(summary.imported)
    return summary.to_json()


@method("sources", passive=True)
def _sources(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    from cwcore.importers import sources, sync

    home = param_str(params, "home")
    located = [
        (importer.name, location.label(), str(root), root.is_dir())
        for importer, location, root in sync.locations(
            engine.settings, Path(home) if home else None
        )
    ]
    rows = sources.listing(located, engine.store.meta_get(sources.META_KEY))
    return {"sources": rows, "summary": sources.summary(rows)}


@method("index.run")
def _index_run(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """Publish pending work now; with ``wait``, until the outbox is drained (progress events)."""
    total = engine.indexer.depth()
    done = 0
    while not cancel.is_set():
        n = engine.indexer.run_once()
        done += n
        emit({"type": "progress", "done": done, "total": max(total, done)})
        if n == 0 or not params.get("wait", False):
            break
    return index_status(engine)


def index_status(engine: Engine, document: str | None = None) -> dict[str, Any]:
    """``cw index status``: the lexical generation and handlers, and the semantic handler's
    progress (two point reads each, never a scan)."""
    from cwcore.semantic import index as semantic_index

    body = maintenance.status(engine.store, engine.indexer, document)
    body["semantic"] = semantic_index.status(
        engine.store, enabled=engine.indexer.settings.semantic_retrieval
    )
    return body


@method("index.status", passive=True)
def _index_status(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return index_status(engine, param_str(params, "document"))


@method("index.partial", passive=True)
def _index_partial(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    limit, after = params.get("limit", 100), params.get("after", 0)
    for name, value in (("limit", limit), ("after", after)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise InvalidInput(f"{name} must be an integer")
    return maintenance.partial_documents(engine.store, limit=limit, after=after)


@method("index.verify", output_bytes=4 * MiB)
def _index_verify(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    with engine.indexer.paused():  # a page in flight has markers beyond the published view
        return maintenance.verify(engine.store)


@method("index.rebuild")
def _index_rebuild(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    queued = maintenance.rebuild(engine.store, engine.indexer)
    if params.get("wait", False) or not engine.background:
        engine.indexer.drain()
    elif engine.background:
        engine._index_worker.wake()
    return {**queued, **index_status(engine)}


@method("search", output_bytes=4 * MiB)
def _search(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    from cwcore.retrieve.request import parse_request
    from cwcore.retrieve.search import search

    request = parse_request(params, default_policy=engine.settings.semantic_policy)
    response = search(engine.search_context(), request).to_json()
    if request.id is not None:
        response["id"] = request.id
    return response


@method("recall", output_bytes=16 * MiB)
def _recall(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """Recall a locator or a document id; ``project`` (optional) is the caller's authenticated
    project, which nothing outside of is read or revealed."""
    from cwcore.recall.recall import Caller, recall
    from cwcore.retrieve.importance import record_recall

    locator = required_str(params, "locator")
    session_ids = params.get("sessionIds") or []
    if not isinstance(session_ids, list) or not all(isinstance(s, str) for s in session_ids):
        raise InvalidInput("sessionIds must be a list of strings")
    neighbors, max_tokens = params.get("neighbors", 1), params.get("maxTokens", 3000)
    if not isinstance(neighbors, int) or not isinstance(max_tokens, int):
        raise InvalidInput("neighbors and maxTokens must be integers")
    ctx = engine.search_context()
    body = recall(
        engine.store,
        ctx.signer,
        locator,
        neighbors=neighbors,
        max_tokens=max_tokens,
        caller=Caller(param_str(params, "project"), tuple(session_ids)),
    )
    if body.status == "resolved" and body.source is not None:  # a located hit, not a read
        head = engine.reader.head(body.source.document_id)
        record_recall(engine.store, int(head["ordinal"]))
    return body.to_json()


@method("supersede")
def _supersede(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """Supersede a document; with ``project`` (the caller's authenticated project) a document
    or replacement of another project answers ``not-found``, exactly as a missing one."""
    target = required_str(params, "documentId")
    result = engine.admission.supersede(
        target,
        by=param_str(params, "by"),
        reason=param_str(params, "reason"),
        subject_key=param_str(params, "subjectKey"),
        project=param_str(params, "project"),
    )
    engine.after_admission(1)
    return result


@method("supersede.undo")
def _supersede_undo(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """Undo a supersession (an appended unsupersession record; the document is live and
    searchable again as a new version); ``project`` confines it as for ``supersede``."""
    target = required_str(params, "documentId")
    result = engine.admission.unsupersede(
        target, reason=param_str(params, "reason"), project=param_str(params, "project")
    )
    engine.after_admission(1)
    return result


@method("show.document", output_bytes=large_results.MAX_INLINE_BYTES)
def _show_document(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    target = required_str(params, "documentId")
    body = browse.show_document(
        engine.reader, target, include_superseded=bool(params.get("includeSuperseded", False))
    )
    return large_results.send(body, emit)


@method("context")
def _context(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """The chronological neighbours of one document (``gather``'s context, for one anchor)."""
    target = required_str(params, "documentId")
    around = params.get("neighbors", 1)
    if not isinstance(around, int) or isinstance(around, bool):
        raise InvalidInput("neighbors must be an integer")
    return browse.document_context(engine.reader, target, around=around).to_json()


@method("gather", output_bytes=4 * MiB)
def _gather(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    from cwcore import precheck
    from cwcore.recall.gather import gather

    request, around = precheck.gather(params)
    return gather(engine.search_context(), request, around).to_json()

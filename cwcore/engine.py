"""The engine: one open store, its background workers, and the dispatch of requests.

:class:`Engine` is what the daemon serves (it satisfies :class:`cwcore.daemon.service.Service`)
and what an embedded :class:`cwcore.api.Archive` opens. Every request is
``(method, params) -> JSON-able dict``, answered by a handler looked up in the method table the
engine was opened with (:mod:`cwcore.methods` builds the full one); the engine itself holds no
handlers: it owns the lifecycle, the foreground tracking that background work yields to, the
workers and the semantic tier's retry back-off.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import cwcore
from cwcore import clock, config, heap, private
from cwcore.errors import InvalidInput, ModelUnavailable, excerpt
from cwcore.hints import frozen
from cwcore.index import bm25
from cwcore.index.worker import IndexWorker
from cwcore.markdown.limits import Limits
from cwcore.retrieve.locator import Signer, expire_leases, leased_documents, load_key
from cwcore.retrieve.search import SearchContext
from cwcore.semantic import graph as vgraph
from cwcore.semantic import runtime as semantic_runtime
from cwcore.semantic.runtime import for_engine
from cwcore.store.admission import Admission
from cwcore.store.reader import Reader
from cwcore.store.retention import Retention
from cwcore.store.rocks import FAMILIES, Store
from cwcore.workers import Backoff, Periodic

Emit = Callable[[dict[str, Any]], None]
#: A method handler: ``(engine, params, emit, cancel) -> result``. ``emit`` streams intermediate
#: events; ``cancel`` is set when the client cancels or the daemon drains.
Handler = Callable[["Engine", dict[str, Any], Emit, threading.Event], dict[str, Any]]

log = logging.getLogger("cwcore.engine")

CAPABILITIES = frozenset({"archive/1", "import/1", "browse/1"})
MiB = 1024 * 1024
#: Background embedding starts only after this long without a service call (seconds).
FOREGROUND_QUIET_S = 0.2
#: The idle worker loads the embedding model only after this long without a service call
#: (seconds). Loading imports fastembed and builds the ONNX session: 1–2 s of mostly
#: GIL-holding work that stalled requests arriving meanwhile by up to ~0.1 s (more under load),
#: so it waits for a lull longer than the gaps between a session's hook calls.
WARM_QUIET_S = 2.0
#: The daemon hands freed heap back to the system (:func:`cwcore.heap.trim`) once no service
#: call ran and no index page was published for this long (seconds), once per quiet period: an
#: import's or an indexing run's peak does not stay resident (docs/performance.md, "Daemon
#: memory"). Checked by the 60 s compaction sample, so it happens 30–90 s into the quiet.
HEAP_TRIM_QUIET_S = 30.0
#: A background embedding batch waits at most this long (seconds) before each inference group
#: while a service call runs, so a search or a preflight does not share the CPU with a new
#: group; bounded, so a steady stream of calls slows embedding without stopping it.
BATCH_YIELD_S = 1.0
#: The quiet-time segment merge (seconds of CPU at 190k messages, searches meanwhile up to half
#: again slower) starts only in a lull this long between service calls, as the model's warm-up
#: does, once indexing has settled (``IDLE_MERGE_S``).
MERGE_QUIET_S = 2.0
#: Pending background work holds an idle daemon past its grace only while it moves: no window
#: passed for this long (a failing model, a stuck step) and the daemon may exit as usual.
BACKGROUND_STALL_S = 600.0
#: A background index page waits at most this long (seconds) while a service call runs, so an
#: import admits without sharing the interpreter with publication (with a 1 s bound the worker
#: still took about half of it). It waits for no call to be running, not for a quiet period, so
#: a stream of short calls (searches, status polls) leaves it gaps; only one long call holds it,
#: and then at most this long per page.
INDEX_YIELD_S = 30.0
#: The semantic worker looks whether the vectors' nearest-neighbour graph is due at most this
#: often (seconds; a look is two small reads), and after a failed build waits this much longer.
GRAPH_CHECK_S = 30.0
GRAPH_RETRY_S = 600.0
#: The output bound of a method the table does not name, bytes (the call then fails anyway).
DEFAULT_OUTPUT_BYTES = 1 * MiB


class MethodLookup(Protocol):
    """What the engine needs of its method table (:class:`cwcore.methods.registry.MethodTable`
    is the real one; the table sits above the engine, so the engine names only this shape)."""

    def handler(self, name: str) -> Handler | None:
        """The handler of ``name``, or None for a method the table does not hold."""
        ...

    def output_bytes(self, name: str) -> int:
        """The output bound the daemon reserves for a call of ``name``, bytes."""
        ...

    def passive(self, name: str) -> bool:
        """Whether a call of ``name`` leaves :meth:`Engine.quiet_for` running (a cheap status
        read a UI polls, which must not hold off idle-time work)."""
        ...


def _build_fingerprint() -> str:
    root = Path(cwcore.__file__).parent
    h = hashlib.blake2b(digest_size=8)
    for path in sorted(root.rglob("*.py")):
        h.update(path.read_bytes())
    return f"{cwcore.__version__}+{h.hexdigest()}"


def store_path(home: Path) -> Path:
    return home / "store"


class Engine:
    """One open store and its services. Not thread-safe for writes without ``store.lock``.

    ``methods`` is the table :meth:`call` dispatches on; whoever opens the engine passes it (the
    daemon's service factory and the embedded open pass :data:`cwcore.methods.TABLE`)."""

    capabilities = CAPABILITIES

    def __init__(self, home: Path, methods: MethodLookup) -> None:
        self.home = home
        self.methods = methods
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
        try:
            # Sessions an earlier cw merged across agents are split before anything is served.
            if not (self.store.meta_get("identity-split") or {}).get("done"):
                from cwcore.importers import identity_upgrade

                self.notices += identity_upgrade.run(self.store, self.admission, self.settings)
        except BaseException:
            self.store.close()
            self._release_private()
            raise
        self.reader = Reader(self.store)
        self.retention = Retention(self.store)
        self.indexer = IndexWorker(self.store, self.settings)
        self.background = False  # True once the daemon started the workers
        self._search_ctx: SearchContext | None = None
        self.build = _build_fingerprint()
        #: The index and semantic workers exist from the open (a step may wake or pause its
        #: own worker); :meth:`start_workers` starts them in the daemon only.
        self.index_worker = Periodic("index", self.index_step, 1.0)
        self.semantic_worker = Periodic("semantic", self.semantic_step, 5.0, background=True)
        self._workers: list[Periodic] = []  # the started ones, stopped by close()
        self.compaction: dict[str, Any] = {}
        self._foreground = 0  # service calls running now
        # time.monotonic() when the last one ended. The open counts as one: a daemon is started
        # by a client whose first request follows at once, so background work must not treat
        # the start as a long quiet period.
        self._foreground_end = time.monotonic()
        # A condition, so a background batch can wait for the running calls to end.
        self._foreground_lock = threading.Condition()
        self._index_busy_at = time.monotonic()  # last indexing work (or merge) of the worker
        self._heap_trimmed_at = 0.0  # time.monotonic() of the last heap trim
        #: A missing or broken model does not heal in 5 s: embedding retries at doubling
        #: intervals (5 s up to 10 minutes) instead of failing every tick.
        self.semantic_backoff = Backoff(first_s=5.0, max_s=600.0)
        self.semantic_error: str | None = None  # the last embedding failure, for status
        self._graph_check_at = 0.0  # time.monotonic() of the next look at the graph
        self._graph_build: vgraph.Build | None = None  # the vectors' graph, being built
        # (outbox depth, windows pending) and since when: the stall test of background_pending
        self._background_seen: tuple[tuple[int, int], float] | None = None

    # -- Service protocol ---------------------------------------------------------------------

    def call(
        self, name: str, params: dict[str, Any], emit: Emit, cancel: threading.Event
    ) -> dict[str, Any]:
        handler = self.methods.handler(name)
        if handler is None:
            raise InvalidInput(f"unknown method {excerpt(name)}")
        if not isinstance(params, dict):
            raise InvalidInput("params must be an object")
        if self.methods.passive(name):
            return handler(self, params, emit, cancel)
        with self._foreground_lock:
            self._foreground += 1
        try:
            return handler(self, params, emit, cancel)
        finally:
            with self._foreground_lock:
                self._foreground -= 1
                self._foreground_end = time.monotonic()
                if not self._foreground:
                    self._foreground_lock.notify_all()

    def quiet_for(self) -> float:
        """Seconds since the last service call ended (or the engine opened); 0 while one runs."""
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

    def wait_for_calls(self, limit_s: float = BATCH_YIELD_S) -> bool:
        """Block a background worker while a service call runs, at most ``limit_s`` seconds;
        returns whether none runs now. No quiet period: between inference groups only."""
        with self._foreground_lock:
            return self._foreground_lock.wait_for(lambda: not self._foreground, limit_s)

    def max_output_bytes(self, name: str, params: dict[str, Any]) -> int:
        return self.methods.output_bytes(name)

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

    def background_pending(self) -> str | None:
        """The background work still to do (the daemon stays past its idle grace while this
        names some): indexing while the outbox holds entries, embedding while published windows
        wait for a vector (no failure backing off). None otherwise, always when the workers do
        not run, and when the work has not moved for :data:`BACKGROUND_STALL_S` (a fault that
        does not heal must not keep an unused daemon forever). A few point reads."""
        if not self.background:
            return None
        depth = self.indexer.depth()
        pending = 0
        if not depth and self.semantic_worker in self._workers and self.semantic_error is None:
            pending = int(for_engine(self).status().get("pending", 0))
        now = time.monotonic()
        if self._background_seen is None or (depth, pending) != self._background_seen[0]:
            self._background_seen = ((depth, pending), now)
        if now - self._background_seen[1] > BACKGROUND_STALL_S:
            return None
        if depth:
            return f"indexing {depth:,} outbox entries"
        return f"embedding {pending:,} windows" if pending else None

    def start_workers(self) -> None:
        """Background workers: indexing, retention (expiry by archive kind), compaction monitor."""
        self.background = True
        self._workers = [
            self.index_worker,
            Periodic("retention", self._maintenance_step, 600.0),
            Periodic("compaction", self._sample_compaction, 60.0),
        ]
        if self.settings.semantic_retrieval:
            self._workers.append(self.semantic_worker)
        for worker in self._workers:
            worker.start()

    def index_step(self) -> int:
        """One step of the index worker: a page of indexing; more pending work wakes the worker
        again at once, an idle worker merges BM25 segments; retryable failures back off (50 ms
        doubling to 5 s). The backoff is a wakeable wait: an admission (which wakes the worker)
        retries at once, and shutdown cancels it. Returns the outbox entries published.

        Each page first yields to a running service call, at most :data:`INDEX_YIELD_S`: an
        import then admits at full speed, and a search does not share the interpreter with a
        page (`index.run`, the call that waits for publication, publishes in its own thread)."""
        if self.background:  # embedded, a step may run inside a call: it never waits
            self.wait_for_calls(INDEX_YIELD_S)
        done = self.indexer.step()
        if self.indexer.backoff:
            self.index_worker.pause(self.indexer.backoff)
        if done or self.indexer.backoff:
            self._index_busy_at = time.monotonic()
            self.index_worker.wake()
        elif self.indexer.depth() == 0:
            # The quiet-time merge waits for indexing to settle and for a lull between requests
            # (MERGE_QUIET_S), not for them to stop: a client searching every few seconds would
            # otherwise keep a bulk import's segments for good. Every few milliseconds of
            # merging it waits while a request runs.
            settled = time.monotonic() - self._index_busy_at
            idle = settled if self.quiet_for() >= MERGE_QUIET_S else 0.0
            pause = self.wait_for_calls if self.background else None
            if self.indexer.merge(idle, pause):
                self._index_busy_at = time.monotonic()  # a merge is work too: settle again
        return done

    def _maintenance_step(self) -> dict[str, Any]:
        """Bounded maintenance: retention by archive kind, expired search leases, hint
        exposures past their cooldown and abandoned sessions' hint records."""
        leases = expire_leases(self.store)
        report = self.retention.expire(
            self.settings, protected=leased_documents(self.store)
        ).to_json()
        report["leases"] = leases
        report["hints"] = frozen.maintain(self.store, self.settings).to_json()
        return report

    def semantic_step(self) -> int:
        """One step of the semantic worker: embed a batch of published windows after lexical
        publication (it never delays it); more pending work wakes the worker again. Within the
        back-off of a failed attempt nothing is tried. Returns the windows embedded."""
        if self.indexer.depth():
            return 0  # lexical work first: search must never wait for embeddings
        if self.semantic_backoff.waiting(time.monotonic()):
            return 0
        self.wait_for_quiet()
        semantic = for_engine(self)
        try:
            # The daemon's batches pause between inference groups while requests run. Only the
            # worker's: a ``semantic.embed_pending`` call embeds inside its own service call and
            # must not wait for itself.
            done = semantic.embed_pending(
                between_groups=self.wait_for_calls if self.background else None
            )
            if not done and self.quiet_for() >= WARM_QUIET_S:
                # Nothing to embed and the daemon is idle: have the model ready for the first
                # search. Not yet idle long enough: the next tick tries again. A batch session
                # idle for minutes is freed (its memory back; the next batch rebuilds it).
                semantic.warm()
                semantic.rest()
        except ModelUnavailable as exc:
            # Search degrades to the lexical tiers meanwhile.
            delay = self.semantic_backoff.failed(time.monotonic())
            self.semantic_error = f"{exc.details.get('category', exc.code)}: {exc}"
            log.warning("semantic embedding unavailable (%s); retrying in %.0f s", exc, delay)
            return 0
        self.semantic_backoff.succeeded()
        self.semantic_error = None
        if self.background:
            self._graph_step(semantic)
        if done:
            self.semantic_worker.wake()
        return done

    def _graph_step(self, semantic: semantic_runtime.Semantic) -> None:
        """Look after the vectors' nearest-neighbour graph: start a build when one is due (a
        child process, niced, one thread; embedding goes on meanwhile), and note how a running
        one ended. A failure is logged and retried after :data:`GRAPH_RETRY_S`: search scans
        every row meanwhile."""
        running = self._graph_build
        if running is not None:
            if running.running:
                running.done()  # ends it past its deadline; the next step reports that
                return
            self._graph_build = None
            try:
                running.done()
            except RuntimeError as exc:
                self._graph_failed(exc)
            finally:
                running.kill()  # closes its pipe
            return
        now = time.monotonic()
        if now < self._graph_check_at:
            return
        self._graph_check_at = now + GRAPH_CHECK_S
        try:
            self._graph_build = semantic.start_graph()
        except (RuntimeError, OSError) as exc:
            self._graph_failed(exc)

    def _graph_failed(self, exc: Exception) -> None:
        self._graph_check_at = time.monotonic() + GRAPH_RETRY_S
        log.warning("vector graph build failed (%s); retrying in %.0f s", exc, GRAPH_RETRY_S)

    def after_admission(self, imported: int) -> None:
        """Make new documents searchable: the daemon's worker is woken (a single document of at
        most 64 KiB, with little else pending, is published in the foreground first: see
        :meth:`IndexWorker.foreground`); embedded, the outbox is drained before returning."""
        if not imported:
            return
        if not self.background:
            self.indexer.drain()
            return
        if imported == 1:
            try:
                self.indexer.foreground()
            except Exception as exc:  # a publication fault never turns an admission into an error
                self.indexer.faults.append({"at": time.time(), "error": str(exc)})
        self.index_worker.wake()

    def search_context(self) -> SearchContext:
        """What explicit search reads: store, postings, the locator signer, lease length."""
        if self._search_ctx is None:
            self._search_ctx = SearchContext(
                store=self.store,
                reader=self.reader,
                postings=self.indexer.bm25,
                signer=Signer(load_key(self.home)),
                lease_minutes=self.settings.lease_minutes,
                rerank_candidates=self.settings.reranker_candidates,
                limits=Limits.of(self.settings),
            )
            if self.settings.semantic_retrieval or self.settings.reranker_enabled:
                self._search_ctx.semantic = for_engine(self)
        self._search_ctx.postings = self.indexer.bm25  # a rebuild replaces it
        return self._search_ctx

    def _sample_compaction(self) -> dict[str, Any]:
        """Record RocksDB's own view of pending compaction; RocksDB compacts in the background.
        A log past ``SETTLE_WAL_BYTES`` is flushed into tables (``Store.settle_wal``), so a
        daemon that stopped writing keeps little log on disk and a crash replays little."""
        self.compaction = {
            "pending_compaction_bytes": sum(
                self.store.property_int("rocksdb.estimate-pending-compaction-bytes", f)
                for f in FAMILIES
            ),
            "running_compactions": self.store.property_int("rocksdb.num-running-compactions"),
            "wal_flushed": self.store.settle_wal(),
            "wal_bytes": self.store.wal_bytes(),
            "heap_trimmed": self.trim_heap(),
            "sampled_at": time.time(),
        }
        return self.compaction

    def trim_heap(self, quiet_s: float = HEAP_TRIM_QUIET_S) -> bool:
        """Return freed heap to the system when no service call ran and no index page was
        published for ``quiet_s`` seconds and some did since the last trim (an idle daemon is
        not trimmed again and again). Returns whether it trimmed."""
        now = time.monotonic()
        busy = max(self._foreground_end, self._index_busy_at)
        if busy <= self._heap_trimmed_at or now - self._index_busy_at < quiet_s:
            return False
        if self.quiet_for() < quiet_s:
            return False
        self._heap_trimmed_at = now
        bm25.release_buffers()  # the accumulator arrays kept for the next search
        return heap.trim()

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
        # The index and semantic workers may run without start_workers (a caller started one).
        for worker in (*self._workers, self.index_worker, self.semantic_worker):
            worker.stop()
        if self._graph_build is not None:
            self._graph_build.kill()  # derived: the next daemon builds it again
            self._graph_build = None
        semantic_runtime.settle()
        try:
            self.store.close()
        finally:
            self._release_private()

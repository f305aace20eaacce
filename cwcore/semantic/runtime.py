"""The semantic tier of one engine: its embedder, vector index and reranker, loaded lazily.

:func:`for_engine` attaches one :class:`Semantic` to an engine (the daemon's or an embedded one).
Search calls :meth:`Semantic.query` and :meth:`Semantic.rerank`; the daemon's worker calls
:meth:`Semantic.embed_pending`. Nothing is imported or loaded until first needed, so an archive
that never uses the semantic tier never pays for fastembed.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cwcore.config import Settings
from cwcore.errors import ModelUnavailable
from cwcore.semantic import errors, models
from cwcore.semantic import graph as vgraph
from cwcore.semantic import index as handler
from cwcore.semantic.embedder import QUERY_TIMEOUT_S, Embedder, wait
from cwcore.semantic.rerank import Reranker
from cwcore.semantic.search import SemanticIndex, calibrate
from cwcore.services import Services
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store


@dataclass
class SemanticHits:
    """A semantic query's windows, best first: wids, raw cosines and calibrated scores; the
    milliseconds its query embedding and its scan (with the re-scoring) took."""

    wids: np.ndarray
    cosines: np.ndarray
    scores: np.ndarray
    embed_ms: float = 0.0
    scan_ms: float = 0.0
    #: Found ahead of the stage (:class:`AheadQuery`): the two times above were spent beside
    #: the lexical pass, not after it.
    ahead: bool = False

    def __len__(self) -> int:
        return len(self.wids)


def inference_threads() -> int:
    """ONNX Runtime threads of the query session (a search's or a gather's question): all
    cores but one, so a query embedding never takes every core from the request threads; it
    is short (a few ms) and fast on one."""
    return max(1, (os.cpu_count() or 2) - 1)


def batch_threads() -> int:
    """ONNX Runtime threads for background embedding batches: every core. The batch session is
    built on the batch thread, which runs at nice 19, and its intra-op threads inherit that, so
    a request's thread still gets its core at once; the daemon's worker also waits while a
    service call runs before each inference group. On 2 cores this took the daemon's embedding
    rate 1.8× higher (``python -m bench realtext``, docs/performance.md)."""
    return max(1, os.cpu_count() or 2)


_scanner: list[ThreadPoolExecutor] = []
_scanner_lock = threading.Lock()


def _scan_thread() -> ThreadPoolExecutor:
    """The thread that finds a search's nearest windows ahead of its semantic stage (one for the
    process: the scan of every vector is bound by memory bandwidth, so two at once gain
    nothing)."""
    with _scanner_lock:
        if not _scanner:
            _scanner.append(ThreadPoolExecutor(1, thread_name_prefix="cw-semantic-ahead"))
        return _scanner[0]


def settle() -> None:
    """Return once no scan begun ahead is running or queued (the scan thread runs tasks in
    order, so an empty task submitted now finishes after them). An engine calls this before it
    closes its store: a search that dropped its scan has returned, but the scan may still be
    reading the store."""
    with _scanner_lock:
        pool = _scanner[0] if _scanner else None
    if pool is not None:
        with contextlib.suppress(FutureTimeout):  # a stuck embedding: close anyway
            pool.submit(lambda: None).result(timeout=QUERY_TIMEOUT_S * 2)


def _same_scope(a: np.ndarray | None, b: np.ndarray | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a is b or bool(np.array_equal(a, b))


class AheadQuery:
    """A search's semantic work started before its lexical pass (:meth:`Semantic.start_query`):
    the query's vector (on the query thread) and, on the scan thread, its ``k`` nearest windows
    in ``only`` — what the first round's stage asks for. :meth:`hits` waits for them, or for the
    vector alone when a round asks for something else; :meth:`drop` (the stage will not run)
    skips the scan if it has not begun. Errors surface from :meth:`hits` as :meth:`Semantic.query`
    raises them."""

    def __init__(
        self, semantic: Semantic, vector: Future[np.ndarray], k: int, only: np.ndarray | None
    ) -> None:
        self.started = time.perf_counter()
        self.vector = vector
        self.k = k
        self.only = only
        self._semantic = semantic
        self._dropped = threading.Event()
        self._found = _scan_thread().submit(self._scan)

    def _scan(self) -> SemanticHits | None:
        vector = wait(self.vector)
        if self._dropped.is_set():
            return None
        return self._semantic.nearest(vector, self.k, self.only, self.started, ahead=True)

    def hits(self, k: int, only: np.ndarray | None) -> SemanticHits:
        if k == self.k and _same_scope(only, self.only):
            found: SemanticHits | None = wait(self._found)
            if found is not None:
                return found
        waited = time.perf_counter()
        return self._semantic.nearest(wait(self.vector), k, only, waited, ahead=True)

    def drop(self) -> None:
        self._dropped.set()


class Semantic:
    def __init__(self, home: Path, store: Store, reader: Reader, settings: Settings) -> None:
        self.home = home
        self.store = store
        self.reader = reader
        self.settings = settings
        self._lock = threading.Lock()
        self._embedder: Embedder | None = None
        self._index: SemanticIndex | None = None
        self._reranker: Reranker | None = None
        self.mode = handler.DEFAULT_MODE

    # -- parts ----------------------------------------------------------------------------------

    def embedder(self) -> Embedder:
        """The embedder (assembling the model folder from the packages on first use)."""
        with self._lock:
            if self._embedder is None:
                try:
                    self._embedder = Embedder.for_home(
                        self.home, threads=inference_threads(), batch_threads=batch_threads()
                    )
                except ModelUnavailable:
                    raise
                except Exception as exc:
                    raise errors.unavailable(
                        errors.MODEL_MISSING, f"cannot install the embedding model: {exc}"
                    ) from None
            return self._embedder

    def index(self) -> SemanticIndex:
        with self._lock:
            if self._index is None:
                self._index = SemanticIndex(self.store)
        self._index.refresh()
        return self._index

    def reranker(self) -> Reranker:
        with self._lock:
            if self._reranker is None:
                self._reranker = Reranker.load(
                    models.reranker_dir(self.home, self.settings.reranker_model_cache_path),
                    name=self.settings.reranker_model or None,
                    revision=self.settings.reranker_model_revision or None,
                )
            return self._reranker

    def reset(self) -> None:
        """Forget loaded models (after an install) so the next use loads the new files."""
        with self._lock:
            for part in (self._embedder, self._reranker):
                if part is not None:
                    part.close()
            self._embedder = None
            self._reranker = None

    # -- what search calls ----------------------------------------------------------------------

    def has_vectors(self) -> bool:
        """Whether a search's semantic stage could run at all: semanticRetrieval is on and
        some window has a vector (the model need not be loaded; one stored read)."""
        if not self.settings.semantic_retrieval:
            return False
        index = self._index
        if index is not None and index.rows:
            return True
        return handler.status(self.store).rows > 0

    def start_query(self, text: str, k: int, only_wids: np.ndarray | None) -> AheadQuery | None:
        """Start a search's semantic work now, before its lexical pass, so both run at once on
        two cores: the query's embedding on the query thread, then the ``k`` nearest windows
        (``only_wids`` as in :meth:`query`) on the scan thread. :meth:`query` with ``ahead``
        waits for them. None, and nothing started, when semanticRetrieval is off, nothing is
        embedded yet, or the model is not loaded (a load is paid only by a search whose
        semantic stage runs)."""
        if not self.settings.semantic_retrieval:
            return None
        embedder = self._embedder
        if embedder is None or self._index is None or self._index.rows == 0:
            return None
        vector = embedder.start_query(text)
        return None if vector is None else AheadQuery(self, vector, k, only_wids)

    def query(
        self,
        text: str,
        k: int,
        only_wids: np.ndarray | None = None,
        *,
        strict: bool = False,
        ahead: AheadQuery | None = None,
    ) -> SemanticHits:
        """The ``k`` nearest windows to ``text``. Raises a categorized ModelUnavailable (the
        caller falls back to lexical unless strict); ``disabled`` when semanticRetrieval is
        off. ``ahead``: this query's work started earlier (:meth:`start_query`), awaited
        instead of done again."""
        if not self.settings.semantic_retrieval:
            raise errors.unavailable(errors.DISABLED, "semanticRetrieval is off")
        if ahead is not None:
            return ahead.hits(k, only_wids)
        started = time.perf_counter()
        return self.nearest(self.embedder().embed_query(text), k, only_wids, started)

    def nearest(
        self,
        vector: np.ndarray,
        k: int,
        only_wids: np.ndarray | None,
        started: float,
        *,
        ahead: bool = False,
    ) -> SemanticHits:
        """The ``k`` nearest windows to a query's ``vector``, whose embedding began at
        ``started`` (a ``perf_counter`` reading: the hits' ``embed_ms`` runs from it);
        ``ahead``: found for an :class:`AheadQuery`."""
        embedded = time.perf_counter()
        wids, cosines = self.index().search(vector, k, only_wids)
        return SemanticHits(
            wids,
            cosines,
            calibrate(cosines).astype(np.float32),
            embed_ms=(embedded - started) * 1000,
            scan_ms=(time.perf_counter() - embedded) * 1000,
            ahead=ahead,
        )

    def similarity(self, query: str, texts: list[str]) -> np.ndarray:
        """Calibrated semantic scores in (0, 1) of ``texts`` against ``query`` (the same
        calibration as window hits), embedded on the query thread. Raises a categorized
        ModelUnavailable; ``disabled`` when semanticRetrieval is off."""
        if not self.settings.semantic_retrieval:
            raise errors.unavailable(errors.DISABLED, "semanticRetrieval is off")
        if not texts:
            return np.zeros(0, dtype=np.float64)
        vectors = self.embedder().embed([query, *texts], batch=False, queries=1)
        return np.asarray(calibrate(vectors[1:] @ vectors[0]), dtype=np.float64)

    def rerank(
        self,
        query: str,
        texts: list[str],
        spans: list[tuple[int, int]] | None = None,
        *,
        strict: bool = False,
    ) -> list[float] | None:
        """Cross-encoder scores, or None (not installed, disabled, failed) — silent degrade."""
        if not self.settings.reranker_enabled:
            if strict:
                raise errors.unavailable(errors.DISABLED, "rerankerEnabled is off")
            return None
        return self.reranker().rerank(query, texts, spans=spans, strict=strict)

    def can_rerank(self) -> bool:
        """Whether :meth:`rerank` would run the model: enabled and loaded. Cheap after the first
        call (the load outcome is kept), so search checks it before preparing candidates."""
        return self.settings.reranker_enabled and self.reranker().available

    # -- what the worker calls -----------------------------------------------------------------

    def embed_pending(
        self,
        max_windows: int = handler.STEP_WINDOWS,
        *,
        between_groups: Callable[[], object] | None = None,
    ) -> int:
        """One handler step; ``between_groups`` is called before each inference group (the
        daemon's worker waits there while a request runs)."""
        if not self.settings.semantic_retrieval:
            return 0
        return handler.embed_pending(
            self.store,
            self.reader,
            max_windows,
            embedder=self.embedder(),
            mode=self.mode,
            between_groups=between_groups,
        )

    def start_graph(self) -> vgraph.Build | None:
        """Start building the nearest-neighbour graph of the window vectors when one is due
        (:func:`cwcore.semantic.graph.wanted`: a large matrix with no graph, or a quarter more
        rows than the graph covers), in a child process; returns the running build, or None
        when none is due. Raises OSError when the child cannot be started."""
        if not self.settings.semantic_retrieval:
            return None
        index = self.index()
        if not index.graph_due():
            return None
        return vgraph.start(index.directory, min_rows=vgraph.GRAPH_MIN_ROWS)

    def maintain_graph(self, stopped: Callable[[], bool] = lambda: False) -> bool:
        """:meth:`start_graph`, then wait for the build (``stopped`` cuts the wait short and
        kills it). Returns whether a graph was built; raises RuntimeError (the child's last
        line) or OSError when the build failed (search keeps the exact scan)."""
        running = self.start_graph()
        return False if running is None else vgraph.wait(running, stopped)

    def warm(self) -> bool:
        """Load the embedding model now if it is not loaded (the daemon's worker calls this
        when it has nothing to embed, so the first explicit search does not pay 1–3 s for the
        load). Returns whether it loaded anything; raises a categorized ModelUnavailable."""
        if not self.settings.semantic_retrieval:
            return False
        embedder = self.embedder()
        if embedder.loaded or embedder.released_idle:
            return False  # released after idling: the next query loads it, not the idle worker
        embedder.load()
        return True

    def rest(self) -> bool:
        """Nothing is left to embed: free every session if no inference ran for
        :data:`~cwcore.semantic.embedder.MODEL_IDLE_RELEASE_S`, else the batch session if it
        has been idle for :data:`~cwcore.semantic.embedder.BATCH_IDLE_RELEASE_S` (the daemon's
        worker calls this with :meth:`warm`). Freeing every session also drops the matrix
        file's pages from the daemon's resident set (:meth:`SemanticIndex.drop_pages`): after
        that long without a query they are the largest part of it at a million windows, and the
        next scan maps them back from the page cache. Returns whether it freed a session."""
        if self._embedder is None:
            return False
        if self._embedder.release_idle():
            if self._index is not None:
                self._index.drop_pages()
            return True
        return self._embedder.release_batch()

    def status(self) -> dict[str, Any]:
        body = handler.status(self.store).to_json()
        body["enabled"] = self.settings.semantic_retrieval
        body["loaded"] = bool(self._embedder is not None and self._embedder.loaded)
        body["indexRows"] = self._index.rows if self._index is not None else None
        body["graphRows"] = self._index.graph_rows() if self._index is not None else None
        return body


_attach_lock = threading.Lock()
#: Each open engine's semantic tier, dropped with the engine (keyed by the engine itself, which
#: hashes by identity).
_TIERS: weakref.WeakKeyDictionary[Services, Semantic] = weakref.WeakKeyDictionary()


def for_engine(engine: Services) -> Semantic:
    """The engine's semantic tier, created on first use."""
    with _attach_lock:
        semantic = _TIERS.get(engine)
        if semantic is None:
            semantic = _TIERS[engine] = Semantic(
                engine.home, engine.store, engine.reader, engine.settings
            )
        return semantic

"""The MiniLM embedder: fastembed over a local folder, offline, off the caller's thread.

``fastembed`` is imported on first use (about 0.4–0.8 s), with ``HF_HUB_OFFLINE=1`` set first so
no code path can reach a model hub; the model is registered with
``TextEmbedding.add_custom_model`` and loaded with ``specific_model_path`` (the folder
:func:`cwcore.semantic.models.ensure_minilm` assembles from installed packages). Sequences are
capped at 256 tokens; texts are clipped to :data:`MAX_CHARS` characters before tokenizing (256
word pieces never need more on prose, and it bounds tokenizer work on huge tool outputs).

Vectors are 384-d float32, L2-normalized (mean pooling). Identical document texts are embedded
once: their vectors are cached in memory by content digest (:meth:`Embedder.digest`, which covers
the model's identity), and an optional persistent :class:`VectorCache` is consulted first. Query
vectors are not retained beyond the request that encoded them: a repeated question is encoded
again (one query embedding, about 4 ms), so no cached vector can outlive a model or version
change, and no cache holds what people asked. Inference runs on
one worker thread; a call that does not finish within its timeout raises the ``timeout``
category (the worker finishes the batch in the background and later calls queue behind it).
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from cwcore import heap
from cwcore.semantic import errors, models
from cwcore.store.keys import digest16
from cwcore.workers import lower_thread_priority

DIM = 384
MAX_CHARS = 2048
BATCH = 32  # texts per inference call at most...
#: ...and about two window-length texts. Two 256-token texts a call run 1.10-1.15x faster than
#: four (the activations stay in cache: docs/semantic.md) and peak lower (647 against 925 MB
#: while embedding 600 windows); one a call is no faster.
BATCH_CHARS = 4_096
QUERY_TIMEOUT_S = 10.0
LOAD_TIMEOUT_S = 120.0  # first use: import fastembed + ONNX session (1–2 s idle, more when busy)
BATCH_TIMEOUT_S = 300.0
MEMORY_CACHE = 20_000  # document vectors only; queries are never cached
#: A separate batch session unused this long is dropped (:meth:`Embedder.release_batch`): its
#: ONNX session and arena hold about 400 MB after a long run; rebuilding it costs 0.25–0.3 s of
#: the batch thread (and stalls other Python threads by up to ~20 ms), so a live session's
#: trickle of windows keeps it.
BATCH_IDLE_RELEASE_S = 600.0
#: Texts a separate batch session runs before the batch thread builds it afresh. ONNX Runtime's
#: CPU arena keeps every block it ever took, and batches of ever new shapes (texts sorted by
#: length, up to 32 of them) fragment it: a daemon embedding a 190k-message archive went from
#: 570 MB after its first windows to 1.45 GB after 25,000 (docs/performance.md). A new session
#: starts a new arena; building one costs 0.25–0.3 s of the batch thread, about 1 % of the
#: time 1,000 windows take. (Without the arena memory stays flat but inference is 16–34 %
#: slower: every large buffer is a fresh mapping.)
BATCH_REBUILD_TEXTS = 1_000
#: Every session (query and batch) and the in-memory document vectors are dropped when no
#: inference of either kind has run for this long (:meth:`Embedder.release_idle`): an idle
#: daemon holds no model (the query session is about 100–150 MB resident with its ONNX arena).
#: The next query loads it again, paying the load (1–3 s) once.
MODEL_IDLE_RELEASE_S = 900.0
FASTEMBED_NAME = "cw/all-MiniLM-L6-v2-onnx-int8"

_register_lock = threading.Lock()
_registered: set[str] = set()


class VectorCache(Protocol):
    """A persistent content-digest -> vector cache (the eval's, or the store's content table)."""

    def get_many(self, digests: Sequence[bytes]) -> list[np.ndarray | None]: ...

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None: ...


def clip(text: str) -> str:
    return text[:MAX_CHARS]


def _batches(order: list[int], texts: Sequence[str]) -> list[list[int]]:
    """Consecutive groups of the length-sorted texts under :data:`BATCH` and
    :data:`BATCH_CHARS` (one text may exceed the latter alone)."""
    groups: list[list[int]] = []
    current: list[int] = []
    size = 0
    for i in order:
        n = len(texts[i])
        if current and (len(current) >= BATCH or size + n > BATCH_CHARS):
            groups.append(current)
            current, size = [], 0
        current.append(i)
        size += n
    if current:
        groups.append(current)
    return groups


def normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=-1, keepdims=True)
    return vectors / np.maximum(norms, 1e-12)


def _offline_env() -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("DO_NOT_TRACK", "1")


def wait(future: Future[Any], timeout: float = QUERY_TIMEOUT_S) -> Any:
    """The result of work on an embedding thread: its exception if it failed, the categorized
    ``timeout`` ModelUnavailable after ``timeout`` seconds."""
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        raise errors.unavailable(
            errors.TIMEOUT, f"the embedding model did not answer within {timeout:.0f} s"
        ) from None


def _register(name: str) -> None:
    from fastembed import TextEmbedding
    from fastembed.common.model_description import ModelSource, PoolingType

    with _register_lock:
        if name in _registered:
            return
        known = {m["model"].lower() for m in TextEmbedding.list_supported_models()}
        if name.lower() not in known:
            TextEmbedding.add_custom_model(
                name,
                pooling=PoolingType.MEAN,
                normalization=True,
                sources=ModelSource(hf=name),  # never fetched: specific_model_path wins
                dim=DIM,
                model_file=models.MODEL_FILE,
                description="all-MiniLM-L6-v2, int8 ONNX, installed by cw",
                license="apache-2.0",
            )
        _registered.add(name)


class ChainCache:
    """Several caches: read in order, written to all."""

    def __init__(self, *caches: VectorCache | None) -> None:
        self.caches = [c for c in caches if c is not None]

    def get_many(self, digests: Sequence[bytes]) -> list[np.ndarray | None]:
        out: list[np.ndarray | None] = [None] * len(digests)
        for cache in self.caches:
            todo = [i for i, v in enumerate(out) if v is None]
            if not todo:
                break
            for i, vec in zip(todo, cache.get_many([digests[i] for i in todo]), strict=True):
                out[i] = vec
        return out

    def put_many(self, items: Sequence[tuple[bytes, np.ndarray]]) -> None:
        for cache in self.caches:
            cache.put_many(items)


class Embedder:
    """One MiniLM model. Thread-safe; every inference runs on a worker thread. Queries run on a
    session with ``threads``; batches on one with ``batch_threads`` (the same session when the
    two are equal), each loaded on first use."""

    def __init__(
        self,
        folder: Path,
        manifest: dict[str, Any] | None = None,
        *,
        threads: int | None = None,
        batch_threads: int | None = None,
        cache: VectorCache | None = None,
        background: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``clock`` (seconds, monotonic) times the idle releases; tests inject one."""
        self.folder = folder
        self._clock = clock
        self.manifest = manifest or models.read_manifest(folder) or {}
        self.threads = threads
        self.batch_threads = batch_threads
        self.cache = cache
        # The graph the vectors match bit for bit (the file itself before manifests said so).
        graph = self.manifest.get("vectorsSha256") or self.manifest.get("sha256", "unknown")
        sha = str(graph)[:16]
        #: What a vector depends on: weights, pooling, sequence cap and text clipping.
        self.model_id = f"minilm-int8:{sha}:t{models.MAX_TOKENS}:c{MAX_CHARS}"
        self._model: Any = None
        # Batches get a session of their own when they may use more threads than a query:
        # ONNX Runtime creates a session's intra-op threads when it builds the session, and they
        # inherit the creating thread's nice value, so this one is built on the batch thread.
        self._batch_model: Any = None
        self._batch_texts = 0  # texts the batch session ran since it was built
        self.batch_builds = 0  # batch sessions built (the rebuilds after BATCH_REBUILD_TEXTS)
        self._last_batch = 0.0  # clock() at the end of the last batch inference
        self._last_use = clock()  # clock() at the end of the last inference or load
        #: True once :meth:`release_idle` dropped the model, until a session is built again:
        #: the daemon's idle worker then does not load it back (see Semantic.warm).
        self.released_idle = False
        self._load_error: BaseException | None = None
        # Queries never wait behind a background batch: ONNX Runtime sessions run concurrently.
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cw-embed-query")
        # Batches are background work (the daemon's embedding worker): their thread runs at the
        # lowest CPU priority, so requests are scheduled first. ``background=False`` (the
        # evaluation, which waits for its batches) keeps the caller's priority.
        self._batch_pool = ThreadPoolExecutor(
            max_workers=1,
            thread_name_prefix="cw-embed-batch",
            initializer=lower_thread_priority if background else None,
        )
        self._load_lock = threading.Lock()
        self._memory: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._memory_lock = threading.Lock()
        self.computed = 0  # texts actually run through the model (not served from a cache)

    @classmethod
    def for_home(cls, home: Path, **kwargs: Any) -> Embedder:
        """The embedder of a store home; installs the model folder from the packages if absent."""
        folder, manifest = models.ensure_minilm(home)
        return cls(folder, manifest, **kwargs)

    # -- loading ------------------------------------------------------------------------------

    def _load(self) -> Any:
        """The query session; runs on a worker thread."""
        if self._model is not None:
            return self._model
        with self._load_lock:
            if self._model is None:
                self._model = self._build(self.threads)
                self._last_use = self._clock()
                self.released_idle = False
            return self._model

    def _load_batch(self) -> Any:
        """The batch session; runs on the batch thread. The query session when both would run
        on the same threads (one session, not two)."""
        if self.batch_threads == self.threads:
            return self._load()
        if self._batch_model is not None and self._batch_texts < BATCH_REBUILD_TEXTS:
            return self._batch_model
        with self._load_lock:
            if self._batch_model is not None and self._batch_texts >= BATCH_REBUILD_TEXTS:
                # A fresh arena (BATCH_REBUILD_TEXTS). The session goes by reference count; no
                # full collection here, while requests may be running.
                self._batch_model = None
                heap.trim(collect=False)
            if self._batch_model is None:
                self._batch_model = self._build(self.batch_threads)
                self._batch_texts = 0
                self.batch_builds += 1
                self._last_use = self._clock()
                self.released_idle = False
            return self._batch_model

    def release_batch(self, idle_s: float = BATCH_IDLE_RELEASE_S) -> bool:
        """Drop the separate batch session when no batch has run for ``idle_s`` seconds, so an
        idle daemon gives back its memory; the next batch builds it again. Never drops the query
        session. Returns whether it dropped one."""
        if self._batch_model is None or self._clock() - self._last_batch < idle_s:
            return False

        def drop() -> bool:  # on the batch thread: never under a running batch
            if self._batch_model is None or self._clock() - self._last_batch < idle_s:
                return False
            with self._load_lock:
                self._batch_model = None
            return True

        return bool(self._run(drop, BATCH_TIMEOUT_S, batch=True))

    def release_idle(self, idle_s: float = MODEL_IDLE_RELEASE_S) -> bool:
        """Drop both sessions and the in-memory document vectors when no inference (query or
        batch) has run and no session was built for ``idle_s`` seconds, then hand freed heap
        back to the system (:func:`cwcore.heap.trim`). The next query or batch loads the model
        again. Returns whether a session was dropped."""
        if self._model is None and self._batch_model is None:
            return False
        if self._clock() - self._last_use < idle_s:
            return False

        def drop() -> bool:  # on the batch thread: never under a running batch
            if self._clock() - self._last_use < idle_s:
                return False
            with self._load_lock:
                dropped = self._model is not None or self._batch_model is not None
                self._model = None
                self._batch_model = None
            with self._memory_lock:
                self._memory.clear()
            self.released_idle = True
            return dropped

        dropped = bool(self._run(drop, BATCH_TIMEOUT_S, batch=True))
        if dropped:
            heap.trim()  # a dropped session's arena otherwise stays in malloc's free lists
        return dropped

    def _build(self, threads: int | None) -> Any:
        if self._load_error is not None:
            raise self._load_error
        if models.read_manifest(self.folder) is None:
            raise errors.unavailable(errors.MODEL_MISSING, f"no embedding model in {self.folder}")
        _offline_env()
        try:
            from fastembed import TextEmbedding

            _register(FASTEMBED_NAME)
            model = TextEmbedding(
                FASTEMBED_NAME,
                specific_model_path=str(self.folder),
                threads=threads,
                local_files_only=True,
            )
            tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
            if tokenizer is not None:
                tokenizer.enable_truncation(max_length=models.MAX_TOKENS)
        except ImportError as exc:
            self._load_error = errors.unavailable(
                errors.MODEL_MISSING, f"fastembed is not installed: {exc}"
            )
            raise self._load_error from None
        except Exception as exc:
            self._load_error = errors.unavailable(
                errors.LOAD_FAILED, f"cannot load the embedding model: {exc}"
            )
            raise self._load_error from None
        return model

    def load(self, timeout: float = LOAD_TIMEOUT_S) -> None:
        """Load the model now (on the worker thread); raises a categorized ModelUnavailable."""
        self._run(self._load, timeout)

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def _run(self, fn: Any, timeout: float, *args: Any, batch: bool = False) -> Any:
        pool = self._batch_pool if batch else self._pool
        return wait(pool.submit(fn, *args), timeout)

    # -- embedding ----------------------------------------------------------------------------

    def digest(self, text: str) -> bytes:
        """The content digest of a text's vector (model identity + clipped text)."""
        return digest16("cw-embed", self.model_id, clip(text))

    def _infer(
        self, texts: list[str], pause: Callable[[], object] | None = None, batch: bool = False
    ) -> np.ndarray:
        """Runs on a worker thread (``batch``: the batch thread, with the batch session): texts
        sorted by length so batches pad little; ``pause`` is called before each group."""
        model = self._load_batch() if batch else self._load()
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.empty((len(texts), DIM), dtype=np.float32)
        try:
            for group in _batches(order, texts):
                if pause is not None:
                    pause()
                vectors = model.embed([texts[i] for i in group], batch_size=len(group))
                for i, vec in zip(group, vectors, strict=True):
                    out[i] = vec
        except Exception as exc:
            raise errors.unavailable(errors.INFERENCE_FAILED, f"embedding failed: {exc}") from None
        finally:
            self._last_use = self._clock()
            if batch:
                self._last_batch = self._last_use
                self._batch_texts += len(texts)
        self.computed += len(texts)
        return normalize(out)

    def embed(
        self,
        texts: Sequence[str],
        *,
        timeout: float = BATCH_TIMEOUT_S,
        cache: VectorCache | None = None,
        batch: bool = True,
        queries: int = 0,
        between_groups: Callable[[], object] | None = None,
    ) -> np.ndarray:
        """``(n, 384)`` float32 L2-normalized vectors; identical texts are computed once.

        ``cache`` (default: the embedder's own) is consulted before the model and given every
        freshly computed vector. ``batch`` runs on the background thread (indexing); queries
        use the other one, so they never queue behind a batch. The first ``queries`` texts are
        queries: they are always run through the model and their vectors are neither read
        from nor written to any cache. ``between_groups`` (batch runs only, never queries) is
        called on the batch thread before each inference group: the daemon's worker waits
        there while a request runs, so a group (about 0.2 s of one core) does not start under a
        search or a preflight."""
        cache = cache if cache is not None else self.cache
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        if queries:
            asked = [clip(t) for t in texts[:queries]]
            out[:queries] = self._fresh(asked, timeout, batch)
        if queries < len(texts):
            pause = between_groups if batch else None
            out[queries:] = self._documents(texts[queries:], timeout, cache, batch, pause)
        return out

    def _fresh(
        self,
        texts: list[str],
        timeout: float,
        batch: bool,
        pause: Callable[[], object] | None = None,
    ) -> np.ndarray:
        if self._model is None:
            self.load(timeout=max(timeout, LOAD_TIMEOUT_S))
        return np.asarray(
            self._run(self._infer, timeout, texts, pause, batch, batch=batch), dtype=np.float32
        )

    def _documents(
        self,
        texts: Sequence[str],
        timeout: float,
        cache: VectorCache | None,
        batch: bool,
        pause: Callable[[], object] | None = None,
    ) -> np.ndarray:
        digests = [self.digest(t) for t in texts]
        found: dict[bytes, np.ndarray] = {}
        with self._memory_lock:
            for d in digests:
                vec = self._memory.get(d)
                if vec is not None:
                    found[d] = vec
        missing = list(dict.fromkeys(d for d in digests if d not in found))
        if missing and cache is not None:
            for d, vec in zip(missing, cache.get_many(missing), strict=True):
                if vec is not None:
                    found[d] = np.asarray(vec, dtype=np.float32)
            missing = [d for d in missing if d not in found]
        if missing:
            text_of = {d: clip(t) for d, t in zip(digests, texts, strict=True)}
            computed = self._fresh([text_of[d] for d in missing], timeout, batch, pause)
            fresh = list(zip(missing, computed, strict=True))
            found.update(fresh)
            if cache is not None:
                cache.put_many(fresh)
        with self._memory_lock:
            for d in digests:
                self._memory[d] = found[d]
                self._memory.move_to_end(d)
            while len(self._memory) > MEMORY_CACHE:
                self._memory.popitem(last=False)
        return np.stack([found[d] for d in digests]).astype(np.float32, copy=False)

    def embed_query(self, text: str, *, timeout: float = QUERY_TIMEOUT_S) -> np.ndarray:
        """One query's ``(384,)`` vector, encoded now and kept nowhere."""
        return self.embed([text], timeout=timeout, batch=False, queries=1)[0]

    def start_query(self, text: str) -> Future[np.ndarray] | None:
        """Start encoding one query on the query thread and return at once: the future's
        result is the ``(384,)`` vector :meth:`embed_query` would return (its exception, if the
        model fails). None when the model is not loaded: a load takes seconds, and is left to a
        caller that knows it needs the vector."""
        if self._model is None:
            return None
        return self._pool.submit(lambda: self._infer([clip(text)])[0])

    def self_test(self, timeout: float = QUERY_TIMEOUT_S) -> dict[str, Any]:
        """Embed two related and one unrelated sentence; check shape, norm and ordering."""
        import time

        self.load()
        started = time.perf_counter()
        texts = [
            "the build failed because the test database was locked",
            "tests could not run: sqlite said the database is locked",
            "we picked a blue colour for the landing page banner",
        ]
        vecs = self._run(self._infer, timeout, texts)
        sims = vecs @ vecs.T
        ok = (
            vecs.shape == (3, DIM)
            and bool(np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-3))
            and float(sims[0, 1]) > float(sims[0, 2])
        )
        return {
            "ok": ok,
            "dim": int(vecs.shape[1]),
            "related": round(float(sims[0, 1]), 4),
            "unrelated": round(float(sims[0, 2]), 4),
            "ms": round((time.perf_counter() - started) * 1000, 1),
        }

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._batch_pool.shutdown(wait=False, cancel_futures=True)

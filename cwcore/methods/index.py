"""The index methods: ``index.run``, ``index.status``, ``index.partial``, ``index.verify`` and
``index.rebuild`` (the lexical generation and its handlers, and the semantic handler's
progress)."""

from __future__ import annotations

import threading
from dataclasses import replace

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
from cwcore.contract.methods import (
    INDEX_PARTIAL,
    INDEX_REBUILD,
    INDEX_RUN,
    INDEX_STATUS,
    INDEX_VERIFY,
)
from cwcore.engine import Emit, Engine
from cwcore.index import maintenance
from cwcore.methods.registry import Method, streaming, typed
from cwcore.semantic import index as semantic_index


def index_status(engine: Engine, document: str | None = None) -> IndexStatus:
    """``cw index status``: the lexical generation and handlers, and the semantic handler's
    progress (two point reads each, never a scan); ``document`` adds that document's state."""
    lexical = maintenance.status(engine.store, engine.indexer, document)
    enabled = engine.indexer.settings.semantic_retrieval
    return replace(lexical, semantic=semantic_index.status(engine.store, enabled=enabled))


def _index_run(
    engine: Engine, req: IndexRunRequest, emit: Emit, cancel: threading.Event
) -> IndexStatus:
    """Publish pending work now; with ``wait``, until the outbox is drained (progress events)."""
    total = engine.indexer.depth()
    done = 0
    while not cancel.is_set():
        n = engine.indexer.run_page()
        done += n
        emit({"type": "progress", "done": done, "total": max(total, done)})
        if n == 0 or not req.wait:
            break
    return index_status(engine)


def _index_status(engine: Engine, req: IndexStatusRequest) -> IndexStatus:
    return index_status(engine, req.document)


def _index_partial(engine: Engine, req: PartialRequest) -> PartialDocuments:
    return maintenance.partial_documents(engine.store, limit=req.limit, after=req.after)


def _index_verify(engine: Engine, req: VerifyRequest) -> IndexVerification:
    with engine.indexer.paused():  # a page in flight has markers beyond the published view
        return maintenance.verify(engine.store)


def _index_rebuild(engine: Engine, req: RebuildRequest) -> IndexStatus:
    queued = maintenance.rebuild(engine.store, engine.indexer)
    if req.wait or not engine.background:
        engine.indexer.drain()
    else:
        engine.index_worker.wake()
    return replace(index_status(engine), queued=queued)


METHODS: tuple[Method, ...] = (
    streaming(INDEX_RUN, _index_run),
    typed(INDEX_STATUS, _index_status),
    typed(INDEX_PARTIAL, _index_partial),
    typed(INDEX_VERIFY, _index_verify),
    typed(INDEX_REBUILD, _index_rebuild),
)

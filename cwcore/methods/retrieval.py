"""The retrieval methods: ``search`` (the explicit search tiers), ``recall`` (a located hit or
a document, bounded by tokens) and ``gather`` (search hits with their chronological
neighbours)."""

from __future__ import annotations

from dataclasses import replace

from cwcore.contract.gather import GatherRequest, GatherResponse
from cwcore.contract.methods import GATHER, RECALL, SEARCH
from cwcore.contract.recall import RecallRequest, RecallResponse
from cwcore.contract.search import SearchRequest, SearchResponse
from cwcore.engine import Engine
from cwcore.methods.registry import Method, typed
from cwcore.recall.gather import gather
from cwcore.recall.recall import Caller, recall
from cwcore.retrieve.importance import record_recall
from cwcore.retrieve.search import search


def _search(engine: Engine, req: SearchRequest) -> SearchResponse:
    """Search; a request that names no ``semanticPolicy`` runs under this store's setting, and
    a request's ``id`` is echoed in the answer (``--batch`` matches answers to requests)."""
    if req.semantic_policy is None:
        req = replace(req, semantic_policy=engine.settings.semantic_policy)
    found = search(engine.search_context(), req)
    return found if req.id is None else replace(found, extra={**found.extra, "id": req.id})


def _recall(engine: Engine, req: RecallRequest) -> RecallResponse:
    """Recall a locator or a document id; ``project`` (optional) is the caller's authenticated
    project, which nothing outside of is read or revealed."""
    ctx = engine.search_context()
    body = recall(
        engine.store,
        ctx.signer,
        req.locator,
        neighbors=req.neighbors,
        max_tokens=req.max_tokens,
        caller=Caller(req.project, req.session_ids or ()),
    )
    if body.status == "resolved" and body.source is not None:  # a located hit, not a read
        head = engine.reader.head(body.source.document_id)
        record_recall(engine.store, int(head["ordinal"]))
    return body


def _gather(engine: Engine, req: GatherRequest) -> GatherResponse:
    """The search's hits with ``neighbors`` turns before and after each (the semantic mode
    always runs: the request's parse set its policy)."""
    return gather(engine.search_context(), req.search, req.neighbors)


METHODS: tuple[Method, ...] = (
    typed(SEARCH, _search),
    typed(RECALL, _recall),
    typed(GATHER, _gather),
)

"""The retrieval methods: ``search`` (the explicit search tiers), ``recall`` (a located hit or
a document, bounded by tokens) and ``gather`` (search hits with their chronological
neighbours)."""

from __future__ import annotations

import threading
from typing import Any

from cwcore import precheck
from cwcore.contract.methods import RECALL
from cwcore.contract.recall import RecallRequest
from cwcore.engine import Emit, Engine, MiB
from cwcore.methods.registry import Method, typed
from cwcore.recall.gather import gather
from cwcore.recall.recall import Caller, recall
from cwcore.recall.results import RecallResponse
from cwcore.retrieve.importance import record_recall
from cwcore.retrieve.request import parse_request
from cwcore.retrieve.search import search


def _search(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    request = parse_request(params, default_policy=engine.settings.semantic_policy)
    response = search(engine.search_context(), request).to_json()
    if request.id is not None:
        response["id"] = request.id
    return response


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


def _gather(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    request, around = precheck.gather(params)
    return gather(engine.search_context(), request, around).to_json()


METHODS: tuple[Method, ...] = (
    Method("search", _search, output_bytes=4 * MiB),
    typed(RECALL, _recall),
    Method("gather", _gather, output_bytes=4 * MiB),
)

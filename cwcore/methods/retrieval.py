"""The retrieval methods: ``search`` (the explicit search tiers), ``recall`` (a located hit or
a document, bounded by tokens) and ``gather`` (search hits with their chronological
neighbours)."""

from __future__ import annotations

import threading
from typing import Any

from cwcore import precheck
from cwcore.engine import Emit, Engine, MiB
from cwcore.errors import InvalidInput
from cwcore.methods.params import param_str, required_str
from cwcore.methods.registry import Method
from cwcore.recall.gather import gather
from cwcore.recall.recall import Caller, recall
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


def _recall(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """Recall a locator or a document id; ``project`` (optional) is the caller's authenticated
    project, which nothing outside of is read or revealed."""
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


def _gather(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    request, around = precheck.gather(params)
    return gather(engine.search_context(), request, around).to_json()


METHODS: tuple[Method, ...] = (
    Method("search", _search, output_bytes=4 * MiB),
    Method("recall", _recall, output_bytes=16 * MiB),
    Method("gather", _gather, output_bytes=4 * MiB),
)

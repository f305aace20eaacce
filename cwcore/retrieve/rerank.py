"""The cross-encoder pass over the lexical/semantic tier (explicit search and gather only).

The first ``rerank_candidates`` (40) candidates of the fused tier handed on (the first round's
``candidates``, distinct sources after the collapse: the same head for every ``limit``) are
scored by the installed cross-encoder against the query, each seen as ~256 tokens centred on its
first match (a semantic-only hit has no term match and is read from its start), and that head of
the tier is reordered by the model's score. The exact and structural tiers never move, presented
scores never change, and every scored candidate carries ``reranked`` ("scored", not "moved": a
near-tie may leave it where it was).

Reranking is a stage of a search only when a reranker is enabled (``rerankerEnabled``) and
installed (``cw models install-reranker``); otherwise the order is left as fused, even with
``strict``: strict propagates the failures of the stages that ran, and this one did not. An
installed reranker that cannot load (changed files, another pinned revision), raises or times
out leaves the order as fused, silently, unless ``strict``: then its categorized
:class:`~cwcore.errors.ModelUnavailable` propagates.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from cwcore.retrieve.page import TIER, Ranked
from cwcore.retrieve.snippets import term_spans
from cwcore.semantic import errors

if TYPE_CHECKING:
    from cwcore.retrieve.candidates import Visible
    from cwcore.retrieve.search import SearchContext


def rerank_tier(
    ctx: SearchContext,
    visible: Visible,
    query: str,
    terms: list[str],
    ranked: list[Ranked],
    stages: dict[str, Any],
    strict: bool,
) -> list[Ranked]:
    assert ctx.semantic is not None
    start = next((i for i, r in enumerate(ranked) if TIER[r.cand.mode] == 2), len(ranked))
    head = ranked[start : start + ctx.rerank_candidates]
    if len(head) < 2:
        return ranked
    semantic = ctx.semantic
    if not semantic.can_rerank():
        reranker = semantic.reranker() if semantic.settings.reranker_enabled else None
        if strict and reranker is not None and reranker.installed:
            raise reranker.error or errors.unavailable(errors.LOAD_FAILED, "reranker not loaded")
        stages["rerank"] = {"candidates": len(head), "used": False, "ms": 0.0}
        return ranked  # not a stage of this search, or failed silently: skip the texts
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    visible.prefetch([item.cand.wid for item in head])
    for item in head:
        text = visible.text(item.cand.wid)[1]
        if not text.isascii():  # the model's tokenizer takes no lone surrogates
            text = text.encode("utf-8", "ignore").decode("utf-8")
        texts.append(text)
        found = term_spans(text, terms, limit=1)  # one compiled pattern for every candidate
        spans.append(found[0] if found else (0, 0))
    started = time.perf_counter()
    scores = ctx.semantic.rerank(query, texts, spans, strict=strict)
    stages["rerank"] = {
        "candidates": len(head),
        "used": scores is not None,
        "ms": round((time.perf_counter() - started) * 1000, 2),
    }
    if scores is None:
        return ranked
    for item in head:
        item.cand.reranked = True
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))  # stable on ties
    return ranked[:start] + [head[i] for i in order] + ranked[start + len(head) :]

"""Semantic candidates for explicit search: policy, scope restriction, fallback category.

:func:`semantic_tier` is what :func:`cwcore.retrieve.search.search` calls once per request. It
decides from ``semanticPolicy`` whether the embedding mode runs (``never``: no; ``always``: yes;
``auto``: only when the lexical pass was weak or empty — spec 000's "conceptual miss after
lexical retrieval"), embeds the query, searches the windows of the request's scope (the named
sessions' or project's windows when the scope is narrow, every window otherwise), filters them
through the same :class:`~cwcore.retrieve.lexical.Visible` as the other modes and returns
calibrated :class:`~cwcore.retrieve.lexical.Candidate` values (``mode="semantic"``,
``match_type="semantic"``, ``raw`` = cosine).

A failure never fails a non-strict search: the outcome carries the category for
``retrieval_status=lexical_fallback``. With ``strict`` the ModelUnavailable propagates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cwcore.errors import ModelUnavailable
from cwcore.index import derived
from cwcore.retrieve.candidates import Candidate, Visible
from cwcore.retrieve.scope import Scope
from cwcore.semantic import errors
from cwcore.semantic.runtime import Semantic
from cwcore.store import keys
from cwcore.store.admission import project_digest
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store

OVERFETCH = 4  # nearest windows fetched per wanted candidate, before scope filters


@dataclass
class SemanticOutcome:
    """What the semantic mode did for one request."""

    candidates: list[Candidate] = field(default_factory=list)
    used: bool = False  # the model ran and its candidates were considered
    failure: str | None = None  # category when it should have run and could not
    ms: float = 0.0

    def trace(self) -> dict[str, Any]:
        body: dict[str, Any] = {"used": self.used, "candidates": len(self.candidates)}
        if self.failure:
            body["failure"] = self.failure
        body["ms"] = round(self.ms, 2)
        return body


def should_run(policy: str, *, enabled: bool, weak: bool) -> bool:
    if not enabled or policy == "never":
        return False
    return policy == "always" or weak


def session_wids(store: Store, reader: Reader, sessions: set[str] | frozenset[str]) -> np.ndarray:
    """Every window id of the sessions' documents (from the applied markers)."""
    ranges = [
        np.arange(first, first + count, dtype=np.uint32)
        for session in sorted(sessions)
        for first, count in derived.session_wid_ranges(store, session)
    ]
    if not ranges:
        return np.empty(0, dtype=np.uint32)
    return np.unique(np.concatenate(ranges))


def scope_wids(store: Store, reader: Reader, scope: Scope) -> np.ndarray | None:
    """The windows a narrow scope can admit (None: no restriction worth computing)."""
    if scope.sessions is not None:
        return session_wids(store, reader, scope.sessions)
    if scope.project is not None:
        prefix = keys.PROJECT_SESSION.prefix(project_digest(scope.project))
        sessions = {str(keys.PROJECT_SESSION.decode(k)[1]) for k, _ in store.scan("scopes", prefix)}
        return session_wids(store, reader, sessions)
    return None


def semantic_tier(
    semantic: Semantic,
    visible: Visible,
    query: str,
    k: int,
    *,
    policy: str,
    weak: bool,
    strict: bool = False,
) -> SemanticOutcome:
    """Run the embedding mode for one request if the policy says so (see module doc)."""
    import time

    outcome = SemanticOutcome()
    if not query or not should_run(policy, enabled=semantic.settings.semantic_retrieval, weak=weak):
        return outcome
    started = time.perf_counter()
    try:
        only = scope_wids(visible.store, visible.reader, visible.scope)
        if only is not None and not len(only):
            outcome.used = True
            return outcome
        hits = semantic.query(query, max(k * OVERFETCH, 50), only, strict=strict)
        allowed = set(visible.filter(int(w) for w in hits.wids))
        for wid, cos, score in zip(hits.wids, hits.cosines, hits.scores, strict=True):
            if int(wid) in allowed:
                outcome.candidates.append(
                    Candidate(int(wid), "semantic", round(float(score), 4), float(cos), "semantic")
                )
            if len(outcome.candidates) >= k:
                break
        outcome.used = True
    except ModelUnavailable as exc:
        if strict:
            raise
        outcome.failure = errors.category(exc)
    except Exception as exc:  # never turn a working lexical search into a failed one
        if strict:
            raise errors.unavailable(errors.INFERENCE_FAILED, f"semantic search: {exc}") from None
        outcome.failure = errors.INFERENCE_FAILED
    finally:
        outcome.ms = (time.perf_counter() - started) * 1000
    return outcome

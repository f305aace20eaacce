"""The semantic mode's candidates for explicit search: policy, scope, fallback category.

:func:`semantic_tier` is what search calls once per round. It decides from ``semanticPolicy``
whether the embedding mode runs (``never``: no; ``always``: yes; ``auto``: only when the
rescue trigger :func:`rescue` fires on the first lexical pass — weak or empty, or a top window
covering less than 0.8 of the query's IDF weight: a conceptual miss after lexical retrieval),
embeds the query, searches the windows of the request's scope (the named sessions' or
project's windows when the scope is narrow, every window otherwise), filters them through the same
:class:`~cwcore.retrieve.candidates.Visible` as the other modes and returns calibrated
:class:`~cwcore.retrieve.candidates.Candidate` values (``mode="semantic"``, ``raw`` = cosine).

A query with no content word (punctuation, a format string, one letter) has no meaning to
embed: the mode does not run for it, so it can never produce confident semantic hits.

Two maps of the cosine. The presented score (the band's input) is :func:`confidence`, a logistic
fit of "relevant" on the cosine of the semantic top-10 hits of all three dev sets pooled (1,840
hits; ``make eval`` writes the fit to ``eval/results/calibration.json``): a semantic hit reads
``high`` only from cosine 0.82. Fusion blends the semantic rank with the steeper LongMemEval-only
fit (:func:`cwcore.semantic.search.calibrate`), which orders better on the agent-log set (hit@1
0.735 against 0.714 with the pooled map in the blend; docs/evaluation.md).

A failure never fails a non-strict search: the outcome carries the category for
``retrieval_status=lexical_fallback``. With ``strict`` the ModelUnavailable propagates — for a
stage that ran: ``never``, ``auto`` after a strong lexical pass, or a query with nothing to embed
skip the mode and fail nothing; ``always`` with ``semanticRetrieval`` off is ``disabled``, and
(:func:`cwcore.retrieve.search.search`) ``always`` before any window is embedded is
``not-embedded``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cwcore.errors import ModelUnavailable
from cwcore.retrieve.candidates import Candidate, Visible, scope_wids
from cwcore.retrieve.lexical import query_terms
from cwcore.retrieve.params import DEFAULT, RetrievalParams
from cwcore.semantic import errors
from cwcore.semantic.runtime import AheadQuery, Semantic
from cwcore.text.stopwords import is_stopword

#: The presented semantic score: ``sigmoid(SLOPE × (cosine − MIDPOINT))``, pooled dev-set fit.
SLOPE = 4.27
MIDPOINT = 0.493


def confidence(cosine: float) -> float:
    """The presented score of a semantic hit of this cosine, in (0, 1): the estimated share of
    such hits that are relevant across the dev sets."""
    return 1.0 / (1.0 + math.exp(-SLOPE * (float(cosine) - MIDPOINT)))


@dataclass
class SemanticOutcome:
    """What the semantic mode did for one request."""

    candidates: list[Candidate] = field(default_factory=list)
    used: bool = False  # the model ran and its candidates were considered
    failure: str | None = None  # category when it should have run and could not
    saturated: bool = False  # as many candidates as were asked for: a deeper round may add
    ms: float = 0.0
    #: Of ``ms``: the query's embedding, and the scan of the vectors with the re-scoring.
    embed_ms: float = 0.0
    scan_ms: float = 0.0
    #: The work was started before the lexical pass (:func:`start_ahead`): ``embed_ms`` and
    #: ``scan_ms`` were spent beside it, ``ms`` is what the stage waited.
    ahead: bool = False
    #: The first lexical pass's evidence the ``auto`` decision read (None: not measured).
    evidence: RescueEvidence | None = None

    def trace(self) -> dict[str, Any]:
        body: dict[str, Any] = {"used": self.used, "candidates": len(self.candidates)}
        if self.failure:
            body["failure"] = self.failure
        body["ms"] = round(self.ms, 2)
        if self.used:
            body["embedMs"] = round(self.embed_ms, 2)
            body["scanMs"] = round(self.scan_ms, 2)
            if self.ahead:
                body["embedAhead"] = True
        if self.evidence is not None:
            body["trigger"] = self.evidence.to_json()
        return body


def should_run(policy: str, *, enabled: bool, weak: bool) -> bool:
    """Whether the embedding mode runs: never with ``never`` or switched off, always with
    ``always``, and with ``auto`` when ``weak`` (the rescue trigger, :func:`rescue`, fired)."""
    if not enabled or policy == "never":
        return False
    return policy == "always" or weak


@dataclass(frozen=True, slots=True)
class RescueEvidence:
    """What the first lexical pass says about a query, for the ``auto`` rescue decision
    (:func:`rescue`). Shares are in [0, 1]; ``score`` and ``margin`` are calibrated lexical
    scores; all are of the first BM25 pass, before any expansion requery."""

    #: An exact or verbatim (literal) tier answered the query.
    exact: bool = False
    #: The top lexical window's calibrated score; None when BM25 found nothing.
    score: float | None = None
    #: The top window's IDF-weighted share of the query's terms.
    coverage: float = 0.0
    #: The top window's plain share of the query's content words (no stopword of any list).
    content: float = 0.0
    #: The top window's calibrated score minus the second's (the top score itself when it is
    #: alone); negative when BM25 ranks first a window whose calibrated score is lower.
    margin: float = 0.0
    #: The query's content words (no stopword of any list).
    words: int = 0
    #: The share of those content words that no window in the scope holds. Such a word has no
    #: IDF, so it counts in neither ``coverage`` nor ``score``: a question phrased in words the
    #: archive never uses can look strong on the one word it shares.
    absent: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "exact": self.exact,
            "score": None if self.score is None else round(self.score, 4),
            "coverage": round(self.coverage, 4),
            "content": round(self.content, 4),
            "margin": round(self.margin, 4),
            "words": self.words,
            "absent": round(self.absent, 4),
        }


def weak(ev: RescueEvidence, params: RetrievalParams = DEFAULT) -> bool:
    """The weak first pass (it triggers RM3 expansion): no exact candidate, and no lexical
    candidate, a top calibrated score below ``weak_score`` or a top IDF-weighted coverage below
    ``weak_coverage``."""
    return not ev.exact and (
        ev.score is None or ev.score < params.weak_score or ev.coverage < params.weak_coverage
    )


def rescue(ev: RescueEvidence, params: RetrievalParams = DEFAULT) -> bool:
    """Whether ``auto`` runs the semantic mode for this first pass: a weak pass (:func:`weak`),
    or, for each field set above 0, a top calibrated score below ``rescue_score``, a top
    IDF-weighted coverage below ``rescue_coverage``, a top window holding less than
    ``rescue_content`` of the query's content words, at least ``rescue_absent`` of those words
    in no window of the scope, a margin below ``rescue_margin``, or a
    question of at least ``rescue_words`` content words — none of these after an exact answer.
    The shipped fields add only ``rescue_coverage`` 0.8; with every field 0 this is exactly
    :func:`weak`, the trigger before issue 35 (docs/evaluation.md, "Semantic rescue trigger
    (issue 35)")."""
    if weak(ev, params):
        return True
    if ev.exact or ev.score is None:
        return False
    return (
        ev.score < params.rescue_score
        or ev.coverage < params.rescue_coverage
        or ev.content < params.rescue_content
        or (params.rescue_absent > 0 and ev.absent >= params.rescue_absent)
        or (params.rescue_margin > 0 and ev.margin < params.rescue_margin)
        or (params.rescue_words > 0 and ev.words >= params.rescue_words)
    )


def content_words(terms: list[str]) -> list[str]:
    """The query terms that are no stopword of any list (:mod:`cwcore.text.stopwords`: grammar,
    workflow and request words, acknowledgements), or every term when all of them are."""
    return [t for t in terms if not is_stopword(t)] or list(terms)


def rescue_evidence(
    scores: list[float],
    matched: list[str],
    idfs: dict[str, float],
    words: list[str],
    *,
    exact: bool,
) -> RescueEvidence:
    """The evidence of a first lexical pass: ``scores`` the calibrated scores of its windows in
    rank order, ``matched`` the terms the top window holds, ``idfs`` the query terms' IDF,
    ``words`` the query's content words (a word whose IDF is 0 or missing is in no window of
    the scope)."""
    absent = sum(1 for w in words if not idfs.get(w)) / len(words) if words else 0.0
    if not scores:
        return RescueEvidence(exact=exact, words=len(words), absent=absent)
    weight = sum(idfs.values()) or 1.0
    held = set(matched)
    return RescueEvidence(
        absent=absent,
        exact=exact,
        score=scores[0],
        coverage=sum(idfs.get(t, 0.0) for t in held) / weight,
        content=sum(1 for w in words if w in held) / len(words) if words else 1.0,
        margin=scores[0] - (scores[1] if len(scores) > 1 else 0.0),
        words=len(words),
    )


def has_content(query: str) -> bool:
    """True when the query holds a word worth embedding: a term of two or more characters, or
    a CJK character (one CJK character is a word)."""
    return any(len(t) >= 2 or not t.isascii() for t in query_terms(query))


def nearest_k(k: int, params: RetrievalParams = DEFAULT) -> int:
    """How many nearest windows the stage reads for ``k`` candidates: ``semantic_overfetch`` ×
    ``k``, at least 50 (the scope filters come after)."""
    return max(k * params.semantic_overfetch, 50)


def start_ahead(
    semantic: Semantic | None,
    query: str,
    policy: str,
    k: int,
    only: np.ndarray | None,
    params: RetrievalParams = DEFAULT,
) -> AheadQuery | None:
    """Start the semantic stage's work before the lexical pass when the stage may run for this
    query (a policy other than ``never``, a query with content, vectors and a loaded model):
    the query's embedding and the scan for ``k`` candidates in ``only`` (the first round's)
    then run on other threads beside the lexical pass, and the stage waits for what is usually
    ready. ``auto`` decides only after the lexical pass; when it does not fire, the caller
    drops the work (:meth:`AheadQuery.drop`): a few milliseconds of another core spent. None:
    nothing started."""
    if semantic is None or policy == "never" or not query or not has_content(query):
        return None
    try:
        return semantic.start_query(query, nearest_k(k, params), only)
    except Exception:  # the stage, if it runs, embeds the query itself and reports a failure
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
    params: RetrievalParams = DEFAULT,
    ahead: AheadQuery | None = None,
) -> SemanticOutcome:
    """Run the embedding mode for one request if the policy says so (see module doc); the
    nearest ``params.semantic_overfetch`` × ``k`` windows (at least 50) are read before the
    scope filters. ``ahead``: the stage's work already started for this request and its scope
    (:func:`start_ahead`)."""
    outcome = SemanticOutcome()
    enabled = semantic.settings.semantic_retrieval
    if strict and policy == "always" and not enabled:
        # Asked for outright and strict: a switched-off mode is a failure, not a skip.
        raise errors.unavailable(errors.DISABLED, "semanticRetrieval is off")
    if not query or not should_run(policy, enabled=enabled, weak=weak):
        return outcome
    if not has_content(query):
        return outcome
    started = time.perf_counter()
    try:
        # Work begun ahead was started for this request's scope: its windows are not read again.
        only = ahead.only if ahead is not None else scope_wids(visible.store, visible.scope)
        if only is not None and not len(only):
            outcome.used = True
            return outcome
        hits = semantic.query(query, nearest_k(k, params), only, strict=strict, ahead=ahead)
        outcome.embed_ms, outcome.scan_ms = hits.embed_ms, hits.scan_ms
        outcome.ahead = hits.ahead
        allowed = set(visible.filter(int(w) for w in hits.wids))
        for wid, cos, score in zip(hits.wids, hits.cosines, hits.scores, strict=True):
            if int(wid) in allowed:
                cand = Candidate(
                    int(wid), "semantic", round(confidence(cos), 4), float(cos), "semantic"
                )
                cand.blend = float(score)
                outcome.candidates.append(cand)
            if len(outcome.candidates) >= k:
                break
        outcome.saturated = len(outcome.candidates) >= k
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

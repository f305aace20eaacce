"""Explicit search: a :class:`~cwcore.contract.search.SearchRequest` in, a
:class:`~cwcore.contract.search.SearchResponse` out, in typed stages:

1. **Query**: the query's anchors (paths, symbols, errors, quoted strings, values), its terms
   (grammar words dropped), and the scope's windows.
2. **Exact tier** (:mod:`cwcore.retrieve.exact`): windows holding a specific anchor. Exact-looking
   input (the whole query is one anchor) is not broken into OR terms unless the exact lookup
   found nothing; then a verbatim check of the best lexical windows keeps the exact tier.
3. **Lexical** BM25F over windows (:mod:`cwcore.retrieve.lexical`); when that pass is weak (no
   exact candidate, and a low top score or coverage) one RM3/Bo1 expansion requery with at most
   8 terms from the top windows (:mod:`cwcore.retrieve.expand`).
4. **Semantic** (:mod:`cwcore.retrieve.semantic`, by ``semanticPolicy``) and **structural**
   candidates when a ``relation`` is asked for.
5. **Fusion** (:mod:`cwcore.retrieve.fusion`): tiers never mix — exact above structural above
   lexical/semantic; within the lexical/semantic tier RRF with the importance prior orders the
   candidates. Neither changes a presented score or band.
6. **Collapse** (:mod:`cwcore.retrieve.collapse`): one hit per document, no copies.
7. **Rerank** the head of the lexical/semantic tier with the installed cross-encoder (never
   across a tier), then **materialize** the page (:mod:`cwcore.retrieve.page`): snippets,
   locators under one lease, provenance.

Candidate depth follows the page: the first round reads ``max(4 × limit, limit + 40)`` BM25
windows and ``limit`` semantic ones. Spec 004's fixed depths (``lexical`` 30, ``vector`` 30:
:class:`~cwcore.markdown.limits.Limits`), which would make the top k of a search a prefix of its
top k + n, ranked lower on two dev sets (cw-default agent logs hit@5 0.898 → 0.857, conversations
hit@10 0.778 → 0.727; docs/evaluation.md), so they are not used here yet. The first round's exact
and structural tiers and the first ``candidates`` (40) of its fused tier are the head of the
page, reranked once; a page longer than that head runs further rounds, each ``deeper`` (4) times
deeper, and appends the distinct sources it adds below everything before it.

Every ranking knob a stage reads (depths, the weak-pass thresholds, expansion, BM25 constants,
RRF, priors) comes from the context's :class:`~cwcore.retrieve.params.RetrievalParams`
(``SearchContext.params``), never from a module constant.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cwcore.contract.search import DEFAULT_POLICY, SearchRequest, SearchResponse
from cwcore.index import anchors as anchor_mod
from cwcore.index import derived
from cwcore.index.postings import PostingIndex
from cwcore.markdown.limits import Limits
from cwcore.retrieve import evidence as markdown_evidence
from cwcore.retrieve import expand
from cwcore.retrieve.candidates import Candidate, Visible, scope_wids
from cwcore.retrieve.collapse import by_session, collapse
from cwcore.retrieve.exact import anchor_stats, exact_tier, phrase_candidates
from cwcore.retrieve.fusion import fuse_tier
from cwcore.retrieve.importance import context_prior, importance
from cwcore.retrieve.lexical import lexical_candidates, query_terms, structural_candidates
from cwcore.retrieve.locator import Signer
from cwcore.retrieve.page import TIER, Ranked, materialize
from cwcore.retrieve.params import RetrievalParams
from cwcore.retrieve.rerank import rerank_tier
from cwcore.retrieve.scope import resolve
from cwcore.retrieve.semantic import (
    RescueEvidence,
    SemanticOutcome,
    content_words,
    rescue,
    rescue_evidence,
    semantic_tier,
    start_ahead,
)
from cwcore.retrieve.semantic import weak as weak_pass
from cwcore.semantic import errors
from cwcore.semantic.runtime import AheadQuery
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store
from cwcore.text.stems import query_stems


@dataclass
class SearchContext:
    store: Store
    reader: Reader
    postings: PostingIndex
    signer: Signer
    lease_minutes: float
    semantic: Any = None  # cwcore.semantic.runtime.Semantic, loaded lazily by the engine
    rerank_candidates: int = 40  # of the ``limits.candidates`` handed on, how many are reranked
    limits: Limits = field(default_factory=Limits)
    #: The ranking knobs every stage reads (frozen: a different run gets another instance).
    params: RetrievalParams = field(default_factory=RetrievalParams)


@dataclass
class QueryPlan:
    """Stage 1: what the query is made of, within the request's scope."""

    text: str
    anchors: list[anchor_mod.Anchor]
    exact_looking: bool
    terms: list[str]  # every query term, grammar words dropped, plus expansionTerms
    only: np.ndarray | None  # the scope's window ids when it is session-bounded
    n_scope: int  # windows in the scope (for anchor specificity)
    #: The prose words' stem terms the BM25 passes add (:func:`stem_terms`), else empty.
    stems: list[str] = field(default_factory=list)


@dataclass
class LexicalPass:
    candidates: list[Candidate] = field(default_factory=list)
    literal: list[Candidate] = field(default_factory=list)  # verbatim matches of the query
    idfs: dict[str, float] = field(default_factory=dict)
    expanded: list[str] = field(default_factory=list)
    weak: bool = True  # no exact candidate and a weak first BM25 pass
    #: What the first pass says for the ``auto`` semantic rescue (:func:`semantic.rescue`).
    evidence: RescueEvidence = field(default_factory=RescueEvidence)
    saturated: bool = False  # BM25 returned as many windows as were asked for


def plan_query(ctx: SearchContext, req: SearchRequest, visible: Visible) -> QueryPlan:
    text = req.query or ""
    anchors = anchor_mod.extract(text) if text else []
    exact_looking = bool(text) and anchor_mod.is_exact_looking(text)
    if exact_looking and not any(a.start == 0 and a.end == len(text) for a in anchors):
        stripped = text.strip("\"'`")
        anchors = [anchor_mod.Anchor(0, len(stripped), stripped, "quoted"), *anchors]
    only = scope_wids(ctx.store, visible.scope) if text else None
    terms = query_terms(text, req.expansion_terms) if text else []
    n_scope = len(only) if only is not None else ctx.postings.manifest().live_docs
    stems = stem_terms(ctx, req, terms) if terms else []
    return QueryPlan(text, anchors, exact_looking, terms, only, n_scope, stems)


def stem_terms(ctx: SearchContext, req: SearchRequest, terms: list[str]) -> list[str]:
    """The stem terms a search adds to its BM25 passes: those of its prose words when nothing
    else in the search reaches other forms of them — no semantic stage can run (policy
    ``never``, semanticRetrieval off, no window embedded yet) — and every window of the index
    has stem terms. With vectors the semantic stage covers word forms; adding the stems there
    too lowered the default's agent-log figures (docs/evaluation.md, "Word forms")."""
    if ctx.params.stem_weight <= 0:
        return []
    policy = req.semantic_policy or DEFAULT_POLICY
    if policy != "never" and ctx.semantic is not None and ctx.semantic.has_vectors():
        return []
    if not derived.stems_indexed(ctx.store):
        return []
    return query_stems(terms)


def search(ctx: SearchContext, req: SearchRequest) -> SearchResponse:
    started = time.perf_counter()
    params = ctx.params
    gen = derived.generation(ctx.store)
    scope = resolve(ctx.reader, req)
    visible = Visible(ctx.store, ctx.reader, scope, int(gen.get("maxWid", 0)))
    plan = plan_query(ctx, req, visible)
    stages: dict[str, Any] = {}
    # Grouped by session, a page of ``limit`` sessions is drawn from more documents.
    want = req.limit * (params.session_depth if req.group == "session" else 1)
    # The first round's semantic work, begun beside the lexical pass (exact-looking input is
    # usually answered by the exact tier, which skips the stage).
    ahead = (
        None
        if plan.exact_looking
        else start_ahead(
            ctx.semantic,
            plan.text,
            req.semantic_policy or DEFAULT_POLICY,
            want,
            plan.only,
            params,
        )
    )

    stats = (
        anchor_stats(ctx.store, visible, plan.anchors, plan.n_scope, params) if plan.anchors else []
    )
    exact = exact_tier(ctx.postings, stats, plan.terms, plan.only, params)
    stages["exact"] = len(exact)
    stages["anchors"] = [
        {"value": s.anchor.value[:80], "df": s.df, "specific": s.specific} for s in stats
    ]

    limits = ctx.limits
    depth = 1
    lex = LexicalPass()
    outcome: SemanticOutcome | None = None
    ranked: list[Ranked] = []
    literal = _literal(ctx, plan, visible, exact)
    if literal:
        stages["literal"] = len(literal)
    for round_ in range(params.max_rounds):
        # Depths follow the page (see the module docstring for why not the spec's fixed ones).
        fetch = depth * max(want * params.fetch_per_hit, want + params.fetch_extra)
        lex = _lexical(ctx, plan, visible, exact, literal, fetch, stages)
        top_tier = exact or lex.literal
        fire = rescue(lex.evidence, params)
        outcome = _semantic(
            ctx, req, plan, visible, bool(top_tier), fire, want * depth, stages, ahead
        )
        if outcome is not None:
            outcome.evidence = lex.evidence
            stages["semantic"] = outcome.trace()
        structural = _structural(ctx, req, plan, visible, lex, stages)
        lexical = lex.candidates if plan.text else []
        semantic = outcome.candidates if outcome is not None else []
        fused = collapse(_fuse(ctx, visible, top_tier, structural, lexical, semantic))
        more = lex.saturated or bool(outcome is not None and outcome.saturated)
        if round_ == 0:
            ranked = _head(fused, limits.candidates)
            more = more or len(fused) > len(ranked)
            if req.rerank and plan.text:
                ranked = _rerank(ctx, visible, plan, lex, ranked, stages, req.strict)
        else:
            ranked = collapse(ranked + fused)
        if len(ranked) >= want or not more:
            break
        depth *= params.deeper
    if ahead is not None:
        ahead.drop()  # a stage that never ran needs no scan (skipped if not begun)
    if req.group == "session":
        ranked = by_session(ranked)
    visible.prefetch([r.cand.wid for r in ranked[: req.limit]])
    hits = materialize(
        ctx.store,
        ctx.reader,
        ctx.signer,
        ctx.lease_minutes,
        ranked,
        limit=req.limit,
        distinct=req.group != "session",  # a session's hit stands for the session
        stages=stages,
        generation=int(gen["n"]),
        scope=req.scope,
        search_terms=plan.terms + lex.expanded,
        idfs=lex.idfs,
        stems=plan.stems,
        budget_tokens=req.hint_budget_tokens,
        texts=visible.text,
        hit_chars=limits.hit_chars,
        result_chars=limits.result_chars,
    )
    evidence: list[dict[str, Any]] = []
    if len(hits) < req.limit and markdown_evidence.applies(req):
        evidence = markdown_evidence.evidence_hits(
            ctx.store,
            ctx.reader,
            ctx.signer,
            ctx.lease_minutes,
            req,
            scope,
            req.limit - len(hits),
            int(gen["n"]),
            {h.document_id for h in hits},
            limits,
        )
        stages["markdownEvidence"] = len(evidence)
    failure = outcome.failure if outcome is not None else None
    if not hits and not evidence:
        status = "empty"
    elif failure:
        status = "lexical_fallback"
    elif not gen.get("complete", True):
        status = "partial"
    else:
        status = "ok"
    return SearchResponse(
        query=req.query,
        relation=req.relation,
        results=hits,
        retrieval_status=status,
        semantic_search_used=bool(outcome and outcome.used),
        generation=int(gen["n"]),
        timing_ms=round((time.perf_counter() - started) * 1000, 3),
        stages=stages,
        semantic_failure=failure,
        evidence=tuple(evidence),
    )


def _head(fused: list[Ranked], candidates: int) -> list[Ranked]:
    """The exact and structural tiers whole, then the first ``candidates`` of the fused
    lexical/semantic tier: the candidates handed on (spec 004: candidates40)."""
    start = next((i for i, r in enumerate(fused) if TIER[r.cand.mode] == 2), len(fused))
    return fused[: start + candidates]


def _rerank(
    ctx: SearchContext,
    visible: Visible,
    plan: QueryPlan,
    lex: LexicalPass,
    ranked: list[Ranked],
    stages: dict[str, Any],
    strict: bool,
) -> list[Ranked]:
    """The rerank stage, when it runs: a reranker is enabled and installed
    (:func:`~cwcore.retrieve.rerank.rerank_tier`)."""
    if ctx.semantic is None:
        return ranked
    return rerank_tier(ctx, visible, plan.text, plan.terms + lex.expanded, ranked, stages, strict)


def _lexical(
    ctx: SearchContext,
    plan: QueryPlan,
    visible: Visible,
    exact: list[Candidate],
    literal_tier: list[Candidate],
    fetch: int,
    stages: dict[str, Any],
) -> LexicalPass:
    """BM25 (skipped for exact-looking input the exact lookup answered), then one expansion
    requery when the first pass was weak. ``literal_tier``: the windows holding an
    exact-looking query verbatim that no anchor posting answered (:func:`_literal`)."""
    out = LexicalPass(weak=not exact, evidence=RescueEvidence(exact=bool(exact)))
    if not plan.text or (plan.exact_looking and exact) or not plan.terms:
        return out
    # One memo reader for the pass, the feedback statistics and the requery: the requery reads
    # and decodes only the expansion terms' postings.
    params = ctx.params
    postings = ctx.postings.reader(memo=True)
    # Stem terms count in the calibrated score like their words, at their weight
    # (lexical_candidates); the weak test and the expansion read the query's own words, so a
    # pass is not called strong on word forms alone.
    stem_weights = {t: params.stem_weight for t in plan.stems}
    cands, idfs = lexical_candidates(
        ctx.postings,
        visible,
        plan.terms + plan.stems,
        k=fetch,
        scored_terms=plan.terms,
        only=plan.only,
        weights=stem_weights or None,
        reader=postings,
        params=params,
    )
    out.idfs = idfs
    out.saturated = len(cands) >= fetch
    out.literal = literal_tier
    literal = {c.wid for c in out.literal}
    first = [c for c in cands if c.wid not in literal]
    out.evidence = rescue_evidence(
        [c.score for c in first[:2]],
        first[0].matched_terms if first else [],
        {t: idfs[t] for t in plan.terms} if plan.stems else idfs,
        content_words(plan.terms),
        exact=bool(exact or literal),
    )
    out.weak = weak_pass(out.evidence, params)
    if out.weak and cands and params.expansion:
        weighted = expand.rm3_weighted(ctx.reader, postings, visible, cands, plan.terms, params)
        out.expanded = [term for term, _ in weighted]
        if out.expanded:
            cands, _ = lexical_candidates(
                ctx.postings,
                visible,
                plan.terms + plan.stems + out.expanded,
                k=fetch,
                scored_terms=plan.terms,
                only=plan.only,
                weights={t: params.expansion_weight * w for t, w in weighted} | stem_weights,
                reader=postings,
                params=params,
            )
    taken = literal | {e.wid for e in exact}
    out.candidates = [c for c in cands if c.wid not in taken]
    stages["lexical"] = len(out.candidates)
    stages["expanded"] = out.expanded
    return out


def _semantic(
    ctx: SearchContext,
    req: SearchRequest,
    plan: QueryPlan,
    visible: Visible,
    answered: bool,
    weak: bool,
    k: int,
    stages: dict[str, Any],
    ahead: AheadQuery | None = None,
) -> SemanticOutcome | None:
    """The embedding mode when the policy asks for it (never for exact-looking input the exact
    tier answered, nor before anything is embedded: no query embedding is paid for then). A
    request that names no policy (one not parsed by the engine's handler, which fills in the
    setting) runs the default policy. A strict search with policy ``always`` fails when the mode
    cannot run at all: ``disabled`` (semantic switched off), ``not-embedded`` (no vector yet).
    ``weak``: the ``auto`` rescue trigger fired (:func:`~cwcore.retrieve.semantic.rescue`)."""
    policy = req.semantic_policy or DEFAULT_POLICY
    if not plan.text or (plan.exact_looking and answered) or policy == "never":
        return None
    asked = req.strict and policy == "always"  # a strict search that asked for the mode outright
    if ctx.semantic is None or not ctx.semantic.settings.semantic_retrieval:
        if asked:
            raise errors.unavailable(errors.DISABLED, "semanticRetrieval is off")
        return None
    if ctx.semantic.index().rows == 0:
        if asked:
            raise errors.unavailable(
                errors.NOT_EMBEDDED,
                "no window is embedded yet: the semantic worker embeds them in the background",
            )
        return None
    outcome = semantic_tier(
        ctx.semantic,
        visible,
        plan.text,
        k,
        policy=policy,
        weak=weak,
        strict=req.strict,
        params=ctx.params,
        ahead=ahead,
    )
    return outcome


def _structural(
    ctx: SearchContext,
    req: SearchRequest,
    plan: QueryPlan,
    visible: Visible,
    lex: LexicalPass,
    stages: dict[str, Any],
) -> list[Candidate]:
    if not req.relation:
        return []
    by_wid = {c.wid: c for c in lex.candidates} if plan.text else None
    found = structural_candidates(ctx.store, visible, req.relation, by_wid)
    stages["structural"] = len(found)
    return found


def _fuse(
    ctx: SearchContext,
    visible: Visible,
    exact: list[Candidate],
    structural: list[Candidate],
    lexical: list[Candidate],
    semantic: list[Candidate],
) -> list[Ranked]:
    """Every candidate in final tier order: exact, structural, then the lexical/semantic tier
    ordered by RRF and the importance prior (order only: presented scores never change)."""
    # Every candidate passed Visible.filter, so its window record is loaded.
    record = visible.record
    out: list[Ranked] = []
    taken: set[int] = set()
    for tier in (exact, structural):
        for cand in tier:
            if cand.wid not in taken:
                taken.add(cand.wid)
                out.append(Ranked(cand, record(cand.wid)))
    pool: dict[int, Candidate] = {}
    for cand in lexical + semantic:
        if cand.wid in taken:
            continue
        best = pool.get(cand.wid)
        if best is None or cand.score > best.score:
            if best is not None:
                cand.matched_terms = cand.matched_terms or best.matched_terms
            pool[cand.wid] = cand
    if not pool:
        return out
    ordinal = {w: int(record(w)["ordinal"]) for w in pool}
    prior = importance(ctx.store, sorted(set(ordinal.values())), ctx.params)
    context = context_prior({w: record(w) for w in pool}, visible.scope.depth, ctx.params)
    lex = [c for c in lexical if c.wid in pool]
    sem = [c for c in semantic if c.wid in pool]
    fused = fuse_tier(
        [(c.wid, c.score) for c in lex],
        [(c.wid, c.score if c.blend is None else c.blend) for c in sem],
        {w: prior.get(o, 1.0) * context[w] for w, o in ordinal.items()},
        # Equal BM25 (or cosine) is equal evidence: one shared rank, so recency orders them.
        ties={"lexical": [c.raw for c in lex], "semantic": [c.raw for c in sem]},
        params=ctx.params,
    )
    for e in fused:
        wid = e.key
        trace = {
            "rrf": round(e.fused.rrf, 6),
            "fused": round(e.fused.order, 6),
            "importance": round(e.prior, 4),
            "order": round(e.order, 6),
            "ranks": e.fused.ranks,
        }
        out.append(Ranked(pool[wid], record(wid), trace))
    return out


def _literal(
    ctx: SearchContext, plan: QueryPlan, visible: Visible, exact: list[Candidate]
) -> list[Candidate]:
    """An exact-looking query that is not an indexed anchor on its own (a quoted phrase, part of
    a longer error line): the windows holding it verbatim, wherever BM25 ranks them, still form
    the exact tier (:func:`~cwcore.retrieve.exact.phrase_candidates`)."""
    if not plan.text or not plan.exact_looking or exact or not plan.terms:
        return []
    return phrase_candidates(
        ctx.postings, visible, plan.anchors[0], plan.terms, plan.only, ctx.params
    )

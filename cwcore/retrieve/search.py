"""Explicit search: tiers, expansion, fusion, collapse, hits (spec 000, spec 004, BRIEF §3).

Order of work:

1. Exact lookup first: the query's anchors (paths, symbols, errors, quoted strings, values).
   Exact-looking input is not broken into OR terms unless the exact lookup found nothing.
2. Structural candidates when a ``relation`` is asked for (ranked by the query if given).
3. Lexical BM25 over windows; when that pass is weak (no exact candidate, and a low top score
   or coverage) one RM3/Bo1 expansion requery with at most 8 terms from the top windows.
4. Tiers never mix: exact above structural above lexical/semantic. Within the lexical tier,
   RRF fusion with the blended normalized score and the importance prior (capped 1.15×) order
   candidates; neither changes the presented score or band.
5. One hit per document (its best window); exact duplicates and ≥ 80 % overlapping ranges
   collapse; then the hits get snippets, locators (under one lease) and provenance.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from cwcore.index import anchors as anchor_mod
from cwcore.index import derived
from cwcore.index.postings import PostingIndex
from cwcore.recall.locator import Locator, Signer, create_lease
from cwcore.retrieve import bands, expand
from cwcore.retrieve.candidates import Candidate, Visible, scope_wids
from cwcore.retrieve.exact import anchor_stats, exact_tier
from cwcore.retrieve.lexical import lexical_candidates, query_terms, structural_candidates
from cwcore.retrieve.request import SearchRequest
from cwcore.retrieve.scope import resolve
from cwcore.retrieve.snippets import literal_spans, make_snippet, term_spans
from cwcore.store import keys
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store

LITERAL_CHECK = 30  # lexical candidates checked for a verbatim exact-looking query
FETCH_PER_HIT = 4  # lexical windows fetched per requested hit (several windows share a document)
WEAK_SCORE = 0.5
WEAK_COVERAGE = 0.6
IMPORTANCE_CAP = 1.15
TIER = {"exact": 0, "structural": 1, "lexical": 2, "semantic": 2}
FEEDBACK = keys.KeyLayout("recall-feedback", 0xB1, ("u32",))

EMPTY_ADVICE = (
    "No archived evidence matched. Do not answer from memory as if it were found: check the "
    "current files and state, try other words or a wider scope, or ask the user."
)


@dataclass
class SearchContext:
    store: Store
    reader: Reader
    postings: PostingIndex
    signer: Signer
    lease_minutes: float
    semantic: Any = None  # cwcore.semantic.runtime.Semantic, loaded lazily by the engine
    rerank_candidates: int = 40


def _importance(store: Store, ordinals: list[int]) -> dict[int, float]:
    """The stored intrinsic prior times the live recall counter, capped at 1.15."""
    # The namespace prefix is encoded once; a u32 field is 4 big-endian bytes.
    base = derived.IMPORTANCE.prefix(derived.IMPORTANCE_NAMESPACE)
    raws = store.get_many("importance", [base + o.to_bytes(4, "big") for o in ordinals])
    counts = store.get_many("feedback", [FEEDBACK.encode(o) for o in ordinals])
    out = {}
    for ordinal, raw, count in zip(ordinals, raws, counts, strict=True):
        prior = derived.unpack_float(raw) if raw else 1.0
        recalled = int.from_bytes(count, "big") if count else 0
        out[ordinal] = min(IMPORTANCE_CAP, prior * (1 + 0.02 * min(recalled, 5)))
    return out


def record_recall(store: Store, ordinal: int) -> None:
    """The relevance-feedback log: one more recall of a searched document."""
    key = FEEDBACK.encode(ordinal)
    with store.lock:
        raw = store.get("feedback", key)
        count = (int.from_bytes(raw, "big") if raw else 0) + 1
        batch = store.batch()
        batch.put("feedback", key, count.to_bytes(8, "big"))
        store.commit(batch)


def _rerank(
    ctx: SearchContext,
    query: str,
    terms: list[str],
    entries: list[tuple[Candidate, Any]],  # (candidate, TierEntry), fused order
    records: dict[int, dict[str, Any]],
    stages: dict[str, Any],
    strict: bool,
) -> list[tuple[Candidate, Any]]:
    """Reorder the fused tier's head by the cross-encoder; silently unchanged when it is not
    installed or fails. Scored candidates get ``reranked``; presented scores never change."""
    assert ctx.semantic is not None
    head = entries[: ctx.rerank_candidates]
    if len(head) < 2:
        return entries
    if not strict and not ctx.semantic.can_rerank():
        stages["rerank"] = {"candidates": len(head), "used": False, "ms": 0.0}
        return entries  # not installed or disabled: skip reading the candidates' text
    texts: list[str] = []
    spans: list[tuple[int, int]] = []
    for cand, _ in head:
        record = records[cand.wid]
        manifest = ctx.reader.manifest(record["documentId"], int(record["version"]))
        data = ctx.reader.read_bytes(manifest, record["byteStart"], record["byteEnd"])
        text = data.decode("utf-8", "ignore")
        texts.append(text)
        # The model sees ~256 tokens centred on the match; a semantic-only hit has no term
        # match and is read from its start.
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
        return entries
    for cand, _ in head:
        cand.reranked = True
    order = sorted(range(len(head)), key=lambda i: (-scores[i], i))  # stable on ties
    return [head[i] for i in order] + entries[len(head) :]


def _literal_matches(
    ctx: SearchContext, visible: Visible, anchor: anchor_mod.Anchor, pool: list[Candidate]
) -> list[Candidate]:
    """Lexical candidates whose window text contains ``anchor`` verbatim (case-sensitive)."""
    found = []
    for cand in pool:
        record = visible.records.get(cand.wid)
        if record is None:
            continue
        manifest = ctx.reader.manifest(record["documentId"], int(record["version"]))
        text = ctx.reader.read_bytes(manifest, record["byteStart"], record["byteEnd"])
        if anchor.value.encode("utf-8", "surrogatepass") in text:
            exact = Candidate(cand.wid, "exact", 1.0, 1.0, anchor.match_type)
            exact.literals = [anchor.value]
            exact.matched_terms = [anchor.value]
            found.append(exact)
    return found


def _fetch_depth(limit: int) -> int:
    return max(limit * FETCH_PER_HIT, limit + 40)


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> float:
    if a["documentId"] != b["documentId"]:
        return 0.0
    lo, hi = max(a["byteStart"], b["byteStart"]), min(a["byteEnd"], b["byteEnd"])
    shorter = min(a["byteEnd"] - a["byteStart"], b["byteEnd"] - b["byteStart"]) or 1
    return max(0, hi - lo) / shorter


def search(ctx: SearchContext, req: SearchRequest) -> dict[str, Any]:
    started = time.perf_counter()
    gen = derived.generation(ctx.store)
    scope = resolve(ctx.reader, req)
    visible = Visible(ctx.store, ctx.reader, scope, int(gen.get("maxWid", 0)))
    query = req.query or ""
    stages: dict[str, Any] = {}

    # 1. exact
    found_anchors = anchor_mod.extract(query) if query else []
    exact_looking = bool(query) and anchor_mod.is_exact_looking(query)
    if exact_looking and not any(a.start == 0 and a.end == len(query) for a in found_anchors):
        stripped = query.strip("\"'`")
        found_anchors = [anchor_mod.Anchor(0, len(stripped), stripped, "quoted"), *found_anchors]
    only = scope_wids(ctx.store, ctx.reader, scope.sessions) if query else None
    all_terms = query_terms(query, req.expansion_terms) if query else []
    n_scope = len(only) if only is not None else ctx.postings.manifest().live_docs
    anchor_info = anchor_stats(ctx.store, visible, found_anchors, n_scope) if found_anchors else []
    exact = exact_tier(ctx.postings, anchor_info, all_terms, only)
    stages["exact"] = len(exact)
    stages["anchors"] = [
        {"value": a.anchor.value[:80], "df": a.df, "specific": a.specific} for a in anchor_info
    ]

    # 2 + 3. lexical (skipped for exact-looking input the exact lookup answered)
    lexical: list[Candidate] = []
    expanded: list[str] = []
    idfs: dict[str, float] = {}
    weak_lexical = not exact
    run_lexical = bool(query) and not (exact_looking and exact)
    terms = all_terms if run_lexical else []
    if terms:
        # Enough windows to fill ``limit`` distinct documents after the one-hit-per-document
        # collapse; deepened below when the collapse leaves the page short.
        fetch = _fetch_depth(req.limit)
        lexical, idfs = lexical_candidates(ctx.postings, visible, terms, k=fetch, only=only)
        if exact_looking and not exact:
            # The literal was not an indexed anchor on its own (e.g. part of a longer error
            # line): windows that contain it verbatim still belong to the exact tier.
            exact = _literal_matches(ctx, visible, found_anchors[0], lexical[:LITERAL_CHECK])
            stages["literal"] = len(exact)
            lexical = [c for c in lexical if c.wid not in {e.wid for e in exact}]
        top = lexical[0] if lexical else None
        weak = weak_lexical = not exact and (
            top is None
            or top.score < WEAK_SCORE
            or sum(idfs.get(t, 0) for t in top.matched_terms) / (sum(idfs.values()) or 1)
            < WEAK_COVERAGE
        )
        if weak and lexical:
            expanded = expand.rm3_terms(ctx.reader, ctx.postings, visible, lexical, terms)
            if expanded:
                lexical, _ = lexical_candidates(
                    ctx.postings,
                    visible,
                    terms + expanded,
                    k=fetch,
                    scored_terms=terms,
                    only=only,
                )
        in_exact = {e.wid for e in exact}
        lexical = [c for c in lexical if c.wid not in in_exact]
        stages["lexical"] = len(lexical)
        stages["expanded"] = expanded

    # Semantic mode (policy auto: only after a weak lexical pass; never on preflight).
    semantic: list[Candidate] = []
    outcome = None
    if (
        ctx.semantic is not None
        and query
        and not (exact_looking and exact)
        and req.semantic_policy != "never"
        and ctx.semantic.index().rows > 0  # nothing embedded yet: no query embedding either
    ):
        from cwcore.semantic.candidates import semantic_tier

        outcome = semantic_tier(
            ctx.semantic,
            visible,
            query,
            req.limit,
            policy=req.semantic_policy,
            weak=weak_lexical,
            strict=req.strict,
        )
        semantic = outcome.candidates
        stages["semantic"] = outcome.trace()

    structural: list[Candidate] = []
    if req.relation:
        by_wid = {c.wid: c for c in lexical} if query else None
        structural = structural_candidates(ctx.store, visible, req.relation, by_wid)
        stages["structural"] = len(structural)
        if not query:
            lexical = []

    # 4. tiers, fusion within the lexical tier, importance prior (order only)
    taken: set[int] = set()
    ordered: list[tuple[Candidate, dict[str, Any]]] = []
    # Every candidate passed Visible.filter, so its window record is loaded.
    records: dict[int, dict[str, Any]] = {w: r for w, r in visible.records.items() if r is not None}
    for tier in (exact, structural):
        for cand in tier:
            if cand.wid not in taken:
                taken.add(cand.wid)
                ordered.append((cand, {}))
    pool: dict[int, Candidate] = {}
    for cand in lexical + semantic:
        if cand.wid in taken:
            continue
        best = pool.get(cand.wid)
        if best is None or cand.score > best.score:
            if best is not None:
                cand.matched_terms = cand.matched_terms or best.matched_terms
            pool[cand.wid] = cand
    if pool:
        from cwcore.semantic.hybrid import fuse_tier

        prior = _importance(ctx.store, sorted({records[w]["ordinal"] for w in pool}))
        fused_tier = fuse_tier(
            [(str(c.wid), c.score) for c in lexical if c.wid in pool],
            [(str(c.wid), c.score) for c in semantic if c.wid in pool],
            {str(w): prior.get(records[w]["ordinal"], 1.0) for w in pool},
        )
        entries = [(pool[int(e.key)], e) for e in fused_tier]
        if req.rerank and ctx.semantic is not None and query:
            entries = _rerank(ctx, query, terms + expanded, entries, records, stages, req.strict)
        for cand, e in entries:
            ordered.append(
                (
                    cand,
                    {
                        "rrf": round(e.fused.rrf, 6),
                        "fused": round(e.fused.order, 6),
                        "importance": round(e.prior, 4),
                        "order": round(e.order, 6),
                        "ranks": e.fused.ranks,
                    },
                )
            )

    # 5. one hit per document, overlap collapse, limit
    hits: list[tuple[Candidate, dict[str, Any], dict[str, Any]]] = []
    seen_docs: set[str] = set()
    for cand, trace in ordered:
        record = records[cand.wid]
        # One hit per turn: a tool-result document shares its payload chunks with its turn
        # (aliases of the same canonical text), and continuations belong to their first part.
        turn = record.get("turn") or record["documentId"]
        if record["documentId"] in seen_docs or turn in seen_docs:
            continue
        if any(_overlap(record, other) >= 0.8 for _, _, other in hits):
            continue
        seen_docs.update((record["documentId"], turn))
        hits.append((cand, trace, record))
        if len(hits) >= req.limit:
            break

    results = _materialize(ctx, req, hits, int(gen["n"]), terms + expanded, idfs)
    status = "ok"
    if not results:
        status = "empty"
    elif outcome is not None and outcome.failure:
        status = "lexical_fallback"
    elif not gen.get("complete", True):
        status = "partial"
    response: dict[str, Any] = {
        "query": req.query,
        "relation": req.relation,
        "results": results,
        "retrieval_status": status,
        "semantic_search_used": bool(outcome and outcome.used),
        "generation": int(gen["n"]),
        "timing_ms": round((time.perf_counter() - started) * 1000, 3),
        "stages": stages,
    }
    if outcome is not None and outcome.failure:
        response["semantic_failure"] = outcome.failure
    if not results:
        response["advice"] = EMPTY_ADVICE
    return response


def _materialize(
    ctx: SearchContext,
    req: SearchRequest,
    hits: list[tuple[Candidate, dict[str, Any], dict[str, Any]]],
    generation: int,
    search_terms: list[str],
    idfs: dict[str, float],
) -> list[dict[str, Any]]:
    if not hits:
        return []
    lease, expires = create_lease(
        ctx.store, ctx.lease_minutes, [r["documentId"] for _, _, r in hits]
    )
    scores = [c.score for c, _, _ in hits]
    results = []
    for i, (cand, trace, record) in enumerate(hits):
        manifest = ctx.reader.manifest(record["documentId"], int(record["version"]))
        data = ctx.reader.read_bytes(manifest, record["byteStart"], record["byteEnd"])
        text = data.decode("utf-8", "surrogatepass")
        if cand.literals:
            spans = literal_spans(text, cand.literals)
        elif cand.spans:
            spans = [
                (s - record["start"], e - record["start"])
                for s, e in cand.spans
                if record["start"] <= s < record["end"]
            ]
        else:
            # All hits share one compiled pattern of the search's terms.
            spans = term_spans(text, search_terms or cand.matched_terms)
        snippet, highlights = make_snippet(text, spans, weights=idfs)
        first = spans[0] if spans else (0, 0)
        match_start = record["byteStart"] + len(text[: first[0]].encode("utf-8", "surrogatepass"))
        match_end = record["byteStart"] + len(text[: first[1]].encode("utf-8", "surrogatepass"))
        message_key = _message_at(manifest, match_start) or (
            record["keys"][0] if record["keys"] else ""
        )
        others = [s for j, s in enumerate(scores) if j != i]
        locator = ctx.signer.sign(
            Locator(
                record["documentId"],
                int(record["version"]),
                int(record["index"]),
                match_start,
                match_end,
                generation,
                lease,
                expires,
                record["project"],
                record["session"],
                req.scope,
                str(manifest["digest"]),
            )
        )
        hit: dict[str, Any] = {
            "documentId": record["documentId"],
            "version": int(record["version"]),
            "kind": record["kind"],
            "score": cand.score,
            "band": bands.band(cand.score),
            "matchType": cand.match_type,
            "margin": round(max(0.0, cand.score - max(others, default=0.0)), 4),
            "snippet": snippet,
            "highlights": highlights,
            "historical": True,
            "superseded": False,
            "locator": locator,
            "reranked": cand.reranked,
            "matchedTerms": cand.matched_terms,
            "expandedTerms": cand.expanded_terms,
            "score_metadata": _score_metadata(cand, trace),
            "source": {
                "sessionId": record["session"],
                "turnId": record.get("turn") or record["documentId"],
                "messageKey": message_key,
                "messageKeys": record["keys"],
                "project": record["project"],
                "agent": record["agent"],
                "timestamp": _timestamp(manifest, message_key) or record["created"],
            },
        }
        if record["kind"] == "markdown":
            from cwcore.markdown.hits import markdown_fields

            hit.update(markdown_fields(manifest, record, match_start))
        results.append(hit)
    return results


def _message_at(manifest: dict[str, Any], byte_pos: int) -> str | None:
    for part in manifest["parts"]:
        if part["start"] <= byte_pos < max(part["end"], part["start"] + 1):
            return str(part["key"])
    return None


def _timestamp(manifest: dict[str, Any], key: str) -> str | None:
    for part in manifest["parts"]:
        if part["key"] == key:
            return part.get("ts")
    return None


def _score_metadata(cand: Candidate, trace: dict[str, Any]) -> dict[str, Any]:
    """Each stage's value with its type and direction (spec 004 ``score_metadata``)."""
    raw_type = {
        "exact": "anchor-coverage",
        "lexical": "bm25f",
        "structural": "bm25f",
        "semantic": "cosine",
    }[cand.mode]
    stages = [
        {
            "stage": cand.mode,
            "type": raw_type,
            "direction": "higher-is-better",
            "value": round(cand.raw, 6),
        },
        {
            "stage": "calibrated",
            "type": "calibrated-confidence",
            "direction": "higher-is-better",
            "value": cand.score,
        },
    ]
    if trace:
        stages += [
            {
                "stage": "fusion",
                "type": "rrf-blend",
                "direction": "higher-is-better",
                "value": trace["fused"],
                "ranks": trace["ranks"],
            },
            {
                "stage": "importance",
                "type": "multiplier",
                "direction": "higher-is-better",
                "value": trace["importance"],
            },
        ]
    return {"mode": cand.mode, "tier": TIER[cand.mode], "presented": "calibrated", "stages": stages}

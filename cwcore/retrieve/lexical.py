"""Candidate generation for the lexical and structural modes (the exact tier is in
:mod:`cwcore.retrieve.exact`).

Each function returns :class:`Candidate` values for windows visible in the published generation
and admitted by the scope. Scores here are each mode's calibrated score in [0, 1]:

* **lexical** — ``sqrt(bm25 / upper) × idf_coverage``: ``upper`` is the BM25 score a window
  would get with every query term at saturating frequency and average length, and
  ``idf_coverage`` the IDF-weighted share of query terms the window contains. A window with every
  rare term scores high; one matching only common words scores low.
* **structural** — with a query, ``0.5 + 0.5 ×`` the window's lexical score; without one,
  ``0.7`` for the newest span of the relation, ``0.02`` less per older one (floor 0.3).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable

import numpy as np

from cwcore.clock import parse_time
from cwcore.index import bm25, derived
from cwcore.index.postings import PostingIndex, PostingReader
from cwcore.retrieve.candidates import Candidate, Visible
from cwcore.retrieve.params import DEFAULT, RetrievalParams
from cwcore.store import codec
from cwcore.store.rocks import Store
from cwcore.text.stems import is_prose, is_stem, stem_term
from cwcore.text.stopwords import GRAMMAR
from cwcore.text.tokenize import tokens

#: The scorer behind :func:`lexical_candidates`: ``"postings"`` (cw's own, the default) or
#: ``"tantivy"`` (an experiment, :mod:`cwcore.index.tantivy_engine`; docs/performance.md).
LEXICAL_ENGINE = os.environ.get("CW_LEXICAL_ENGINE", "postings")

#: Relation postings kept per structural search (all of them in the request's scope).
RELATION_SCAN = 2_000
#: Relation postings read at most to find them (a scope holding few of a common relation).
RELATION_SCAN_MAX = 100_000


def query_terms(query: str, extra: Iterable[str] = ()) -> list[str]:
    """The query's distinct terms without grammar words (all of them when every term is one),
    then any extra terms. Grammar words are indexed, so a query made only of them still matches,
    but in a longer query they only add long posting lists."""
    every = list(dict.fromkeys(tokens(query)))
    terms = [t for t in every if t not in GRAMMAR] or every
    for term in extra:
        for t in tokens(term):
            if t not in terms:
                terms.append(t)
    return terms


def _scorer(index: PostingIndex) -> Callable[..., bm25.Hits]:
    if LEXICAL_ENGINE == "tantivy":
        from cwcore.index import tantivy_engine  # only on request: tantivy is optional

        # tantivy takes and ignores ``k1``/``b``: it scores with its own (Lucene's defaults).
        return tantivy_engine.scorer(index)
    return bm25.search


def _upper(idfs: dict[str, float], terms: list[str], k1: float) -> float:
    return sum(idfs.get(t, 0.0) for t in terms) * (k1 + 1)


def _stems_of(
    basis: list[str], terms: list[str], weights: dict[str, float] | None
) -> dict[str, tuple[str, float]]:
    """Each scored word whose stem term the query holds: ``{word: (stem term, its weight)}``.
    The calibration counts a stem term like its word, at its weight: in the upper bound (so a
    window holding both at saturation scores as a window without stems did), and in coverage
    (a window holding only another form covers that share of the word)."""
    if not any(is_stem(t) for t in terms):
        return {}
    weights = weights or {}
    present = set(terms)
    out: dict[str, tuple[str, float]] = {}
    for word in basis:
        if is_prose(word) and (stem := stem_term(word)) in present:
            out[word] = (stem, weights.get(stem, 1.0))
    return out


def lexical_candidates(
    index: PostingIndex,
    visible: Visible,
    terms: list[str],
    *,
    k: int,
    scored_terms: list[str] | None = None,
    only: np.ndarray | None = None,
    weights: dict[str, float] | None = None,
    reader: PostingReader | None = None,
    params: RetrievalParams = DEFAULT,
) -> tuple[list[Candidate], dict[str, float]]:
    """BM25 over windows; returns calibrated candidates (best first) and each term's idf.

    ``scored_terms`` are the terms coverage is measured against (the original query terms when
    ``terms`` includes expansion terms). ``reader``: the search's posting reader when several
    queries share one (a memo reader), else a fresh one of ``index``. ``params``: the BM25
    constants (``bm25_k1``, ``bm25_b``) of the scoring and of the calibration's upper bound."""
    if not terms:
        return [], {}
    reader = reader or index.reader()
    out: list[Candidate] = []
    idfs: dict[str, float] = {}
    # A little headroom over k covers windows the scope or a tombstone removes; a scope that
    # removes most hits triggers one deeper pass below.
    fetch = k + 10
    run_bm25 = _scorer(index)
    basis = scored_terms or terms
    stem_of = _stems_of(basis, terms, weights)
    # Each stem term once in the upper bound, however many query words share it.
    stem_weight = {stem: w for stem, w in stem_of.values()}
    for attempt in range(2):
        hits = run_bm25(
            reader,
            terms,
            k=fetch,
            only=only,
            weights=weights,
            k1=params.bm25_k1,
            b=params.bm25_b,
        )
        idfs = {t: float(bm25.idf(df, hits.n_docs)) for t, df in hits.df.items()}
        for t in terms:
            idfs.setdefault(t, 0.0)
        upper = _upper(idfs, basis, params.bm25_k1) + (params.bm25_k1 + 1) * sum(
            w * idfs[stem] for stem, w in stem_weight.items()
        )
        upper = upper or 1.0
        # A word's share of coverage is its IDF; a word in no window as written but whose
        # stem is in some weighs its stem term's IDF (else a query of such words covers
        # nothing in any window).
        share = {t: idfs[t] for t in basis}
        for word, (stem, _) in stem_of.items():
            share[word] = share[word] or idfs[stem]
        total_idf = sum(share.values()) or 1.0
        ordinals = hits.ordinals.tolist()
        allowed = set(visible.filter(ordinals))
        out = []
        # Hits share few distinct term masks: each mask's terms and coverage are worked out once.
        by_mask: dict[int, tuple[list[str], list[str], float]] = {}
        for wid, raw, mask in zip(ordinals, hits.scores.tolist(), hits.masks.tolist(), strict=True):
            if wid not in allowed:
                continue
            terms_of = by_mask.get(mask)
            if terms_of is None:
                matched = [t for j, t in enumerate(hits.terms) if mask >> j & 1]
                held = set(matched)
                covered = sum(share[t] for t in matched if t in share)
                # A word the window holds only in another form covers its stem's weight.
                covered += sum(
                    w * share[word]
                    for word, (stem, w) in stem_of.items()
                    if stem in held and word not in held
                )
                covered /= total_idf
                terms_of = (
                    [t for t in matched if t in basis],
                    [t for t in matched if t not in basis and not is_stem(t)],
                    covered,
                )
                by_mask[mask] = terms_of
            score = math.sqrt(min(1.0, raw / upper)) * terms_of[2]
            cand = Candidate(wid, "lexical", round(score, 4), raw, "lexical")
            cand.matched_terms = list(terms_of[0])
            cand.expanded_terms = list(terms_of[1])
            out.append(cand)
        if len(out) >= k or len(hits) < fetch or attempt == 1:
            break
        fetch *= 20  # the scope filtered most hits away: look deeper once
    # The mode ranks by BM25 itself. Ordering by the calibrated score (which multiplies in the
    # share of query terms matched) was measured too: it lowered LongMemEval's session recall_all@5
    # from 0.937 to 0.916 and NDCG@10 from 0.925 to 0.917, and changed nothing on the agent logs.
    # Equal BM25: newest window first (docs/retrieval.md, "Order and ties").
    out.sort(key=lambda c: (-c.raw, -c.wid))
    return out, idfs


def structural_candidates(
    store: Store, visible: Visible, relation: str, lexical: dict[int, Candidate] | None
) -> list[Candidate]:
    """Windows of the scope holding a span of ``relation``; with a query, only those the
    lexical pass also matched, ranked by it; without one, latest message first.

    The relation's postings are read newest window first and the scope filter applies while
    they are read, so the :data:`RELATION_SCAN` postings kept are all in scope (other sessions
    or projects cannot use up the cut); at most :data:`RELATION_SCAN_MAX` postings are read in
    all. "Latest" is the time of the window's messages (its ``created``), not the order of
    import: a session imported late with older messages does not come first."""
    spans: dict[int, list[tuple[int, int]]] = {}
    admitted: list[int] = []
    kept = 0
    pending: list[int] = []  # windows read but not yet passed through the scope filter

    def admit() -> None:
        nonlocal kept
        for wid in visible.filter(pending):
            admitted.append(wid)
            kept += len(spans[wid])
        pending.clear()

    postings = store.scan("relations", derived.RELATION.prefix(relation), reverse=True)
    for read, (key, value) in enumerate(postings, start=1):
        _, raw_wid, _ = derived.RELATION.decode(key)
        wid = int(raw_wid)
        body = codec.decode_record(value, "relation")
        if wid not in spans:
            pending.append(wid)
            spans[wid] = []
        spans[wid].append((int(body["start"]), int(body["end"])))
        if len(pending) >= 256:
            admit()
            if kept >= RELATION_SCAN:
                break
        if read >= RELATION_SCAN_MAX:
            break
    admit()

    def when(wid: int) -> float:
        record = visible.records.get(wid)
        return parse_time(record["created"]).timestamp() if record else 0.0

    latest = sorted(admitted, key=lambda w: (-when(w), -w))
    out = []
    for rank, wid in enumerate(latest):
        if lexical is not None:
            lex = lexical.get(wid)
            if lex is None:
                continue
            score = 0.5 + 0.5 * lex.score
            cand = Candidate(wid, "structural", round(score, 4), lex.raw, f"structural-{relation}")
            cand.matched_terms = lex.matched_terms
        else:
            score = max(0.3, 0.7 - 0.02 * rank)
            cand = Candidate(wid, "structural", round(score, 4), 0.0, f"structural-{relation}")
        cand.spans = sorted(spans[wid])
        out.append(cand)
    order = {wid: i for i, wid in enumerate(latest)}
    out.sort(key=lambda c: (-c.score, order[c.wid]))
    return out

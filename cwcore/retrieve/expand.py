"""RM3/Bo1 pseudo-relevance expansion, deterministic and model-free (never on preflight).

Used only by explicit search, only when the first BM25 pass was weak: the top windows' own
vocabulary (their tokens, minus the query's terms, stopwords, digits and one- or two-letter
terms) is ranked by term frequency in those windows times corpus IDF, and at most
``expansion_terms`` (8) terms feed exactly one more BM25 query (the sizes are fields of
:class:`~cwcore.retrieve.params.RetrievalParams`). Hits name the expansion terms they
matched in ``expandedTerms``.
"""

from __future__ import annotations

import heapq

from cwcore.index import bm25
from cwcore.index.postings import PostingIndex, PostingReader
from cwcore.retrieve.candidates import Candidate, Visible
from cwcore.retrieve.params import DEFAULT, RetrievalParams
from cwcore.store.reader import Reader
from cwcore.text.stopwords import STOPWORDS
from cwcore.text.tokenize import term_counts


def rm3_terms(
    reader: Reader,
    index: PostingIndex,
    visible: Visible,
    top: list[Candidate],
    query: list[str],
    params: RetrievalParams = DEFAULT,
) -> list[str]:
    """At most ``params.expansion_terms`` expansion terms from the ``top`` windows, best
    first."""
    return [term for term, _ in rm3_weighted(reader, index, visible, top, query, params)]


def rm3_weighted(
    reader: Reader,
    index: PostingIndex | PostingReader,
    visible: Visible,
    top: list[Candidate],
    query: list[str],
    params: RetrievalParams = DEFAULT,
) -> list[tuple[str, float]]:
    """The expansion terms, best first, each with its relative weight in (0, 1]: its feedback
    score over the best term's (frequency in the top windows × corpus IDF). ``index`` may be
    the search's own posting reader, so the requery reuses the term plans read here. The
    feedback reads the first ``params.expansion_windows`` of ``top``; of their
    ``params.expansion_candidates`` most frequent terms, those in at least
    ``params.expansion_min_df`` windows (a term of one window is noise, not shared vocabulary)
    are ranked."""
    counts: dict[str, float] = {}
    asked = set(query)
    feedback = [
        c for c in top[: params.expansion_windows] if visible.records.get(c.wid) is not None
    ]
    visible.prefetch([c.wid for c in feedback])
    for cand in feedback:
        _, text = visible.text(cand.wid)
        # Counted per distinct term: the window's length (in kept terms) is their tf sum.
        kept = [(t, tf) for t, tf in term_counts(text).items() if len(t) > 2 and not t.isdigit()]
        total = sum(tf for _, tf in kept) or 1
        for term, tf in kept:
            if term in STOPWORDS or term in asked:
                continue
            counts[term] = counts.get(term, 0.0) + tf / total
    if not counts:
        return []
    postings = index if isinstance(index, PostingReader) else index.reader()
    snap = postings.snapshot()
    n = max(1, snap.manifest.live_docs)
    scored = []
    # The most frequent feedback terms (ties by term): a partial sort, the list being long.
    best_counts = heapq.nsmallest(params.expansion_candidates, [(-c, t) for t, c in counts.items()])
    for plan in postings.plan(snap, [t for _, t in best_counts]):
        if plan.df >= params.expansion_min_df:
            scored.append((counts[plan.term] * float(bm25.idf(plan.df, n)), plan.term))
    scored.sort(key=lambda x: (-x[0], x[1]))
    best = scored[0][0] if scored else 1.0
    return [(term, score / best) for score, term in scored[: params.expansion_terms]]

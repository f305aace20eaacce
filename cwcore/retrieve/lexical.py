"""Candidate generation per mode: exact anchors, structural relations, BM25 (with expansion).

Each function returns :class:`Candidate` values for windows visible in the published generation
and admitted by the scope. Scores here are each mode's calibrated score in [0, 1]:

* **exact** — ``0.85 + 0.15 × coverage``, coverage being the share of the query's anchors the
  window contains: a literal anchor hit is strong evidence whatever else the query says.
* **lexical** — ``sqrt(bm25 / upper) × idf_coverage``: ``upper`` is the BM25 score a window
  would get with every query term at saturating frequency and average length, and
  ``idf_coverage`` the IDF-weighted share of query terms the window contains. A window with every
  rare term scores high; one matching only common words scores low.
* **structural** — with a query, ``0.5 + 0.5 ×`` the window's lexical score; without one,
  ``0.7`` for the newest span of the relation, ``0.02`` less per older one (floor 0.3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from cwcore.index import bm25, derived
from cwcore.index.anchors import Anchor
from cwcore.index.postings import PostingIndex
from cwcore.index.tokenize import tokens
from cwcore.retrieve.scope import Scope
from cwcore.store import codec, keys
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store

EXACT_SCAN = 400  # exact postings read per anchor, newest first
RELATION_SCAN = 2_000


@dataclass
class Candidate:
    """One window's evidence in one mode."""

    wid: int
    mode: str  # "exact" | "structural" | "lexical"
    score: float  # calibrated, [0, 1]
    raw: float  # the mode's own raw score
    match_type: str
    matched_terms: list[str] = field(default_factory=list)
    expanded_terms: list[str] = field(default_factory=list)
    literals: list[str] = field(default_factory=list)  # exact values to highlight
    spans: list[tuple[int, int]] = field(default_factory=list)  # char spans (relations)
    reranked: bool = False  # the cross-encoder scored it (not necessarily moved it)
    window: dict | None = None


class Visible:
    """Loads window records once and applies generation visibility, tombstones and scope."""

    def __init__(self, store: Store, reader: Reader, scope: Scope, max_wid: int) -> None:
        self.store, self.reader, self.scope, self.max_wid = store, reader, scope, max_wid
        self.records: dict[int, dict | None] = {}

    def filter(self, wids: Iterable[int]) -> list[int]:
        wanted = [w for w in dict.fromkeys(wids) if 0 < w <= self.max_wid]
        missing = [w for w in wanted if w not in self.records]
        if missing:
            for wid, record in zip(
                missing, derived.window_records(self.store, missing), strict=True
            ):
                self.records[wid] = record
            ordinals = sorted({r["ordinal"] for w in missing if (r := self.records[w])})
            found = self.store.get_many("ordinals", [keys.TOMBSTONE.encode(o) for o in ordinals])
            dead = {o for o, t in zip(ordinals, found, strict=True) if t is not None}
            for wid in missing:
                record = self.records[wid]
                if record is not None and record["ordinal"] in dead:
                    self.records[wid] = None
        return [w for w in wanted if (r := self.records[w]) is not None and self.scope.admits(r)]


MAX_SCOPE_SESSIONS = 2_000


def scope_wids(store: Store, reader: Reader, sessions: frozenset[str] | None) -> np.ndarray | None:
    """Sorted window ids of the scope's sessions, so BM25 scores only them (branch isolation and
    session scope apply before any top-k limit). None when the scope is not session-bounded."""
    if sessions is None or len(sessions) > MAX_SCOPE_SESSIONS:
        return None
    ranges = [
        np.arange(first, first + count, dtype=np.uint32)
        for session in sorted(sessions)
        for first, count in derived.session_wid_ranges(store, session)
    ]
    if not ranges:
        return np.empty(0, dtype=np.uint32)
    return np.unique(np.concatenate(ranges))


def exact_candidates(store: Store, visible: Visible, anchors: list[Anchor]) -> list[Candidate]:
    found: dict[int, Candidate] = {}
    values = list(dict.fromkeys(a.value for a in anchors))
    kinds = {a.value: a for a in anchors}
    for value in values:
        prefix = derived.EXACT.prefix(derived.anchor_digest(value))
        wids = [
            int(derived.EXACT.decode(key)[1])
            for key, _ in store.scan("exact", prefix, reverse=True, limit=EXACT_SCAN)
        ]
        for wid in visible.filter(wids):
            cand = found.setdefault(wid, Candidate(wid, "exact", 0.0, 0.0, kinds[value].match_type))
            cand.literals.append(value)
    for cand in found.values():
        # The most specific anchor kind the window matched names the match type.
        cand.match_type = min((kinds[v] for v in cand.literals), key=lambda a: a.rank).match_type
    for cand in found.values():
        # A query anchor inside a longer one the window matched counts as matched too: a path's
        # file name is an anchor of the query, but the index keeps the path as one anchor, so a
        # window with the full path must not score below one that only names the file.
        matched = set(cand.literals)
        covered = [v for v in values if any(v in m for m in matched)]
        coverage = len(covered) / max(1, len(values))
        cand.raw = coverage
        cand.score = round(0.85 + 0.15 * coverage, 4)
        cand.matched_terms = list(dict.fromkeys(cand.literals))
    return sorted(found.values(), key=lambda c: (-c.score, -c.wid))


def query_terms(query: str, extra: Iterable[str] = ()) -> list[str]:
    terms = list(dict.fromkeys(tokens(query)))
    for term in extra:
        for t in tokens(term):
            if t not in terms:
                terms.append(t)
    return terms


def _upper(idfs: dict[str, float], terms: list[str]) -> float:
    return sum(idfs.get(t, 0.0) for t in terms) * (bm25.K1 + 1)


def lexical_candidates(
    index: PostingIndex,
    visible: Visible,
    terms: list[str],
    *,
    k: int,
    scored_terms: list[str] | None = None,
    only: np.ndarray | None = None,
) -> tuple[list[Candidate], dict[str, float]]:
    """BM25 over windows; returns calibrated candidates (best first) and each term's idf.

    ``scored_terms`` are the terms coverage is measured against (the original query terms when
    ``terms`` includes expansion terms)."""
    if not terms:
        return [], {}
    reader = index.reader()
    out: list[Candidate] = []
    idfs: dict[str, float] = {}
    # A little headroom over k covers windows the scope or a tombstone removes; a scope that
    # removes most hits triggers one deeper pass below.
    fetch = k + 10
    for attempt in range(2):
        hits = bm25.search(reader, terms, k=fetch, only=only)
        idfs = {t: float(bm25.idf(df, hits.n_docs)) for t, df in hits.df.items()}
        for t in terms:
            idfs.setdefault(t, 0.0)
        basis = scored_terms or terms
        upper = _upper(idfs, basis) or 1.0
        total_idf = sum(idfs[t] for t in basis) or 1.0
        ordinals = [int(o) for o in hits.ordinals]
        allowed = set(visible.filter(ordinals))
        out = []
        for i, wid in enumerate(ordinals):
            if wid not in allowed:
                continue
            mask = int(hits.masks[i])
            matched = [t for j, t in enumerate(hits.terms) if mask >> j & 1]
            covered = sum(idfs.get(t, 0.0) for t in matched if t in basis) / total_idf
            score = math.sqrt(min(1.0, float(hits.scores[i]) / upper)) * covered
            cand = Candidate(wid, "lexical", round(score, 4), float(hits.scores[i]), "lexical")
            cand.matched_terms = [t for t in matched if t in basis]
            cand.expanded_terms = [t for t in matched if t not in basis]
            out.append(cand)
        if len(out) >= k or len(hits) < fetch or attempt == 1:
            break
        fetch *= 20  # the scope filtered most hits away: look deeper once
    # The mode's own ranking follows its calibrated score (coverage of rare terms matters more
    # than raw BM25 mass), so presented scores and order agree within the tier.
    out.sort(key=lambda c: (-c.score, -c.raw, c.wid))
    return out, idfs


def structural_candidates(
    store: Store, visible: Visible, relation: str, lexical: dict[int, Candidate] | None
) -> list[Candidate]:
    """Windows holding a span of ``relation``, newest first; with a query, only those the
    lexical pass also matched, ranked by it."""
    spans: dict[int, list[tuple[int, int]]] = {}
    for key, value in store.scan(
        "relations", derived.RELATION.prefix(relation), reverse=True, limit=RELATION_SCAN
    ):
        _, wid, _ = derived.RELATION.decode(key)
        body = codec.decode_record(value, "relation")
        spans.setdefault(int(wid), []).append((int(body["start"]), int(body["end"])))
    out = []
    for rank, wid in enumerate(visible.filter(sorted(spans, reverse=True))):
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
    out.sort(key=lambda c: (-c.score, -c.wid))
    return out

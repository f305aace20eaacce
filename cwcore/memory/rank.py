"""Relevance of memory records to the current prompt (after the processor pipeline).

Tiers:

* **FTS** (this module, today's default): BM25 over each record's statement and tags, computed
  over the records that passed the pipeline (Lucene idf, k1 = 1.2, b = 0.75, the repository
  tokenizer, stopwords dropped from the query). A record matching no query term scores 0 and is
  not relevant.
* **Hybrid** (the default when ``semanticRetrieval`` is on): FTS and semantic rank orders
  combine by weighted Reciprocal Rank Fusion — weight :data:`FTS_WEIGHT` (0.45) for FTS,
  :data:`SEMANTIC_WEIGHT` (0.55) for semantic, ``k`` = :data:`RRF_K` (60). The semantic order
  (``semantic=callable(prompt, records) -> [(id, score)]``, see
  ``cwcore.memory.context.semantic_ranker``) holds the records whose statement and tags score at
  least :data:`SEMANTIC_MIN` against the prompt. If it fails, FTS ranks alone.
* **Term matching** fallback when FTS fails: the number of distinct query terms a record holds.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cwcore.text.stopwords import STOPWORDS
from cwcore.text.tokenize import tokens

FTS_WEIGHT = 0.45
SEMANTIC_WEIGHT = 0.55
RRF_K = 60
#: Lowest calibrated semantic score of a relevant record: the "moderate" band's floor, so a
#: record unrelated to the prompt is not selected just because semantic ranking orders them all.
SEMANTIC_MIN = 0.5
K1 = 1.2
B = 0.75

SemanticRanker = Callable[[str, Sequence[dict[str, Any]]], list[tuple[str, float]]]


@dataclass(frozen=True)
class Ranked:
    """Relevant records, best first, with their scores and the tier that ranked them."""

    order: list[tuple[str, float]]
    mode: str  # "fts" | "hybrid" | "term-match"


def query_terms(prompt: str) -> list[str]:
    terms = list(dict.fromkeys(tokens(prompt)))
    topical = [t for t in terms if t not in STOPWORDS and len(t) > 1]
    return topical


def record_text(record: dict[str, Any]) -> str:
    """What ranking reads of a record: its statement and tags."""
    return " ".join([record.get("statement", ""), *record.get("tags", [])])


def record_terms(record: dict[str, Any]) -> list[str]:
    return tokens(record.get("statement", "")) + [
        t for tag in record.get("tags", []) for t in tokens(tag)
    ]


def bm25(prompt: str, records: Sequence[dict[str, Any]]) -> list[tuple[str, float]]:
    """BM25 scores (> 0 only) over ``records``, best first (ties: id)."""
    terms = query_terms(prompt)
    if not terms or not records:
        return []
    docs = [Counter(record_terms(r)) for r in records]
    lengths = [sum(d.values()) for d in docs]
    avgdl = (sum(lengths) / len(docs)) or 1.0
    n = len(docs)
    df = {t: sum(1 for d in docs if t in d) for t in terms}
    idf = {t: math.log1p((n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms}
    out = []
    for record, doc, dl in zip(records, docs, lengths, strict=True):
        score = 0.0
        for t in terms:
            tf = doc.get(t, 0)
            if tf:
                score += idf[t] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl))
        if score > 0:
            out.append((str(record["id"]), score))
    out.sort(key=lambda x: (-x[1], x[0]))
    return out


def term_match(prompt: str, records: Sequence[dict[str, Any]]) -> list[tuple[str, float]]:
    terms = set(query_terms(prompt))
    out = []
    for record in records:
        shared = len(terms & set(record_terms(record)))
        if shared:
            out.append((str(record["id"]), float(shared)))
    out.sort(key=lambda x: (-x[1], x[0]))
    return out


def rrf(fts: list[tuple[str, float]], semantic: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """Weighted RRF of two rank orders: Σ weight / (k + rank)."""
    scores: dict[str, float] = {}
    for weight, order in ((FTS_WEIGHT, fts), (SEMANTIC_WEIGHT, semantic)):
        for rank, (rid, _) in enumerate(order, start=1):
            scores[rid] = scores.get(rid, 0.0) + weight / (RRF_K + rank)
    return sorted(scores.items(), key=lambda x: (-x[1], x[0]))


def rank(
    prompt: str, records: Sequence[dict[str, Any]], semantic: SemanticRanker | None = None
) -> Ranked:
    try:
        fts = bm25(prompt, records)
    except Exception:
        return Ranked(term_match(prompt, records), "term-match")
    if semantic is None:
        return Ranked(fts, "fts")
    try:
        return Ranked(rrf(fts, semantic(prompt, records)), "hybrid")
    except Exception:
        return Ranked(fts, "fts")


def overlap(prompt: str, record: dict[str, Any]) -> float:
    """The share of a record's topical terms that the prompt holds (contested relevance)."""
    terms = {t for t in record_terms(record) if t not in STOPWORDS and len(t) > 1}
    if not terms:
        return 0.0
    return len(terms & set(query_terms(prompt))) / len(terms)

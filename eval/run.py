"""Run every system on the questions and score them (called by eval/longmemeval.py).

Systems, all over the same cw turn documents (a user message and the answer after it, as cw
stores them), each restricted to the question's haystack sessions, top 50 documents:

* ``lexical`` — ``cw search`` as it is, ``semanticPolicy: never`` (exact, BM25F, RM3, fusion,
  importance prior, collapse);
* ``semantic`` — :class:`SemanticIndex` over the haystack's windows, one hit per document;
* ``hybrid`` — exact/structural hits of the lexical run first, then the lexical tier and the
  semantic hits ordered by :func:`cwcore.semantic.hybrid.fuse_tier` (RRF k=60, 75/60/40 % blend,
  importance prior), as search orders that tier;
* ``hybrid+rerank`` — the hybrid top ``rerankerCandidates`` reordered by the installed
  cross-encoder (only with ``--reranker DIR``);
* ``cw-search-auto`` — ``cw search`` with ``semanticPolicy: auto`` (the semantic mode runs only
  after a weak lexical pass; how often it ran is reported);
* ``cw-search-always`` — ``cw search`` with ``semanticPolicy: always``;
* ``cw-search-default`` — ``cw search`` with no ``semanticPolicy`` in the request: what
  ``cw search QUERY`` does (the ``semanticPolicy`` setting, reported with the run);
* ``fts5`` — SQLite FTS5 (unicode61, bm25()) with the question's non-stopword terms OR-ed;
* ``bm25s`` — bm25s (Lucene BM25, English stopwords) with a haystack weight mask.

FTS5 and bm25s index the whole corpus once (corpus-wide statistics, as cw's BM25 has) and
filter to the haystack.
"""

from __future__ import annotations

import math
import re
import sqlite3
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from eval import data as lme
from eval.metrics import score_ranking

TOP = 50
SYSTEM_ORDER = (
    "fts5",
    "bm25s",
    "lexical",
    "semantic",
    "hybrid",
    "hybrid+rerank",
    "cw-search-auto",
    "cw-search-always",
    "cw-search-default",
)
#: The ``cw search`` runs: system name -> the request's semanticPolicy (None: not sent).
CW_SEARCH = (
    ("lexical", "never"),
    ("cw-search-auto", "auto"),
    ("cw-search-always", "always"),
    ("cw-search-default", None),
)
_WORD = re.compile(r"\w+", re.UNICODE)


class Corpus:
    """Every window and document of the eval store: session, keys, ordinal, text."""

    def __init__(self, engine: Any) -> None:
        from cwcore.index import derived

        store = engine.store
        max_wid = int(derived.generation(store).get("maxWid", 0))
        self.wid_doc: dict[int, str] = {}
        self.doc_session: dict[str, str] = {}
        self.doc_ordinal: dict[str, int] = {}
        self.doc_turns: dict[str, set[str]] = defaultdict(set)
        self.doc_version: dict[str, int] = {}
        session_wids: dict[str, list[int]] = defaultdict(list)
        for lo in range(1, max_wid + 1, 4096):
            wids = list(range(lo, min(max_wid, lo + 4095) + 1))
            for wid, rec in zip(wids, derived.window_records(store, wids), strict=True):
                if rec is None:
                    continue
                doc = rec["documentId"]
                self.wid_doc[wid] = doc
                self.doc_session[doc] = rec["session"]
                self.doc_ordinal[doc] = int(rec["ordinal"])
                self.doc_version[doc] = int(rec["version"])
                session_wids[rec["session"]].append(wid)
                for key in rec["keys"]:
                    self.doc_turns[doc].add(f"{rec['session']}:{key.split(':', 1)[1]}")
        self.session_wids = {s: np.array(w, dtype=np.uint32) for s, w in session_wids.items()}
        self.docs = sorted(self.doc_session, key=lambda d: self.doc_ordinal[d])
        self.text: dict[str, str] = {}
        for doc in self.docs:
            manifest = engine.reader.manifest(doc, self.doc_version[doc])
            self.text[doc] = engine.reader.text(manifest)

    def haystack_wids(self, haystack: list[str]) -> np.ndarray:
        parts = [self.session_wids[s] for s in haystack if s in self.session_wids]
        return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


def _stopwords() -> set[str]:
    from cwcore.hints.stopwords import _EN  # the English list cw's query extraction uses

    return set(_EN.split())


class Fts5:
    def __init__(self, corpus: Corpus) -> None:
        self.db = sqlite3.connect(":memory:")
        self.db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(body, doc UNINDEXED, session UNINDEXED)"
        )
        self.db.executemany(
            "INSERT INTO docs VALUES (?, ?, ?)",
            [(corpus.text[d], d, corpus.doc_session[d]) for d in corpus.docs],
        )
        self.stop = _stopwords()

    def search(self, question: str, haystack: list[str]) -> list[str]:
        terms = [w for w in dict.fromkeys(_WORD.findall(question.lower())) if w not in self.stop]
        if not terms:
            return []
        match = " OR ".join(f'"{t}"' for t in terms)
        marks = ",".join("?" * len(haystack))
        rows = self.db.execute(
            f"SELECT doc FROM docs WHERE docs MATCH ? AND session IN ({marks}) "
            f"ORDER BY bm25(docs) LIMIT {TOP}",
            [match, *haystack],
        ).fetchall()
        return [r[0] for r in rows]


class Bm25s:
    def __init__(self, corpus: Corpus) -> None:
        import bm25s

        self.bm25s = bm25s
        self.docs = corpus.docs
        self.sessions = np.array([corpus.doc_session[d] for d in corpus.docs])
        tokens = bm25s.tokenize(
            [corpus.text[d] for d in corpus.docs], stopwords="en", show_progress=False
        )
        self.retriever = bm25s.BM25()
        self.retriever.index(tokens, show_progress=False)

    def search(self, question: str, haystack: list[str]) -> list[str]:
        mask = np.isin(self.sessions, haystack).astype(np.float32)
        q = self.bm25s.tokenize([question], stopwords="en", show_progress=False)
        if not q.ids or not len(q.ids[0]):
            return []
        k = int(min(TOP, mask.sum()))
        ids, scores = self.retriever.retrieve(q, k=k, show_progress=False, weight_mask=mask)
        return [self.docs[int(i)] for i, s in zip(ids[0], scores[0], strict=True) if s > 0]


def _fit_logistic(xs: list[float], ys: list[int]) -> dict[str, float]:
    """P(relevant | cosine) = sigmoid(a x + b), fit by Newton's method."""
    x = np.array(xs, dtype=np.float64)
    y = np.array(ys, dtype=np.float64)
    w = np.zeros(2)
    design = np.stack([x, np.ones_like(x)], axis=1)
    for _ in range(50):
        p = 1 / (1 + np.exp(-(design @ w)))
        grad = design.T @ (y - p)
        hess = design.T @ (design * (p * (1 - p))[:, None]) + 1e-6 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w += step
        if np.abs(step).max() < 1e-8:
            break
    a, b = float(w[0]), float(w[1])
    return {"slope": round(a, 3), "midpoint": round(-b / a, 4) if a else math.nan, "n": len(xs)}


def _forget_query_vectors(engine: Any) -> None:
    """Drop the engine embedder's in-memory vectors (so a timed search embeds its query)."""
    semantic = getattr(engine, "_semantic_tier", None)
    embedder = getattr(semantic, "_embedder", None) if semantic is not None else None
    if embedder is not None:
        with embedder._memory_lock:
            embedder._memory.clear()


def _band(score: float) -> str:
    from cwcore.retrieve.bands import band

    return band(score)


def evaluate(
    engine: Any,
    archive: Any,
    ds: lme.Dataset,
    questions: list[lme.Question],
    *,
    mode: str,
    cache: Any,
    reranker: Any = None,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    from cwcore.retrieve.search import _importance
    from cwcore.semantic.embedder import Embedder
    from cwcore.semantic.hybrid import fuse_tier
    from cwcore.semantic.search import SemanticIndex, calibrate

    started = time.perf_counter()
    corpus = Corpus(engine)
    log(f"corpus: {len(corpus.docs)} documents, {len(corpus.wid_doc)} windows")
    fts = Fts5(corpus)
    try:
        bm = Bm25s(corpus)
    except ImportError:
        bm = None
        log("bm25s is not installed: its baseline is skipped")
    index = SemanticIndex(engine.store)
    index.refresh()
    embedder = Embedder.for_home(engine.home)  # no cache: query latency includes embedding
    by_ordinal = _importance(engine.store, [corpus.doc_ordinal[d] for d in corpus.docs])
    prior = {d: by_ordinal.get(corpus.doc_ordinal[d], 1.0) for d in corpus.docs}
    per_q: list[dict[str, Any]] = []
    timings: dict[str, list[float]] = defaultdict(list)
    semantic_used: dict[str, list[bool]] = defaultdict(list)
    semantic_ms: dict[str, list[float]] = defaultdict(list)  # the semantic stage inside search
    default_policy = engine.settings.semantic_policy
    log(f"cw search default semanticPolicy: {default_policy}")
    bands: dict[str, dict[str, list[int]]] = {
        "lexical": defaultdict(lambda: [0, 0]),
        "semantic": defaultdict(lambda: [0, 0]),
    }
    calib_x: list[float] = []
    calib_y: list[int] = []
    candidates = engine.settings.reranker_candidates
    for n, q in enumerate(questions, 1):
        evidence, ev_turns = set(q.evidence), set(q.evidence_turns)
        runs: dict[str, list[str]] = {}

        # The cw search runs, in an order that rotates per question (no run always gets the
        # caches the previous one warmed); the engine's in-memory query vectors are dropped
        # first, so every run that embeds the query pays for it.
        responses: dict[str, dict[str, Any]] = {}
        rotate = n % len(CW_SEARCH)
        for system, policy in CW_SEARCH[rotate:] + CW_SEARCH[:rotate]:
            body: dict[str, Any] = {"query": q.question, "sessions": q.haystack, "limit": TOP}
            if policy is not None:
                body["semanticPolicy"] = policy
            _forget_query_vectors(engine)
            t = time.perf_counter()
            responses[system] = archive.search(body)
            timings[system].append((time.perf_counter() - t) * 1000)
        for system, _ in CW_SEARCH:
            runs[system] = [h["documentId"] for h in responses[system]["results"]]
            if system != "lexical":
                semantic_used[system].append(bool(responses[system].get("semantic_search_used")))
                stage = responses[system].get("stages", {}).get("semantic") or {}
                if stage.get("used"):
                    semantic_ms[system].append(float(stage.get("ms", 0.0)))
        lex_hits = responses["lexical"]["results"]
        runs["lexical"] = [h["documentId"] for h in lex_hits]
        for h in lex_hits[:10]:
            cell = bands["lexical"][h["band"]]
            cell[0] += 1
            cell[1] += int(h["source"]["sessionId"] in evidence)

        t = time.perf_counter()
        qvec = embedder.embed_query(q.question)
        wids, cos = index.search(qvec, 4 * TOP, corpus.haystack_wids(q.haystack))
        sem: dict[str, float] = {}
        sem_cos: dict[str, float] = {}
        for w, c in zip(wids, cos, strict=True):
            doc = corpus.wid_doc.get(int(w))
            if doc is not None and doc not in sem:
                sem[doc] = float(calibrate(float(c)))
                sem_cos[doc] = float(c)
            if len(sem) >= TOP:
                break
        timings["semantic"].append((time.perf_counter() - t) * 1000)
        runs["semantic"] = list(sem)
        for doc in runs["semantic"][:10]:
            rel = int(corpus.doc_session[doc] in evidence)
            cell = bands["semantic"][_band(sem[doc])]
            cell[0] += 1
            cell[1] += rel
            calib_x.append(sem_cos[doc])
            calib_y.append(rel)

        t = time.perf_counter()
        head = [h["documentId"] for h in lex_hits if h["score_metadata"]["tier"] < 2]
        lex_tier = [
            (h["documentId"], float(h["score"]))
            for h in lex_hits
            if h["score_metadata"]["tier"] >= 2
        ]
        sem_tier = [(d, s) for d, s in sem.items() if d not in set(head)]
        fused = fuse_tier(lex_tier, sem_tier, prior)
        runs["hybrid"] = (head + [e.key for e in fused])[:TOP]
        timings["hybrid"].append(
            (time.perf_counter() - t) * 1000 + timings["lexical"][-1] + timings["semantic"][-1]
        )

        if reranker is not None and reranker.available:
            t = time.perf_counter()
            tier = [d for d in runs["hybrid"] if d not in set(head)]
            window = tier[:candidates]
            scores = reranker.rerank(q.question, [corpus.text[d] for d in window])
            if scores is not None:
                order = sorted(range(len(window)), key=lambda i: -scores[i])
                tier = [window[i] for i in order] + tier[candidates:]
                runs["hybrid+rerank"] = (head + tier)[:TOP]
            timings["hybrid+rerank"].append((time.perf_counter() - t) * 1000)

        t = time.perf_counter()
        runs["fts5"] = fts.search(q.question, q.haystack)
        timings["fts5"].append((time.perf_counter() - t) * 1000)
        if bm is not None:
            t = time.perf_counter()
            runs["bm25s"] = bm.search(q.question, q.haystack)
            timings["bm25s"].append((time.perf_counter() - t) * 1000)

        scored = {}
        for system, docs in runs.items():
            scored[system] = score_ranking(
                [corpus.doc_session[d] for d in docs],
                [corpus.doc_turns[d] for d in docs],
                evidence,
                ev_turns,
            )
        per_q.append(
            {
                "qid": q.qid,
                "type": q.qtype,
                "metrics": scored,
                "semantic_used": {s: v[-1] for s, v in semantic_used.items()},
            }
        )
        if n % 10 == 0:
            log(f"evaluated {n}/{len(questions)} questions")

    systems = [s for s in SYSTEM_ORDER if any(s in r["metrics"] for r in per_q)]
    metric_names = (
        "recall_any@5",
        "recall_all@5",
        "ndcg@10",
        "turn_recall@10",
        "session_mrr",
        "turn_mrr",
    )

    def mean_of(rows: list[dict[str, Any]], system: str) -> dict[str, float]:
        vals = [r["metrics"][system] for r in rows if system in r["metrics"]]
        return {m: round(statistics.fmean(v[m] for v in vals), 4) for m in metric_names} | {
            "n": len(vals)
        }

    overall = {s: mean_of(per_q, s) for s in systems}
    by_type: dict[str, dict[str, Any]] = {}
    for qtype in sorted({r["type"] for r in per_q}):
        rows = [r for r in per_q if r["type"] == qtype]
        by_type[qtype] = {s: mean_of(rows, s) for s in systems}

    def pct(samples: list[float]) -> dict[str, float]:
        ordered = sorted(samples)
        return {
            "p50_ms": round(statistics.median(ordered), 2),
            "p95_ms": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        }

    return {
        "questions": len(questions),
        "documents": len(corpus.docs),
        "windows": len(corpus.wid_doc),
        "semantic_mode": mode,
        "systems": systems,
        "overall": overall,
        "by_type": by_type,
        "latency": {s: pct(v) for s, v in timings.items() if v},
        "default_policy": default_policy,
        "semantic_used": {s: sum(v) for s, v in semantic_used.items()},
        "semantic_stage": {s: pct(v) for s, v in semantic_ms.items() if v},
        "bands": {
            system: {
                b: {"hits": c[0], "evidence": c[1], "precision": round(c[1] / c[0], 3)}
                for b, c in sorted(cells.items())
                if c[0]
            }
            for system, cells in bands.items()
        },
        "calibration_fit": _fit_logistic(calib_x, calib_y) if calib_x else None,
        "per_question": per_q,
        "seconds": round(time.perf_counter() - started, 1),
    }

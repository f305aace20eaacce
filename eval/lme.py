"""The LongMemEval_S dev set (100 questions, 4,630 sessions, ``data/longmemeval-s-dev/``).

Each LongMemEval session becomes one cw session; each turn one cw-jsonl message
(:mod:`eval.data`). Every question is searched within its haystack sessions and scored at the
session level (recall_any@5, recall_all@5, NDCG@10 over the first occurrence of each session)
and at the turn level (recall@10 of the evidence turns). Baselines index cw's own documents
(the same units cw returns), with corpus-wide statistics, and filter to the haystack.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval import baselines, common
from eval import data as lme
from eval.common import BandStats, SemanticOnly, embed_all, log, percentiles
from eval.lines import CW_SYSTEMS
from eval.metrics import score_ranking

TOP = 50
METRICS = ("recall_any@5", "recall_all@5", "ndcg@10", "turn_recall@10")


class Corpus:
    """Every live document of the eval store: its session, covered turns and text."""

    def __init__(self, engine: Any) -> None:
        from cwcore.index import derived

        store = engine.store
        max_wid = int(derived.generation(store).get("maxWid", 0))
        self.wid_doc: dict[int, str] = {}
        self.doc_session: dict[str, str] = {}
        self.doc_turns: dict[str, set[str]] = defaultdict(set)
        versions: dict[str, int] = {}
        session_wids: dict[str, list[int]] = defaultdict(list)
        for lo in range(1, max_wid + 1, 4096):
            wids = list(range(lo, min(max_wid, lo + 4095) + 1))
            for wid, rec in zip(wids, derived.window_records(store, wids), strict=True):
                if rec is None:
                    continue
                doc = rec["documentId"]
                self.wid_doc[wid] = doc
                self.doc_session[doc] = rec["session"]
                versions[doc] = int(rec["version"])
                session_wids[rec["session"]].append(wid)
                for key in rec["keys"]:
                    self.doc_turns[doc].add(f"{rec['session']}:{key.split(':', 1)[1]}")
        self.session_wids = {s: np.array(w, dtype=np.uint32) for s, w in session_wids.items()}
        self.docs = sorted(self.doc_session)
        self.text = {
            d: engine.reader.text(engine.reader.manifest(d, versions[d])) for d in self.docs
        }

    def haystack_wids(self, haystack: Sequence[str]) -> np.ndarray:
        parts = [self.session_wids[s] for s in haystack if s in self.session_wids]
        return np.concatenate(parts) if parts else np.zeros(0, np.uint32)


def build(ds: lme.Dataset, order: list[str], home: Path) -> Any:
    src = home.parent / "longmemeval.cw.jsonl"
    n = lme.write_cw_jsonl(ds, order, src)
    archive = common.open_archive(home)
    started = time.perf_counter()
    summary = archive.import_paths([src], fmt="cw-jsonl")
    log(
        f"longmemeval: imported {n} messages of {len(order)} sessions, {summary.imported} "
        f"documents in {time.perf_counter() - started:.1f} s"
    )
    return archive


def evaluate(
    *,
    cache: Any,
    data: Path = lme.DEFAULT_DATA,
    questions: int = 0,
    semantic: bool = True,
    systems: Sequence[str] = (),
) -> dict[str, Any]:
    ds = lme.load(data)
    qs = [q for q in ds.questions if not q.abstention]
    if questions:
        qs = qs[:questions]
    wanted = set(systems)

    def on(name: str) -> bool:
        return not wanted or name in wanted

    with tempfile.TemporaryDirectory(prefix="cw-eval-lme-") as tmp:
        archive = build(ds, ds.session_order(qs), Path(tmp) / "home")
        try:
            engine = archive.engine
            embedding = embed_all(engine, cache) if semantic else None
            status = archive.index_status().to_json()
            corpus = Corpus(engine)
            log(f"longmemeval: {len(corpus.docs)} documents, {len(corpus.wid_doc)} windows")
            units = [baselines.Unit(d, corpus.text[d], corpus.doc_session[d]) for d in corpus.docs]
            base: dict[str, Any] = {}
            if on("fts5") or on("rrf-fts5-dense"):
                base["fts5"] = baselines.Fts5(units)
            if on("bm25s"):
                base["bm25s"] = baselines.Bm25s(units)
            if on("bm25s-stem"):
                base["bm25s-stem"] = baselines.Bm25s(units, stem=True)
            sem_only = None
            if semantic:
                if on("dense") or on("rrf-fts5-dense"):
                    embed, embed_query = baselines.embedder_functions(engine.home, cache)
                    base["dense"] = baselines.Dense(units, embed, embed_query)
                if on("rrf-fts5-dense"):
                    base["rrf-fts5-dense"] = baselines.RrfHybrid(base["fts5"], base["dense"], TOP)
                if on("cw-semantic"):
                    sem_only = SemanticOnly(engine)
            base = {k: v for k, v in base.items() if on(k)}
            cw_runs = [(n, x) for n, x in CW_SYSTEMS if on(n) and (semantic or "lexical" in n)]
            per_q: list[dict[str, Any]] = []
            timings: dict[str, list[float]] = defaultdict(list)
            statuses: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
            bands = BandStats()
            calibration: list[tuple[float, int]] = []  # (cosine, relevant) of semantic hits
            for n, q in enumerate(qs, 1):
                ev, ev_turns = set(q.evidence), set(q.evidence_turns)
                runs: dict[str, list[str]] = {}
                rescue: dict[str, dict[str, Any]] = {}
                for name, extra in cw_runs:
                    body = {"query": q.question, "sessions": q.haystack, "limit": TOP, **extra}
                    t = time.perf_counter()
                    resp = archive.search(body)
                    timings[name].append((time.perf_counter() - t) * 1000)
                    statuses[name][resp.retrieval_status] += 1
                    rescue[name] = common.trigger_of(resp)
                    hits = resp.hits()
                    runs[name] = [h.document_id for h in hits]
                    for h in hits[:10]:
                        relevant = h.source.session_id in ev
                        bands.add(name, h.band, relevant, h.match_type)
                if sem_only is not None:
                    t = time.perf_counter()
                    scored = sem_only.search_scored(
                        q.question, TOP, corpus.haystack_wids(q.haystack)
                    )
                    timings["cw-semantic"].append((time.perf_counter() - t) * 1000)
                    runs["cw-semantic"] = [corpus.wid_doc[w] for w, _ in scored]
                    for w, cos in scored[:10]:
                        relevant = corpus.doc_session[corpus.wid_doc[w]] in ev
                        calibration.append((cos, int(relevant)))
                for name, system in base.items():
                    t = time.perf_counter()
                    runs[name] = system.search(q.question, TOP, q.haystack)
                    timings[name].append((time.perf_counter() - t) * 1000)
                metrics = {
                    name: score_ranking(
                        [corpus.doc_session[d] for d in docs],
                        [corpus.doc_turns[d] for d in docs],
                        ev,
                        ev_turns,
                    )
                    for name, docs in runs.items()
                }
                sessions = {
                    name: list(dict.fromkeys(corpus.doc_session[d] for d in docs))[:10]
                    for name, docs in runs.items()
                }
                per_q.append(
                    {
                        "qid": q.qid,
                        "kind": q.qtype,
                        "question": q.question,
                        "evidence": sorted(ev),
                        "rescue": rescue,
                        "metrics": metrics,
                        "sessions": sessions,
                    }
                )
                if n % 25 == 0:
                    log(f"longmemeval: {n}/{len(qs)} questions")
        finally:
            archive.close()
    names = [n for n, _ in cw_runs] + (["cw-semantic"] if sem_only else []) + list(base)

    def mean(rows: list[dict[str, Any]], system: str) -> dict[str, float]:
        vals = [r["metrics"][system] for r in rows if system in r["metrics"]]
        return {m: round(statistics.fmean(v[m] for v in vals), 3) for m in METRICS} | {
            "n": len(vals)
        }

    kinds = sorted({r["kind"] for r in per_q})
    return {
        "set": "longmemeval",
        "queries": len(qs),
        "systems": names,
        "primary": ["recall_all@5", "ndcg@10"],
        "overall": {s: mean(per_q, s) for s in names},
        "by_kind": {
            k: {s: mean([r for r in per_q if r["kind"] == k], s) for s in names} for k in kinds
        },
        "latency": {s: percentiles(v) for s, v in timings.items()},
        "retrieval_status": {s: dict(v) for s, v in statuses.items()},
        "rescue": common.rescue_rates(per_q, [n for n, _ in cw_runs]),
        "index": {
            "generation": status.get("generation"),
            "complete": status.get("complete"),
            "handlers": status.get("handlers"),
            "documents": status.get("documents"),
            "windows": status.get("windows"),
        },
        "embedding": embedding,
        "bands": bands.to_json(),
        "semantic_calibration": calibration,
        "per_query": per_q,
    }

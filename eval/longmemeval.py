"""LongMemEval_S (dev subset) retrieval evaluation: ``python -m eval.longmemeval`` (make eval).

Steps: convert the sessions to cw-jsonl, import them into a temporary CW_HOME through
``Archive.open(embedded=True).import_paths`` (lexical indexing finishes before it returns), embed
every window with the semantic index handler (vectors cached by content digest in
``eval/.cache/``, so a re-run embeds nothing again), then for each non-abstention question search
within its haystack sessions and score the rankings. See eval/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from eval import data as lme
from eval.cache import SqliteVectorCache

ROOT = Path(__file__).resolve().parent
CACHE = ROOT / ".cache"
RESULTS = ROOT / "results"
DOCS = ROOT.parent / "docs" / "evaluation.md"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def open_store(home: Path, ds: lme.Dataset, order: list[str]) -> Any:
    """Import the sessions (in ``order``) into a fresh store at ``home``; returns the Archive."""
    from cwcore.api import Archive

    src = home.parent / "longmemeval.cw.jsonl"
    n = lme.write_cw_jsonl(ds, order, src)
    archive = Archive.open(home, embedded=True)
    started = time.perf_counter()
    summary = archive.import_paths([src], fmt="cw-jsonl")
    log(
        f"imported {n} messages of {len(order)} sessions: {summary.imported} documents in "
        f"{time.perf_counter() - started:.1f} s"
    )
    return archive


def embed_all(
    engine: Any, mode: str, cache: SqliteVectorCache, *, until_wid: int | None = None
) -> dict[str, Any]:
    """Run the index handler until every window (up to ``until_wid``) has vectors."""
    from cwcore.semantic.embedder import Embedder
    from cwcore.semantic.index import embed_pending, prepare, status

    embedder = Embedder.for_home(engine.home)
    prepare(engine.store, embedder, mode)
    started = time.perf_counter()
    done = 0
    last = started
    while True:
        st = status(engine.store)
        if until_wid is not None and st["cursor"] >= until_wid:
            break
        n = embed_pending(
            engine.store, engine.reader, 256, embedder=embedder, mode=mode, cache=cache
        )
        if n == 0:
            break
        done += n
        if time.perf_counter() - last > 30:
            last = time.perf_counter()
            st = status(engine.store)
            log(
                f"embedding ({mode}): {st['cursor']}/{st['maxWid']} windows, "
                f"{embedder.computed} texts computed, {len(cache)} cached"
            )
    elapsed = time.perf_counter() - started
    return {
        "mode": mode,
        "windows": done,
        "computed": embedder.computed,
        "seconds": round(elapsed, 1),
        "model": embedder.model_id,
    }


def _reranker(engine: Any, folder: Path | None) -> Any:
    if folder is None:
        return None
    from cwcore.semantic import models
    from cwcore.semantic.rerank import Reranker

    models.install_reranker(engine.home, folder, name="eval", revision="local")
    reranker = Reranker.load(models.reranker_dir(engine.home))
    log(f"reranker: {'loaded' if reranker.available else reranker.error}")
    return reranker


def _means(per_q: list[dict[str, Any]], qids: set[str]) -> dict[str, dict[str, float]]:
    import statistics

    rows = [r for r in per_q if r["qid"] in qids]
    out: dict[str, dict[str, float]] = {}
    for system in ("semantic", "hybrid"):
        vals = [r["metrics"][system] for r in rows if system in r["metrics"]]
        if vals:
            out[system] = {m: round(statistics.fmean(v[m] for v in vals), 4) for m in vals[0]}
    return out


def throughput(engine: Any, sample: int = 48) -> dict[str, Any]:
    """Embed the same sample of windows in both modes with no cache: texts/s and windows/s."""
    from cwcore.index import derived
    from cwcore.semantic.embedder import Embedder
    from cwcore.semantic.index import window_texts

    max_wid = int(derived.generation(engine.store)["maxWid"])
    step = max(1, max_wid // sample)
    wids = list(range(1, max_wid + 1, step))[:sample]
    records = [r for r in derived.window_records(engine.store, wids) if r is not None]
    out: dict[str, Any] = {}
    texts_of = {
        mode: [t for r in records for t in window_texts(engine.reader, r, mode)]
        for mode in ("window", "message")
    }
    best: dict[str, float] = {}
    for _ in range(2):  # alternate the modes twice, keep each one's faster run
        for mode, texts in texts_of.items():
            embedder = Embedder.for_home(engine.home)  # fresh: no cached vectors
            embedder.load()
            embedder.embed_query("warm up")
            started = time.perf_counter()
            embedder.embed(texts)
            seconds = time.perf_counter() - started
            embedder.close()
            best[mode] = min(best.get(mode, seconds), seconds)
    for mode, texts in texts_of.items():
        seconds = best[mode]
        out[mode] = {
            "windows": len(records),
            "computed": len(texts),
            "seconds": round(seconds, 2),
            "texts_per_s": round(len(texts) / seconds, 2),
            "windows_per_s": round(len(records) / seconds, 2),
        }
    return out


def compare_modes(
    engine: Any,
    archive: Any,
    ds: lme.Dataset,
    subset: list[lme.Question],
    mode: str,
    report: dict[str, Any],
    cache: SqliteVectorCache,
) -> dict[str, Any]:
    """Run the other mode on ``subset`` (a prefix of the questions, hence of the wids)."""
    from eval.run import Corpus, evaluate

    other = "message" if mode == "window" else "window"
    qids = {q.qid for q in subset}
    corpus = Corpus(engine)
    last_wid = max((int(w) for q in subset for w in corpus.haystack_wids(q.haystack)), default=0)
    log(f"compare modes: {other} mode on {len(subset)} questions (wids 1..{last_wid})")
    embed_all(engine, other, cache, until_wid=last_wid)
    other_report = evaluate(engine, archive, ds, subset, mode=other, cache=cache, log=log)
    modes = {mode: _means(report["per_question"], qids), other: other_report["overall"]}
    modes[other] = {s: modes[other][s] for s in ("semantic", "hybrid") if s in modes[other]}
    cost = throughput(engine)

    def key(m: str) -> tuple[float, float]:
        sem = modes[m].get("semantic", {})
        return (sem.get("ndcg@10", 0.0), sem.get("turn_mrr", 0.0))

    better = max(modes, key=key)
    verdict = (
        f"On this subset `{better}` mode ranks better (semantic NDCG@10, then turn MRR); "
        "`window` mode embeds "
        f"{cost['window']['windows_per_s']} windows/s, `message` mode "
        f"{cost['message']['windows_per_s']} windows/s on this machine."
    )
    return {"questions": len(subset), "modes": modes, "embedding": cost, "verdict": verdict}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval.longmemeval", description=__doc__)
    parser.add_argument("--data", type=Path, default=lme.DEFAULT_DATA)
    parser.add_argument("--questions", type=int, default=0, help="first N questions (0: all)")
    parser.add_argument("--mode", choices=("window", "message"), default=None)
    parser.add_argument("--embed-only", action="store_true", help="fill the vector cache, stop")
    parser.add_argument(
        "--compare-modes",
        type=int,
        default=12,
        metavar="N",
        help="also run the other embedding mode on the first N questions (0: skip)",
    )
    parser.add_argument(
        "--reranker", type=Path, default=None, help="cross-encoder folder for hybrid+rerank"
    )
    args = parser.parse_args(argv)
    if not lme.available(args.data):
        print(f"eval: {args.data} is not present; skipping LongMemEval", file=sys.stderr)
        return 0
    os.environ.setdefault("CW_NOW", "2026-11-20T12:00:00Z")
    from cwcore.semantic.index import DEFAULT_MODE

    mode = args.mode or DEFAULT_MODE
    ds = lme.load(args.data)
    questions = [q for q in ds.questions if not q.abstention]
    if args.questions:
        questions = questions[: args.questions]
    order = ds.session_order(questions)
    cache = SqliteVectorCache(CACHE / "vectors.sqlite")
    with tempfile.TemporaryDirectory(prefix="cw-eval-") as tmp:
        home = Path(tmp) / "home"
        archive = open_store(home, ds, order)
        try:
            engine = archive._transport.engine  # type: ignore[attr-defined]
            info = embed_all(engine, mode, cache)
            log(f"embedded: {info}")
            if args.embed_only:
                return 0
            from eval.run import evaluate

            reranker = _reranker(engine, args.reranker)
            load_start = os.getloadavg()[0]
            report = evaluate(
                engine, archive, ds, questions, mode=mode, cache=cache, reranker=reranker, log=log
            )
            report["load_average"] = [round(load_start, 2), round(os.getloadavg()[0], 2)]
            report["embedding"] = info
            compare = None
            if args.compare_modes:
                compare = compare_modes(
                    engine, archive, ds, questions[: args.compare_modes], mode, report, cache
                )
                report["compare_modes"] = compare
        finally:
            archive.close()
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "longmemeval.json").write_text(json.dumps(report, indent=2) + "\n")
    from eval.report import markdown

    DOCS.write_text(markdown(report, compare), encoding="utf-8")
    log(f"wrote {RESULTS / 'longmemeval.json'} and {DOCS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

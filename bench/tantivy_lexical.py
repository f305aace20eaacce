"""cw's explicit lexical search on its own posting engine and on tantivy, beside SQLite FTS5, in
one process on one built real-text archive (issue 36; docs/performance.md, "Tantivy under the
lexical tier: measured").

The two engines answer behind the same interface (:func:`cwcore.retrieve.lexical._scorer`,
switched per call through ``lexical.LEXICAL_ENGINE``), so everything around the scorer (query
analysis, RM3 feedback on cw's postings, fusion, visibility, the page) is the same code. Printed
as one JSON object:

* ``build``: the tantivy index built from the archive's applied documents — seconds in cw's
  analysis (:func:`cwcore.index.prepare.prepare`) and in tantivy (add, commit, merge), windows,
  bytes on disk beside the RocksDB store, and the process's resident memory before and after;
* ``timings``: wall p50 / p95 per ``<system>/<mode>`` (``all`` and ``haystack``) for
  ``cw-postings``, ``cw-tantivy``, ``fts5`` and ``fts5-snippet``, taking turns on each
  LongMemEval question after one untimed pass (:func:`bench.realtext_search.interleaved`);
* ``scorer``: p50 / p95 of the BM25 step alone (each scorer call) per engine and mode;
* ``overlap``: the mean share of the top-10 document ids the two engines have in common.

    python -m bench.tantivy_lexical --home <a search home> [--questions N]
    python -m bench.tantivy_lexical --build <folder> [--messages N]   # import a home first
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench import realtext_build as rb
from bench import realtext_search as rs
from bench.common import percentiles


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _timed_half(samples: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    """Percentiles of each list's second half: the untimed pass and the timed one make the
    same calls in the same order, so the second half is the timed pass."""
    return {k: percentiles(v[len(v) // 2 :]) for k, v in sorted(samples.items())}


def _cpu_timed(system: rs.System, into: dict[str, list[float]]) -> rs.System:
    """``system`` also recording each search's CPU time on this thread (what load on the
    other cores does not inflate) under ``<name>/<mode>``; the untimed pass included, so only
    the second half of each list is kept by :func:`measure`."""

    def search(text: str, sessions: Sequence[str] | None) -> float | None:
        c0 = time.thread_time()
        own = system.search(text, sessions)
        into[f"{system.name}/{'haystack' if sessions else 'all'}"].append(
            (time.thread_time() - c0) * 1000
        )
        return own

    return rs.System(system.name, search, system.scoped)


def measure(home: Path, queries: list[rs.Query]) -> dict[str, Any]:
    from bench.realtext import corpus_units
    from cwcore.api import Archive
    from cwcore.index import bm25, tantivy_engine
    from cwcore.retrieve import lexical

    scorer_ms: dict[str, list[float]] = defaultdict(list)
    scorer_cpu: dict[str, list[float]] = defaultdict(list)
    search_cpu: dict[str, list[float]] = defaultdict(list)
    current = {"key": ""}
    original = lexical._scorer

    def timed_scorer(index: Any) -> Callable[..., bm25.Hits]:
        inner = original(index)

        def call(*args: Any, **kwargs: Any) -> bm25.Hits:
            t0, c0 = time.perf_counter(), time.thread_time()
            out = inner(*args, **kwargs)
            scorer_ms[current["key"]].append((time.perf_counter() - t0) * 1000)
            scorer_cpu[current["key"]].append((time.thread_time() - c0) * 1000)
            return out

        return call

    lexical._scorer = timed_scorer
    with Archive.open(home, embedded=True) as archive:
        store = archive.engine.store
        units, present = corpus_units(archive.engine)
        baselines, built = rs.baseline_systems(units, rank_bm25=False)
        rss_before = _rss_mb()
        engine = tantivy_engine.engine_for(store)
        t0 = time.perf_counter()
        stats = engine.sync()
        build_s = time.perf_counter() - t0
        assert stats is not None
        build = {
            "seconds": round(build_s, 2),
            "prepare_s": round(stats.prepare_s, 2),
            "tantivy_s": round(stats.tantivy_s, 2),
            "documents": stats.documents,
            "windows": stats.windows,
            "tantivy_disk_bytes": engine.disk_bytes(),
            "rocksdb_disk_bytes": _dir_bytes(store.path),
            "rss_before_mb": round(rss_before, 1),
            "rss_after_build_mb": round(_rss_mb(), 1),
            "writer_heap_bytes": tantivy_engine.WRITER_HEAP,
            "writer_threads": tantivy_engine.WRITER_THREADS,
            "repeat_scale": tantivy_engine.REPEAT_SCALE,
            "fts5_build_s": built.get("fts5"),
        }
        answers: dict[str, dict[tuple[str, str], list[str]]] = defaultdict(dict)

        def cw(name: str, which: str) -> rs.System:
            def search(text: str, sessions: Sequence[str] | None) -> float | None:
                lexical.LEXICAL_ENGINE = which
                current["key"] = f"{name}/{'haystack' if sessions else 'all'}"
                body: dict[str, Any] = {"query": text, "limit": rs.LIMIT, **rs.LEXICAL}
                if sessions:
                    body["sessions"] = list(sessions)
                response = archive.search(body)
                answers[name][(text, "h" if sessions else "a")] = [
                    h.document_id for h in response.results
                ]
                return None

            return rs.System(name, search)

        systems = [cw("cw-postings", "postings"), cw("cw-tantivy", "tantivy"), *baselines]
        systems = [_cpu_timed(s, search_cpu) for s in systems if s.name != "bm25s"]
        load_before = rs.load_average()
        timings = rs.interleaved(systems, queries, present)
        load_after = rs.load_average()
        build["rss_after_searches_mb"] = round(_rss_mb(), 1)
    lexical._scorer = original
    a, b = answers["cw-postings"], answers["cw-tantivy"]
    shares = [len(set(a[k]) & set(b.get(k, []))) / max(1, len(a[k])) for k in a if a[k]]
    top1 = [a[k][0] == b.get(k, [None])[0] for k in a if a[k]]
    return {
        "messages_home": str(home),
        "questions": len(queries),
        "build": build,
        "timings": timings,
        "cpu": _timed_half(search_cpu),
        "scorer": _timed_half(scorer_ms),
        "scorer_cpu": _timed_half(scorer_cpu),
        "overlap": {
            "top10_shared": round(sum(shares) / max(1, len(shares)), 3),
            "top1_same": round(sum(top1) / max(1, len(top1)), 3),
        },
        "load_before": load_before,
        "load_after": load_after,
    }


def build_home(folder: Path, messages: int | None) -> Path:
    """Import the LongMemEval dev corpus (its first ``messages`` messages in question order, all
    when None) into ``folder/home``, lexical only (no embedding); reused when present."""
    folder.mkdir(parents=True, exist_ok=True)
    name = f"lme-{messages or 'all'}"
    corpus = rb.lme_corpus(rb.data_root(), folder, name, messages)
    home = folder / name / "home"
    if not (home / "store").is_dir():
        facts = rb.spawn("import", str(home), str(corpus.source), corpus.fmt)
        (folder / name / "import.json").write_text(json.dumps(facts))
    return home


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.tantivy_lexical", description=__doc__)
    parser.add_argument("--home", type=Path, help="a built search home (a copy)")
    parser.add_argument("--build", type=Path, help="import a home into this folder first")
    parser.add_argument("--messages", type=int, default=None, help="with --build: corpus size")
    parser.add_argument("--questions", type=int, default=None, help="the first N questions")
    args = parser.parse_args(argv)
    os.environ.setdefault("CW_NOW", rb.NOW)
    if args.build:
        home = build_home(args.build, args.messages)
        print(json.dumps({"home": str(home)}))
        if not args.home:
            return 0
    if not args.home or not (args.home / "store").is_dir():
        parser.exit(2, "bench.tantivy_lexical: --home must hold an archive\n")
    path = rb.data_root() / rb.LME / "queries.jsonl"
    out = measure(args.home, rs.load_questions(path, args.questions))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""The vectors' nearest-neighbour graph against the exact scan, on a kept embedded home (issue
36; docs/semantic.md, "A graph for large archives").

The home is one the scale bench kept (``python -m bench scale --copies N --semantic --keep
DIR``: the LongMemEval dev corpus repeated ×N, **real text repeated ×N, synthetic ids**, every
window embedded). In this process, with the bench's clock and ``CW_SEMANTIC_RETRIEVAL=true``:

1. the graph of the home's matrix file is built (:func:`cwcore.semantic.graph.build`, in this
   process, one thread) unless one covers every row: build seconds, rows, file size;
2. each dev question's vector (:func:`bench.scale.scaled_queries`) searched by
   ``SemanticIndex.search`` for ``k`` = 50 and 120 windows (what the default search's first
   round asks for: 4 × its depth, at least 50), the exact scan and the graph taking turns per
   question: p50/p95 ms each, and the graph's answers against the exact ones — the share of
   questions whose first window has the exact first cosine, the share of the exact top-10's
   cosine reached by the graph's top 10 (``top10``: a graph window at or above the exact
   10th cosine counts, so exact duplicates of a text tie rather than miss), the same over all
   ``k`` (``topk``), and the plain overlap of window ids (``ids@k``, which duplicates lower);
3. the default search (``Archive.search``, limit 10, the settings' ``auto`` policy) over every
   question, exact and graph in alternating rounds: p50/p95 ms, the searches that ran the
   semantic stage, and the questions whose ten scores differ between the two.

    python -m bench.semantic_graph HOME [--copies N] [--rounds R]

Writes ``bench/results/semantic-graph-x<N>.json`` and prints the tables. The exact scan is
forced by raising ``GRAPH_MIN_ROWS`` above the home's rows for its turns.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench import realtext_build as rb
from bench import realtext_search as rs
from bench import scale
from bench.common import percentiles, print_table, write_result

KS = (50, 120)
EXACT = 10**12  # GRAPH_MIN_ROWS for the exact scan's turns


def _answers(exact: tuple[Any, Any], graph: tuple[Any, Any]) -> dict[str, float]:
    (ew, ec), (gw, gc) = exact, graph
    if not len(ew):
        return {"first": 1.0, "top10": 1.0, "topk": 1.0, "ids": 1.0}
    tol = 1e-6
    ten = min(10, len(ec))
    return {
        "first": float(len(gc) > 0 and gc[0] >= ec[0] - tol),
        "top10": float(np.sum(gc[:ten] >= ec[ten - 1] - tol) / ten),
        "topk": float(np.sum(gc >= ec[-1] - tol) / len(ec)),
        "ids": len({int(w) for w in gw} & {int(w) for w in ew}) / len(ew),
    }


def run_home(home: Path, copies: int, rounds: int) -> dict[str, Any]:
    os.environ.setdefault("CW_SEMANTIC_RETRIEVAL", "true")
    os.environ.setdefault("CW_NOW", rb.NOW)
    from cwcore.api import Archive
    from cwcore.semantic import graph as vgraph
    from cwcore.semantic import runtime

    data = rb.data_root() / rb.LME / "queries.jsonl"
    queries = scale.scaled_queries(rs.load_questions(data, None), copies)
    floor = vgraph.GRAPH_MIN_ROWS
    out: dict[str, Any] = {"home": str(home), "copies": copies, "questions": len(queries)}
    with Archive.open(home, embedded=True) as archive:
        semantic = runtime.for_engine(archive.engine)
        index = semantic.index()
        out["rows"] = index.rows
        started = time.perf_counter()
        built = vgraph.build(index.directory, min(floor, index.rows))
        meta = vgraph.read_meta(index.directory)
        out["graph"] = {
            "built_s": round(time.perf_counter() - started, 2) if built else None,
            "rows": meta.rows if meta else 0,
            "nodes": meta.nodes if meta else 0,
            "bytes": (index.directory / meta.file).stat().st_size if meta else 0,
            "matrix_bytes": index.file_bytes(),
        }
        vgraph.GRAPH_MIN_ROWS = min(floor, index.rows)  # the graph serves this home
        embedder = semantic.embedder()
        vectors = [embedder.embed_query(q.text) for q in queries]
        for k in KS:
            times: dict[str, list[float]] = {"exact": [], "graph": []}
            scores: list[dict[str, float]] = []
            for vector in vectors:
                found = {}
                for name, rows in (("exact", EXACT), ("graph", vgraph.GRAPH_MIN_ROWS)):
                    saved, vgraph.GRAPH_MIN_ROWS = vgraph.GRAPH_MIN_ROWS, rows
                    t = time.perf_counter()
                    found[name] = index.search(vector, k)
                    times[name].append((time.perf_counter() - t) * 1000)
                    vgraph.GRAPH_MIN_ROWS = saved
                scores.append(_answers(found["exact"], found["graph"]))
            out[f"k{k}"] = {
                **{name: percentiles(ts) for name, ts in times.items()},
                **{m: round(float(np.mean([s[m] for s in scores])), 4) for m in scores[0]},
            }
        graph_floor = vgraph.GRAPH_MIN_ROWS
        for q in queries[:30]:  # warm: the model, the block cache, the mapped pages
            archive.search({"query": q.text, "limit": 10})
        default: dict[str, list[float]] = {"exact": [], "graph": []}
        used: dict[str, int] = {"exact": 0, "graph": 0}
        pages: dict[str, list[list[float]]] = {"exact": [], "graph": []}
        for r in range(rounds):
            for name, rows in (("exact", EXACT), ("graph", graph_floor)):
                vgraph.GRAPH_MIN_ROWS = rows
                for q in queries:
                    t = time.perf_counter()
                    resp = archive.search({"query": q.text, "limit": 10})
                    default[name].append((time.perf_counter() - t) * 1000)
                    if r == 0:
                        used[name] += bool(resp.semantic_search_used)
                        pages[name].append([round(h.score, 6) for h in resp.results])
        vgraph.GRAPH_MIN_ROWS = floor
        out["default"] = {
            **{name: percentiles(ts) for name, ts in default.items()},
            "semantic_stage": used,
            "pages_with_other_scores": sum(a != b for a, b in zip(*pages.values(), strict=True)),
        }
    out["load"] = os.getloadavg()
    return out


def report(out: dict[str, Any]) -> None:
    g = out["graph"]
    print(
        f"{out['rows']:,} rows; graph of {g['rows']:,} rows ({g['nodes']:,} distinct), "
        f"{g['bytes'] / 1e6:.1f} MB "
        f"(matrix file {g['matrix_bytes'] / 1e6:.1f} MB), built in {g['built_s']} s"
    )
    rows: list[tuple[str, ...]] = []
    for k in KS:
        r = out[f"k{k}"]
        rows.append(
            (
                str(k),
                f"{r['exact']['p50_ms']:.2f} / {r['exact']['p95_ms']:.2f}",
                f"{r['graph']['p50_ms']:.2f} / {r['graph']['p95_ms']:.2f}",
                f"{r['first']:.3f}",
                f"{r['top10']:.4f}",
                f"{r['topk']:.4f}",
                f"{r['ids']:.4f}",
            )
        )
    header = ("k", "exact p50 / p95 ms", "graph p50 / p95 ms", "first", "top10", "topk", "ids@k")
    print_table("SemanticIndex.search", rows, header)
    d = out["default"]
    print_table(
        "default search (auto), limit 10",
        [
            (
                name,
                f"{d[name]['p50_ms']:.2f} / {d[name]['p95_ms']:.2f}",
                str(d["semantic_stage"][name]),
            )
            for name in ("exact", "graph")
        ],
        ("scan", "p50 / p95 ms", "semantic stage ran"),
    )
    print(f"pages whose scores differ: {d['pages_with_other_scores']} of {out['questions']}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.semantic_graph", description=__doc__)
    parser.add_argument("home", type=Path)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if not (args.home / "store").is_dir():
        print(f"error: no archive at {args.home}", file=sys.stderr)
        return 2
    out = run_home(args.home, args.copies, args.rounds)
    write_result(f"semantic-graph-x{args.copies}", out)
    report(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

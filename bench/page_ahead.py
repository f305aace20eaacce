"""The page drafted while the semantic stage runs, against a search thread that waits idle for
it (issue 36; docs/performance.md, "The page drafted while the semantic stage runs").

The home is one the scale bench kept (``python -m bench scale --copies N --semantic --keep
DIR``: the LongMemEval dev corpus repeated ×N, **real text repeated ×N, synthetic ids**, every
window embedded). In this process, with the bench's clock and ``CW_SEMANTIC_RETRIEVAL=true``,
the default search (``Archive.search``, limit 10, the settings' ``auto`` policy) of every dev
question (:func:`bench.scale.scaled_queries`), unscoped, after 30 warm-up searches; per question
the two ways take turns (``ahead``: as shipped; ``idle``: ``cwcore.retrieve.search._warm_page``
replaced by one that drafts nothing), ``--rounds`` times. Prints p50/p95 wall ms of each over
the searches that ran the semantic stage and over all, the hits drafted ahead per search, and
the questions whose pages differ (document ids, scores and snippets).

    python -m bench.page_ahead HOME [--copies N] [--rounds R]

Writes ``bench/results/page-ahead-x<N>.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

from bench import realtext_build as rb
from bench import realtext_search as rs
from bench import scale
from bench.common import percentiles, print_table, write_result


def _page(resp: Any) -> list[tuple[str, float, str]]:
    return [(h.document_id, round(h.score, 6), h.snippet) for h in resp.results]


def run_home(home: Path, copies: int, rounds: int) -> dict[str, Any]:
    os.environ.setdefault("CW_SEMANTIC_RETRIEVAL", "true")
    os.environ.setdefault("CW_NOW", rb.NOW)
    from cwcore.api import Archive
    from cwcore.retrieve import search as search_mod

    data = rb.data_root() / rb.LME / "queries.jsonl"
    queries = scale.scaled_queries(rs.load_questions(data, None), copies)
    shipped = search_mod._warm_page

    def idle(*_: Any, **__: Any) -> int:
        return 0

    ways = {"ahead": shipped, "idle": idle}
    times: dict[str, list[float]] = {w: [] for w in ways}
    staged: dict[str, list[float]] = {w: [] for w in ways}
    drafted: list[int] = []
    pages: dict[str, list[Any]] = {w: [] for w in ways}
    with Archive.open(home, embedded=True) as archive:
        for q in queries[:30]:  # warm: the model, the block cache, the mapped pages
            archive.search({"query": q.text, "limit": 10})
        for r in range(rounds):
            for i, q in enumerate(queries):
                order = ("ahead", "idle") if (i + r) % 2 == 0 else ("idle", "ahead")
                for way in order:
                    search_mod._warm_page = ways[way]
                    t = time.perf_counter()
                    resp = archive.search({"query": q.text, "limit": 10})
                    ms = (time.perf_counter() - t) * 1000
                    times[way].append(ms)
                    if resp.semantic_search_used:
                        staged[way].append(ms)
                    if way == "ahead":
                        drafted.append(int(resp.stages.get("pageDraftedAhead", 0)))
                    if r == 0:
                        pages[way].append(_page(resp))
        search_mod._warm_page = shipped
    return {
        "home": str(home),
        "copies": copies,
        "rounds": rounds,
        "questions": len(queries),
        "all": {w: percentiles(ts) for w, ts in times.items()},
        "semantic_stage": {w: percentiles(ts) for w, ts in staged.items()},
        "searches_with_stage": len(staged["ahead"]) // max(rounds, 1),
        "drafted_ahead_mean": round(sum(drafted) / max(len(drafted), 1), 2),
        "pages_differ": sum(a != b for a, b in zip(pages["ahead"], pages["idle"], strict=True)),
        "load": os.getloadavg(),
    }


def report(out: dict[str, Any]) -> None:
    rows: list[tuple[str, ...]] = [
        (
            way,
            f"{out['all'][way]['p50_ms']:.2f} / {out['all'][way]['p95_ms']:.2f}",
            f"{out['semantic_stage'][way]['p50_ms']:.2f} / "
            f"{out['semantic_stage'][way]['p95_ms']:.2f}",
        )
        for way in ("ahead", "idle")
    ]
    print_table(
        f"default search, limit 10 ({out['questions']} questions × {out['rounds']} rounds)",
        rows,
        ("page", "all p50 / p95 ms", "with the semantic stage p50 / p95 ms"),
    )
    print(
        f"searches that ran the stage: {out['searches_with_stage']} of {out['questions']}; "
        f"hits drafted ahead per search: {out['drafted_ahead_mean']}; "
        f"pages that differ: {out['pages_differ']}; load {out['load']}"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.page_ahead", description=__doc__)
    parser.add_argument("home", type=Path)
    parser.add_argument("--copies", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if not (args.home / "store").is_dir():
        print(f"error: no archive at {args.home}", file=sys.stderr)
        return 2
    out = run_home(args.home, args.copies, args.rounds)
    write_result(f"page-ahead-x{args.copies}", out)
    report(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

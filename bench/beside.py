"""cw's explicit lexical search beside SQLite FTS5 (ids, and with ``snippet()``) and bm25s on one
built archive, without the rest of the real-text bench.

The same measurement as a size's search phase of ``python -m bench realtext``, minus the daemons
and the embedding phases: the systems over the archive's own turn documents, taking turns on
each LongMemEval question (one untimed pass, then the timed one), unrestricted and within the
question's haystack. It prints one JSON object: p50 / p95 ms per ``<system>/<mode>``, cw's
``ratios`` over both FTS5 rows, and the load average before and after. For checking a change
on a quiet machine in minutes, where a full run takes most of an hour.

    python -m bench.beside --home <realtext cache>/builds/<key>/lme-20000/search
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import Any

from bench import realtext_build as rb
from bench import realtext_search as rs


def measure(home: Path, queries: list[rs.Query]) -> dict[str, Any]:
    """Timings, ratios and load for cw lexical, FTS5, FTS5 with snippets and bm25s on ``home``."""
    from bench.realtext import corpus_units
    from cwcore.api import Archive

    with Archive.open(home, embedded=True) as archive:
        units, present = corpus_units(archive.engine)
        baselines, _ = rs.baseline_systems(units, rank_bm25=False)
        cw = rs.cw_in_process(archive, rs.LEXICAL, rs.SemanticTally(), "cw-lexical")
        load_before = rs.load_average()
        timings = rs.interleaved([rs.System("cw-lexical", cw), *baselines], queries, present)
        return {
            "documents": len(units),
            "timings": timings,
            "ratios": rs.ratios(timings, ["cw-lexical"]),
            "load_before": load_before,
            "load_after": rs.load_average(),
        }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.beside", description=__doc__)
    parser.add_argument("--home", type=Path, required=True, help="a built search home (a copy)")
    parser.add_argument("--questions", type=int, default=None, help="the first N questions")
    args = parser.parse_args(argv)
    path = rb.data_root() / rb.LME / "queries.jsonl"
    if not path.is_file():
        parser.exit(2, f"bench.beside: no LongMemEval questions at {path} (set CW_BENCH_DATA)\n")
    if not (args.home / "store").is_dir():
        parser.exit(2, f"bench.beside: {args.home} holds no archive\n")
    os.environ.setdefault("CW_NOW", rb.NOW)  # the clock the bench built its archives under
    out = measure(args.home, rs.load_questions(path, args.questions))
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

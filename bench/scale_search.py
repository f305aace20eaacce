"""The scale bench's searches again, on an archive it kept: a fresh daemon, no import.

Run: ``.venv/bin/python -m bench.scale_search HOME --copies N [--rounds R] [--semantic]``.
``HOME`` is the ``home`` folder of ``python -m bench scale --copies N [--semantic] --keep DIR``
(``DIR/home``: the LongMemEval dev corpus repeated ×N, **real text repeated ×N, synthetic ids**).
The scale bench times its searches once, right after building the archive; this times them on
the settled archive, as often as asked, in a couple of minutes instead of the build's half hour
(an hour with embeddings) — what a change to the search path needs.

In this process, with the bench's clock: a daemon is started on ``HOME`` (semantic retrieval on
with ``--semantic``, which the archive must have been embedded for; off otherwise), FTS5 is
built over the same turn documents (:func:`bench.scale.base_units`, repeated as the scale bench
repeats them), and every dev question is searched through the daemon — explicit lexical
(``semanticPolicy: never``) and, with ``--semantic``, the default search — and by FTS5,
interleaved per question (:func:`bench.realtext_search.interleaved`), unscoped and within the
question's haystack sessions in copy ``i mod N``: one untimed pass, then ``R`` timed passes
(default 1), each reported. Also: the daemon's own time (``timing_ms``), the share of default
searches that used vectors and the semantic stage's wait, embedding and scan, the vectors
searched and the rows the nearest-neighbour graph covers, the daemon's memory after the passes,
the load average. The daemon is stopped at the end. Writes
``bench/results/scale-search-<N>.json``.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import realtext_build as rb
from bench import realtext_search as rs
from bench.common import machine, print_table, restore_environ, save_environ, write_result
from bench.daemon_memory import memory
from bench.scale import (
    DEFAULT_COPIES,
    base_units,
    copy_id,
    label,
    scaled_queries,
    scaled_units,
    semantic_rows,
)


def run(home: Path, copies: int, rounds: int = 1, semantic: bool = False) -> dict[str, Any]:
    """Time the searches on the kept archive at ``home`` (see the module docstring)."""
    from cwcore.daemon import control
    from cwcore.daemon.client import Client

    data = rb.data_root()
    if not rb.lme_available(data):
        print(f"scale_search: skipped, no LongMemEval dev corpus under {data} (set CW_BENCH_DATA)")
        return {"skipped": f"no data under {data}"}
    tag = label(copies)
    print(f"scale_search ({tag}): {home}, machine {machine()}", flush=True)
    folder = rb.cache_root() / "scale"
    folder.mkdir(parents=True, exist_ok=True)
    base = rb.lme_corpus(data, folder, "lme-all", None)
    queries = scaled_queries(rs.load_questions(data / rb.LME / "queries.jsonl", None), copies)
    present = {copy_id(s, k) for s in rb.corpus_sessions(base) for k in range(copies)}
    print("  FTS5 over the same documents ...", flush=True)
    units = scaled_units(base_units(data, base), copies)
    base_systems, built = rs.baseline_systems(units, rank_bm25=False)
    fts = [s for s in base_systems if s.name == "fts5"]
    del units
    runtime = Path(tempfile.mkdtemp(prefix="cws", dir="/tmp"))  # a short socket path
    env = {
        "CW_HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
        "CW_SEMANTIC_RETRIEVAL": "true" if semantic else "false",
        "CW_NOW": rb.NOW,
    }
    saved = save_environ(*env, "CW_EMBEDDED")
    os.environ.pop("CW_EMBEDDED", None)
    os.environ.update(env)
    out: dict[str, Any] = {
        "label": tag,
        "daemon_pid": None,
        "home": str(home),
        "copies": copies,
        "semantic": semantic,
        "fts5_build_s": built["fts5"],
        "load_before": rs.load_average(),
        "passes": [],
    }
    try:
        client = Client.connect(home)
        try:
            pid = client.pid
            assert pid is not None
            out["daemon_pid"] = pid
            if semantic and rs.semantic_status(client).get("state") != "complete":
                raise RuntimeError(f"{home} is not embedded (semantic.status is not complete)")
            tally = rs.SemanticTally()
            names = ["cw-lexical-daemon"] + (["cw-default-daemon"] if semantic else [])
            systems = [
                rs.System(
                    "cw-lexical-daemon",
                    rs.cw_daemon(client, rs.LEXICAL, tally, "cw-lexical-daemon"),
                ),
                *fts,
            ]
            if semantic:
                default = rs.cw_daemon(client, {}, tally, "cw-default-daemon")
                systems.insert(1, rs.System("cw-default-daemon", default))
            print(f"  searching: 1 untimed pass, then {rounds} timed ...", flush=True)
            rs.interleaved(systems, queries, present, warm=False)
            if semantic:  # the search index is loaded now: what the passes search
                st = rs.semantic_status(client)
                out["vectors"] = {"rows": st.get("indexRows"), "graph_rows": st.get("graphRows")}
            for _ in range(rounds):
                timings = rs.interleaved(systems, queries, present, warm=False)
                out["passes"].append(
                    {
                        "timings": timings,
                        "ratios": rs.ratios(timings, names),
                        "load": rs.load_average(),
                    }
                )
            out["semantic_search_used"] = tally.shares()
            out["semantic_stage_ms"] = tally.stage_ms()
            out["memory_mb"] = memory(pid)
        finally:
            client.close()
            control.stop(home)
    finally:
        restore_environ(saved)
        shutil.rmtree(runtime, ignore_errors=True)
    report(out)
    print(f"written {write_result(f'scale-search-{copies}', out)}")
    return out


def report(out: dict[str, Any]) -> None:
    rows: list[tuple[str, ...]] = []
    for i, p in enumerate(out["passes"], 1):
        load = ", ".join(f"{x:.2f}" for x in p["load"])
        for key, t in p["timings"].items():
            ratio = p["ratios"].get(key, {})
            extra = (
                f"{ratio['p50_vs_fts5']}× / {ratio['p95_vs_fts5']}× FTS5"
                if ratio
                else "(reference)"
            )
            server = t.get("server")
            if server:
                extra += f"; daemon p50 {server['p50_ms']:.1f} ms"
            rows.append(
                (f"pass {i} {key}", f"p50 {t['p50_ms']:.1f} ms, p95 {t['p95_ms']:.1f} ms", extra)
            )
        rows.append((f"pass {i} load average", load, ""))
    rows.extend(semantic_rows(out, "timed passes"))
    vectors = out.get("vectors")
    if vectors:
        rows.append(
            (
                "vectors searched",
                f"{vectors['rows'] or 0:,} rows",
                f"graph {vectors['graph_rows'] or 0:,}",
            )
        )
    m = out["memory_mb"]
    rows.append(
        (
            "daemon after the passes",
            f"RSS {m['VmRSS']:.0f} MB (anon {m['anon']:.0f}, file {m['file']:.0f})",
            f"peak {m['VmHWM']:.0f} MB",
        )
    )
    print_table(f"scale_search: {out['label']}", rows, ("what", "measured", ""))


USAGE = "usage: python -m bench.scale_search HOME --copies N [--rounds R] [--semantic]"


def main(argv: list[str]) -> int:
    if "--help" in argv or "-h" in argv:
        print(__doc__)
        return 0
    args = list(argv)
    semantic = "--semantic" in args
    if semantic:
        args.remove("--semantic")
    opts: dict[str, str] = {}
    for flag in ("--copies", "--rounds"):
        if flag in args:
            at = args.index(flag)
            if at + 1 >= len(args):
                print(USAGE, file=sys.stderr)
                return 2
            opts[flag] = args.pop(at + 1)
            args.pop(at)
    if len(args) != 1 or not all(v.isdigit() and int(v) > 0 for v in opts.values()):
        print(USAGE, file=sys.stderr)
        return 2
    home = Path(args[0])
    if not (home / "store").is_dir():
        print(
            f"scale_search: {home} holds no archive (a bench scale --keep DIR's home)",
            file=sys.stderr,
        )
        return 2
    try:
        run(
            home,
            int(opts.get("--copies", DEFAULT_COPIES)),
            rounds=int(opts.get("--rounds", "1")),
            semantic=semantic,
        )
    except RuntimeError as exc:  # an archive not embedded for --semantic: one line, not a trace
        print(f"scale_search: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

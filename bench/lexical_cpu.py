"""Explicit lexical search on a kept home of the scale bench's corpus: CPU per search, where it
goes, and cw beside SQLite FTS5 (issue 36; docs/performance.md, "Explicit lexical search at 190k").

The home is an embedded archive of the LongMemEval dev corpus repeated ×N
(:func:`bench.scale.scaled_corpus`: **real text repeated ×N, synthetic ids**), imported by
:func:`bench.realtext_build._import_child` (foreground indexing, then the idle merges). It is
kept, so a code change that leaves the stored index alone is measured on the same archive.

A search is ``Archive.search`` in this process, ``semanticPolicy: never``, limit 10, for every
dev question unscoped (``all``) and scoped to its haystack sessions in copy ``i mod N``
(``haystack``, :func:`bench.scale.scaled_queries`), with ``CW_SEMANTIC_RETRIEVAL=false`` and the
bench's clock (``CW_NOW``). CPU is the searching thread's (``time.thread_time``), which load on
the other cores inflates less than wall time. The process fixes glibc's mmap threshold at the
daemon's (``cwcore.heap.DAEMON_MMAP_THRESHOLD``, as ``cwcore.daemon.runner`` does) unless
``--glibc-default`` is given or ``MALLOC_MMAP_THRESHOLD_`` is set.

    CW_BENCH_CACHE=/tmp/cw-lexspeed/cache python -m bench.lexical_cpu build --copies 4 HOME
    python -m bench.lexical_cpu answers --copies 4 HOME OUT.json
    python -m bench.lexical_cpu time --copies 4 HOME --rounds 2 [--stages]
    python -m bench.lexical_cpu fts5 --copies 4 HOME --rounds 2

``answers`` writes each search's top 10 without the locator (floats rounded to 1e-9, keys
sorted), so two trees' files compare byte for byte. ``time`` runs one untimed pass, then
``--rounds`` timed ones; with ``--stages`` every function of :data:`STAGES` is wrapped by a
thread-CPU timer (inclusive: rows marked ``·`` are inside the row above them). ``fts5`` times cw
and FTS5 (bare, and with ``snippet()``) over the same turn documents
(:func:`bench.scale.base_units`, repeated per copy), the systems taking turns per question.
``--tree DIR`` imports ``cwcore`` from DIR (a ``git archive`` of another commit), to compare two
trees by running each in turn. ``time`` and ``fts5`` write
``bench/results/lexical-cpu-<command>-x<N>.json`` and print a table.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import realtext_build as rb
from bench import realtext_search as rs
from bench import scale
from bench.common import percentiles, print_table, write_result

MODES = ("all", "haystack")

#: The stages ``time --stages`` wraps: (module, attribute, label). The module is the one the
#: search looks the name up in at call time (``cwcore.retrieve.search`` imports ``resolve`` into
#: its own namespace, so that binding is the one to replace). A label starting "· " is inside the
#: row above it.
STAGES: tuple[tuple[str, str, str], ...] = (
    ("cwcore.retrieve.search", "resolve", "scope: resolve the named sessions"),
    ("cwcore.retrieve.search", "plan_query", "query plan (the scope's window ids)"),
    ("cwcore.retrieve.search", "anchor_stats", "anchors"),
    ("cwcore.retrieve.search", "exact_tier", "exact tier"),
    ("cwcore.retrieve.search", "_literal", "literal"),
    ("cwcore.retrieve.search", "lexical_candidates", "lexical: BM25, visibility, calibration"),
    ("cwcore.index.bm25", "search", "· BM25 (first pass and RM3 requery)"),
    ("cwcore.retrieve.candidates", "Visible.filter", "· visibility filter"),
    ("cwcore.retrieve.expand", "rm3_weighted", "RM3 feedback"),
    ("cwcore.retrieve.search", "_fuse", "fusion (RRF, priors)"),
    ("cwcore.retrieve.search", "collapse", "collapse"),
    ("cwcore.retrieve.candidates", "Visible.prefetch", "window texts (page, feedback)"),
    ("cwcore.retrieve.search", "materialize", "the page"),
    ("cwcore.retrieve.page", "term_spans", "· term spans"),
    ("cwcore.retrieve.page", "make_snippet", "· snippets"),
    ("cwcore.retrieve.page", "Signer.sign", "· locators"),
    ("cwcore.retrieve.page", "create_lease", "· lease"),
    ("cwcore.index.derived", "generation", "generation read"),
)


class StageMissing(LookupError):
    """A stage of the table names a function the code no longer has: the table is out of date."""


@contextmanager
def wrapped(
    table: tuple[tuple[str, str, str], ...], spent: dict[str, float], calls: dict[str, int]
) -> Iterator[None]:
    """Every function of ``table`` replaced by a wrapper adding its thread CPU ms to
    ``spent[label]`` and one to ``calls[label]``; the originals are put back on exit. Raises
    :class:`StageMissing` before wrapping anything if a module or attribute is gone."""
    targets = []
    for module, attr, label in table:
        try:
            owner: Any = importlib.import_module(module)
            *path, name = attr.split(".")
            for part in path:
                owner = getattr(owner, part)
            fn = getattr(owner, name)
        except (ImportError, AttributeError) as exc:
            raise StageMissing(f"stage {label!r}: {module}.{attr} is gone ({exc})") from exc
        if not callable(fn):
            raise StageMissing(f"stage {label!r}: {module}.{attr} is not a function")
        targets.append((owner, name, fn, label))

    def timer(fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            c0 = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[label] = spent.get(label, 0.0) + (time.thread_time() - c0) * 1000
                calls[label] = calls.get(label, 0) + 1

        return run

    for owner, name, fn, label in targets:
        setattr(owner, name, timer(fn, label))
    try:
        yield
    finally:
        for owner, name, fn, _ in targets:
            setattr(owner, name, fn)


def _round(x: Any) -> Any:
    if isinstance(x, float):
        return round(x, 9)
    if isinstance(x, dict):
        return {k: _round(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_round(v) for v in x]
    return x


def answer(hit: Any) -> list[Any]:
    """What a speed change must leave as it was: everything of a hit but its locator."""
    return _round(
        [
            *(hit.document_id, hit.version, hit.score, hit.snippet, list(hit.highlights)),
            *(hit.match_type, list(hit.matched_terms), list(hit.expanded_terms)),
            *(hit.source.message_key, hit.source.session_id, hit.margin, hit.score_metadata),
        ]
    )


def _queries(copies: int) -> list[rs.Query]:
    path = rb.data_root() / rb.LME / "queries.jsonl"
    return scale.scaled_queries(rs.load_questions(path, None), copies)


def _search(archive: Any, q: rs.Query, mode: str) -> Any:
    body: dict[str, Any] = {"query": q.text, "limit": rs.LIMIT, **rs.LEXICAL}
    if mode == "haystack":
        body["sessions"] = list(q.haystack)
    return archive.search(body)


def _check_home(home: Path, copies: int) -> None:
    built = home / "built.json"
    if not (home / "store").is_dir():
        raise SystemExit(f"{home} holds no archive (build it: python -m bench.lexical_cpu build)")
    if built.is_file() and json.loads(built.read_text()).get("copies") != copies:
        raise SystemExit(f"{home} was built with other --copies than {copies} ({built})")


def _tree() -> dict[str, Any]:
    """Which cwcore ran, and this checkout's commit (the tree measured unless ``--tree``)."""
    import cwcore

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=rb.ROOT, capture_output=True, text=True)
        return done.stdout.strip()

    return {
        "cwcore": str(Path(cwcore.__file__).parent),
        "checkout": git("rev-parse", "--short", "HEAD"),
        "checkout_cwcore_dirty": bool(git("status", "--porcelain", "--", "cwcore")),
    }


# -- commands ------------------------------------------------------------------------------------


def build(home: Path, copies: int) -> dict[str, Any]:
    data = rb.data_root()
    folder = rb.cache_root() / "scale"
    folder.mkdir(parents=True, exist_ok=True)
    corpus = scale.scaled_corpus(rb.lme_corpus(data, folder, "lme-all", None), copies, folder)
    print(f"corpus {corpus.source}: {corpus.messages:,} messages ({scale.label(copies)})")
    home.mkdir(parents=True, exist_ok=False)
    t0 = time.perf_counter()
    facts = rb._import_child(home, corpus.source, corpus.fmt)
    facts.update(
        wall_s=round(time.perf_counter() - t0, 1), copies=copies, label=scale.label(copies)
    )
    (home / "built.json").write_text(json.dumps(facts))
    print(json.dumps(facts))
    return facts


def answers(home: Path, copies: int, out: Path) -> dict[str, Any]:
    from cwcore.api import Archive

    got = {}
    with Archive.open(home, embedded=True) as archive:
        for q in _queries(copies):
            for mode in MODES:
                got[f"{q.qid}/{mode}"] = [answer(h) for h in _search(archive, q, mode).results]
    out.write_text(json.dumps(got, ensure_ascii=False, sort_keys=True))
    print(f"{len(got)} searches' top {rs.LIMIT} written to {out}")
    return got


def timing(home: Path, copies: int, rounds: int, stages: bool) -> dict[str, Any]:
    from cwcore.api import Archive

    queries = _queries(copies)
    spent: dict[str, float] = {}
    calls: dict[str, int] = {}
    rows: dict[str, list[dict[str, Any]]] = {m: [] for m in MODES}
    load_before = rs.load_average()
    with (
        Archive.open(home, embedded=True) as archive,
        wrapped(STAGES if stages else (), spent, calls),
    ):
        for r in range(rounds + 1):  # the first pass is not kept (caches, lazy imports)
            for q in queries:
                for mode in MODES:
                    spent.clear()
                    c0, t0 = time.thread_time(), time.perf_counter()
                    response = _search(archive, q, mode)
                    cpu, wall = (time.thread_time() - c0) * 1000, (time.perf_counter() - t0) * 1000
                    if r:
                        expanded = bool(response.stages.get("expanded"))
                        row = {"qid": q.qid, "cpu_ms": cpu, "wall_ms": wall, "expanded": expanded}
                        rows[mode].append(dict(row, stages=dict(spent)))
    out: dict[str, Any] = {"load_before": load_before, "load_after": rs.load_average()}
    for mode, got in rows.items():
        cpus = [g["cpu_ms"] for g in got]
        summary: dict[str, Any] = {
            "cpu": percentiles(cpus),
            "wall": percentiles([g["wall_ms"] for g in got]),
            "expanded": sum(g["expanded"] for g in got),
        }
        if stages:
            summary["stages"] = {}
            for _, _, label in STAGES:
                each = [g["stages"].get(label, 0.0) for g in got]  # 0 where it did not run
                summary["stages"][label] = {
                    **percentiles(each),
                    "mean_ms": round(sum(each) / len(each), 3),
                    "share": round(sum(each) / sum(cpus), 4),
                }
        out[mode] = summary
    if stages:
        out["stage_calls"] = {label: calls.get(label, 0) for _, _, label in STAGES}
        never = [label for label, n in out["stage_calls"].items() if not n]
        if never:  # a binding the search no longer goes through times nothing
            print(f"warning: stages never called: {', '.join(never)}", file=sys.stderr)
    out["samples"] = rows
    return out


def beside_fts5(home: Path, copies: int, rounds: int) -> dict[str, Any]:
    from cwcore.api import Archive

    data = rb.data_root()
    folder = rb.cache_root() / "scale"
    folder.mkdir(parents=True, exist_ok=True)
    base = rb.lme_corpus(data, folder, "lme-all", None)
    units = scale.scaled_units(scale.base_units(data, base), copies)
    systems, built = rs.baseline_systems(units, rank_bm25=False)
    fts = {s.name: s.search for s in systems}
    print(f"FTS5 over {len(units):,} documents, built in {built['fts5']} s")
    cpu: dict[str, list[float]] = {}
    load_before = rs.load_average()
    with Archive.open(home, embedded=True) as archive:

        def cw(text: str, sessions: Any) -> None:
            body: dict[str, Any] = {"query": text, "limit": rs.LIMIT, **rs.LEXICAL}
            if sessions:
                body["sessions"] = list(sessions)
            archive.search(body)

        names: list[tuple[str, Callable[..., Any]]] = [
            ("cw", cw),
            ("fts5", fts["fts5"]),
            ("fts5-snippet", fts["fts5-snippet"]),
        ]
        queries = _queries(copies)
        for r in range(rounds + 1):
            for i, q in enumerate(queries):
                k = i % len(names)  # the first system rotates, so passing load hits all alike
                for name, search in names[k:] + names[:k]:
                    for mode, sessions in (("all", None), ("haystack", q.haystack)):
                        c0 = time.thread_time()
                        search(q.text, sessions)
                        if r:
                            ms = (time.thread_time() - c0) * 1000
                            cpu.setdefault(f"{name}/{mode}", []).append(ms)
    timings = {key: percentiles(samples) for key, samples in cpu.items()}
    return {
        "documents_fts5": len(units),
        "load_before": load_before,
        "load_after": rs.load_average(),
        "cpu": timings,
        "ratios": rs.ratios(timings, ["cw"]),
    }


# -- the run -------------------------------------------------------------------------------------


def report(command: str, out: dict[str, Any]) -> None:
    title = f"lexical CPU ms, {out['label']}, load {out['load_before']} -> {out['load_after']}"
    rows: list[tuple[str, ...]] = []
    if command == "fts5":
        for key, t in sorted(out["cpu"].items()):
            rows.append((key, f"{t['p50_ms']:.2f}", f"{t['p95_ms']:.2f}", str(t["n"])))
        for key, r in out["ratios"].items():
            for ref in ("fts5", "fts5_snippet"):
                rows.append(
                    (f"{key} ÷ {ref}", f"{r[f'p50_vs_{ref}']}×", f"{r[f'p95_vs_{ref}']}×", "")
                )
        print_table(title, rows, ("thread CPU", "p50", "p95", "n"))
        return
    for mode in MODES:
        m = out[mode]
        cpu = m["cpu"]
        whole = f"{mode}: whole search (n {cpu['n']}, RM3 in {m['expanded']})"
        rows.append((whole, f"{cpu['p50_ms']:.2f}", f"{cpu['p95_ms']:.2f}", "", ""))
        for label, s in m.get("stages", {}).items():
            if not out["stage_calls"][label]:
                rows.append((f"  {label}", "never called", "", "", ""))
                continue
            share = f"{100 * s['share']:.1f} %"
            rows.append((f"  {label}", f"{s['p50_ms']:.2f}", "", f"{s['mean_ms']:.2f}", share))
    print_table(title, rows, ("CPU ms per search", "p50", "p95", "mean", "share"))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.lexical_cpu", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("build", "answers", "time", "fts5"):
        sub = commands.add_parser(name)
        sub.add_argument("--copies", type=int, required=True, help="the corpus repeated N times")
        sub.add_argument("home", type=Path)
        if name == "answers":
            sub.add_argument("out", type=Path)
        if name in ("time", "fts5"):
            sub.add_argument("--rounds", type=int, default=2 if name == "fts5" else 1)
        if name == "time":
            sub.add_argument("--stages", action="store_true", help="thread CPU per stage")
        sub.add_argument("--tree", type=Path, help="import cwcore from this tree")
        sub.add_argument("--glibc-default", action="store_true", help="glibc's mmap threshold")
    args = parser.parse_args(argv)
    if args.tree:
        if "cwcore" in sys.modules:
            raise SystemExit("--tree: cwcore is already imported")
        sys.path.insert(0, str(args.tree.resolve()))
    os.environ["CW_SEMANTIC_RETRIEVAL"] = "false"
    os.environ["CW_NOW"] = rb.NOW
    from cwcore import heap

    allocator = os.environ.get("MALLOC_MMAP_THRESHOLD_") or "glibc default"
    if not args.glibc_default and heap.fix_mmap_threshold(heap.DAEMON_MMAP_THRESHOLD):
        allocator = f"mmap threshold {heap.DAEMON_MMAP_THRESHOLD} (the daemon's)"
    tree = _tree()
    if args.tree and not Path(tree["cwcore"]).is_relative_to(args.tree.resolve()):
        raise SystemExit(f"cwcore came from {tree['cwcore']}, not {args.tree}")
    if args.command == "build":
        build(args.home, args.copies)
        return 0
    _check_home(args.home, args.copies)
    if args.command == "answers":
        answers(args.home, args.copies, args.out)
        return 0
    if args.command == "time":
        out = timing(args.home, args.copies, args.rounds, args.stages)
    else:
        out = beside_fts5(args.home, args.copies, args.rounds)
    out = {
        "label": scale.label(args.copies),
        "home": str(args.home),
        "rounds": args.rounds,
        "allocator": allocator,
        **tree,
        **out,
    }
    report(args.command, out)
    print(f"written {write_result(f'lexical-cpu-{args.command}-x{args.copies}', out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

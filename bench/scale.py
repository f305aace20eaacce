"""cw at scale: the LongMemEval dev corpus repeated N times with new ids, through a real daemon,
beside SQLite FTS5 over the same documents in the same run.

Run: ``.venv/bin/python -m bench scale --copies N [--idle S] [--cli-runs K] [--paint-runs P]
[--semantic] [--keep DIR] [--marked]``
(default N=4, about 190k messages; N=21 is about a million). **The text is real, the scale is
not**: every message of the dev corpus (:func:`bench.realtext_build.lme_corpus`, about 47k
messages) appears N times, copy ``k`` under session ``<session>~copy<k>`` and message
``<id>~copy<k>`` (:func:`copy_id`), its text unchanged, so every output is labelled "real text
repeated ×N, synthetic ids". Term statistics are those of a corpus whose every document has N−1
exact duplicates; a real archive of this size has more distinct vocabulary.

One run, with ``CW_SEMANTIC_RETRIEVAL=false`` (no embedding, no model; ``--semantic`` turns
local embeddings on, waits for background embedding to reach ``complete`` after step 2 — and,
from ``GRAPH_MIN_ROWS`` rows, for the daemon's worker to build the vectors' nearest-neighbour
graph (:mod:`cwcore.semantic.graph`) — and times the default search beside the lexical one in
step 5) and the realtext bench's clock (``CW_NOW``):

1. the repeated corpus is written as cw-jsonl (cached under ``CW_BENCH_CACHE``/scale);
2. a daemon is started on a fresh ``CW_HOME`` and ``cw import`` (the installed CLI, its own
   process) admits the file, timed from the command's start to its exit (import msg/s); then
   ``index.run`` with ``wait`` drains the outbox (the drain's own msg/s, and import plus drain
   end to end, since the index worker may start during the import);
3. the daemon's ``/proc`` memory (:func:`bench.daemon_memory.memory`) after the import and after
   indexing, whose ``VmHWM`` is the peak over the daemon's start, the import and the indexing;
4. FTS5 (the realtext bench's :func:`bench.realtext_search.baseline_systems`) over the same
   turn documents: those of an embedded archive of the dev corpus (built once, cached), each
   repeated N times under its copy's session — the daemon owns the scaled store, and cw forms a
   session's documents from that session alone, so the copies' documents are these;
5. every dev question searched through the daemon (explicit lexical, ``semanticPolicy:
   never``) and by FTS5, interleaved (:func:`bench.realtext_search.interleaved`), unscoped and
   scoped to the question's haystack sessions in copy ``i mod N`` (question ``i``): one untimed
   pass (200 daemon searches for the 100 dev questions), the daemon's memory ("steady"), one
   timed pass, the memory again;
6. ``cw sessions --json`` wall time, process start to exit, through the lean CLI (the installed
   ``cw``, :mod:`cwtui.lean`) and the full CLI (``python -m cwtui.cli``), alternating; then the
   TUI's first paint against the daemon (:func:`bench.tui.first_paint`: ``Archive.open()`` to
   the sessions table's first rows and to the projects count, headless, beside the same app
   over an empty archive);
7. ``--idle`` seconds without a request (default 95: the daemon's heap trim comes 30–90 s into a
   quiet period, and after 30 s it merges the BM25 segments bulk indexing left), then the memory
   once more, an untimed pass and the timed pass again (``timings_after_idle``: search as it is
   once the archive has settled, where the first passes time it right after indexing; the
   untimed pass reads the merged segment's blocks once, as the first untimed pass does the
   drain's) and the memory after it;
   the size of ``CW_HOME`` on disk (after indexing and at the end) beside the corpus's text
   bytes.

``--marked`` ends every text of copy ``k > 0`` with one made-up word of its own
(:func:`copy_marker`; FTS5's documents the same), so no two copies hold an identical text. Without
it a search's page, which keeps one hit per distinct text, finds ``N`` identical hits for each
and needs deeper rounds to fill ten (at N=21, 2-3 rounds for 98 of 100 unscoped questions): a cost
of this corpus, not of an archive of that many distinct messages.

``--keep DIR`` builds the archive in ``DIR/home`` (``DIR`` must not exist) and leaves it there,
so an embedded archive of this size can be profiled after the run without building it again.

The load average (``os.getloadavg``) is printed with the table. Writes
``bench/results/scale-<N>.json``. In ``python -m bench`` (all benches) it runs
at N=4, about a quarter of an hour; N=21 takes well over an hour.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from bench import realtext_build as rb
from bench import realtext_search as rs
from bench.common import (
    machine,
    percentiles,
    print_table,
    restore_environ,
    save_environ,
    write_result,
)
from bench.daemon_memory import memory
from bench.tui import first_paint

DEFAULT_COPIES = 4
CLI_RUNS = 10
#: TUI first paints against the scaled archive (after one that warms up; bench.tui.first_paint).
PAINT_RUNS = 5
IDLE_S = 95.0


def label(copies: int, marked: bool = False) -> str:
    if marked:
        return f"real text repeated ×{copies}, each copy marked by a made-up word, synthetic ids"
    return f"real text repeated ×{copies}, synthetic ids"


def copy_marker(copy: int) -> str:
    """The made-up word :func:`repeat_lines` adds to copy ``copy``'s texts ("" for copy 0): a
    run of ASCII letters no question holds (``qzcopy`` and the copy number in base 26, ``b`` for
    1), one token to cw's analyzer and FTS5's alike."""
    if copy == 0:
        return ""
    digits = ""
    while copy:
        copy, rest = divmod(copy, 26)
        digits = chr(ord("a") + rest) + digits
    return f"qzcopy{digits}"


def mark(text: str, copy: int) -> str:
    """``text`` as copy ``copy`` of a marked corpus holds it: ending with a space and
    :func:`copy_marker` ``(copy)``; copy 0 and an empty text unchanged."""
    return f"{text} {copy_marker(copy)}" if copy and text else text


# -- the repeated corpus -------------------------------------------------------------------------


def copy_id(value: str, copy: int) -> str:
    """The id of copy ``copy`` (0-based) of a session or message id: deterministic, and distinct
    for distinct ``(value, copy)`` as long as no original id holds ``~copy``."""
    return f"{value}~copy{copy}"


def repeat_lines(lines: Iterable[str], copies: int, marked: bool = False) -> Iterator[str]:
    """The cw-jsonl ``lines`` (one message each) ``copies`` times over, copy by copy, each copy's
    session and message ids replaced by :func:`copy_id`; every other field (the text) as is,
    except that ``marked`` ends each text of copy ``k > 0`` with a space and
    :func:`copy_marker` ``(k)``, so no text of one copy equals another's: search then keeps one
    hit per copy where the page keeps one hit per distinct text (without it the copies collapse
    into one hit and a page needs deeper rounds: docs/performance.md). ``lines`` is read once
    per copy, so pass a sequence or a re-iterable."""
    for copy in range(copies):
        for line in lines:
            obj = json.loads(line)
            obj["session"] = copy_id(obj["session"], copy)
            obj["id"] = copy_id(str(obj["id"]), copy)
            if marked and isinstance(obj.get("text"), str):
                obj["text"] = mark(obj["text"], copy)
            yield json.dumps(obj, ensure_ascii=False)


def scaled_corpus(base: rb.Corpus, copies: int, folder: Path, marked: bool = False) -> rb.Corpus:
    """``base`` repeated ``copies`` times as cw-jsonl in ``folder`` (reused when present)."""
    name = f"{base.name}-x{copies}" + ("-marked" if marked else "")
    src = folder / f"{name}.cw.jsonl"
    if not src.is_file():
        # Lines end at "\n" only: a text may hold U+2028 and other breaks splitlines() takes.
        lines = [x for x in base.source.read_text(encoding="utf-8").split("\n") if x]
        tmp = src.with_suffix(".tmp")
        with tmp.open("w", encoding="utf-8") as fh:
            for line in repeat_lines(lines, copies, marked):
                fh.write(line + "\n")
        tmp.replace(src)
    return rb.Corpus(name, src, "cw-jsonl", base.messages * copies, base.text_bytes * copies, False)


def scaled_units(units: list[Any], copies: int, marked: bool = False) -> list[Any]:
    """The base archive's turn documents once per copy, grouped under the copy's session
    (``marked``: copy ``k > 0``'s text ends with its :func:`copy_marker`, as cw's does)."""
    from eval import baselines

    return [
        baselines.Unit(
            copy_id(u.uid, k), mark(u.text, k) if marked else u.text, copy_id(u.group, k)
        )
        for k in range(copies)
        for u in units
    ]


def scaled_queries(queries: list[rs.Query], copies: int) -> list[rs.Query]:
    """Question ``i`` scoped to its haystack sessions in copy ``i mod copies``."""
    return [
        rs.Query(q.qid, q.text, tuple(copy_id(s, i % copies) for s in q.haystack))
        for i, q in enumerate(queries)
    ]


# -- pieces of the run ---------------------------------------------------------------------------


def base_units(data: Path, base: rb.Corpus) -> list[Any]:
    """The dev corpus's turn documents as FTS5 units, from an embedded archive of it (cached
    with the realtext builds: a code change that reshapes documents rebuilds it)."""
    from bench.common import cached_build
    from bench.realtext import corpus_units
    from cwcore.api import Archive

    home = rb.build_dir(data) / base.name / "scale-units"
    cached_build(home, lambda h: rb.spawn("import", str(h), str(base.source), base.fmt))
    with Archive.open(home, embedded=True) as archive:
        units, _ = corpus_units(archive.engine)
    return units


def disk_bytes(path: Path) -> int:
    """Bytes of every file under ``path`` (apparent sizes)."""
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _cli_wall(env: dict[str, str], runs: int) -> dict[str, dict[str, float]]:
    """``cw sessions --json`` wall ms, process start to exit, lean and full CLI alternating."""
    lean = [str(Path(sys.executable).with_name("cw")), "sessions", "--json"]
    full = [sys.executable, "-m", "cwtui.cli", "sessions", "--json"]
    samples: dict[str, list[float]] = {"lean": [], "full": []}
    for i in range(runs + 1):  # the first round (bytecode, page cache) is not kept
        for name, cmd in (("lean", lean), ("full", full)):
            t0 = time.perf_counter()
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
            ms = (time.perf_counter() - t0) * 1000
            if done.returncode != 0:
                raise RuntimeError(f"{name} cw sessions failed: {done.stderr[-300:]}")
            json.loads(done.stdout)
            if i:
                samples[name].append(ms)
    return {k: percentiles(v) for k, v in samples.items()}


def _wait_embedded(client: Any, since: float, report_every_s: float = 60.0) -> dict[str, Any]:
    """Poll ``semantic.status`` until background embedding is ``complete``; the seconds since
    ``since`` (``time.perf_counter()`` at the end of the drain: the daemon's worker starts
    embedding then, while the bench builds FTS5), the windows, and the pace. The copies' window
    texts are the dev corpus's, so the content table computes each distinct text once: the time
    is that of one copy's distinct texts plus the other copies' look-ups, not that of N times as
    much distinct text."""
    last = time.perf_counter()
    st = rs.semantic_status(client)
    while st.get("state") != "complete":
        if st.get("state") == "disabled":
            raise RuntimeError("semantic retrieval is disabled in the bench's daemon")
        now = time.perf_counter()
        if now - last >= report_every_s:
            last = now
            print(
                f"    embedding: {st.get('embedded', 0):,} of {st.get('total', 0):,} windows, "
                f"{now - since:.0f} s, load {rs.load_average()}",
                flush=True,
            )
        time.sleep(2.0)
        st = rs.semantic_status(client)
    seconds = time.perf_counter() - since
    return {
        "seconds": round(seconds, 1),
        "windows": int(st.get("total", 0)),
        "embedded": int(st.get("embedded", 0)),
        "windows_per_s": round(int(st.get("total", 0)) / max(seconds, 1e-9), 1),
    }


def _wait_graph(
    client: Any, since: float, timeout_s: float = 1800.0, poll_s: float = 2.0
) -> dict[str, Any]:
    """After embedding is complete, poll ``semantic.status`` until the daemon's worker has built
    the vectors' nearest-neighbour graph over all but a quarter of the stored vectors (what it
    builds: :func:`cwcore.semantic.graph.wanted`), so the default search is timed as a settled
    archive serves it; none is built below ``GRAPH_MIN_ROWS`` rows. The rows are the handler's
    stored vectors (``rows``), not the daemon's loaded search index (``indexRows``), which lags
    until its next refresh: read right after ``complete``, it once held a quarter of them, and
    the searches began before the graph existed. The seconds since ``since`` (the end of the
    embedding) and the rows covered."""
    from cwcore.semantic import graph as vgraph

    st = rs.semantic_status(client)
    deadline = time.monotonic() + timeout_s
    while True:
        rows, covered = int(st.get("rows") or 0), int(st.get("graphRows") or 0)
        if rows < vgraph.GRAPH_MIN_ROWS or not vgraph.wanted(rows, covered):
            break
        if time.monotonic() > deadline:
            print(f"  note: no graph of {rows:,} rows after {timeout_s:.0f} s", flush=True)
            break
        time.sleep(poll_s)
        st = rs.semantic_status(client)
    return {"seconds": round(time.perf_counter() - since, 1), "rows": rows, "covered": covered}


# -- the run -------------------------------------------------------------------------------------


def run(
    copies: int = DEFAULT_COPIES,
    idle: float = IDLE_S,
    cli_runs: int = CLI_RUNS,
    quick: bool = False,
    paint_runs: int = PAINT_RUNS,
    semantic: bool = False,
    keep: Path | None = None,
    marked: bool = False,
) -> dict[str, Any]:
    """One scale run (``quick``, from ``python -m bench --quick``: one copy, no idle wait, two
    CLI rounds, to check the machinery). ``semantic`` runs the daemon with local embeddings:
    after the drain it waits for background embedding to reach ``complete`` (timed, the daemon's
    memory after it), and the default search (``semanticPolicy`` left to the settings) is timed
    beside the lexical one and FTS5. ``keep`` (a folder that does not exist yet) holds the
    archive and is left in place. ``marked``: each copy's texts end with its own made-up word
    (:func:`repeat_lines`), so the copies are distinct texts."""
    if quick:
        copies, idle, cli_runs, paint_runs = 1, 0.0, 2, 1
    from cwcore.daemon import control
    from cwcore.daemon.client import Client

    data = rb.data_root()
    if not rb.lme_available(data):
        print(f"scale: skipped, no LongMemEval dev corpus under {data} (set CW_BENCH_DATA)")
        return {"skipped": f"no data under {data}"}
    tag = label(copies, marked)
    print(f"scale ({tag}): machine {machine()}, load {rs.load_average()}", flush=True)
    folder = rb.cache_root() / "scale"
    folder.mkdir(parents=True, exist_ok=True)
    base = rb.lme_corpus(data, folder, "lme-all", None)
    corpus = scaled_corpus(base, copies, folder, marked)
    queries = scaled_queries(rs.load_questions(data / rb.LME / "queries.jsonl", None), copies)
    present = {copy_id(s, k) for s in rb.corpus_sessions(base) for k in range(copies)}
    print(f"  corpus {corpus.name}: {corpus.messages:,} messages ({tag})", flush=True)

    if keep is not None:
        keep.mkdir(parents=True)  # refuses a folder that exists: never build over an archive
    work = keep if keep is not None else Path(tempfile.mkdtemp(prefix="cw-bench-scale-"))
    runtime = Path(tempfile.mkdtemp(prefix="cws", dir="/tmp"))  # a short socket path
    home = work / "home"
    env = {k: v for k, v in os.environ.items() if k != "CW_EMBEDDED"}
    env.update(
        CW_HOME=str(home),
        XDG_RUNTIME_DIR=str(runtime),
        CW_SEMANTIC_RETRIEVAL="true" if semantic else "false",
        CW_NOW=rb.NOW,
    )
    saved = save_environ(*env, "CW_EMBEDDED")
    os.environ.pop("CW_EMBEDDED", None)
    os.environ.update(env)
    cw = str(Path(sys.executable).with_name("cw"))
    out: dict[str, Any] = {
        "label": tag,
        "copies": copies,
        "messages": corpus.messages,
        "text_bytes": corpus.text_bytes,
        "load_before": rs.load_average(),
        "semantic": semantic,
        "marked": marked,
    }
    mem: dict[str, dict[str, float]] = {}
    try:
        # FTS5's documents first, while no daemon holds the machine's memory.
        print("  FTS5 units (the dev corpus's documents, repeated) ...", flush=True)
        units = scaled_units(base_units(data, base), copies, marked)
        client = Client.connect(home)  # starts the daemon, untimed
        pid = client.pid
        assert pid is not None
        try:
            print("  cw import through the daemon ...", flush=True)
            t0 = time.perf_counter()
            done = subprocess.run(
                [cw, "import", str(corpus.source), "--format", corpus.fmt],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
            import_s = time.perf_counter() - t0
            if done.returncode != 0:
                raise RuntimeError(
                    f"cw import failed (exit {done.returncode}): {done.stderr[-500:]}"
                )
            mem["after import"] = memory(pid)
            print("  indexing (drain) ...", flush=True)
            t0 = time.perf_counter()
            client.call("index.run", {"wait": True})
            drained = time.perf_counter()
            index_s = drained - t0
            mem["after indexing"] = memory(pid)
            status = client.call("index.status", {})
            out["documents_cw"] = status["documents"]
            out["disk_after_indexing_bytes"] = disk_bytes(home)
            out["import"] = {
                "seconds": round(import_s, 1),
                "messages_per_s": round(corpus.messages / import_s, 1),
                "index_drain_s": round(index_s, 1),
                "index_drain_messages_per_s": round(corpus.messages / max(index_s, 1e-9), 1),
                "import_and_index_messages_per_s": round(corpus.messages / (import_s + index_s), 1),
                "outbox_depth_after_drain": status["outbox"]["depth"],
            }
            print("  FTS5 build ...", flush=True)
            base_systems, built = rs.baseline_systems(units, rank_bm25=False)
            fts = [s for s in base_systems if s.name == "fts5"]
            out["documents_fts5"] = len(units)
            if len(units) != out["documents_cw"]:
                print(f"  note: FTS5 has {len(units):,} documents, cw {out['documents_cw']:,}")
            out["fts5_build_s"] = built["fts5"]
            del base_systems, units
            if semantic:
                out["embedding"] = _wait_embedded(client, drained)
                mem["after embedding"] = memory(pid)
                out["graph"] = _wait_graph(client, time.perf_counter())
                print(f"  graph: {out['graph']}", flush=True)
            tally = rs.SemanticTally()
            cw_systems = ["cw-lexical-daemon"]
            systems = [
                rs.System(
                    "cw-lexical-daemon",
                    rs.cw_daemon(client, rs.LEXICAL, tally, "cw-lexical-daemon"),
                ),
                *fts,
            ]
            if semantic:
                cw_systems.append("cw-default-daemon")
                systems.insert(
                    1,
                    rs.System(
                        "cw-default-daemon", rs.cw_daemon(client, {}, tally, "cw-default-daemon")
                    ),
                )
            searches = 2 * len(queries)
            print(f"  searching: {searches} untimed, then {searches} timed ...", flush=True)
            rs.interleaved(systems, queries, present, warm=False)
            mem[f"after {searches} searches (steady)"] = memory(pid)
            out["load_search"] = rs.load_average()
            out["timings"] = rs.interleaved(systems, queries, present, warm=False)
            mem[f"after {2 * searches} searches"] = memory(pid)
            out["ratios"] = rs.ratios(out["timings"], cw_systems)
            print("  cw sessions --json, lean and full CLI ...", flush=True)
            out["cw_sessions_wall"] = _cli_wall(env, cli_runs)
            print("  TUI first paint against the daemon ...", flush=True)
            out["tui_first_paint"] = first_paint(home, runs=paint_runs)
            if idle:
                # The quiet period: the daemon's heap trim (Engine.trim_heap) and, after 30 s,
                # the merge of the BM25 segments bulk indexing left (IndexWorker.merge).
                time.sleep(idle)
                mem[f"then idle {idle:.0f} s"] = memory(pid)
                print(
                    f"  searching again after {idle:.0f} s idle: {searches} untimed, then "
                    f"{searches} timed ...",
                    flush=True,
                )
                rs.interleaved(systems, queries, present, warm=False)
                after = rs.interleaved(systems, queries, present, warm=False)
                out["timings_after_idle"] = after
                out["ratios_after_idle"] = rs.ratios(after, cw_systems)
                mem[f"after {2 * searches} more searches"] = memory(pid)
            out["semantic_search_used"] = tally.shares()
            out["semantic_stage_ms"] = tally.stage_ms()
            out["disk_end_bytes"] = disk_bytes(home)
            out["load_after"] = rs.load_average()
        finally:
            client.close()
            control.stop(home)
    finally:
        restore_environ(saved)
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    out["memory_mb"] = mem
    out["disk_vs_text"] = round(out["disk_end_bytes"] / max(1, corpus.text_bytes), 2)
    report(out)
    name = f"scale-{copies}" + ("-marked" if marked else "") + ("-semantic" if semantic else "")
    print(f"written {write_result(name, out)}")
    return out


def semantic_rows(out: dict[str, Any], passes: str) -> list[tuple[str, ...]]:
    """The report's rows on the semantic stage: each system's share of searches that used
    vectors, and the stage's wait with its embedding and scan (over ``passes``)."""
    rows: list[tuple[str, ...]] = []
    for name, share in out.get("semantic_search_used", {}).items():
        rows.append((f"{name}: searches that used vectors", f"{share}", ""))
    for name, parts in out.get("semantic_stage_ms", {}).items():
        if "ms" in parts:
            split = ", ".join(
                f"{label} p50 {parts[key]['p50_ms']:.1f} ms"
                for key, label in (("embedMs", "embedding"), ("scanMs", "scan + re-score"))
                if key in parts
            )
            rows.append(
                (
                    f"{name}: the semantic stage's wait ({passes})",
                    f"p50 {parts['ms']['p50_ms']:.1f} ms, p95 {parts['ms']['p95_ms']:.1f} ms",
                    split,
                )
            )
    return rows


def report(out: dict[str, Any]) -> None:
    tag, n = out["label"], out["messages"]
    load = ", ".join(f"{x:.2f}" for x in out["load_search"])
    imp = out["import"]
    rows: list[tuple[str, ...]] = [
        (
            "import (cw import, admission)",
            f"{imp['messages_per_s']:,.0f} msg/s",
            f"{imp['seconds']} s",
        ),
        (
            "indexing (drain after import)",
            f"{imp['index_drain_messages_per_s']:,.0f} msg/s",
            f"{imp['index_drain_s']} s",
        ),
        ("import + indexing", f"{imp['import_and_index_messages_per_s']:,.0f} msg/s", ""),
    ]
    emb = out.get("embedding")
    if emb:
        rows.append(
            (
                "embedding to complete (after the drain)",
                f"{emb['seconds']} s",
                f"{emb['windows']:,} windows, {emb['windows_per_s']} windows/s (each distinct "
                "text once)",
            )
        )
    graph = out.get("graph")
    if graph:
        rows.append(
            (
                "vectors' graph ready (after embedding)",
                f"{graph['seconds']} s",
                f"covers {graph['covered']:,} of {graph['rows']:,} rows",
            )
        )
    rows.extend(semantic_rows(out, "every pass"))
    phases = [("", "timings", "ratios"), (" after idle", "timings_after_idle", "ratios_after_idle")]
    for phase, timings, ratios in phases:
        for key, t in out.get(timings, {}).items():
            ratio = out[ratios].get(key, {})
            extra = (
                f"{ratio['p50_vs_fts5']}× / {ratio['p95_vs_fts5']}× FTS5"
                if ratio
                else "(reference)"
            )
            measured = f"p50 {t['p50_ms']:.1f} ms, p95 {t['p95_ms']:.1f} ms"
            rows.append((f"search {key}{phase}", measured, extra))
    for key, m in out["memory_mb"].items():
        rows.append(
            (
                f"daemon {key}",
                f"RSS {m['VmRSS']:.0f} MB (anon {m['anon']:.0f}, file {m['file']:.0f})",
                f"peak {m['VmHWM']:.0f} MB",
            )
        )
    rows.append(
        (
            "disk (CW_HOME)",
            f"{out['disk_end_bytes'] / 1e6:,.0f} MB ({out['disk_vs_text']}× the text)",
            f"text {out['text_bytes'] / 1e6:,.0f} MB; after indexing "
            f"{out['disk_after_indexing_bytes'] / 1e6:,.0f} MB",
        )
    )
    for name, p in out["cw_sessions_wall"].items():
        rows.append(
            (
                f"cw sessions --json ({name})",
                f"p50 {p['p50_ms']:.0f} ms",
                f"p95 {p['p95_ms']:.0f} ms",
            )
        )
    paint = out.get("tui_first_paint")
    if paint:
        rows.append(
            (
                "TUI first paint (open + first rows)",
                f"p50 {paint['total_ms']['p50_ms']:.0f} ms",
                f"projects counted p50 {paint['projects_counted_ms']['p50_ms']:.0f} ms; "
                f"empty archive p50 {paint['empty_archive_ms']['p50_ms']:.0f} ms",
            )
        )
    print_table(
        f"scale: {n:,} messages, {tag} (load average {load} during the searches)",
        rows,
        ("what", "measured", ""),
    )


def main(argv: list[str]) -> int:
    if "--help" in argv or "-h" in argv:
        print(__doc__)
        return 0

    def opt(flag: str, default: str) -> str:
        return argv[argv.index(flag) + 1] if flag in argv else default

    run(
        copies=int(opt("--copies", str(DEFAULT_COPIES))),
        idle=float(opt("--idle", str(IDLE_S))),
        cli_runs=int(opt("--cli-runs", str(CLI_RUNS))),
        paint_runs=int(opt("--paint-runs", str(PAINT_RUNS))),
        semantic="--semantic" in argv,
        keep=Path(opt("--keep", "")) if "--keep" in argv else None,
        marked="--marked" in argv,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""The real-text bench: cw on real conversations beside SQLite FTS5, bm25s and rank-bm25.

Run: ``.venv/bin/python -m bench realtext [--quick]`` (part of ``make bench``). Without the shared
data (``CW_BENCH_DATA``, default ``/work/shared/data``; see :mod:`bench.realtext_build`) it prints
a notice and skips. One run:

The clock is fixed (``CW_NOW``) for the whole run.

1. **builds** (cached, :mod:`bench.realtext_build`): the whole LongMemEval_S dev corpus, a
   20,000-message slice of it, a 5,000-message slice (preflight only) and the seven agent logs,
   each imported with ``cw import`` semantics and timed: admission messages/s with foreground
   indexing, then admission without indexing and the outbox drained by the index worker in a
   second build (indexing messages/s), RocksDB bytes per message after a full compaction beside
   the text's bytes, peak RSS of each phase's process; then ``cw import`` of the slice and the
   full corpus as a user runs it, the CLI against a running daemon on a fresh store
   (:func:`daemon_import`);
2. **search** (:mod:`bench.realtext_search`) on every LongMemEval question, unrestricted and
   within its haystack sessions, at the slice and the full corpus: cw lexical only
   (``semanticPolicy: never``) and cw default, in process and through a real daemon (client
   round trip and the daemon's own ``timing_ms``), interleaved with FTS5, bm25s and rank-bm25
   (the slice) over the same turn documents; then the daemon searches paced 0.25 s apart, idle
   and while a second daemon embeds an unembedded copy in the background (the ratio is the
   claim), and the daemons' peak RSS;
3. **preflight** through the daemon at the 5,000-message slice and the full corpus, one call per
   question (the question as the new user message in one of its haystack sessions);
4. **embedding throughput** (:mod:`bench.realtext_embed`): a sample of the corpus's windows
   through cw's MiniLM, cold, per embedding unit, and the projected time to ``complete``.

Machine facts and the load average before and after are printed and stored; the result is
``bench/results/realtext.json`` (``realtext-quick.json`` with ``--quick``, which uses a
1,000/3,000-message slice, 20 questions and 150 sampled windows to check the machinery: its
numbers are not the targets' sizes). Targets (issue 17) are listed met / not met.
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import realtext_build as rb
from bench import realtext_search as rs
from bench.common import machine, percentiles, write_result
from bench.realtext_report import report, targets


@dataclass(frozen=True)
class Plan:
    """Sizes of one run (``None``: the whole dev corpus)."""

    slice_messages: int
    full_messages: int | None
    preflight_messages: int
    questions: int | None
    embed_windows: int
    label: str


FULL = Plan(20_000, None, 5_000, None, 600, "realtext")
QUICK = Plan(1_000, 3_000, 1_000, 20, 150, "realtext-quick")
PREFLIGHT_WARM = 10
EMBED_START_TIMEOUT_S = 600.0


def _name(n: int | None) -> str:
    return "lme-all" if n is None else f"lme-{n}"


# -- builds --------------------------------------------------------------------------------------


def _build_facts(corpus: rb.Corpus, search: dict[str, Any], index: dict[str, Any] | None) -> dict:
    n = search["messages"]
    text = corpus.text_bytes
    out: dict[str, Any] = {
        "messages": n,
        "documents": search["documents"],
        "text_bytes": text,
        "text_bytes_per_message": round(text / max(1, n), 1),
        "import": search,
        "import_messages_per_s": search["messages_per_s"],
        "disk_bytes_per_message": round(search["disk_bytes"] / max(1, n), 1),
        "disk_vs_text": round(search["disk_bytes"] / max(1, text), 2),
        "reused": search.get("reused", False),
    }
    if "embedding" in search:
        with_vectors = search["embedding"]["disk_bytes_with_vectors"]
        out["disk_bytes_per_message_with_vectors"] = round(with_vectors / max(1, n), 1)
    if index is not None:
        drain = index["drain"]
        out["admit_only_messages_per_s"] = index["admit"]["messages_per_s"]
        out["index_messages_per_s"] = round(n / max(drain["seconds"], 1e-9), 1)
        out["indexing"] = index
    return out


def builds(plan: Plan, data: Path, folder: Path) -> tuple[dict[str, Any], dict[str, rb.Corpus]]:
    """Build (or reuse) every archive; returns the facts and the corpus of each name."""
    corpora: list[tuple[rb.Corpus, bool]] = []
    for n, indexing in (
        (plan.slice_messages, True),
        (plan.full_messages, True),
        (plan.preflight_messages, False),
    ):
        corpus = rb.lme_corpus(data, folder, _name(n), n)
        if corpus.name not in {c.name for c, _ in corpora}:
            corpora.append((corpus, indexing))
    if rb.agent_logs_available(data):
        corpora.append((rb.agent_logs_corpus(data), True))
    facts: dict[str, Any] = {}
    for corpus, indexing in corpora:
        print(f"  building {corpus.name} ...", flush=True)
        search = rb.build_search_home(folder, corpus)
        index = rb.build_indexing_home(folder, corpus) if indexing else None
        facts[corpus.name] = _build_facts(corpus, search, index)
    return facts, {c.name: c for c, _ in corpora}


def daemon_import(folder: Path, corpus: rb.Corpus) -> dict[str, Any]:
    """``cw import`` as a user runs it: the CLI in its own process against a running daemon on a
    fresh store, timed from the command's start to its exit (interpreter start included). The
    daemon admits every document and acknowledges; publication is the index worker's, which
    yields to the import call and runs after it (a single small document is published in the
    foreground first). The daemon's start is not timed."""
    import subprocess
    import sys

    home = folder / corpus.name / "daemon-import"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    client = _daemon(home)
    cw = Path(sys.executable).with_name("cw")
    env = {**os.environ, "CW_HOME": str(home)}
    env.pop("CW_EMBEDDED", None)
    try:
        t0 = time.perf_counter()
        proc = subprocess.run(
            [str(cw), "import", str(corpus.source), "--format", corpus.fmt],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        seconds = time.perf_counter() - t0
        if proc.returncode != 0:
            raise RuntimeError(f"cw import failed (exit {proc.returncode}): {proc.stderr[-500:]}")
        status = client.call("index.status", {})
    finally:
        rss = _stop(client, home)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "messages": corpus.messages,
        "seconds": round(seconds, 3),
        "messages_per_s": round(corpus.messages / seconds, 1),
        "outbox_depth_after_import": status["outbox"]["depth"],
        "daemon_peak_rss_mb": rss,
    }


# -- search --------------------------------------------------------------------------------------


def corpus_units(engine: Any) -> tuple[list[Any], set[str]]:
    """The archive's turn documents as baseline units, and the sessions they come from."""
    from eval import baselines
    from eval.lme import Corpus

    corpus = Corpus(engine)
    units = [baselines.Unit(d, corpus.text[d], corpus.doc_session[d]) for d in corpus.docs]
    return units, set(corpus.doc_session.values())


def _daemon(home: Path) -> Any:
    from cwcore.daemon.client import connect

    return connect(home)


def _stop(client: Any, home: Path) -> float | None:
    from cwcore.daemon import control

    rss = rs.daemon_peak_rss_mb(client.pid)
    client.close()
    control.stop(home)
    return rss


def _daemon_system(client: Any, name: str, tally: rs.SemanticTally) -> rs.System:
    extra = rs.LEXICAL if "lexical" in name else {}
    return rs.System(name, rs.cw_daemon(client, extra, tally, name))


def search_phase(
    name: str, folder: Path, queries: list[rs.Query], rank_bm25: bool
) -> dict[str, Any]:
    from cwcore.api import Archive

    search_home, index_home = folder / name / "search", folder / name / "indexing"
    daemon_home = rb.clone_home(search_home, folder / name / "daemon")
    out: dict[str, Any] = {}
    with Archive.open(search_home, embedded=True) as archive:
        engine = archive.engine
        units, present = corpus_units(engine)
        base, built = rs.baseline_systems(units, rank_bm25)
        tally = rs.SemanticTally()
        client = _daemon(daemon_home)
        try:
            systems = [
                rs.System("cw-lexical", rs.cw_in_process(archive, rs.LEXICAL, tally, "cw-lexical")),
                rs.System("cw-default", rs.cw_in_process(archive, {}, tally, "cw-default")),
                _daemon_system(client, "cw-lexical-daemon", tally),
                _daemon_system(client, "cw-default-daemon", tally),
                *base,
            ]
            out["load_before"] = rs.load_average()
            out["timings"] = rs.interleaved(systems, queries, present)
            out["load_after"] = rs.load_average()
            paced = [s for s in systems if s.name in ("cw-default-daemon", "cw-lexical-daemon")]
            out["ratios"] = rs.ratios(
                out["timings"], ["cw-lexical", "cw-default", "cw-lexical-daemon"]
            )
            if any(r["p50_vs_fts5"] > 0.5 for k, r in out["ratios"].items() if "lexical/" in k):
                out["profile_cw_lexical"] = rs.profile(systems[0], queries, present)
            # The main loop warmed this daemon; the paced pass is the reference for the ratio.
            out["idle_paced"] = rs.interleaved(
                paced, queries, present, gap_s=rs.EMBEDDING_GAP_S, warm=False
            )
        finally:
            out["daemon_peak_rss_mb"] = _stop(client, daemon_home)
            shutil.rmtree(daemon_home, ignore_errors=True)
    out["documents"] = len(units)
    out["baseline_build_s"] = built
    out["semantic_search_used"] = tally.shares()
    out["while_embedding"] = while_embedding(
        index_home, folder / name / "embedding", queries, present
    )
    idle, busy = out["idle_paced"], out["while_embedding"]["timings"]
    out["while_embedding"]["ratio_to_idle"] = {
        key: {
            "p50": round(busy[key]["p50_ms"] / max(idle[key]["p50_ms"], 1e-9), 2),
            "p95": round(busy[key]["p95_ms"] / max(idle[key]["p95_ms"], 1e-9), 2),
        }
        for key in busy
        if key in idle
    }
    return out


def while_embedding(
    index_home: Path, home: Path, queries: list[rs.Query], present: set[str]
) -> dict[str, Any]:
    """Daemon searches, paced, while its semantic worker embeds a copy with no vectors
    (``present``: the archive's sessions, so scopes match the idle run's)."""
    home = rb.clone_home(index_home, home)
    rs.clear_vectors(home)
    client = _daemon(home)
    try:
        t0 = time.perf_counter()
        first = rs.wait_embedding_started(client, EMBED_START_TIMEOUT_S)
        started_s = time.perf_counter() - t0
        tally = rs.SemanticTally()
        systems = [
            _daemon_system(client, "cw-default-daemon", tally),
            _daemon_system(client, "cw-lexical-daemon", tally),
        ]
        before, t0 = rs.semantic_status(client), time.perf_counter()
        timings = rs.interleaved(systems, queries, present, gap_s=rs.EMBEDDING_GAP_S)
        after, seconds = rs.semantic_status(client), time.perf_counter() - t0
    finally:
        rss = _stop(client, home)
        shutil.rmtree(home, ignore_errors=True)
    embedded = int(after.get("embedded", 0)) - int(before.get("embedded", 0))
    return {
        "first_vectors_after_s": round(started_s, 1),
        "state_at_first": first.get("state"),
        "timings": timings,
        "windows_embedded_meanwhile": embedded,
        "embedding_windows_per_s_meanwhile": round(embedded / max(seconds, 1e-9), 2),
        "state_after": after.get("state"),
        "semantic_search_used": tally.shares(),
        "daemon_peak_rss_mb": rss,
    }


# -- preflight -----------------------------------------------------------------------------------


def preflight_phase(folder: Path, corpus: rb.Corpus, queries: list[rs.Query]) -> dict[str, Any]:
    """Preflight through a daemon: each question as a new user message in a haystack session."""
    name = corpus.name
    present = rb.corpus_sessions(corpus)
    home = rb.clone_home(folder / name / "search", folder / name / "preflight")
    token = secrets.token_hex(4)
    requests = []
    for i, q in enumerate(queries):
        session = next((s for s in q.haystack if s in present), None) or min(present)
        requests.append({"session": session, "message": q.text, "messageKey": f"user:{token}{i}"})
    client = _daemon(home)
    try:
        for i, req in enumerate(requests[:PREFLIGHT_WARM]):
            client.call("preflight", {**req, "messageKey": f"{req['messageKey']}w{i}"})
        samples, own, outcomes = [], [], Counter[str]()
        for req in requests:
            t0 = time.perf_counter()
            body = client.call("preflight", req)
            samples.append((time.perf_counter() - t0) * 1000)
            outcomes[str(body.get("outcome"))] += 1
            ms = (body.get("diagnostics") or {}).get("latencyMs")
            if ms is not None:
                own.append(float(ms))
    finally:
        rss = _stop(client, home)
        shutil.rmtree(home, ignore_errors=True)
    return {
        "latency": percentiles(samples),
        "daemon_latency": percentiles(own) if own else None,
        "outcomes": dict(sorted(outcomes.items())),
        "daemon_peak_rss_mb": rss,
    }


# -- the run ---------------------------------------------------------------------------------


def run(quick: bool = False) -> dict[str, Any]:
    """The whole real-text bench (``quick``: small sizes that check the machinery)."""
    from bench.realtext_embed import throughput

    plan = QUICK if quick else FULL
    data = rb.data_root()
    # One fixed clock for builds (message timestamps), daemons and searches, so a cached
    # archive never ages into other recency and staleness decisions.
    os.environ["CW_NOW"] = rb.NOW
    os.environ.pop("CW_EMBEDDED", None)
    if not rb.lme_available(data):
        print(f"realtext: skipped, no LongMemEval dev corpus under {data} (set CW_BENCH_DATA)")
        return {"skipped": f"no data under {data}"}
    facts_machine = machine()
    print(f"realtext ({plan.label}): machine {facts_machine}, load {rs.load_average()}")
    result: dict[str, Any] = {"plan": plan.__dict__, "load_before": rs.load_average()}
    folder = rb.build_dir(data)
    result["cache"] = str(folder)
    result["builds"], corpora = builds(plan, data, folder)
    queries = rs.load_questions(data / rb.LME / "queries.jsonl", plan.questions)
    result["questions"] = len(queries)
    result["daemon_import"] = {}
    for n in (plan.slice_messages, plan.full_messages):
        name = _name(n)
        print(f"  cw import through the daemon, {name} ...", flush=True)
        result["daemon_import"][name] = daemon_import(folder, corpora[name])
    result["search"] = {}
    for n in (plan.slice_messages, plan.full_messages):
        name = _name(n)
        print(f"  searching {name} ...", flush=True)
        result["search"][name] = search_phase(name, folder, queries, n == plan.slice_messages)
    result["preflight"] = {}
    for n in dict.fromkeys((plan.preflight_messages, plan.full_messages)):
        name = _name(n)
        print(f"  preflight {name} ...", flush=True)
        result["preflight"][name] = preflight_phase(folder, corpora[name], queries)
    print("  embedding throughput ...", flush=True)
    full = _name(plan.full_messages)
    result["embedding"] = throughput(
        folder / full / "search", plan.embed_windows, folder / full / "handler"
    )
    result["load_after"] = rs.load_average()
    result["targets"] = targets(result, plan)
    report(result, plan)
    print(f"written {write_result(plan.label, result)}")
    return result

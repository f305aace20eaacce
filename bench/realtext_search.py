"""Explicit search on real text for :mod:`bench.realtext`: cw (in process and through a daemon)
beside SQLite FTS5, bm25s and rank-bm25 over the same turn documents, in one interleaved loop.

Every LongMemEval question is searched twice: unrestricted, and restricted to the question's
haystack sessions (cw's ``sessions`` filter, FTS5's ``grp IN (...)``, a bm25s weight mask;
rank-bm25 has no filter and runs unrestricted only). The systems take turns on each question,
the starting system rotating, so load that comes and goes hits all of them alike. One untimed
pass over all questions warms every system (RocksDB's block cache, the daemon's start-up work,
the query embedder); the timed pass follows.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import percentiles

LIMIT = 10
LEXICAL = {"semanticPolicy": "never"}
#: Seconds between searches while a daemon embeds in the background: longer than the engine's
#: foreground quiet period (0.2 s), so its semantic worker runs between searches and each search
#: meets it busy, as a user's searches would.
EMBEDDING_GAP_S = 0.25


@dataclass(frozen=True)
class Query:
    qid: str
    text: str
    haystack: tuple[str, ...]


def load_questions(path: Path, limit: int | None) -> list[Query]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            q = json.loads(line)
            out.append(Query(q["qid"], q["question"], tuple(q["haystack"])))
    return out[:limit] if limit else out


#: A system times one search: ``(query text, sessions or None)`` -> the server's own time in
#: ms when it reports one (the daemon's ``timing_ms``), else None.
Search = Callable[[str, Sequence[str] | None], float | None]


@dataclass(frozen=True)
class System:
    name: str
    search: Search
    scoped: bool = True  # False: it has no scope filter and runs unrestricted only


class SemanticTally:
    """How many of a system's answers used the semantic stage (``semantic_search_used``), and
    that stage's milliseconds when it ran (``stages.semantic``: ``ms`` what the stage took on
    the request's path, ``embedMs`` the query's embedding and ``scanMs`` the scan with its
    re-scoring — part of ``ms``, or beside the lexical pass when the work was begun ahead)."""

    STAGE_KEYS = ("ms", "embedMs", "scanMs")

    def __init__(self) -> None:
        self.used: Counter[str] = Counter()
        self.total: Counter[str] = Counter()
        self.stage: dict[str, dict[str, list[float]]] = {}

    def add(self, name: str, semantic_used: bool, stage: dict[str, Any] | None = None) -> None:
        self.total[name] += 1
        self.used[name] += semantic_used
        if semantic_used and stage:
            kept = self.stage.setdefault(name, {k: [] for k in self.STAGE_KEYS})
            for key in self.STAGE_KEYS:
                if isinstance(stage.get(key), int | float):
                    kept[key].append(float(stage[key]))

    def shares(self) -> dict[str, float]:
        return {n: round(self.used[n] / t, 3) for n, t in self.total.items() if t}

    def stage_ms(self) -> dict[str, dict[str, dict[str, float]]]:
        """Per system, the semantic stage's percentiles (ms) over the searches that ran it."""
        return {
            name: {key: percentiles(values) for key, values in parts.items() if values}
            for name, parts in self.stage.items()
        }


def _body(text: str, sessions: Sequence[str] | None, extra: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"query": text, "limit": LIMIT, **extra}
    if sessions is not None:
        body["sessions"] = list(sessions)
    return body


def cw_in_process(archive: Any, extra: dict[str, Any], tally: SemanticTally, name: str) -> Search:
    def search(text: str, sessions: Sequence[str] | None) -> float | None:
        found = archive.search(_body(text, sessions, extra))
        tally.add(name, found.semantic_search_used, found.stages.get("semantic"))
        return None

    return search


def cw_daemon(client: Any, extra: dict[str, Any], tally: SemanticTally, name: str) -> Search:
    def search(text: str, sessions: Sequence[str] | None) -> float | None:
        body = client.call("search", _body(text, sessions, extra))  # the wire JSON: its timing
        stage = (body.get("stages") or {}).get("semantic")
        tally.add(name, bool(body.get("semantic_search_used")), stage)
        return float(body["timing_ms"])

    return search


class RankBm25:
    """rank-bm25's BM25Okapi over the FTS5 baseline's tokens (words, lower case); it scores
    every document for every query and has no filter."""

    def __init__(self, texts: Sequence[str]) -> None:
        from rank_bm25 import BM25Okapi

        from eval.baselines import _WORD, stopwords

        self.stop = stopwords()
        self.word = _WORD
        self.okapi = BM25Okapi([self.word.findall(t.lower()) for t in texts])

    def search(self, text: str, sessions: Sequence[str] | None) -> float | None:
        from eval.baselines import query_terms

        scores = self.okapi.get_scores(query_terms(text, self.stop))
        k = min(LIMIT, len(scores))
        np.argpartition(-scores, k - 1)[:k]
        return None


def _untimed(search: Callable[[str, int, Sequence[str] | None], Any]) -> Search:
    """A baseline's ``search(query, k, groups)`` as a :data:`Search` (no server time)."""

    def call(text: str, sessions: Sequence[str] | None) -> float | None:
        search(text, LIMIT, sessions)
        return None

    return call


def baseline_systems(
    units: Sequence[Any], rank_bm25: bool
) -> tuple[list[System], dict[str, float]]:
    """FTS5, bm25s (and rank-bm25) over ``units``; also their build seconds."""
    from eval import baselines

    built: dict[str, float] = {}
    systems = []
    t0 = time.perf_counter()
    fts = baselines.Fts5(units)
    built["fts5"] = round(time.perf_counter() - t0, 2)
    systems.append(System("fts5", _untimed(fts.search)))
    # cw's page carries a snippet with highlights per hit; FTS5 with snippet() does the same
    # work, so the gap between these two FTS5 rows is what presentation costs it.
    systems.append(System("fts5-snippet", _untimed(fts.page)))
    t0 = time.perf_counter()
    b25 = baselines.Bm25s(units)
    built["bm25s"] = round(time.perf_counter() - t0, 2)
    systems.append(System("bm25s", _untimed(b25.search)))
    if rank_bm25:
        t0 = time.perf_counter()
        okapi = RankBm25([u.text for u in units])
        built["rank-bm25"] = round(time.perf_counter() - t0, 2)
        systems.append(System("rank-bm25", okapi.search, scoped=False))
    return systems, built


def _scoped(q: Query, present: set[str]) -> tuple[str, ...] | None:
    """The question's haystack sessions present in this archive (None when none is)."""
    kept = tuple(s for s in q.haystack if s in present)
    return kept or None


def interleaved(
    systems: Sequence[System],
    queries: Sequence[Query],
    present: set[str],
    *,
    gap_s: float = 0.0,
    warm: bool = True,
) -> dict[str, dict[str, Any]]:
    """Per ``"<system>/<mode>"`` (mode ``all`` or ``haystack``): wall percentiles and, for
    systems that report it, the server's own (``server``). One untimed pass first when
    ``warm``; ``gap_s`` is slept between searches (outside the timings)."""
    wall: dict[str, list[float]] = defaultdict(list)
    server: dict[str, list[float]] = defaultdict(list)
    for timed in [False, True] if warm else [True]:
        for i, q in enumerate(queries):
            scope = _scoped(q, present)
            turns = [(m, s) for m, s in (("all", None), ("haystack", scope)) if m == "all" or s]
            k = i % len(systems)
            for system in [*systems[k:], *systems[:k]]:
                for mode, sessions in turns:
                    if mode == "haystack" and not system.scoped:
                        continue
                    if gap_s:
                        time.sleep(gap_s)
                    t0 = time.perf_counter()
                    own = system.search(q.text, sessions)
                    ms = (time.perf_counter() - t0) * 1000
                    if timed:
                        wall[f"{system.name}/{mode}"].append(ms)
                        if own is not None:
                            server[f"{system.name}/{mode}"].append(own)
    out: dict[str, dict[str, Any]] = {}
    for key, samples in wall.items():
        out[key] = percentiles(samples)
        if server.get(key):
            out[key]["server"] = percentiles(server[key])
    return out


def profile(system: System, queries: Sequence[Query], present: set[str], top: int = 25) -> dict:
    """cProfile of ``system`` over every question, both modes: the top ``top`` functions by
    cumulative and by own time (what a missed target costs, for docs/performance.md)."""
    import cProfile
    import io
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    for q in queries:
        system.search(q.text, None)
        scope = _scoped(q, present)
        if scope:
            system.search(q.text, scope)
    profiler.disable()
    out = {}
    for order in ("cumulative", "tottime"):
        buffer = io.StringIO()
        pstats.Stats(profiler, stream=buffer).strip_dirs().sort_stats(order).print_stats(top)
        out[order] = buffer.getvalue()
    return out


def ratios(timings: dict[str, dict[str, Any]], systems: Sequence[str]) -> dict[str, Any]:
    """``<system>/<mode>`` p50 and p95 over FTS5's (bare ranking: the issue's targets) and over
    FTS5 with ``snippet()`` (the same page work as cw's), for each cw system."""
    out: dict[str, Any] = {}
    for name in systems:
        for mode in ("all", "haystack"):
            cw = timings.get(f"{name}/{mode}")
            if not cw:
                continue
            row = {}
            for ref, label in (("fts5", "fts5"), ("fts5-snippet", "fts5_snippet")):
                fts = timings.get(f"{ref}/{mode}")
                if fts:
                    row[f"p50_vs_{label}"] = round(cw["p50_ms"] / max(fts["p50_ms"], 1e-9), 2)
                    row[f"p95_vs_{label}"] = round(cw["p95_ms"] / max(fts["p95_ms"], 1e-9), 2)
            if row:
                out[f"{name}/{mode}"] = row
    return out


def daemon_peak_rss_mb(pid: int | None) -> float | None:
    """The daemon's peak resident set (``VmHWM`` of /proc/<pid>/status), in MB."""
    if pid is None:
        return None
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        return None
    return None


def semantic_status(client: Any) -> dict[str, Any]:
    return dict(client.call("semantic.status"))


def wait_embedding_started(client: Any, timeout_s: float) -> dict[str, Any]:
    """Poll until the daemon's semantic worker has committed its first vectors."""
    deadline = time.monotonic() + timeout_s
    while True:
        st = semantic_status(client)
        if int(st.get("embedded", 0)) > 0 or st.get("state") == "complete":
            return st
        if time.monotonic() > deadline:
            raise RuntimeError(f"background embedding did not start within {timeout_s:g} s: {st}")
        time.sleep(0.5)


def clear_vectors(home: Path) -> None:
    """Forget every stored vector of ``home``, so a daemon opened on it embeds from scratch."""
    from cwcore.semantic import store as vstore
    from cwcore.store.rocks import Store

    store = Store(home / "store")
    try:
        vstore.clear(store, model=None, mode=None)
    finally:
        store.close()


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]

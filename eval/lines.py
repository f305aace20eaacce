"""Query sets over session-log files, scored by source line: the agent-log set (49 hand-checked
queries over the seven real logs in ``data/agent-logs/``, from ``data/agent-logs-queries/``) and
the project's own set over the bundled demo archive (``eval/sets/demo/``). Both use one format
(the agent-log set's README describes it).

cw imports the log files into one store and answers each query unrestricted (``scope: all``).
A cw hit covers the source lines of every message its window names (``source.messageKeys``);
a baseline result is one JSONL line (its non-metadata strings). hit@k: any expected line covered
by one of the top k results. Scored overall and per kind (exact, lexical, semantic).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cwcore.contract.search import SearchHit
from eval import baselines, common
from eval.common import BandStats, SemanticOnly, embed_all, log, percentiles
from eval.data import SHARED

KS = (1, 5, 10)
TOP = 10

#: The ``cw search`` runs: system name -> extra request fields (no semanticPolicy: the default).
CW_SYSTEMS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("cw-default", {}),
    ("cw-lexical", {"semanticPolicy": "never"}),
    ("cw-hybrid", {"semanticPolicy": "always"}),
    ("cw-auto", {"semanticPolicy": "auto"}),
)

#: JSON keys that carry no conversation in any of the formats: ids, bookkeeping, the working
#: directory and git branch repeated on every line. A baseline unit's text is every other
#: string of its line (message text, thinking, tool input and output, sub-agent messages).
_META_KEYS = frozenset(
    {
        "uuid", "parentUuid", "sessionId", "cwd", "gitBranch", "version", "timestamp", "type",
        "userType", "requestId", "id", "parentId", "tool_use_id", "toolUseID", "parentToolUseID",
        "agentId", "signature", "model", "stop_reason", "role", "call_id", "isSidechain", "slug",
        "leafUuid", "messageId",
    }
)  # fmt: skip


@dataclass(frozen=True)
class LineSet:
    """A query set: its name, the folder of log files and the queries file."""

    name: str
    logs: Path
    queries: Path

    def available(self) -> bool:
        return self.logs.is_dir() and self.queries.is_file()


AGENT_LOGS = LineSet(
    "agent-logs", SHARED / "agent-logs", SHARED / "agent-logs-queries/queries.jsonl"
)
DEMO = LineSet(
    "demo",
    Path(__file__).resolve().parent.parent / "cwcore" / "demo",
    Path(__file__).resolve().parent / "sets" / "demo" / "queries.jsonl",
)


@dataclass(frozen=True)
class Query:
    qid: str
    query: str
    kind: str
    expected: frozenset[tuple[str, int]]  # (file relative to the logs folder, 1-based line)


def load_queries(path: Path) -> list[Query]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        out.append(
            Query(
                q["qid"],
                q["query"],
                q["kind"],
                frozenset((e["file"], int(e["line"])) for e in q["expected"]),
            )
        )
    return out


def log_files(logs: Path) -> list[Path]:
    return sorted(p for p in logs.rglob("*.jsonl") if p.is_file())


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        if value.strip():
            out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if k not in _META_KEYS:
                _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            _strings(v, out)


def line_units(logs: Path) -> list[baselines.Unit]:
    """One baseline unit per JSONL line: its non-metadata strings; group = the file."""
    units = []
    for path in log_files(logs):
        rel = str(path.relative_to(logs))
        for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            try:
                parsed = json.loads(raw)
            except ValueError:
                continue
            parts: list[str] = []
            _strings(parsed, parts)
            units.append(baselines.Unit(f"{rel}:{n}", "\n".join(parts), rel))
    return units


class Coverage:
    """(session, messageKey) -> the (file, line) pairs of that message, from cw's manifests."""

    def __init__(self, engine: Any, logs: Path) -> None:
        from cwcore.index import derived

        store = engine.store
        self.lines: dict[tuple[str, str], frozenset[tuple[str, int]]] = {}
        self.window: dict[int, tuple[str, list[str]]] = {}
        file_of: dict[str, str] = {}
        max_wid = int(derived.generation(store).get("maxWid", 0))
        seen: set[tuple[str, int]] = set()
        for lo in range(1, max_wid + 1, 4096):
            wids = list(range(lo, min(max_wid, lo + 4095) + 1))
            for wid, rec in zip(wids, derived.window_records(store, wids), strict=True):
                if rec is None:
                    continue
                self.window[wid] = (rec["session"], list(rec["keys"]))
                ref = (rec["documentId"], int(rec["version"]))
                if ref in seen:
                    continue
                seen.add(ref)
                session = rec["session"]
                if session not in file_of:
                    src = engine.reader.session(session).get("source") or ""
                    try:
                        file_of[session] = str(Path(src).resolve().relative_to(logs.resolve()))
                    except ValueError:
                        file_of[session] = src
                for part in engine.reader.manifest(*ref)["parts"]:
                    self.lines[(session, part["key"])] = frozenset(
                        (file_of[session], int(n)) for n in part.get("lines") or ()
                    )

    def of_keys(self, session: str, keys: Sequence[str]) -> set[tuple[str, int]]:
        out: set[tuple[str, int]] = set()
        for key in keys:
            out |= self.lines.get((session, key), frozenset())
        return out

    def of_hit(self, hit: SearchHit) -> set[tuple[str, int]]:
        src = hit.source
        return self.of_keys(src.session_id, list(src.message_keys) or [src.message_key])

    def of_wid(self, wid: int) -> set[tuple[str, int]]:
        session, keys = self.window.get(wid, ("", []))
        return self.of_keys(session, keys)


def hit_at(covered: Sequence[set[tuple[str, int]]], expected: frozenset[tuple[str, int]]) -> dict:
    first = next((i for i, c in enumerate(covered) if c & expected), None)
    out = {f"hit@{k}": float(first is not None and first < k) for k in KS}
    out["mrr"] = 0.0 if first is None else 1.0 / (first + 1)
    return out


def summarize(per_q: list[dict[str, Any]], systems: list[str]) -> dict[str, Any]:
    def mean(rows: list[dict[str, Any]], system: str) -> dict[str, float]:
        vals = [r["metrics"][system] for r in rows if system in r["metrics"]]
        if not vals:
            return {}
        return {m: round(statistics.fmean(v[m] for v in vals), 3) for m in vals[0]} | {
            "n": len(vals)
        }

    kinds = sorted({r["kind"] for r in per_q})
    return {
        "overall": {s: mean(per_q, s) for s in systems},
        "by_kind": {
            k: {s: mean([r for r in per_q if r["kind"] == k], s) for s in systems} for k in kinds
        },
    }


def build(line_set: LineSet, home: Path) -> Any:
    """Import the set's log files into a fresh embedded store at ``home``."""
    archive = common.open_archive(home)
    started = time.perf_counter()
    summary = archive.import_paths([str(p) for p in log_files(line_set.logs)])
    log(
        f"{line_set.name}: imported {summary.messages} messages, {summary.imported} documents "
        f"in {time.perf_counter() - started:.1f} s"
    )
    return archive


def evaluate(
    line_set: LineSet, *, cache: Any, semantic: bool = True, systems: Sequence[str] = ()
) -> dict[str, Any]:
    """Every system on every query of ``line_set``; ``systems`` (names) narrows the run."""
    qs = load_queries(line_set.queries)
    wanted = set(systems)

    def on(name: str) -> bool:
        return not wanted or name in wanted

    with tempfile.TemporaryDirectory(prefix=f"cw-eval-{line_set.name}-") as tmp:
        archive = build(line_set, Path(tmp) / "home")
        try:
            engine = archive.engine
            embedding = embed_all(engine, cache) if semantic else None
            status = archive.index_status().to_json()
            coverage = Coverage(engine, line_set.logs)
            units = line_units(line_set.logs)
            base: dict[str, Any] = {}
            if on("fts5") or on("rrf-fts5-dense"):
                base["fts5"] = baselines.Fts5(units)
            if on("bm25s"):
                base["bm25s"] = baselines.Bm25s(units)
            if on("bm25s-stem"):
                base["bm25s-stem"] = baselines.Bm25s(units, stem=True)
            sem_only = None
            if semantic:
                if on("dense") or on("rrf-fts5-dense"):
                    embed, embed_query = baselines.embedder_functions(engine.home, cache)
                    base["dense"] = baselines.Dense(units, embed, embed_query)
                if on("rrf-fts5-dense"):
                    base["rrf-fts5-dense"] = baselines.RrfHybrid(base["fts5"], base["dense"])
                if on("cw-semantic"):
                    sem_only = SemanticOnly(engine)
            base = {k: v for k, v in base.items() if on(k)}
            cw_runs = [(n, x) for n, x in CW_SYSTEMS if on(n) and (semantic or n == "cw-lexical")]
            per_q: list[dict[str, Any]] = []
            timings: dict[str, list[float]] = defaultdict(list)
            statuses: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
            bands = BandStats()
            calibration: list[tuple[float, int]] = []  # (cosine, relevant) of semantic hits
            for q in qs:
                metrics: dict[str, dict[str, float]] = {}
                rescue: dict[str, dict[str, Any]] = {}
                tops: dict[str, list[str]] = {}
                for name, extra in cw_runs:
                    t = time.perf_counter()
                    resp = archive.search({"query": q.query, "limit": TOP, **extra})
                    timings[name].append((time.perf_counter() - t) * 1000)
                    statuses[name][resp.retrieval_status] += 1
                    rescue[name] = common.trigger_of(resp)
                    hits = resp.hits()
                    covered = [coverage.of_hit(h) for h in hits]
                    metrics[name] = hit_at(covered, q.expected)
                    for h, c in zip(hits, covered, strict=True):
                        bands.add(name, h.band, bool(c & q.expected), h.match_type)
                    tops[name] = [
                        f"{h.band} {h.score:.2f} {h.match_type} {h.document_id}" for h in hits[:3]
                    ]
                if sem_only is not None:
                    t = time.perf_counter()
                    scored = sem_only.search_scored(q.query, TOP)
                    timings["cw-semantic"].append((time.perf_counter() - t) * 1000)
                    covered = [coverage.of_wid(w) for w, _ in scored]
                    metrics["cw-semantic"] = hit_at(covered, q.expected)
                    for (_, cos), c in zip(scored, covered, strict=True):
                        calibration.append((cos, int(bool(c & q.expected))))
                for name, system in base.items():
                    t = time.perf_counter()
                    uids = system.search(q.query, TOP)
                    timings[name].append((time.perf_counter() - t) * 1000)
                    covered = []
                    for uid in uids:
                        file, line = uid.rsplit(":", 1)
                        covered.append({(file, int(line))})
                    metrics[name] = hit_at(covered, q.expected)
                per_q.append(
                    {
                        "qid": q.qid,
                        "kind": q.kind,
                        "query": q.query,
                        "metrics": metrics,
                        "rescue": rescue,
                        "top": tops,
                    }
                )
        finally:
            archive.close()
    names = [n for n, _ in cw_runs] + (["cw-semantic"] if sem_only else []) + list(base)
    report = summarize(per_q, names)
    report.update(
        {
            "set": line_set.name,
            "queries": len(qs),
            "systems": names,
            "primary": ["hit@1", "hit@5"],
            "latency": {s: percentiles(v) for s, v in timings.items()},
            "retrieval_status": {s: dict(v) for s, v in statuses.items()},
            "rescue": common.rescue_rates(per_q, [n for n, _ in cw_runs]),
            "index": {
                "generation": status.get("generation"),
                "complete": status.get("complete"),
                "handlers": status.get("handlers"),
                "documents": status.get("documents"),
                "windows": status.get("windows"),
            },
            "embedding": embedding,
            "bands": bands.to_json(),
            "semantic_calibration": calibration,
            "per_query": per_q,
        }
    )
    return report

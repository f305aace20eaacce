"""Real-text archives for :mod:`bench.realtext`: the data layout, the corpora, cached builds and
the child processes that admit, index, measure disk and embed them.

Data (``CW_BENCH_DATA``, default ``/work/shared/data``)::

    longmemeval-s-dev/sessions.jsonl.gz   one LongMemEval turn a line (eval/data.py)
    longmemeval-s-dev/queries.jsonl       the questions, each with its haystack sessions
    agent-logs/                           real Claude Code, Codex and pi session files

Each corpus is built twice, each phase in its own process so peak RSS (``getrusage``) is that
phase's:

* **search home**: ``Archive.import_paths`` on an embedded archive (``cw import`` semantics:
  admission with foreground indexing), timed; then the idle BM25 merges a daemon runs, a flush
  and a full compaction, and the RocksDB size; then (LongMemEval only) every window embedded by
  cw's semantic index handler, vectors served from a content-digest cache when present, so the
  default search has its semantic stage;
* **indexing home**: the same messages admitted *without* indexing (the outbox left pending),
  then drained by ``IndexWorker.drain()`` in a second process, timed apart. Its windows are never
  embedded, so it is also the archive the daemon embeds in the background.

Builds live under ``CW_BENCH_CACHE`` (default ``/tmp/cw-bench-realtext``) in a folder named by a
fingerprint of the code that shapes the stored index (cwcore/importers, index, store, semantic,
the conversion) and of the data files; a code change rebuilds, and older builds are removed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import cached_build
from bench.common import peak_rss_mb as _rusage_peak_mb

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = Path("/work/shared/data")
DEFAULT_CACHE = Path("/tmp/cw-bench-realtext")
LME = "longmemeval-s-dev"
AGENT_LOGS = "agent-logs"
#: What shapes a built archive: a change to any of these files rebuilds the cache.
SHAPING = ("cwcore/importers", "cwcore/index", "cwcore/store", "cwcore/semantic")
SHAPING_FILES = ("eval/data.py", "bench/realtext_build.py")
#: The bench's clock (``CW_NOW``): LongMemEval turns carry no time, so they are stamped with it.
NOW = "2026-11-30T12:00:00Z"


def data_root() -> Path:
    return Path(os.environ.get("CW_BENCH_DATA", str(DEFAULT_DATA)))


def cache_root() -> Path:
    return Path(os.environ.get("CW_BENCH_CACHE", str(DEFAULT_CACHE)))


def lme_available(data: Path) -> bool:
    folder = data / LME
    return (folder / "sessions.jsonl.gz").is_file() and (folder / "queries.jsonl").is_file()


def agent_logs_available(data: Path) -> bool:
    return any((data / AGENT_LOGS).rglob("*.jsonl"))


def fingerprint(data: Path) -> str:
    """Digest of the index-shaping code and of the data files' names, sizes and mtimes."""
    h = hashlib.sha256()
    files = [p for d in SHAPING for p in sorted((ROOT / d).rglob("*.py"))]
    files += [ROOT / f for f in SHAPING_FILES]
    for path in files:
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    for path in sorted(data.rglob("*")):
        if path.is_file():
            st = path.stat()
            h.update(f"{path.relative_to(data)}:{st.st_size}:{int(st.st_mtime)}".encode())
    return h.hexdigest()[:16]


def build_dir(data: Path) -> Path:
    """This fingerprint's folder under the cache; builds of other fingerprints are removed."""
    root = cache_root() / "builds"
    here = root / fingerprint(data)
    if root.is_dir():
        for other in root.iterdir():
            if other != here:
                shutil.rmtree(other, ignore_errors=True)
    here.mkdir(parents=True, exist_ok=True)
    return here


# -- corpora -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    """One archive to build: ``source`` is a cw-jsonl file or a folder of agent logs."""

    name: str
    source: Path
    fmt: str
    messages: int
    text_bytes: int  # UTF-8 bytes of the message texts (the source file bytes for agent logs)
    embed: bool  # searched with the default policy, so its windows are embedded


def lme_corpus(data: Path, folder: Path, name: str, limit: int | None) -> Corpus:
    """The dev corpus in the order its questions need the sessions, whole sessions up to
    ``limit`` messages (all of it when None), written as cw-jsonl into ``folder``."""
    from eval import data as lme

    src = folder / f"{name}.cw.jsonl"
    meta = folder / f"{name}.facts.json"
    if src.is_file() and meta.is_file():
        facts = json.loads(meta.read_text())
        return Corpus(name, src, "cw-jsonl", facts["messages"], facts["text_bytes"], True)
    ds = lme.load(data / LME)
    order = ds.session_order()
    needed = set(order)
    order += [s for s in ds.sessions if s not in needed]
    chosen, total = [], 0
    for sid in order:
        if limit is not None and total >= limit:
            break
        chosen.append(sid)
        total += len(ds.sessions[sid])
    text_bytes = sum(len(t["text"].encode("utf-8")) for s in chosen for t in ds.sessions[s])
    tmp = src.with_suffix(".tmp")
    n = lme.write_cw_jsonl(ds, chosen, tmp)
    tmp.replace(src)
    meta.write_text(json.dumps({"messages": n, "text_bytes": text_bytes}))
    return Corpus(name, src, "cw-jsonl", n, text_bytes, True)


def agent_logs_corpus(data: Path) -> Corpus:
    folder = data / AGENT_LOGS
    size = sum(p.stat().st_size for p in folder.rglob("*.jsonl"))
    return Corpus("agent-logs", folder, "auto", 0, size, False)


# -- child processes -----------------------------------------------------------------------------


def peak_rss_mb() -> float:
    """This process's peak resident set, in MB: ``VmHWM`` (per address space, so it starts
    afresh at exec; ``getrusage`` keeps the parent's peak across fork and exec)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return _rusage_peak_mb()


def _compact(store: Any) -> None:
    """Flush the memtables and compact every column family, so the size on disk is the
    archive's settled size rather than whatever the last flush left."""
    store.flush()
    for family in store._families.values():
        family.compact_range(None, None)
    store._db.compact_range(None, None)


def _import_child(home: Path, src: Path, fmt: str) -> dict[str, Any]:
    from cwcore.api import Archive
    from cwcore.store.rocks import Store

    with Archive.open(home, embedded=True) as archive:
        t0 = time.perf_counter()
        summary = archive.import_paths([src], fmt=fmt)
        seconds = time.perf_counter() - t0
        engine = archive.engine
        rss_import = peak_rss_mb()
        segments = len(engine.indexer.bm25.manifest().segments)
        t0 = time.perf_counter()
        while engine.indexer.bm25.idle_merge() is not None:
            pass
        merge_s = time.perf_counter() - t0
    store = Store(home / "store")
    try:
        _compact(store)
        disk = store.size_on_disk()
    finally:
        store.close()
    return {
        "messages": summary.messages,
        "documents": summary.imported,
        "import_s": round(seconds, 3),
        "messages_per_s": round(summary.messages / seconds, 1),
        "segments_as_built": segments,
        "idle_merge_s": round(merge_s, 3),
        "disk_bytes": disk,
        "peak_rss_import_mb": round(rss_import, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _admit_child(home: Path, src: Path, fmt: str) -> dict[str, Any]:
    from cwcore.config import Settings
    from cwcore.importers.pipeline import import_paths
    from cwcore.store.admission import Admission
    from cwcore.store.rocks import Store

    store = Store(home / "store")
    try:
        t0 = time.perf_counter()
        summary = import_paths(Admission(store), [str(src)], fmt=fmt, settings=Settings())
        seconds = time.perf_counter() - t0
        store.flush()
        disk = store.size_on_disk()
    finally:
        store.close()
    return {
        "messages": summary.messages,
        "documents": summary.imported,
        "seconds": round(seconds, 3),
        "messages_per_s": round(summary.messages / seconds, 1),
        "disk_bytes": disk,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _drain_child(home: Path) -> dict[str, Any]:
    from cwcore.config import Settings
    from cwcore.index.worker import IndexWorker
    from cwcore.store.rocks import Store

    store = Store(home / "store")
    try:
        worker = IndexWorker(store, Settings())
        depth = worker.depth()
        t0 = time.perf_counter()
        entries = worker.drain()
        seconds = time.perf_counter() - t0
        rss_drain = peak_rss_mb()
        if worker.depth():
            raise RuntimeError("the outbox did not drain")
        t0 = time.perf_counter()
        while worker.merge():
            pass
        merge_s = time.perf_counter() - t0
        _compact(store)
        disk = store.size_on_disk()
    finally:
        store.close()
    return {
        "outbox_entries": depth,
        "entries_done": entries,
        "seconds": round(seconds, 3),
        "merge_s": round(merge_s, 3),
        "disk_bytes": disk,
        "peak_rss_drain_mb": round(rss_drain, 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }


def _embed_child(home: Path, cache_path: Path) -> dict[str, Any]:
    """Every window of the search home embedded by cw's handler (vectors cached by digest)."""
    from cwcore.methods import make_service
    from cwcore.store.rocks import Store
    from eval.cache import SqliteVectorCache
    from eval.common import embed_all

    cache = SqliteVectorCache(cache_path)
    engine = make_service(home)
    try:
        out = embed_all(engine, cache)
    finally:
        engine.close()
        cache.close()
    store = Store(home / "store")
    try:
        _compact(store)
        out["disk_bytes_with_vectors"] = store.size_on_disk()
    finally:
        store.close()
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


def _child(argv: list[str]) -> int:
    phase, home = argv[0], Path(argv[1])
    if phase == "import":
        body = _import_child(home, Path(argv[2]), argv[3])
    elif phase == "admit":
        body = _admit_child(home, Path(argv[2]), argv[3])
    elif phase == "drain":
        body = _drain_child(home)
    elif phase == "embed":
        body = _embed_child(home, Path(argv[2]))
    else:
        raise SystemExit(f"unknown phase {phase}")
    print(json.dumps(body))
    return 0


def spawn(*args: str) -> dict[str, Any]:
    """Run one phase in a fresh interpreter; its last stdout line is the JSON result. Its
    stderr is this process's, so progress (embedding a large corpus takes many minutes when
    the vector cache lacks its windows) and a failure's traceback show as they happen."""
    env = dict(os.environ)
    env.pop("CW_EMBEDDED", None)
    proc = subprocess.run(
        [sys.executable, "-m", "bench.realtext_build", "--child", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        check=False,
        env=env,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"bench child {args[0]} failed (exit {proc.returncode}); see above")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


# -- cached builds -------------------------------------------------------------------------------


def vector_cache_path() -> Path:
    """The bench's own vector cache, seeded once from the evaluation's (``eval/.cache``) so
    archives the evaluation embedded before need no model time here."""
    path = cache_root() / "vectors.sqlite"
    seed = ROOT / "eval" / ".cache" / "vectors.sqlite"
    if not path.exists() and seed.exists():
        import sqlite3

        path.parent.mkdir(parents=True, exist_ok=True)
        src, dst = sqlite3.connect(seed), sqlite3.connect(path)
        try:
            src.backup(dst)
        finally:
            src.close()
            dst.close()
    return path


def build_search_home(folder: Path, corpus: Corpus) -> dict[str, Any]:
    def make(home: Path) -> dict[str, Any]:
        facts = spawn("import", str(home), str(corpus.source), corpus.fmt)
        if corpus.embed:
            facts["embedding"] = spawn("embed", str(home), str(vector_cache_path()))
        return facts

    return cached_build(folder / corpus.name / "search", make)


def build_indexing_home(folder: Path, corpus: Corpus) -> dict[str, Any]:
    def make(home: Path) -> dict[str, Any]:
        admit = spawn("admit", str(home), str(corpus.source), corpus.fmt)
        drain = spawn("drain", str(home))
        return {"admit": admit, "drain": drain}

    return cached_build(folder / corpus.name / "indexing", make)


def clone_home(src: Path, dst: Path) -> Path:
    """A private copy of a built home for a daemon: RocksDB never rewrites a table file, so
    ``*.sst`` files are hard links (instant, no disk) and everything else is copied."""
    shutil.rmtree(dst, ignore_errors=True)

    def copy(s: str, d: str) -> None:
        if s.endswith(".sst"):
            os.link(s, d)
        else:
            shutil.copy2(s, d)

    shutil.copytree(src, dst, copy_function=copy)
    return dst


def corpus_sessions(corpus: Corpus) -> set[str]:
    """The session ids of a cw-jsonl corpus."""
    with corpus.source.open(encoding="utf-8") as fh:
        return {json.loads(line)["session"] for line in fh}


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        raise SystemExit(_child(sys.argv[2:]))
    raise SystemExit("usage: python -m bench.realtext_build --child PHASE HOME [ARGS]")

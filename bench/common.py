"""Shared harness: machine facts, timing, peak RSS, result tables and JSON files."""

from __future__ import annotations

import json
import os
import platform
import resource
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).parent / "results"


def save_environ(*names: str) -> dict[str, str | None]:
    """The current values of ``names`` (None: unset), for :func:`restore_environ`."""
    return {name: os.environ.get(name) for name in names}


def restore_environ(saved: dict[str, str | None]) -> None:
    """Put the variables :func:`save_environ` saved back as they were."""
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def results_dir() -> Path:
    """Where results are written: ``bench/results``, or ``CW_BENCH_RESULTS`` when set."""
    return Path(os.environ.get("CW_BENCH_RESULTS", str(RESULTS)))


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
    }


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]

    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p95_ms": round(pick(0.95), 3),
        "max_ms": round(ordered[-1], 3),
        "n": len(ordered),
    }


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def write_result(name: str, body: dict[str, Any]) -> Path:
    folder = results_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.json"
    path.write_text(json.dumps({"bench": name, "machine": machine(), **body}, indent=2) + "\n")
    return path


def print_table(title: str, rows: list[tuple[str, ...]], header: tuple[str, ...]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n## {title}")
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))


def cached_build(home: Path, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Run ``build(home)`` into a fresh ``home`` once and return its facts (``reused: False``); a
    finished build leaves ``bench-built.json``, and later runs reuse the archive (``reused:
    True``). Builds of 200k messages take minutes."""
    marker = home / "bench-built.json"
    if marker.exists():
        return dict(json.loads(marker.read_text()), reused=True)
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    facts = build(home)
    marker.write_text(json.dumps(facts))
    return dict(facts, reused=False)


def import_and_index(home: Path, src: Path, n: int) -> dict[str, Any]:
    """Admit the cw-jsonl file ``src`` into ``home`` and drain the index outbox, timing both."""
    from cwcore.importers import pipeline
    from cwcore.methods import make_service

    engine = make_service(home)
    try:
        t0 = time.perf_counter()
        summary = pipeline.import_paths(
            engine.admission, [str(src)], fmt="cw-jsonl", settings=engine.settings
        )
        admitted = time.perf_counter() - t0
        engine.indexer.drain()
        indexed = time.perf_counter() - t0 - admitted
    finally:
        engine.close()
    return {
        "messages": n,
        "documents": summary.imported,
        "admit_s": round(admitted, 1),
        "index_s": round(indexed, 1),
    }


def cached_cw_jsonl(
    home: Path, n: int, write_archive: Callable[[Path, int], None]
) -> dict[str, Any]:
    """:func:`cached_build` of an ``n``-message archive that ``write_archive`` writes as
    cw-jsonl into ``home/archive.jsonl``, imported and indexed by :func:`import_and_index`."""

    def make(home: Path) -> dict[str, Any]:
        src = home / "archive.jsonl"
        write_archive(src, n)
        return import_and_index(home, src, n)

    return cached_build(home, make)

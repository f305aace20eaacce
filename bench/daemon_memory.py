"""The daemon's memory on a real-text archive: resident, anonymous and file-mapped memory after
import, after indexing and after searches.

Run: ``.venv/bin/python -m bench.daemon_memory [--limit N] [--searches N] [--idle S] [--semantic]
[NAME=VALUE...]`` (variables for the daemon's environment, e.g. ``MALLOC_ARENA_MAX=2``). The
LongMemEval dev corpus (``CW_BENCH_DATA``, see :mod:`bench.realtext_build`; whole sessions up to
``--limit`` messages, all of it by default: about 47k) is written as cw-jsonl, imported through
``cw import`` (which starts the store's daemon), the outbox drained (``index.run`` with
``wait``), then ``--searches`` searches are made through the daemon client — the dev questions in
turn, every other one scoped to its haystack sessions, as the realtext bench does. After each
phase the daemon's ``/proc/PID/status`` (``VmRSS``, ``VmHWM``) and ``/proc/PID/smaps_rollup``
(``Anonymous``; file-mapped = ``Rss`` − ``Anonymous``) are read, and once more after ``--idle``
seconds without a request (default 95: the daemon's heap trim comes 30–90 s into a quiet
period). Without ``--semantic`` the daemon runs with ``CW_SEMANTIC_RETRIEVAL=false`` (no
embedding, no model). Writes ``bench/results/daemon_memory.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import print_table, restore_environ, save_environ, write_result
from bench.realtext_build import cache_root, data_root, lme_corpus


def memory(pid: int) -> dict[str, float]:
    """The process's resident (``VmRSS``), peak (``VmHWM``), anonymous and file-mapped memory,
    in MB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024
    rollup: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        key, _, value = line.partition(":")
        parts = value.split()
        if parts and parts[0].isdigit():
            rollup[key] = int(parts[0]) / 1024
    out["anon"] = rollup.get("Anonymous", 0.0)
    out["file"] = rollup.get("Rss", 0.0) - out["anon"]
    return {k: round(v, 1) for k, v in out.items()}


def run(
    limit: int | None = None,
    searches: int = 200,
    semantic: bool = False,
    extra_env: dict[str, str] | None = None,
    idle: float = 95.0,
) -> dict[str, Any]:
    from cwcore.daemon import control
    from cwcore.daemon.client import Client

    data = data_root()
    folder = cache_root() / "daemon-memory"
    folder.mkdir(parents=True, exist_ok=True)
    corpus = lme_corpus(data, folder, f"lme-{limit or 'all'}", limit)
    queries = [
        json.loads(line)
        for line in (data / "longmemeval-s-dev" / "queries.jsonl").read_text().splitlines()
    ]
    home = Path(tempfile.mkdtemp(prefix="cw-bench-dmem-"))
    runtime = Path(tempfile.mkdtemp(prefix="cwm", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k != "CW_EMBEDDED"}
    env.update(
        CW_HOME=str(home / "home"),
        XDG_RUNTIME_DIR=str(runtime),
        CW_SEMANTIC_RETRIEVAL="true" if semantic else "false",
    )
    env.update(extra_env or {})
    saved = save_environ(*env)
    os.environ.update(env)
    cw = str(Path(sys.executable).with_name("cw"))
    phases: dict[str, dict[str, float]] = {}
    try:
        t0 = time.perf_counter()
        done = subprocess.run(
            [cw, "import", str(corpus.source), "--format", "cw-jsonl"],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"cw import failed: {done.stderr[-500:]}")
        import_s = time.perf_counter() - t0
        status = control.status(home / "home")
        assert status is not None
        pid = status.pid
        phases["after import"] = memory(pid)
        with Client.connect(home / "home", autostart=False) as client:
            t0 = time.perf_counter()
            client.call("index.run", {"wait": True})
            index_s = time.perf_counter() - t0
            phases["after indexing"] = memory(pid)
            search_ms: list[float] = []
            for i in range(searches):
                q = queries[i % len(queries)]
                params: dict[str, Any] = {"limit": 10, "scope": "all", "query": q["question"]}
                if i % 2:
                    params["sessions"] = list(q["haystack"])
                t0 = time.perf_counter()
                client.call("search", params)
                search_ms.append((time.perf_counter() - t0) * 1000)
                if i + 1 == searches // 2:
                    phases[f"after {i + 1} searches"] = memory(pid)
            phases[f"after {searches} searches"] = memory(pid)
        if idle:
            time.sleep(idle)  # the daemon's quiet-period heap trim (Engine.trim_heap)
            phases[f"then idle {idle:.0f} s"] = memory(pid)
        load = os.getloadavg()[0]
    finally:
        subprocess.run([cw, "daemon", "stop"], env=env, capture_output=True, check=False)
        restore_environ(saved)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    search_ms.sort()
    body: dict[str, Any] = {
        "corpus": corpus.name,
        "messages": corpus.messages,
        "semantic": semantic,
        "env": extra_env or {},
        "import_s": round(import_s, 1),
        "index_wait_s": round(index_s, 1),
        "search_p50_ms": round(search_ms[len(search_ms) // 2], 1),
        "phases": phases,
        "load_average": round(load, 2),
    }
    print_table(
        f"daemon memory, {corpus.messages:,} messages, semantic "
        f"{'on' if semantic else 'off'} (load {load:.2f})",
        [
            (name, f"{m['VmRSS']:.0f}", f"{m['anon']:.0f}", f"{m['file']:.0f}", f"{m['VmHWM']:.0f}")
            for name, m in phases.items()
        ],
        ("phase", "RSS MB", "anon MB", "file MB", "peak MB"),
    )
    name = f"daemon_memory{'_semantic' if semantic else ''}"
    print(f"written {write_result(name, body)}")
    return body


if __name__ == "__main__":
    args = sys.argv[1:]

    def _opt(flag: str) -> str | None:
        return args[args.index(flag) + 1] if flag in args else None

    run(
        limit=int(_opt("--limit") or 0) or None,
        searches=int(_opt("--searches") or 200),
        idle=float(_opt("--idle") or 95),
        semantic="--semantic" in args,
        extra_env=dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-")),
    )

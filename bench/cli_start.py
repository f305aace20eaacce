"""The CLI as scripts call it: process start to exit of ``cw … --json`` against a warm daemon.

Run: ``.venv/bin/python -m bench cli_start``. It imports the bundled demo archive through ``cw
import`` (which starts the store's daemon), warms it with one search, then runs each command
:data:`RUNS` times in turn as a new process, timed from ``fork`` to exit with the output read
through a pipe:

* ``cw search Q --json`` — the installed ``cw`` entry point, which answers through the lean
  path (:mod:`cwtui.lean`);
* the same search through the full CLI (``python -m cwtui.cli``), which imports Typer, Rich and
  the engine's client modules first;
* ``cw recall LOCATOR --json`` and ``cw preflight MESSAGE --session S --json`` (a new message
  key each run, so every call decides) through the lean path;
* ``cw sessions --json`` (the first page, 50 rows) through the lean path and through the full
  CLI;
* ``python -c pass``: the interpreter's own start-up, the floor of every row.

The search rows also report the daemon's own ``timing_ms`` (p50), so the difference is the
process's overhead. The demo is small: the engine's time at scale is the ``realtext`` bench's.
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

from bench.common import percentiles, print_table, write_result

REPO = Path(__file__).resolve().parent.parent
RUNS = 30
QUERIES = ["lease", "ERR_LEASE_EXPIRED", "monotonic deadline", "retry budget", "docs/theme.md"]


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    ms = (time.perf_counter() - t0) * 1000
    if done.returncode not in (0, 3):
        raise RuntimeError(f"{' '.join(cmd[:3])}… exited {done.returncode}: {done.stderr[-300:]}")
    return ms, done.stdout


def run() -> dict[str, Any]:
    cw = str(Path(sys.executable).with_name("cw"))
    full = [sys.executable, "-m", "cwtui.cli"]
    home = Path(tempfile.mkdtemp(prefix="cw-bench-cli-"))
    runtime = Path(tempfile.mkdtemp(prefix="cwb", dir="/tmp"))
    # As a user runs it: with bytecode caches (a sandbox's PYTHONDONTWRITEBYTECODE would make
    # every run compile the modules it imports; the warm-up run below writes them).
    env = {
        k: v for k, v in os.environ.items() if k not in ("CW_EMBEDDED", "PYTHONDONTWRITEBYTECODE")
    }
    env.update(CW_HOME=str(home / "home"), XDG_RUNTIME_DIR=str(runtime))
    try:
        _timed([cw, "import", str(REPO / "cwcore" / "demo")], env)
        _timed([*full, "search", "lease", "--json"], env)  # writes the full CLI's bytecode
        _timed([cw, "sessions", "--json"], env)
        _, out = _timed([cw, "search", "lease", "--json"], env)
        first = json.loads(out)["results"][0]
        locator, session = first["locator"], first["source"]["sessionId"]
        rows: dict[str, list[float]] = {}
        engine_ms: dict[str, list[float]] = {"lean": [], "full": []}
        for i in range(RUNS):
            query = QUERIES[i % len(QUERIES)]
            for name, cmd in (
                ("cw search --json (lean)", [cw, "search", query, "--json"]),
                ("cw search --json (full CLI)", [*full, "search", query, "--json"]),
                ("cw recall --json (lean)", [cw, "recall", locator, "--json"]),
                (
                    "cw preflight --json (lean)",
                    [
                        cw,
                        "preflight",
                        f"what did we decide about {query} earlier?",
                        "--session",
                        session,
                        "--message-key",
                        f"user:bench{i}",
                        "--json",
                    ],
                ),
                ("cw sessions --json (lean)", [cw, "sessions", "--json"]),
                ("cw sessions --json (full CLI)", [*full, "sessions", "--json"]),
                ("python -c pass", [sys.executable, "-c", "pass"]),
            ):
                ms, out = _timed(cmd, env)
                rows.setdefault(name, []).append(ms)
                if "search" in name:
                    engine_ms["lean" if "lean" in name else "full"].append(
                        float(json.loads(out)["timing_ms"])
                    )
        load = os.getloadavg()[0]
    finally:
        subprocess.run([cw, "daemon", "stop"], env=env, capture_output=True, check=False)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(runtime, ignore_errors=True)
    body: dict[str, Any] = {
        "runs": RUNS,
        "wall": {name: percentiles(samples) for name, samples in rows.items()},
        "engine_search_ms": {k: percentiles(v) for k, v in engine_ms.items()},
        "load_average": round(load, 2),
        "target_search_json_p50_ms": 150,
    }
    print_table(
        f"CLI process start to exit, warm daemon, demo archive (load {load:.2f})",
        [(name, f"{p['p50_ms']:.1f}", f"{p['p95_ms']:.1f}") for name, p in body["wall"].items()],
        ("command", "p50 ms", "p95 ms"),
    )
    print(
        "daemon's own search time p50: "
        + ", ".join(f"{k} {v['p50_ms']:.1f} ms" for k, v in body["engine_search_ms"].items())
    )
    print(f"written {write_result('cli_start', body)}")
    return body


if __name__ == "__main__":
    run()

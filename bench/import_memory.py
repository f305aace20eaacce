"""Memory of one large single-file import: peak and after-import RSS of the daemon against the
file's size.

The file is SYNTHETIC: one cw-jsonl session (or a few) of agentic turns — a prompt, assistant
prose, tool calls with their inputs, tool outputs of a few KiB (code, logs, diffs) — generated
from a seeded vocabulary, so the same size always gives the same bytes. What matters is the
scaling: the daemon's peak (``VmHWM``) and resident memory after the import (``VmRSS``) for files
of growing size. Before issue 32 both grew with the file (1 GB of cw-jsonl: 3.7 GB, kept until
restart); a streamed admission keeps them near a constant: mostly RocksDB's bounded memory (the
memtables under the 64 MiB log cap, the 64 MiB block cache all column families share) beside the
chunk in hand (docs/importers.md, "Large files stream").

Run: ``.venv/bin/python -m bench import_memory`` (100 and 300 MB), ``--quick`` (25 and 50 MB), or
``.venv/bin/python -m bench.import_memory 100 300 1000`` for chosen sizes in MB. Writes
``bench/results/import_memory.json``.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.admission import WORDS
from bench.common import print_table, write_result

REPO = Path(__file__).resolve().parent.parent
#: Where generated files are kept between runs.
CACHE = Path(tempfile.gettempdir()) / "cw-bench-import-memory"

#: The admission bench's vocabulary plus words of the storage domain (a synthetic session that
#: reads like an engineer's, not like a word list).
_WORDS = [
    *WORDS,
    "handler",
    "request",
    "response",
    "cache",
    "memory",
    "buffer",
    "stream",
    "batch",
    "commit",
    "rollback",
    "schema",
    "migration",
    "column",
    "family",
    "flush",
    "compaction",
    "latency",
    "throughput",
    "worker",
    "thread",
    "queue",
    "lock",
    "mutex",
    "signal",
    "process",
    "file",
    "path",
]
_CODE = [
    "def {n}(self, value: int) -> int:\n    return value * {k} + self.offset\n",
    "for item in items:\n    if item.{n} is None:\n        continue\n    total += item.size\n",
    "class {N}(Base):\n    limit = {k}\n\n    def run(self) -> None:\n        self.{n}()\n",
    "    assert result.{n} == {k}, result\n",
    'raise ValueError(f"{n}: expected {k}, got {{value}}")\n',
]
_LOG = [
    "{t} INFO  worker[{k}] {n} done in {ms} ms\n",
    "{t} WARN  {n}: retrying after timeout ({k}/5)\n",
    "{t} ERROR {n} failed: connection reset by peer\n",
    "tests/test_{n}.py::test_{n}_{k} PASSED\n",
    "tests/test_{n}.py::test_{n}_{k} FAILED - AssertionError: {k} != {ms}\n",
]


def _prose(rng: random.Random, words: int) -> str:
    out: list[str] = []
    for i in range(words):
        w = rng.choice(_WORDS)
        out.append(w.capitalize() if i == 0 or out[-1].endswith(".") else w)
        if rng.random() < 0.08:
            out[-1] += "."
    return " ".join(out) + "."


def _block(rng: random.Random, templates: list[str], size: int) -> str:
    parts: list[str] = []
    length = 0
    while length < size:
        n = rng.choice(_WORDS) + "_" + rng.choice(_WORDS)
        line = rng.choice(templates).format(
            n=n,
            N=n.title().replace("_", ""),
            k=rng.randint(0, 999),
            ms=rng.randint(1, 5000),
            t=f"2026-11-0{rng.randint(1, 9)}T1{rng.randint(0, 9)}:{rng.randint(10, 59)}:00Z",
        )
        parts.append(line)
        length += len(line)
    return "".join(parts)


def generate(path: Path, target_bytes: int, *, sessions: int = 1, seed: int = 32) -> dict[str, int]:
    """Write a synthetic cw-jsonl file of about ``target_bytes`` (at least one turn): ``sessions``
    sessions one after another, each a run of turns (a prompt, then 3–12 assistant messages,
    tool calls and tool outputs of 0.2–6 KiB). Returns ``{"bytes", "messages", "turns"}``."""
    rng = random.Random(seed)
    per_session = max(1, target_bytes // sessions)
    written = messages = turns = 0
    with path.open("w", encoding="utf-8") as fh:
        for s in range(sessions):
            session = f"synthetic-{seed}-{s:03d}"
            start = written
            n = 0
            while written - start < per_session:
                turns += 1
                rows: list[dict[str, Any]] = [
                    {"role": "user", "text": _prose(rng, rng.randint(8, 60))}
                ]
                for _ in range(rng.randint(3, 12)):
                    pick = rng.random()
                    if pick < 0.35:
                        rows.append(
                            {"role": "assistant", "text": _prose(rng, rng.randint(20, 250))}
                        )
                    else:
                        call = f"call-{s}-{n}-{len(rows)}"
                        command = f"pytest -q tests/test_{rng.choice(_WORDS)}.py"
                        rows.append(
                            {
                                "role": "assistant",
                                "text": "",
                                "tool_name": "Bash",
                                "tool_call_id": call,
                                "tool_input": {"command": command},
                            }
                        )
                        templates = _CODE if rng.random() < 0.5 else _LOG
                        size = int(rng.lognormvariate(7.3, 0.9))
                        rows.append(
                            {
                                "role": "tool",
                                "text": _block(rng, templates, min(size, 64 * 1024)),
                                "tool_name": "Bash",
                                "tool_call_id": call,
                            }
                        )
                for row in rows:
                    minute, second = divmod(n, 60)
                    row = {
                        "session": session,
                        "id": f"m{n}",
                        "timestamp": f"2026-11-01T{minute // 60 % 24:02d}:{minute % 60:02d}:"
                        f"{second:02d}Z",
                        "project": "synthetic",
                        **row,
                    }
                    line = json.dumps(row, ensure_ascii=False) + "\n"
                    fh.write(line)
                    written += len(line.encode("utf-8"))
                    messages += 1
                    n += 1
    return {"bytes": path.stat().st_size, "messages": messages, "turns": turns}


def _status(pid: int) -> dict[str, int]:
    """``VmHWM`` and ``VmRSS`` of ``pid`` in KiB (Linux /proc)."""
    out: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmHWM", "VmRSS"):
            out[name] = int(value.split()[0])
    return out


def measure_daemon(src: Path, home: Path, *, settle_s: float = 5.0) -> dict[str, Any]:
    """Start a daemon on ``home``, import ``src`` through it (``cw import``), and read its memory:
    ``before`` (idle after start), ``peak`` (VmHWM right after the import returned) and ``after``
    (VmRSS ``settle_s`` seconds later; the index worker may still be publishing then)."""
    from cwcore.daemon import control
    from cwcore.daemon.client import connect
    from cwcore.daemon.paths import daemon_paths
    from cwcore.daemon.runner import read_pid
    from cwcore.errors import DaemonError

    os.environ["CW_HOME"] = str(home)
    client = connect(home)
    pid = read_pid(daemon_paths(home).pidfile)
    assert pid is not None
    try:
        client.call("daemon.ping")
        before = _status(pid)
        t0 = time.perf_counter()
        summary = client.call("import", {"paths": [str(src)], "format": "cw-jsonl"})
        seconds = time.perf_counter() - t0
        done = _status(pid)
        time.sleep(settle_s)
        after = _status(pid)
    finally:
        client.close()
        try:
            control.stop(home)
        except DaemonError:  # still publishing a large import: this bench's own daemon
            os.kill(pid, signal.SIGKILL)
    return {
        "import_s": round(seconds, 1),
        "imported": summary.get("imported"),
        "messages": summary.get("messages"),
        "rss_before_mb": round(before["VmRSS"] / 1024, 1),
        "peak_mb": round(done["VmHWM"] / 1024, 1),
        "rss_after_import_mb": round(done["VmRSS"] / 1024, 1),
        "rss_settled_mb": round(after["VmRSS"] / 1024, 1),
    }


def run(sizes_mb: list[int] | None = None, quick: bool = False) -> dict[str, Any]:
    sizes = sizes_mb or ([25, 50] if quick else [100, 300])
    rows = []
    # Generated files are kept between runs (a before/after comparison reads the same bytes).
    CACHE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        for size in sizes:
            src = CACHE / f"synthetic-{size}mb.jsonl"
            facts_file = src.with_suffix(".json")
            if facts_file.exists() and src.exists():
                facts = json.loads(facts_file.read_text())
            else:
                facts = generate(src, size * 1024 * 1024)
                facts_file.write_text(json.dumps(facts))
            # A fresh interpreter per size: the daemon is its own process anyway, but the client
            # (this process) should not carry state from one size to the next.
            out = subprocess.run(
                [sys.executable, "-m", "bench.import_memory", "--one", str(src), str(Path(tmp))],
                cwd=REPO,
                capture_output=True,
                text=True,
            )
            if out.returncode:
                raise RuntimeError(f"measuring {src} failed:\n{out.stderr}")
            measured = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append({"file_mb": round(facts["bytes"] / 2**20, 1), **facts, **measured})
    result = {"synthetic": True, "runs": rows}
    print_table(
        "import memory: one large cw-jsonl file through the daemon",
        [
            (
                f"{r['file_mb']}",
                f"{r['messages']:,}",
                f"{r['import_s']}",
                f"{r['peak_mb']}",
                f"{r['rss_after_import_mb']}",
                f"{r['rss_settled_mb']}",
            )
            for r in rows
        ],
        ("file MB", "messages", "import s", "peak MB", "RSS after MB", "RSS +5 s MB"),
    )
    print(f"written {write_result('import_memory', result)}")
    return result


def _one(src: Path, tmp: Path) -> None:
    home = Path(tempfile.mkdtemp(dir=tmp, prefix="home-"))
    print(json.dumps(measure_daemon(src, home)))


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--one":
        _one(Path(args[1]), Path(args[2]))
    else:
        run([int(a) for a in args if a != "--quick"] or None, quick="--quick" in args)

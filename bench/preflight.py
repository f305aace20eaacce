"""Preflight latency: inside the engine and end to end through the lean hook client.

Synthetic archives, for scale (5k and 200k messages); preflight through the daemon on real
conversations with the LongMemEval questions as prompts is measured by :mod:`bench.realtext`.

Run: ``.venv/bin/python -m bench preflight`` (or ``make bench``). For each archive size (5,000 and
200,000 messages) it writes a synthetic cw-jsonl archive — sessions of 40 messages, a Zipfian
vocabulary of 20,000 words, error codes, paths and symbols sprinkled in — with timestamps in the
30 days before the bench clock (``CW_NOW`` is set, so age limits do not turn calls into early
exits), imports and indexes it with the real engine, then:

* **in-process**: calls the engine method ``preflight`` directly, each call a new user message of
  a random session (new message key, so nothing is answered from the frozen store), mixing
  historical questions about an anchor of that session, recurring-concept messages made of words
  of that session, off-topic messages and acknowledgements; reports p50/p95/max and the mix of
  outcomes;
* **end to end**: closes the engine, lets the hook client autostart a daemon on the store and
  times ``python -m cwcore.hosts.hook_client`` subprocesses (Python start-up included) against
  the warm daemon.

The 200,000-message store takes minutes to build (import and index), so it is kept under
``CW_BENCH_CACHE`` (default ``/tmp/cw-bench-preflight``) and reused by later runs; set
``CW_BENCH_PREFLIGHT_SIZES`` (e.g. ``5000``) to run fewer sizes.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench.common import (
    cached_cw_jsonl,
    peak_rss_mb,
    percentiles,
    print_table,
    write_result,
)

SESSION = 40
NOW = "2026-11-30T12:00:00Z"
VOCABULARY = 20_000
CALLS = 300
CLIENT_CALLS = 40
SIZES = (5_000, 200_000)
ACKS = ["ok thanks", "grazie mille", "sounds good, go ahead", "perfetto, procedi", "yes please"]
CUES = ["what did we decide about {} last time?", "remember {}?", "l'altra volta con {}?"]
REPO = Path(__file__).resolve().parent.parent


def _word(i: int) -> str:
    consonants, vowels = "bcdfglmnprstvz", "aeiou"
    out = []
    i += 7
    while i:
        i, c = divmod(i, len(consonants))
        i, v = divmod(i, len(vowels))
        out.append(consonants[c] + vowels[v])
    return "".join(out)


WORDS = [_word(i) for i in range(VOCABULARY)]


def _weights() -> list[float]:
    return [1.0 / (rank + 1) for rank in range(VOCABULARY)]


def write_archive(path: Path, n: int, seed: int = 11) -> None:
    """``n`` messages in sessions of 40, timestamps within the 29 days before :data:`NOW`; about
    one in ten ends with a sentence naming an identifier used nowhere else (``JOB_0001234``)."""
    rng = random.Random(seed)
    weights = _weights()
    with path.open("w", encoding="utf-8") as fh:
        for start in range(0, n, 1_000):
            count = min(1_000, n - start)
            lengths = [rng.randint(8, 40) for _ in range(count)]
            words = rng.choices(WORDS, weights=weights, k=sum(lengths))
            pos = 0
            for k in range(count):
                i = start + k
                session, index = divmod(i, SESSION)
                text = " ".join(words[pos : pos + lengths[k]])
                pos += lengths[k]
                if rng.random() < 0.15:
                    text += (
                        f" ERR_{session % 500:03d}_{index % 7} in src/mod_{session % 97}/"
                        f"file_{index}.py via loadConfig{index % 13}"
                    )
                if rng.random() < 0.1:
                    # A decision named once in the archive: a cue question about it has one
                    # unambiguous source, so the workload's excerpts come from these.
                    text += f". We set `JOB_{i:07d}` to {index + 5} seconds."
                day = 1 + session % 28
                row = {
                    "session": f"p{session:06d}",
                    "id": f"m{index}",
                    "role": "user" if index % 2 == 0 else "assistant",
                    "text": text,
                    "timestamp": f"2026-11-{day:02d}T10:{index:02d}:00Z",
                    "project": f"proj{session % 10}",
                }
                fh.write(json.dumps(row) + "\n")


def _messages(path: Path) -> dict[str, list[str]]:
    by_session: dict[str, list[str]] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            by_session.setdefault(row["session"], []).append(row["text"])
    return by_session


def workload(sessions: dict[str, list[str]], calls: int, seed: int = 5) -> list[dict[str, str]]:
    """Preflight requests: one new user message each, about a random session's history."""
    rng = random.Random(seed)
    names = sorted(sessions)
    out = []
    for n in range(calls):
        session = rng.choice(names)
        texts = sessions[session]
        kind = n % 10
        anchors = [
            w.strip("`")
            for t in texts
            for w in t.split()
            if w.startswith(("ERR_", "loadConfig", "`JOB_"))
        ]
        if kind < 3 and anchors:
            message = rng.choice(CUES).format(rng.choice(anchors))
        elif kind < 6:
            words = rng.choice(texts).split()
            rare = sorted(set(words), key=lambda w: -WORDS.index(w) if w in WORDS else 0)[:3]
            message = "tune the " + " ".join(rare)
        elif kind < 8:
            message = " ".join(rng.choices(WORDS[:2000], k=4)) + " again?"
        else:
            message = rng.choice(ACKS)
        out.append({"session": session, "message": message, "messageKey": f"user:bench{n}"})
    return out


def build(home: Path, n: int) -> dict[str, Any]:
    """Import and index an ``n``-message archive into ``home`` (reused when already built)."""
    return cached_cw_jsonl(home, n, write_archive)


def in_process(home: Path, requests: list[dict[str, str]]) -> dict[str, Any]:
    from cwcore.hints import frozen
    from cwcore.methods import make_service

    engine = make_service(home)
    try:
        _reset_hints(engine.store, frozen)
        for req in requests[:20]:  # warm-up: caches, regexes, lineage rows
            engine.call("preflight", {**req, "messageKey": req["messageKey"] + "w"}, _ignore,
                        _never())  # fmt: skip
        samples: list[float] = []
        cpu: list[float] = []
        outcomes: Counter[str] = Counter()
        for req in requests:
            c0, t0 = time.thread_time(), time.perf_counter()
            body = engine.call("preflight", req, _ignore, _never())
            samples.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.thread_time() - c0) * 1000)
            outcomes[body["outcome"]] += 1
        return {
            "latency": percentiles(samples),
            "cpu": percentiles(cpu),
            "outcomes": dict(sorted(outcomes.items())),
        }
    finally:
        _reset_hints(engine.store, frozen)
        engine.close()


def end_to_end(home: Path, requests: list[dict[str, str]]) -> dict[str, Any]:
    """Wall time of the hook client (a new process each call) against a warm daemon."""
    runtime = Path(tempfile.mkdtemp(prefix="cwb", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if k != "CW_EMBEDDED"}
    env.update({"CW_HOME": str(home), "XDG_RUNTIME_DIR": str(runtime), "CW_NOW": NOW})
    env["PYTHONPATH"] = str(REPO)
    cmd = [sys.executable, "-m", "cwcore.hosts.hook_client"]

    def call(req: dict[str, str]) -> tuple[float, str]:
        t0 = time.perf_counter()
        done = subprocess.run(
            cmd, input=json.dumps(req).encode(), capture_output=True, env=env, timeout=120
        )
        return (time.perf_counter() - t0) * 1000, done.stdout.decode()

    try:
        cold, _ = call({**requests[0], "messageKey": "user:cold"})
        for req in requests[1:6]:
            call({**req, "messageKey": req["messageKey"] + "w"})
        samples, hints = [], 0
        for req in requests[:CLIENT_CALLS]:
            ms, out = call(req)
            samples.append(ms)
            hints += bool(out)
        daemon = through_daemon(home, runtime, requests)
        startup = [
            _wall([sys.executable, "-c", "import cwcore.hosts.hook_client"], env) for _ in range(10)
        ]
        bare = [_wall([sys.executable, "-c", "pass"], env) for _ in range(10)]
        return {
            "latency": percentiles(samples),
            "daemon": daemon,
            "cold_start_ms": round(cold, 1),
            "hints_printed": hints,
            "python_import_only": percentiles(startup),
            "python_bare": percentiles(bare),
            "load_average": os.getloadavg()[0],
        }
    finally:
        _stop_daemon(home, runtime)


def through_daemon(home: Path, runtime: Path, requests: list[dict[str, str]]) -> dict[str, Any]:
    """Preflight through the daemon as a host that keeps its connection sees it: request to
    answer over one open socket (framing, the daemon's queue and the engine), without the
    interpreter start-up that :func:`end_to_end` includes. Each call is a new message key."""
    from cwcore.daemon.client import Client

    old = os.environ.get("XDG_RUNTIME_DIR")
    os.environ["XDG_RUNTIME_DIR"] = str(runtime)
    try:
        with Client(home, autostart=False) as client:
            for req in requests[:20]:  # warm-up, as in-process
                client.call("preflight", {**req, "messageKey": req["messageKey"] + "d"})
            samples: list[float] = []
            for req in requests:
                t0 = time.perf_counter()
                client.call("preflight", {**req, "messageKey": req["messageKey"] + "D"})
                samples.append((time.perf_counter() - t0) * 1000)
        return percentiles(samples)
    finally:
        if old is None:
            os.environ.pop("XDG_RUNTIME_DIR", None)
        else:
            os.environ["XDG_RUNTIME_DIR"] = old


def _wall(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, capture_output=True, timeout=60, check=False)
    return (time.perf_counter() - t0) * 1000


def _stop_daemon(home: Path, runtime: Path) -> None:
    pidfile = next(runtime.glob("cw-*/*.pid"), None)
    if pidfile is not None:
        with contextlib.suppress(ValueError, OSError):
            pid = int(pidfile.read_text().strip())
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
    shutil.rmtree(runtime, ignore_errors=True)


def _reset_hints(store: Any, frozen: Any) -> None:
    """Forget earlier runs' frozen hints and exposures, so each run decides afresh."""
    with store.lock:
        batch = store.batch()
        for key, _ in store.scan("hints", b""):
            batch.delete("hints", key)
        store.commit(batch)


def _ignore(event: dict[str, Any]) -> None:
    return None


def _never() -> Any:
    import threading

    return threading.Event()


def run(sizes: tuple[int, ...] | None = None) -> dict[str, Any]:
    os.environ["CW_NOW"] = NOW
    os.environ.pop("CW_EMBEDDED", None)
    if sizes is None:
        raw = os.environ.get("CW_BENCH_PREFLIGHT_SIZES")
        sizes = tuple(int(s) for s in raw.split(",")) if raw else SIZES
    cache = Path(os.environ.get("CW_BENCH_CACHE", "/tmp/cw-bench-preflight"))
    runs = []
    for n in sizes:
        home = cache / f"preflight-v2-{n}"  # v2: the archive gained JOB_ sentences
        facts = build(home, n)
        requests = workload(_messages(home / "archive.jsonl"), CALLS)
        result = {
            **facts,
            "in_process": in_process(home, requests),
            "end_to_end": end_to_end(home, requests),
        }
        runs.append(result)
        print(f"  {n:,} messages: {json.dumps(result)}", flush=True)
    body = {
        "runs": runs,
        "calls": CALLS,
        "client_calls": CLIENT_CALLS,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "targets": {
            "in_process_p50_ms": 5,
            "in_process_p95_ms": 10,
            "daemon_p50_ms": 5,
            "daemon_p95_ms": 10,
            "end_to_end_ms": 100,
        },
    }
    rows: list[tuple[str, ...]] = []
    for r in runs:
        lat, e2e = r["in_process"]["latency"], r["end_to_end"]["latency"]
        via = r["end_to_end"]["daemon"]
        cpu = r["in_process"]["cpu"]
        rows.append(
            (
                f"{r['messages']:,}",
                f"{lat['p50_ms']:.2f} / {lat['p95_ms']:.2f}",
                f"{cpu['p50_ms']:.2f} / {cpu['p95_ms']:.2f}",
                f"{via['p50_ms']:.2f} / {via['p95_ms']:.2f}",
                f"{e2e['p50_ms']:.1f} / {e2e['p95_ms']:.1f}",
                f"{r['end_to_end']['python_bare']['p50_ms']:.1f} / "
                f"{r['end_to_end']['python_import_only']['p50_ms']:.1f}",
                ", ".join(f"{k} {v}" for k, v in r["in_process"]["outcomes"].items()),
            )
        )
    print_table(
        "preflight latency (ms)",
        rows,
        (
            "messages",
            "in-process wall p50 / p95",
            "cpu p50 / p95",
            "daemon p50 / p95",
            "hook client p50 / p95",
            "python bare / +imports",
            "outcomes",
        ),
    )
    print(f"written {write_result('preflight', body)}")
    return body


if __name__ == "__main__":
    run()

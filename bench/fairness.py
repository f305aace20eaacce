"""Fairness under bad peers: clients that stop reading or announce full frames and stall.

Run: ``.venv/bin/python -m bench fairness`` (``--quick``: 15 s per run instead of 60). A real
daemon on a temporary store (a generated archive plus one session whose transcript is about
8 MiB) serves 16 clients for the duration:

* 9 good clients loop ``search`` (a query from the archive's vocabulary), ``recall`` of its
  first hit and ``sessions``, timing every call;
* 5 silent readers send requests (``show`` of the long session, then a ``search`` every second)
  and never read a byte; when the daemon drops one, it comes back 5 s later and does it again
  (``CW_BENCH_SILENT_COMEBACK_S``);
* 2 announcers send a 16 MiB frame header and nothing else; when the daemon closes one, it
  reconnects and announces again.

The same 9 good clients then run alone for the same duration on a fresh daemon of the same
store. The table prints the good clients' p50/p95/max in both runs, their errors, and how many
bad peers the daemon dropped. A load bench, not a test: the figures depend on the machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.admission import WORDS, generate
from bench.common import percentiles, print_table, write_result

GOOD, SILENT, ANNOUNCERS = 9, 5, 2
DURATION_S = 60.0
QUICK_DURATION_S = 15.0
#: A silent reader the daemon dropped comes back (and stops reading again) after this long.
SILENT_COMEBACK_S = float(os.environ.get("CW_BENCH_SILENT_COMEBACK_S", "5"))


def _big_session(path: Path, turns: int = 12, chars: int = 700_000) -> None:
    with path.open("w", encoding="utf-8") as fh:
        import json

        for i in range(turns):
            words = " ".join(f"w{(i * 7919 + j) % 5000}" for j in range(chars // 6))
            fh.write(json.dumps({"session": "big", "id": f"u{i}", "role": "user", "text": words}))
            fh.write("\n")
            reply = {"session": "big", "id": f"a{i}", "role": "assistant", "text": f"ok {i}"}
            fh.write(json.dumps(reply) + "\n")


def _raw(home: Path) -> socket.socket:
    from cwcore.daemon import protocol
    from cwcore.daemon.paths import daemon_paths

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect(str(daemon_paths(home).socket))
    protocol.send(sock, protocol.hello(frozenset(), frozenset()))
    if protocol.recv(sock)["type"] != "welcome":
        sock.close()
        raise ConnectionError("refused")
    return sock


def _silent(home: Path, stop: threading.Event, stats: dict[str, int], n: int) -> None:
    from cwcore.daemon import protocol

    k = 0
    while not stop.is_set():
        try:
            sock = _raw(home)
        except (OSError, ConnectionError, ValueError):
            time.sleep(0.2)
            continue
        stats["silent_connections"] += 1
        try:
            protocol.send(sock, protocol.request(f"s{n}-{k}", "show", {"session": "big"}))
            while not stop.wait(1.0):
                k += 1
                protocol.send(sock, protocol.request(f"s{n}-{k}", "search", {"query": "w17"}))
        except OSError:
            pass  # dropped by the daemon: come back a little later and do it again
        finally:
            sock.close()
        stop.wait(SILENT_COMEBACK_S)


def _announcer(home: Path, stop: threading.Event, stats: dict[str, int]) -> None:
    from cwcore.daemon import protocol

    while not stop.is_set():
        try:
            sock = _raw(home)
        except (OSError, ConnectionError, ValueError):
            time.sleep(0.2)
            continue
        stats["announcer_connections"] += 1
        try:
            sock.sendall(protocol.HEADER.pack(protocol.MAX_FRAME))
            sock.settimeout(0.5)
            while not stop.is_set():
                try:
                    if not sock.recv(65536):
                        break  # closed by the daemon (frame deadline): announce again
                except TimeoutError:
                    continue
        except OSError:
            pass
        finally:
            sock.close()


def _good(
    home: Path, stop: threading.Event, n: int, samples: list[float], errors: list[str]
) -> None:
    from cwcore.daemon.client import connect

    i = 0
    with connect(home, autostart=False) as client:
        while not stop.is_set():
            i += 1
            query = f"{WORDS[(n * 31 + i) % len(WORDS)]} {WORDS[(n * 7 + i * 3) % len(WORDS)]}"
            try:
                t0 = time.perf_counter()
                found = client.call("search", {"query": query}, timeout=120)
                samples.append((time.perf_counter() - t0) * 1000)
                if found["results"]:
                    t0 = time.perf_counter()
                    client.call("recall", {"locator": found["results"][0]["locator"]}, timeout=120)
                    samples.append((time.perf_counter() - t0) * 1000)
                t0 = time.perf_counter()
                client.call("sessions", {"limit": 20}, timeout=120)
                samples.append((time.perf_counter() - t0) * 1000)
            except Exception as exc:  # a bench counts failures, it does not stop at one
                errors.append(f"{type(exc).__name__}: {exc}")


def _run(home: Path, duration: float, bad: bool) -> dict[str, Any]:
    from cwcore.daemon import control
    from cwcore.daemon.client import connect

    os.environ["CW_HOME"] = str(home)
    stop = threading.Event()
    samples: list[float] = []
    errors: list[str] = []
    stats = {"silent_connections": 0, "announcer_connections": 0}
    with connect(home) as probe:
        probe.call("search", {"query": "warm up"}, timeout=120)
        threads = [
            threading.Thread(target=_good, args=(home, stop, n, samples, errors))
            for n in range(GOOD)
        ]
        if bad:
            threads += [
                threading.Thread(target=_silent, args=(home, stop, stats, n)) for n in range(SILENT)
            ]
            threads += [
                threading.Thread(target=_announcer, args=(home, stop, stats))
                for _ in range(ANNOUNCERS)
            ]
    # The probe is closed: the bench's 16 clients are the daemon's 16 connections.
    for thread in threads:
        thread.start()
    time.sleep(duration)
    stop.set()
    for thread in threads:
        thread.join(180)
    with connect(home, autostart=False) as probe:
        status = probe.call("daemon.status", timeout=60)
    control.stop(home)
    return {
        "good": percentiles(samples) if samples else {},
        "good_errors": len(errors),
        "first_errors": errors[:5],
        "stalled_dropped": status.get("stalled_dropped"),
        **(stats if bad else {}),
    }


def run(quick: bool = False) -> dict[str, Any]:
    from cwcore.api import Archive

    duration = QUICK_DURATION_S if quick else DURATION_S
    result: dict[str, Any] = {
        "duration_s": duration,
        "clients": {"good": GOOD, "silent": SILENT, "announcers": ANNOUNCERS},
    }
    saved = {k: os.environ.get(k) for k in ("CW_HOME", "CW_SEMANTIC_RETRIEVAL")}
    tmp = Path(tempfile.mkdtemp(dir="/tmp", prefix="cwfair"))
    try:
        os.environ["CW_SEMANTIC_RETRIEVAL"] = "false"
        archive_src, big = tmp / "archive.jsonl", tmp / "big.jsonl"
        generate(archive_src, 4_000)
        _big_session(big)
        home = tmp / "home"
        with Archive.open(home, embedded=True) as archive:
            archive.import_paths([archive_src, big])
        result["alone"] = _run(home, duration, bad=False)
        result["with_bad_peers"] = _run(home, duration, bad=True)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutil.rmtree(tmp, ignore_errors=True)
    rows: list[tuple[str, ...]] = []
    for mode in ("alone", "with_bad_peers"):
        body = result[mode]
        good = body["good"]
        rows.append(
            (
                mode,
                f"{good.get('n', 0)}",
                f"{good.get('p50_ms', 0):.1f} / {good.get('p95_ms', 0):.1f} / "
                f"{good.get('max_ms', 0):.1f} ms",
                str(body["good_errors"]),
                str(body["stalled_dropped"]),
            )
        )
    alone, bad = result["alone"]["good"], result["with_bad_peers"]["good"]
    if alone and bad:
        result["p95_ratio"] = round(bad["p95_ms"] / alone["p95_ms"], 2)
    print_table(
        f"fairness: {GOOD} good clients, alone and beside {SILENT} silent readers and "
        f"{ANNOUNCERS} announcers, {duration:g} s each",
        rows,
        ("run", "calls", "good p50/p95/max", "errors", "peers dropped"),
    )
    print(f"p95 ratio (with bad peers / alone): {result.get('p95_ratio')}")
    print(f"written {write_result('fairness', result)}")
    return result

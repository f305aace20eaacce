"""Output reservation before dispatch: each method's declared bound versus a full frame per call.

Run: ``.venv/bin/python -m bench reservation``. Two real daemons on temporary stores, the same
workload on each: a small archive is imported, then preflight calls are timed from one client
while two other clients each run a long ``import`` (the calls a day of syncing and importing
makes). The first daemon is the real engine (each call reserves its method's declared output
bound: 1 MiB for ``import`` and ``preflight``); the second wraps the same engine so that every
method declares a full frame (16 MiB), which is what reserving a full frame before dispatch
means. The daemon-wide output budget is two full frames in both.
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.admission import generate
from bench.common import percentiles, print_table, write_result

LONG_IMPORT_MESSAGES = 20_000
SMALL_MESSAGES = 2_000
PREFLIGHTS = 20


class FullFrameService:
    """The engine, declaring a full frame of output for every method."""

    def __init__(self, home: Path) -> None:
        from cwcore.methods import make_service

        self._engine = make_service(home)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)

    def max_output_bytes(self, method: str, params: dict[str, Any]) -> int:
        from cwcore.daemon.protocol import MAX_FRAME

        return MAX_FRAME


def full_frame_service(home: Path) -> FullFrameService:
    return FullFrameService(home)


def _workload(home: Path, small: Path, long_files: list[Path]) -> dict[str, Any]:
    from cwcore.daemon import control
    from cwcore.daemon.client import connect

    os.environ["CW_HOME"] = str(home)
    client = connect(home)
    try:
        client.call("import", {"paths": [str(small)], "format": "cw-jsonl"})

        def ask(i: int) -> float:
            t0 = time.perf_counter()
            client.call(
                "preflight",
                {"message": f"remember ERR_{i:03d} in src/mod_{i}?", "session": "bench-00001"},
            )
            return (time.perf_counter() - t0) * 1000

        idle = [ask(i) for i in range(PREFLIGHTS)]
        durations: list[float] = []

        def long_import(path: Path) -> None:
            with connect(home) as other:
                t0 = time.perf_counter()
                other.call("import", {"paths": [str(path)], "format": "cw-jsonl"}, timeout=600)
                durations.append(time.perf_counter() - t0)

        threads = [threading.Thread(target=long_import, args=(p,)) for p in long_files]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # both imports dispatched and holding their output
            if client.call("daemon.status")["in_flight"] >= len(long_files):
                break
            time.sleep(0.01)
        reserved = client.call("daemon.status")["output_reserved_bytes"]
        busy = [ask(100 + i) for i in range(PREFLIGHTS)]
        for thread in threads:
            thread.join()
    finally:
        client.close()
        control.stop(home)
    return {
        "preflight_idle": percentiles(idle),
        "preflight_during_imports": percentiles(busy),
        "output_reserved_bytes_during_imports": reserved,
        "import_seconds": sorted(round(d, 2) for d in durations),
    }


def run() -> dict[str, Any]:
    result: dict[str, Any] = {"long_import_messages": LONG_IMPORT_MESSAGES}
    saved = {k: os.environ.get(k) for k in ("CW_HOME", "CW_DAEMON_SERVICE", "PYTHONPATH")}
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        small = Path(tmp) / "small.jsonl"
        generate(small, SMALL_MESSAGES)
        long_files = [Path(tmp) / f"long{i}.jsonl" for i in range(2)]
        for seed, path in enumerate(long_files, 11):
            generate(path, LONG_IMPORT_MESSAGES, seed=seed)
        repo = str(Path(__file__).resolve().parents[1])
        os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [repo, saved["PYTHONPATH"]]))
        try:
            for mode, factory in (
                ("declared", "cwcore.methods:make_service"),
                ("full-frame", "bench.reservation:full_frame_service"),
            ):
                os.environ["CW_DAEMON_SERVICE"] = factory
                result[mode] = _workload(Path(tmp) / mode, small, long_files)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    rows: list[tuple[str, ...]] = []
    for mode in ("declared", "full-frame"):
        body = result[mode]
        idle, busy = body["preflight_idle"], body["preflight_during_imports"]
        rows.append(
            (
                mode,
                f"{idle['p50_ms']:.1f} / {idle['p95_ms']:.1f} ms",
                f"{busy['p50_ms']:.1f} / {busy['p95_ms']:.1f} / {busy['max_ms']:.1f} ms",
                f"{body['output_reserved_bytes_during_imports']:,}",
            )
        )
    print_table(
        "output reservation",
        rows,
        ("reservation", "preflight idle p50/p95", "during 2 imports p50/p95/max", "reserved B"),
    )
    print(f"written {write_result('reservation', result)}")
    return result

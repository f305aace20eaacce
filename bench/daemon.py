"""The daemon: round-trip latency of a trivial request, and import throughput through the socket.

Run: ``.venv/bin/python -m bench daemon``. A real daemon process is started on a temporary store;
``daemon.ping`` measures the protocol's floor (framing, one socket round trip, dispatch), and an
import of generated cw-jsonl messages through ``import`` measures admission with the daemon in
the path, beside the same import embedded in this process.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.admission import generate
from bench.common import percentiles, print_table, timed, write_result

PINGS = 500
MESSAGES = 20_000


def run(messages: int = MESSAGES) -> dict[str, Any]:
    from cwcore.api import Archive
    from cwcore.daemon import control
    from cwcore.daemon.client import connect

    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        src = Path(tmp) / "archive.jsonl"
        generate(src, messages)
        home = Path(tmp) / "home"
        os.environ["CW_HOME"] = str(home)
        started = time.perf_counter()
        client = connect(home)
        start_ms = (time.perf_counter() - started) * 1000
        try:
            for _ in range(20):
                client.call("daemon.ping")
            samples = []
            for _ in range(PINGS):
                t0 = time.perf_counter()
                client.call("daemon.ping")
                samples.append((time.perf_counter() - t0) * 1000)
            ping = percentiles(samples)
            _, daemon_s = timed(
                lambda: client.call("import", {"paths": [str(src)], "format": "cw-jsonl"})
            )
        finally:
            client.close()
            control.stop(home)
        embedded_home = Path(tmp) / "embedded"
        with Archive.open(embedded_home, embedded=True) as archive:
            _, embedded_s = timed(lambda: archive.import_paths([src], fmt="cw-jsonl"))
    result = {
        "daemon_start_ms": round(start_ms, 1),
        "ping": ping,
        "messages": messages,
        "import_through_daemon": {
            "seconds": round(daemon_s, 2),
            "messages_per_s": round(messages / daemon_s),
        },
        "import_embedded": {
            "seconds": round(embedded_s, 2),
            "messages_per_s": round(messages / embedded_s),
        },
    }
    print_table(
        "daemon",
        [
            (
                "daemon.ping round trip",
                f"p50 {ping['p50_ms']:.3f} ms",
                f"p95 {ping['p95_ms']:.3f} ms",
            ),
            (
                f"import {messages:,} msgs through the socket",
                f"{result['import_through_daemon']['messages_per_s']:,} msg/s",
                "admit + index",
            ),
            (
                f"import {messages:,} msgs embedded (same run)",
                f"{result['import_embedded']['messages_per_s']:,} msg/s",
                "admit + index",
            ),
        ],
        ("measure", "value", "note"),
    )
    print(f"daemon start {start_ms:.0f} ms; written {write_result('daemon', result)}")
    return result

"""In-process pieces of the transport: framing, budgets, the replay cache, socket paths."""

from __future__ import annotations

import asyncio
import os
import struct
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import DaemonEnv

from cwcore.daemon import protocol
from cwcore.daemon.budget import Budget, Reservation
from cwcore.daemon.client import connect
from cwcore.daemon.paths import MAX_SOCKET_PATH, daemon_paths, store_hash
from cwcore.daemon.server import FULL_FRAME, ReplayCache
from cwcore.errors import Busy, LimitExceeded, ProtocolError


def test_frames_round_trip_and_limits() -> None:
    frame = protocol.encode(protocol.request("r", "echo", {"text": "é\n"}))
    (length,) = struct.unpack(">I", frame[:4])
    assert length == len(frame) - 4
    assert protocol.decode(frame[4:])["params"] == {"text": "é\n"}
    with pytest.raises(ProtocolError):
        protocol.parse_header(struct.pack(">I", protocol.MAX_FRAME + 1))
    assert protocol.parse_header(struct.pack(">I", protocol.MAX_FRAME)) == protocol.MAX_FRAME
    with pytest.raises(LimitExceeded):
        protocol.encode({"type": "result", "result": {"x": "y" * 100}}, limit=50)
    for body in (b"\xff", b"[1]", b'{"type": 1}', b"{"):
        with pytest.raises(ProtocolError):
            protocol.decode(body)
    assert protocol.valid_request_id("a" * 128) and not protocol.valid_request_id("a" * 129)
    assert not protocol.valid_request_id("a\nb") and not protocol.valid_request_id(7)


def test_budget_waits_for_release_and_times_out_busy() -> None:
    async def scenario() -> list[str]:
        budget = Budget(10, "test")
        order: list[str] = []
        await budget.acquire(8)

        async def late() -> None:
            await budget.acquire(5)
            order.append("late acquired")

        task = asyncio.create_task(late())
        await asyncio.sleep(0.01)
        assert not task.done()  # 8 + 5 > 10: waits, without polling
        order.append("release")
        budget.release(8)
        await task
        with pytest.raises(Busy):
            await budget.acquire(6, timeout=0.05)
        with pytest.raises(LimitExceeded):
            await budget.acquire(11)
        assert budget.used == 5
        return order

    assert asyncio.run(scenario()) == ["release", "late acquired"]


def test_reservation_takes_both_budgets_shrinks_and_releases() -> None:
    async def scenario() -> None:
        local, shared = Budget(100, "local"), Budget(150, "shared")
        hold = Reservation(local, shared)
        await hold.take(90)
        assert (local.used, shared.used) == (90, 90)
        other = Reservation(Budget(100, "other local"), shared)
        with pytest.raises(Busy):  # the shared budget is what a second connection waits for
            await other.take(70, timeout=0.05)
        assert other.local.used == 0  # a failed take gives its local part back
        hold.shrink(20)  # the materialized answer needs only 20 bytes
        await other.take(70, timeout=0.05)
        assert (local.used, shared.used) == (20, 90)
        hold.shrink(50)  # never grows
        hold.release()
        other.release()
        assert (local.used, shared.used, other.local.used) == (0, 0, 0)

    asyncio.run(scenario())


def test_replay_cache_is_bounded_by_count_and_bytes() -> None:
    cache = ReplayCache(max_entries=3, max_bytes=100)
    for i in range(5):
        cache.put(f"r{i}", "write", b"x" * 10)
    assert len(cache) == 3 and cache.get("r0") is None and cache.get("r4") is not None
    cache.get("r2")  # recently used: survives the next eviction
    cache.put("big", "write", b"y" * 80)
    assert cache.get("r2") is not None and cache.get("r3") is None
    assert cache.bytes <= 100
    cache.put("huge", "write", b"z" * 101)  # larger than the whole cache: not kept
    assert cache.get("huge") is None


def test_socket_path_is_short_private_and_per_store(env: DaemonEnv, tmp_path: Path) -> None:
    paths = daemon_paths(env.home)
    assert paths.socket.parent == env.runtime / f"cw-{os.getuid()}"
    assert paths.socket.name == f"{store_hash(env.home.resolve())}.sock"
    assert len(store_hash(env.home)) == 16
    assert len(os.fsencode(str(paths.socket))) <= MAX_SOCKET_PATH
    assert paths.socket_dir.stat().st_mode & 0o777 == 0o700
    assert paths.pidfile.parent == paths.socket_dir
    assert paths.log == env.home.resolve() / "daemon.log"
    other = daemon_paths(tmp_path / "another-home")
    assert other.socket != paths.socket and other.socket_dir == paths.socket_dir


def test_output_reservations_allow_two_full_frames_daemon_wide(env: DaemonEnv) -> None:
    """Three calls each declaring a full-frame output bound: two hold their reservations, the
    third waits for one to finish (the calls hold until released, so no timing decides it)."""
    with connect(env.home) as warm:
        warm.call("daemon.ping")
    results: list[dict[str, Any]] = []

    def call() -> None:
        with connect(env.home) as client:
            results.append(client.call("hold", {"bound": 16 * 1024 * 1024}, timeout=60))

    threads = [threading.Thread(target=call) for _ in range(3)]
    for thread in threads:
        thread.start()
    seen: list[int] = []
    try:
        with connect(env.home) as observer:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (not seen or seen[-1] < 2 * FULL_FRAME):
                seen.append(observer.call("daemon.status")["output_reserved_bytes"])
            # Two reservations are held; however long the third waits, it does not add one.
            for _ in range(5):
                seen.append(observer.call("daemon.status")["output_reserved_bytes"])
            held = list(results)
    finally:
        (env.home / "release").write_text("go")
        for thread in threads:
            thread.join(30)
    assert seen[-1] == max(seen) == 2 * FULL_FRAME  # never more than two full frames reserved
    assert held == []  # nothing finished before the release
    assert len(results) == 3 and all(r["held"] for r in results)


def test_each_call_reserves_its_declared_output_bound(env: DaemonEnv) -> None:
    """The output reserved before dispatch is the method's declared bound, not a full frame:
    eight calls declaring 1 MiB run at once (a full frame each would admit two at a time),
    within the daemon-wide budget of two full frames."""
    with connect(env.home) as warm:
        warm.call("daemon.ping")
    bound = 1024 * 1024
    results: list[dict[str, Any]] = []

    def call() -> None:
        with connect(env.home) as client:
            results.append(client.call("hold", {"bound": bound}, timeout=60))

    threads = [threading.Thread(target=call) for _ in range(8)]
    for thread in threads:
        thread.start()
    status: dict[str, Any] = {}
    try:
        with connect(env.home) as observer:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                status = observer.call("daemon.status")
                if status["in_flight"] == 8:
                    break
                time.sleep(0.02)
    finally:
        (env.home / "release").write_text("go")
        for thread in threads:
            thread.join(30)
    assert status["in_flight"] == 8, status
    assert status["output_reserved_bytes"] == 8 * (bound + protocol.HEADER_BYTES)
    assert status["output_reserved_bytes"] <= 2 * FULL_FRAME
    assert len(results) == 8 and all(r["held"] for r in results)

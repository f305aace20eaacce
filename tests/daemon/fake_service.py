"""A test Service the daemon under test loads with ``--service fake_service:make_service``.

It lives on the daemon's PYTHONPATH (this folder), never imported by pytest itself. Methods:
``echo``, ``sleep`` (cancellable), ``hold`` (until the file ``CW_HOME/release`` exists;
answers whether it was released rather than cancelled or out of time), ``stream`` (N events;
with ``hold_at`` it stops after that many until the release file exists), ``big`` (N bytes of
output, with an optional declared ``bound``), ``write`` (idempotent by request id, recorded in
files under CW_HOME so it survives ``kill -9``; with ``hold`` it creates ``CW_HOME/write-started``
and waits for the release file), ``fail`` (a bug), ``invalid`` (a CwError), ``pid``. The
release file lets a test decide when a call ends instead of guessing how long it takes.
Background work is pending while the file ``CW_HOME/background`` exists
(:meth:`FakeService.background_pending`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cwcore.daemon.service import current_request_id
from cwcore.errors import InvalidInput, StoreLocked

MiB = 1024 * 1024


class FakeService:
    capabilities = frozenset({"test/1"})
    build = "fake-1"

    def __init__(self, home: Path) -> None:
        self.home = home
        self.calls = 0
        self.lock = threading.Lock()
        (home / "opened").write_text(str(os.getpid()))

    def call(
        self,
        method: str,
        params: dict[str, Any],
        emit: Callable[[dict[str, Any]], None],
        cancel: threading.Event,
    ) -> dict[str, Any]:
        with self.lock:
            self.calls += 1
        if method == "echo":
            return {"echo": params, "request_id": current_request_id()}
        if method == "pid":
            return {"pid": os.getpid()}
        if method == "sleep":
            cancelled = cancel.wait(float(params.get("seconds", 1.0)))
            return {"slept": True, "cancelled": cancelled}
        if method == "hold":
            released = self._wait_for_release(cancel, float(params.get("seconds", 30.0)))
            return {"held": True, "released": released}
        if method == "stream":
            count = int(params.get("count", 3))
            delay = float(params.get("delay", 0.0))
            hold_at = params.get("hold_at")
            for i in range(count):
                if i == hold_at and not self._wait_for_release(cancel, 60.0):
                    break
                emit({"i": i})
                if delay and cancel.wait(delay):
                    break
            return {"count": count}
        if method == "big":
            return {"data": "x" * int(params["bytes"])}
        if method == "write":
            return self._write(
                str(current_request_id()),
                float(params.get("delay", 0.0)),
                cancel if params.get("hold") else None,
            )
        if method == "fail":
            raise RuntimeError("boom")
        if method == "invalid":
            raise InvalidInput("bad parameter", field="x")
        raise InvalidInput(f"unknown method {method!r}")

    def _wait_for_release(self, cancel: threading.Event, seconds: float) -> bool:
        """Wait until ``CW_HOME/release`` exists (True), or cancel or ``seconds`` (False)."""
        deadline = time.monotonic() + seconds
        while not (self.home / "release").exists():
            if time.monotonic() >= deadline or cancel.wait(0.01):
                return False
        return True

    def _write(
        self, request_id: str, delay: float, hold: threading.Event | None = None
    ) -> dict[str, Any]:
        """Count a write once per request id, durably (like the store's requests family).

        With ``hold`` (the call's cancel event) the write announces itself in
        ``CW_HOME/write-started`` and waits for the release file before it is recorded."""
        if hold is not None:
            (self.home / "write-started").write_text(request_id)
            self._wait_for_release(hold, 60.0)
        with self.lock:
            executions = self.home / "executions"
            runs = int(executions.read_text()) + 1 if executions.exists() else 1
            executions.write_text(str(runs))
            journal = self.home / "writes.jsonl"
            seen = journal.read_text().splitlines() if journal.exists() else []
            ids = [json.loads(line)["id"] for line in seen]
            if request_id not in ids:
                time.sleep(delay)
                with journal.open("a") as fh:
                    fh.write(json.dumps({"id": request_id}) + "\n")
                    fh.flush()
                    os.fsync(fh.fileno())
                ids.append(request_id)
            return {"count": len(ids), "request_id": request_id}

    def max_output_bytes(self, method: str, params: dict[str, Any]) -> int:
        if "bound" in params:
            return int(params["bound"])
        return 16 * MiB if method == "big" else 64 * 1024

    def status(self) -> dict[str, Any]:
        return {"fake_calls": self.calls, "outbox_depth": 0}

    def start_workers(self) -> None:
        (self.home / "workers").write_text("started")

    def background_pending(self) -> str | None:
        """The text of ``CW_HOME/background`` while it exists (the test's pending work); each
        question is counted in ``CW_HOME/background-asked``."""
        asked = self.home / "background-asked"
        with self.lock:
            count = int(asked.read_text()) + 1 if asked.exists() else 1
            # Replaced whole: the test reads it while the daemon counts (a write in place was
            # once read empty).
            fresh = asked.with_suffix(".tmp")
            fresh.write_text(str(count))
            os.replace(fresh, asked)
        try:
            return (self.home / "background").read_text() or None
        except FileNotFoundError:
            return None

    def close(self) -> None:
        (self.home / "closed").write_text(str(os.getpid()))


class FakeServiceV2(FakeService):
    capabilities = frozenset({"test/1", "test/2"})
    build = "fake-2"


class OtherBuild(FakeService):
    build = "fake-1-other-build"


def make_service(home: Path) -> FakeService:
    return FakeService(home)


def make_service_v2(home: Path) -> FakeService:
    return FakeServiceV2(home)


def make_other_build(home: Path) -> FakeService:
    return OtherBuild(home)


def make_failing(home: Path) -> FakeService:
    raise StoreLocked(f"{home}/store is locked by another process")

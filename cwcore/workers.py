"""Background workers inside the daemon: small periodic threads with a stop signal.

Each worker runs its ``step`` at an interval (or when woken), records its last outcome for
``daemon status``, and never hot-loops: a failure is logged and retried after the interval. A
step that backs off waits with :meth:`Periodic.pause`, which a wake or a stop cuts short.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("cw.workers")


#: The nice value background work lowers its own thread to (Linux; the lowest priority).
BACKGROUND_NICE = 19


def lower_thread_priority(nice: int = BACKGROUND_NICE) -> bool:
    """Give the calling thread a nice value of ``nice``, so the scheduler runs request threads
    first while this one has work (Linux keeps a nice value per thread; elsewhere this does
    nothing). Best effort: returns whether it took effect."""
    if not hasattr(os, "setpriority"):
        return False
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)
    except OSError:
        return False
    return True


class Periodic:
    """Run ``step()`` every ``interval`` seconds until :meth:`stop`; :meth:`wake` runs it now."""

    def __init__(
        self, name: str, step: Callable[[], Any], interval: float, *, background: bool = False
    ) -> None:
        self.name = name
        self.background = background  # lowest CPU priority (lower_thread_priority)
        self._step = step
        self.interval = interval
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"cw-{name}", daemon=True)
        self.last_result: Any = None
        self.last_error: str | None = None
        self.last_run: float | None = None
        self.runs = 0
        self.busy = False

    def start(self) -> None:
        self._thread.start()

    def wake(self) -> None:
        self._wake.set()

    @property
    def alive(self) -> bool:
        """Whether the worker's thread runs (started and not yet stopped)."""
        return self._thread.is_alive()

    def pause(self, seconds: float) -> bool:
        """Wait inside a step for at most ``seconds`` (a retry backoff). Returns True as soon as
        :meth:`wake` (new work may let the retry succeed) or :meth:`stop` (shutdown cancels the
        wait) is called, False when the time ran out. Call it from the worker's own step only:
        the wake stays set, so the loop runs the next step at once."""
        return self._wake.wait(seconds)

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def _run(self) -> None:
        if self.background:
            lower_thread_priority()
        while not self._stop.is_set():
            self.busy = True
            try:
                self.last_result = self._step()
                self.last_error = None
            except Exception as exc:  # recorded, retried after the interval: no hot loop
                self.last_error = f"{type(exc).__name__}: {exc}"
                log.exception("worker %s failed", self.name)
            finally:
                self.busy = False
                self.last_run = time.time()
                self.runs += 1
            self._wake.wait(self.interval)
            self._wake.clear()

    def status(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "busy": self.busy,
            "last_run": self.last_run,
            "last_error": self.last_error,
        }


class Backoff:
    """Doubling retry waits for a failure that does not heal at once: ``first_s`` seconds after
    the first failure, twice the last wait after each further one, at most ``max_s``; a success
    forgets the waits. Times are ``time.monotonic()`` seconds, passed in by the caller."""

    def __init__(self, *, first_s: float, max_s: float) -> None:
        self.first_s = first_s
        self.max_s = max_s
        #: The current wait, seconds (0 until a failure, and after a success).
        self.delay = 0.0
        #: When the next attempt may run (monotonic seconds); a caller may move it.
        self.retry_at = 0.0

    def waiting(self, now: float) -> bool:
        """Whether an attempt at ``now`` falls within the wait after the last failure."""
        return now < self.retry_at

    def failed(self, now: float) -> float:
        """Record a failure at ``now``; returns the wait before the next attempt, seconds."""
        self.delay = min(self.max_s, max(self.first_s, self.delay * 2))
        self.retry_at = now + self.delay
        return self.delay

    def succeeded(self) -> None:
        """Record a success: the next failure waits ``first_s`` again."""
        self.delay = 0.0

"""Freed heap goes back to the system: :func:`cwcore.heap.trim`, and the daemon's engine trims
once per quiet period (:meth:`cwcore.engine.Engine.trim_heap`)."""

from __future__ import annotations

import platform
import threading
import time

import pytest

from cwcore import heap
from cwcore.api import Archive
from cwcore.engine import HEAP_TRIM_QUIET_S
from tests.semantic.conftest import engine_of


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_trim_asks_glibc() -> None:
    assert heap.trim() is True


def test_the_engine_trims_once_per_quiet_period(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = engine_of(archive)
    trims: list[bool] = []
    monkeypatch.setattr(heap, "trim", lambda: trims.append(True) or True)
    quiet = {"s": 0.0}
    monkeypatch.setattr(engine, "quiet_for", lambda: quiet["s"])
    assert not engine.trim_heap()  # just opened: not quiet
    quiet["s"] = HEAP_TRIM_QUIET_S + 1
    assert not engine.trim_heap()  # the index worker was busy just now (the open)
    engine._index_busy_at = time.monotonic() - HEAP_TRIM_QUIET_S - 1
    assert engine.trim_heap() and trims == [True]
    assert not engine.trim_heap() and trims == [True]  # nothing happened since: not again
    monkeypatch.undo()
    monkeypatch.setattr(heap, "trim", lambda: trims.append(True) or True)
    engine.call("sessions", {}, lambda _e: None, threading.Event())  # a call: work again
    assert not engine.trim_heap()  # it just ended
    monkeypatch.setattr(engine, "quiet_for", lambda: HEAP_TRIM_QUIET_S + 1)
    assert engine.trim_heap() and trims == [True, True]
    assert engine._sample_compaction()["heap_trimmed"] is False  # the 60 s sample calls it

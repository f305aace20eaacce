"""Freed heap goes back to the system: :func:`cwcore.heap.trim`, and the daemon's engine trims
once per quiet period (:meth:`cwcore.engine.Engine.trim_heap`)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading

import pytest

from cwcore import heap
from cwcore.api import Archive
from cwcore.engine import HEAP_TRIM_QUIET_S
from cwcore.index import bm25
from tests.helpers import REPO
from tests.support import engine_of, index_idle_for, sample_compaction


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="malloc_trim is glibc's")
def test_trim_asks_glibc(monkeypatch: pytest.MonkeyPatch) -> None:
    collected: list[int] = []
    monkeypatch.setattr(heap.gc, "collect", lambda *a: collected.append(1) or 0)
    assert heap.trim() is True and collected == [1]
    # The embedder's rebuild trims while requests run: no full collection then.
    assert heap.trim(collect=False) is True and collected == [1]


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
    index_idle_for(engine, HEAP_TRIM_QUIET_S + 1)
    bm25._POOL.give(bm25._POOL.take(1000))  # arrays a search kept for the next one
    assert bm25.kept_buffer_bytes() > 0
    assert engine.trim_heap() and trims == [True]
    assert bm25.kept_buffer_bytes() == 0  # dropped with the trim
    assert not engine.trim_heap() and trims == [True]  # nothing happened since: not again
    monkeypatch.undo()
    monkeypatch.setattr(heap, "trim", lambda: trims.append(True) or True)
    engine.call("sessions", {}, lambda _e: None, threading.Event())  # a call: work again
    assert not engine.trim_heap()  # it just ended
    monkeypatch.setattr(engine, "quiet_for", lambda: HEAP_TRIM_QUIET_S + 1)
    assert engine.trim_heap() and trims == [True, True]
    assert sample_compaction(engine)["heap_trimmed"] is False  # the 60 s sample calls it


_FREED_BLOCKS = """
import ctypes, os, sys
from cwcore import heap

libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
if sys.argv[1] == "fixed":
    assert heap.fix_mmap_threshold(heap.DAEMON_MMAP_THRESHOLD)

def resident():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

def touched(size):
    block = libc.malloc(size)
    ctypes.memset(block, 1, size)
    return block

libc.free(touched(8 << 20))  # glibc raises its mmap threshold to the largest block freed
before = resident()
blocks = []
for _ in range(16):
    blocks += [touched(1 << 20), touched(40_000)]  # a small block after each: no heap shrink
for block in blocks[0::2]:
    libc.free(block)
print(resident() - before)
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_a_fixed_mmap_threshold_returns_freed_large_blocks_to_the_system() -> None:
    # What the daemon does at start (heap.fix_mmap_threshold): 16 freed 1 MiB buffers stay
    # resident under glibc's sliding threshold and go back at once under the fixed one.
    def grown(mode: str, **env: str) -> int:
        run = subprocess.run(
            [sys.executable, "-c", _FREED_BLOCKS, mode],
            env={**os.environ, "PYTHONPATH": str(REPO), **env},
            capture_output=True,
            text=True,
            check=True,
            timeout=120,  # a fail-safe: it takes a fraction of a second
        )
        return int(run.stdout)

    sliding, fixed = grown("sliding"), grown("fixed")
    assert sliding >= 12 << 20, sliding
    assert fixed <= 2 << 20, fixed


def test_the_users_mmap_threshold_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert heap.fix_mmap_threshold(heap.DAEMON_MMAP_THRESHOLD) is False

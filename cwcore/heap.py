"""Handing freed heap back to the system.

CPython, RocksDB and ONNX Runtime allocate through the C library's ``malloc``. What they free
goes back to malloc's free lists — one arena per thread that allocated — and glibc returns to
the system only the free memory at the very top of the main heap: the pages an import, an
indexing run or a model session used stay resident after they are freed, and a daemon that
imported a large archive kept its peak for as long as it ran. :func:`trim` asks glibc
(``malloc_trim(0)``) to release every whole free page of every arena; what stays resident is
what the process holds. It costs a few milliseconds per hundred MB of heap and briefly holds
each arena's lock, so the daemon calls it only when it has been quiet for a while
(:meth:`cwcore.engine.Engine.trim_heap`) and after dropping a model
(:meth:`cwcore.semantic.embedder.Embedder.release_idle`).
"""

from __future__ import annotations

import ctypes
import gc
import os

_libc: list[object] = []
_mallopt: list[object] = []

#: glibc's ``mallopt`` parameter for the size from which an allocation gets its own mapping
#: (``M_MMAP_THRESHOLD`` in ``malloc.h``).
_M_MMAP_THRESHOLD = -3

#: The daemon's mmap threshold, bytes: an allocation this large or larger (a search's score
#: arrays and posting buffers at 200k messages, a page's windows, an import chunk) is mapped on
#: its own and unmapped when freed. glibc's default starts at 128 KiB but rises to the largest
#: block freed so far (up to 32 MiB), after which such buffers come from the heap and their pages
#: stay resident until :func:`trim` (docs/performance.md, "Daemon memory").
DAEMON_MMAP_THRESHOLD = 256 * 1024


def _malloc_trim() -> object | None:
    if not _libc:
        try:
            _libc.append(ctypes.CDLL("libc.so.6").malloc_trim)
        except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to trim this way
            _libc.append(None)
    return _libc[0]


def trim(*, collect: bool = True) -> bool:
    """Collect garbage (unless ``collect`` is False: a full collection holds the GIL for as long
    as the heap is large, which a busy daemon's request threads would wait out), then return
    free heap pages to the system. Returns whether the C library could be asked (False off
    glibc)."""
    if collect:
        gc.collect()
    fn = _malloc_trim()
    if fn is None:
        return False
    fn(0)  # type: ignore[operator]
    return True


def fix_mmap_threshold(nbytes: int) -> bool:
    """Fix glibc's mmap threshold at ``nbytes`` for the rest of the process (which also stops
    glibc from raising its trim threshold with it), unless the user set
    ``MALLOC_MMAP_THRESHOLD_`` (theirs wins). Returns whether it was set (False off glibc)."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_"):
        return False
    if not _mallopt:
        try:
            _mallopt.append(ctypes.CDLL("libc.so.6").mallopt)
        except (OSError, AttributeError):  # not glibc: its allocator has its own policy
            _mallopt.append(None)
    fn = _mallopt[0]
    return fn is not None and bool(fn(_M_MMAP_THRESHOLD, nbytes))  # type: ignore[operator]

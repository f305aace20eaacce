"""``CW_HOME`` is readable by its owner only: directories ``0700``, files ``0600``.

The archive holds conversations verbatim (and RocksDB's WAL holds them before any table does),
so nothing under ``CW_HOME`` may be readable by group or others. Two mechanisms keep it so:

* **At creation.** A process that has the store open runs with umask ``077``
  (:func:`owner_only`): RocksDB creates its own files (WAL, SST, MANIFEST, LOG, OPTIONS) from
  background threads at any time, and the umask is the only control over their modes. The
  daemon sets it for its whole life; an embedded engine holds it while the store is open
  (reference-counted, so nested opens in one process restore the caller's umask only at the
  last close).
* **On open.** :func:`tighten` walks ``CW_HOME`` once and removes the group and other bits of
  every directory and file that has any (a store made by an older cw, a copied folder). It never
  follows a symbolic link and never leaves ``CW_HOME``; a path it cannot change (owned by
  another user) is reported, not fatal. :func:`notice` is the one line the faces show.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: Bits nobody but the owner may have on anything under CW_HOME.
LOOSE = 0o077
#: How many paths a report names.
EXAMPLES = 5

_lock = threading.Lock()
_depth = 0
_saved: int | None = None


def hold() -> None:
    """Set the process umask to ``077`` until the matching :func:`release`."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            _saved = os.umask(LOOSE)
        else:
            os.umask(LOOSE)  # someone may have widened it meanwhile: an open store needs 077
        _depth += 1


def release() -> None:
    """Undo one :func:`hold`; the last one restores the umask the process had before."""
    global _depth, _saved
    with _lock:
        if _depth == 0:
            return
        _depth -= 1
        if _depth == 0 and _saved is not None:
            os.umask(_saved)
            _saved = None


@contextmanager
def owner_only() -> Iterator[None]:
    """Files and directories created inside the block get no group or other bits."""
    hold()
    try:
        yield
    finally:
        release()


@dataclass(frozen=True)
class Tightened:
    """What :func:`tighten` did: ``changed`` paths made owner-only, and the paths still open to
    group or others because they could not be changed (``refused``, at most a few named)."""

    changed: int = 0
    refused: int = 0
    examples: tuple[str, ...] = field(default=())


def _walk(home: Path) -> Iterator[tuple[str, os.stat_result]]:
    """``home`` and everything under it, as ``(path, lstat)``; symbolic links are skipped (not
    followed, not listed), so the walk never leaves ``home``."""
    try:
        root = os.lstat(home)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(root.st_mode):
        return
    yield str(home), root
    pending = [str(home)]
    while pending:
        directory = pending.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue  # unreadable (another user's): its own entry is reported as loose
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # RocksDB removed an obsolete file meanwhile
            if stat.S_ISLNK(st.st_mode):
                continue
            yield entry.path, st
            if stat.S_ISDIR(st.st_mode):
                pending.append(entry.path)


def tighten(home: Path) -> Tightened:
    """Remove group and other bits from ``home`` and everything under it (see module doc)."""
    changed = refused = 0
    examples: list[str] = []
    for path, st in _walk(home):
        mode = stat.S_IMODE(st.st_mode)
        if not mode & LOOSE:
            continue
        try:
            # The walk saw a directory or file, not a link; swapping one in meanwhile needs write
            # access to CW_HOME, which is already everything an attacker could want.
            os.chmod(path, mode & ~LOOSE)
            changed += 1
        except FileNotFoundError:
            continue
        except OSError:
            refused += 1
            if len(examples) < EXAMPLES:
                examples.append(f"{path} ({mode:04o})")
    return Tightened(changed, refused, tuple(examples))


def check(home: Path, last: dict[str, Any] | None) -> dict[str, Any]:
    """``cw doctor``'s permissions check: nothing under ``home`` open to group or others, and
    ``last`` (the record an open that tightened modes kept: ``{"tightened", "at"}``)."""
    found = loose(home)
    last = last or {}
    return {
        "ok": not found,
        "loose": len(found),
        "examples": found[:EXAMPLES],
        "tightened": int(last.get("tightened", 0)),
        "tightenedAt": last.get("at"),
    }


def loose(home: Path) -> list[str]:
    """Paths under ``home`` that group or others can reach, as ``"path (mode)"`` (for doctor)."""
    return [
        f"{path} ({stat.S_IMODE(st.st_mode):04o})" for path, st in _walk(home) if st.st_mode & LOOSE
    ]


def notice(home: Path, changed: int) -> str:
    """The one line shown when an open tightened ``changed`` paths."""
    return (
        f"cw: tightened permissions of {changed} file(s) and folder(s) under {home} "
        "(now owner only)"
    )

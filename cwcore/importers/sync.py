"""``cw sync`` / ``cw watch``: import what is new from the agents' standard locations.

Locations (under the user's home): Claude Code ``~/.claude/projects``, Codex ``~/.codex/sessions``,
pi ``~/.pi/agent/sessions``, Gemini ``~/.gemini/tmp``. A file whose size and modification time
match the last sync is skipped without being read; anything else goes through the normal import
pipeline, which admits only what is new. ``watch`` repeats a sync whenever a location changes,
waiting for writes to settle (debounce) so a growing turn is not re-imported on every line.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

from cwcore import clock
from cwcore.config import Settings
from cwcore.errors import CwError
from cwcore.importers import base
from cwcore.importers.pipeline import Emit, ImportSummary, import_paths
from cwcore.store.admission import Admission
from cwcore.store.rocks import Store

LOCATIONS: tuple[tuple[str, str], ...] = (
    ("claude-code", ".claude/projects"),
    ("codex", ".codex/sessions"),
    ("pi", ".pi/agent/sessions"),
    ("gemini", ".gemini/tmp"),
)
SUFFIXES = (".jsonl", ".json")


def roots(home: Path | None = None) -> list[tuple[str, Path]]:
    """The standard locations that exist, as ``(format, path)``."""
    base_dir = home or Path(os.path.expanduser("~"))
    return [(fmt, base_dir / rel) for fmt, rel in LOCATIONS if (base_dir / rel).is_dir()]


def _files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(SUFFIXES):
                yield Path(dirpath) / name


def sync(
    store: Store,
    admission: Admission,
    settings: Settings,
    *,
    since: datetime | None = None,
    home: Path | None = None,
    emit: Emit = lambda e: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> ImportSummary:
    """Import new or changed session files from every standard location."""
    state: dict[str, Any] = store.meta_get("sync-state") or {}
    seen: dict[str, list[float]] = dict(state.get("files", {}))
    total = ImportSummary()
    changed: list[tuple[str, Path, list[float]]] = []
    for fmt, root in roots(home):
        for path in _files(root):
            try:
                stat = path.stat()
            except OSError:
                continue
            if since is not None and stat.st_mtime < since.timestamp():
                continue
            signature = [stat.st_size, stat.st_mtime]
            if seen.get(str(path)) == signature:
                continue
            try:
                importer = base.detect(path) if fmt == "gemini" else base.get(fmt)
                if importer is None or not importer.sniff(path, base.read_head(path)):
                    continue
            except OSError:
                continue  # vanished or unreadable since the walk: the next sync sees it again
            changed.append((importer.name, path, signature))
    for index, (fmt, path, signature) in enumerate(changed, start=1):
        if cancelled():
            break
        try:
            summary = import_paths(admission, [path], fmt=fmt, settings=settings)
        except CwError as exc:  # e.g. rewritten in another format since it was sniffed
            total.error(str(path), None, exc.message)
            continue
        total.absorb(summary)
        if not summary.file_errors:
            seen[str(path)] = signature
        emit({"type": "progress", "file": str(path), "files": index, "total": len(changed)})
    with store.lock:
        batch = store.batch()
        store.meta_put(batch, "sync-state", {"files": seen, "at": clock.iso(clock.now())})
        store.commit(batch)
    return total


def fingerprint(home: Path | None = None) -> tuple[tuple[str, int, float], ...]:
    """Size and mtime of every candidate file: a cheap change detector for ``watch``."""
    out = []
    for _, root in roots(home):
        for path in _files(root):
            try:
                stat = path.stat()
            except OSError:
                continue
            out.append((str(path), stat.st_size, stat.st_mtime))
    return tuple(out)


def watch(
    run_sync: Callable[[], ImportSummary],
    *,
    home: Path | None = None,
    interval: float = 2.0,
    settle: float = 1.0,
    on_sync: Callable[[ImportSummary], None] = lambda s: None,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Sync now, then again whenever the locations change and stay unchanged for ``settle``
    seconds (debounce). Polls every ``interval`` seconds until ``stop()``; no inotify needed."""
    on_sync(run_sync())
    last = fingerprint(home)
    while not stop():
        time.sleep(interval)
        current = fingerprint(home)
        if current == last:
            continue
        while not stop():
            time.sleep(settle)
            settled = fingerprint(home)
            if settled == current:
                break
            current = settled
        last = current
        on_sync(run_sync())

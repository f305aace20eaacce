"""``cw sync`` / ``cw watch``: import what is new from the agents' standard locations.

The locations are the registry's (:class:`~cwcore.importers.base.Location` of every importer,
plus the ones a setting configures, such as Aider's repositories). A file whose signature (size
and modification time, and those of its SQLite ``-wal`` beside it, where a live database writes
first) matches the last sync is skipped without being read; anything else goes through the
normal import pipeline, which admits only what is new. ``watch`` repeats a sync whenever a
location changes, waiting for writes to settle (debounce) so a growing turn is not re-imported
on every line. What each sync learns about each location is kept for ``cw sources``
(:mod:`cwcore.importers.sources`).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

from cwcore import clock
from cwcore.config import Settings
from cwcore.contract.imports import FileOutcome
from cwcore.errors import CwError
from cwcore.importers import base, sources
from cwcore.importers.pipeline import Emit, ImportSummary, import_paths
from cwcore.store.admission import Admission
from cwcore.store.rocks import Store

#: What a watched sync answers (the engine's summary, or the report a face received).
Synced = TypeVar("Synced")

#: SQLite companions whose changes are changes of the database.
_COMPANIONS = ("-wal",)


def locations(
    settings: Settings | None = None, home: Path | None = None
) -> list[tuple[base.Importer, base.Location, Path]]:
    """Every location of every registered importer on this platform, resolved: ``(importer,
    location, folder)``, in detection order; the folder may not exist."""
    out = []
    for importer in base.importers():
        declared = tuple(getattr(importer, "locations", ()))
        configured = getattr(importer, "configured_locations", None)
        extra = tuple(configured(settings)) if configured and settings is not None else ()
        for location in declared + extra:
            if location.applies():
                out.append((importer, location, location.resolve(home)))
    return out


def roots(home: Path | None = None, settings: Settings | None = None) -> list[tuple[str, Path]]:
    """The standard (and configured) locations that exist, as ``(format, path)``."""
    return [(i.name, root) for i, _, root in locations(settings, home) if root.is_dir()]


def files(location: base.Location, root: Path) -> Iterator[Path]:
    """The candidate files of a location, in a stable order (hidden folders skipped)."""
    if not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root):
        depth = len(Path(dirpath).relative_to(root).parts)
        if location.depth is not None and depth >= location.depth:
            dirnames[:] = []
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in sorted(filenames):
            if location.matches(name):
                yield Path(dirpath) / name


def signature(path: Path, importer: base.Importer | None = None) -> list[float]:
    """Size and mtime of the file, of its SQLite companions, and of the files and folders the
    importer says a session of this file also lives in (``companions``; raises OSError)."""
    stat = path.stat()
    out: list[float] = [stat.st_size, stat.st_mtime]
    extra = [path.with_name(path.name + suffix) for suffix in _COMPANIONS]
    companions = getattr(importer, "companions", None)
    if companions is not None:
        extra += companions(path)
    for companion in extra:
        try:
            info = companion.stat()
        except OSError:
            continue
        out += [info.st_size, info.st_mtime]
    return out


def _file_state(value: Any) -> dict[str, Any]:
    """A file's remembered state; earlier versions kept the bare signature list."""
    if isinstance(value, list):
        return {"sig": value}
    return value if isinstance(value, dict) else {}


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
    """Import new or changed session files from every standard location, and record per
    location what was found, read and skipped. The summary lists what was done with each file
    (``file_outcomes``, in walk order; files a cancel left unread are not listed)."""
    state: dict[str, Any] = store.meta_get("sync-state") or {}
    seen: dict[str, dict[str, Any]] = {
        path: _file_state(v) for path, v in dict(state.get("files", {})).items()
    }
    total = ImportSummary()
    changed: list[tuple[base.Importer, Path, list[float]]] = []
    reports: list[sources.Report] = []
    claimed: set[str] = set()  # a file two locations reach is read once, by the first
    # Each file's outcome in walk order; a changed file's (None here) is known once read.
    outcomes: dict[str, FileOutcome | None] = {}
    for importer, location, root in locations(settings, home):
        report = sources.Report(importer.name, location.label(), str(root), root.is_dir())
        reports.append(report)
        for path in files(location, root):
            key = str(path)
            if key in claimed:
                continue
            claimed.add(key)
            if _is_companion(importer, path):
                report.companions += 1  # read with its session's own file
                continue
            report.files.append(key)
            try:
                sig = signature(path, importer)
            except OSError:
                report.skip(key, "unreadable")
                outcomes[key] = FileOutcome(key, importer.name, "skipped", 0, "unreadable")
                continue
            if since is not None and sig[1] < since.timestamp():
                outcomes[key] = FileOutcome(
                    key, importer.name, "skipped", 0, "modified before --since"
                )
                continue
            if seen.get(key, {}).get("sig") == sig:
                remembered = int(seen[key].get("messages", 0) or 0)
                outcomes[key] = FileOutcome(key, importer.name, "unchanged", remembered)
                continue
            try:
                found = importer if base.sniffs(importer, path, base.read_head(path)) else None
                found = found or base.detect(path)
            except OSError:
                report.skip(key, "unreadable")
                outcomes[key] = FileOutcome(key, importer.name, "skipped", 0, "unreadable")
                continue  # vanished or unreadable since the walk: the next sync sees it again
            if found is None:
                report.skip(key, f"not a {importer.name} file")
                outcomes[key] = FileOutcome(
                    key, importer.name, "skipped", 0, f"not a {importer.name} file"
                )
                continue
            outcomes[key] = None
            changed.append((found, path, sig))
    errors: dict[str, str] = {}
    for index, (importer, path, sig) in enumerate(changed, start=1):
        if cancelled():
            break
        key = str(path)
        try:
            summary = import_paths(admission, [path], fmt=importer.name, settings=settings)
        except CwError as exc:  # e.g. rewritten in another format since it was sniffed
            total.error(key, None, exc.message)
            errors[key] = exc.message
            outcomes[key] = FileOutcome(key, importer.name, "failed", 0, exc.message)
            continue
        total.absorb(summary)
        outcomes[key] = _outcome(key, importer.name, summary)
        if summary.file_errors:
            errors[key] = next((e.reason for e in summary.errors if e.line is None), "error")
        elif summary.empty and not summary.sessions:
            errors[key] = "no messages"
            seen[key] = {"sig": sig, "sessions": 0, "messages": 0}
        else:
            seen[key] = {"sig": sig, "sessions": summary.sessions, "messages": summary.messages}
        emit({"type": "progress", "file": key, "files": index, "total": len(changed)})
    for outcome in outcomes.values():
        if outcome is not None:  # None: a cancel left it unread
            total.file_outcome(outcome)
    now = clock.iso(clock.now())
    for report in reports:
        for key in report.files:
            if key in errors:
                report.skip(key, errors[key])
    records = sources.records(reports, seen, now)
    with store.lock:
        batch = store.batch()
        store.meta_put(batch, "sync-state", {"files": seen, "at": now})
        store.meta_put(
            batch, sources.META_KEY, sources.merge(store.meta_get(sources.META_KEY), records)
        )
        store.commit(batch)
    return total


def _outcome(key: str, fmt: str, summary: ImportSummary) -> FileOutcome:
    """What reading one changed file came to, from its own import summary."""
    if summary.file_errors:
        reason = next((e.reason for e in summary.errors if e.line is None), "rejected")
        return FileOutcome(key, fmt, "failed", summary.messages, reason)
    if summary.empty and not summary.sessions:
        return FileOutcome(key, fmt, "skipped", 0, "no messages")
    lines = summary.error_count
    problem = f"{lines:,} line(s) rejected" if lines else None
    outcome = "imported" if summary.imported else "unchanged"
    return FileOutcome(key, fmt, outcome, summary.messages, problem)


def _is_companion(importer: base.Importer, path: Path) -> bool:
    check = getattr(importer, "is_companion", None)
    try:
        return bool(check is not None and check(path))
    except OSError:
        return False


def fingerprint(
    home: Path | None = None, settings: Settings | None = None
) -> tuple[tuple[str, int, float], ...]:
    """Signatures of every candidate file: a cheap change detector for ``watch``."""
    out = []
    for importer, location, root in locations(settings, home):
        for path in files(location, root):
            try:
                sig = signature(path, importer)
            except OSError:
                continue
            out.append((str(path), *sig))
    return tuple(out)  # type: ignore[arg-type]


def watch(
    run_sync: Callable[[], Synced],
    *,
    home: Path | None = None,
    settings: Settings | None = None,
    interval: float = 2.0,
    settle: float = 1.0,
    on_sync: Callable[[Synced], None] = lambda s: None,
    stop: Callable[[], bool] = lambda: False,
) -> None:
    """Sync now, then again whenever the locations change and stay unchanged for ``settle``
    seconds (debounce); ``on_sync`` gets what each ``run_sync()`` answered. Polls every
    ``interval`` seconds until ``stop()``; no inotify needed. ``settings`` adds the locations a
    setting configures (``syncProjects``)."""
    on_sync(run_sync())
    last = fingerprint(home, settings)
    while not stop():
        time.sleep(interval)
        current = fingerprint(home, settings)
        if current == last:
            continue
        while not stop():
            time.sleep(settle)
            settled = fingerprint(home, settings)
            if settled == current:
                break
            current = settled
        last = current
        on_sync(run_sync())

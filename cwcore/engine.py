"""The engine: the store and everything that answers requests, behind one method table.

:class:`Engine` is what the daemon serves (it satisfies :class:`cwcore.daemon.service.Service`)
and what tests open embedded. Every request is ``(method, params) -> JSON-able dict``; the method
table below is the protocol's vocabulary, and :class:`cwcore.api.Archive` is its typed face.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cwcore
from cwcore import browse, config
from cwcore.errors import InvalidInput
from cwcore.importers import pipeline
from cwcore.store.admission import Admission
from cwcore.store.reader import Reader
from cwcore.store.retention import Retention
from cwcore.store.rocks import FAMILIES, Store
from cwcore.workers import Periodic

Emit = Callable[[dict[str, Any]], None]
Handler = Callable[["Engine", dict[str, Any], Emit, threading.Event], dict[str, Any]]

CAPABILITIES = frozenset({"archive/1", "import/1", "browse/1"})
MiB = 1024 * 1024

_METHODS: dict[str, Handler] = {}
_OUTPUT_BOUNDS: dict[str, int] = {}


def method(name: str, *, output_bytes: int = 1 * MiB) -> Callable[[Handler], Handler]:
    """Register an engine method with the output bound the daemon reserves for it."""

    def wrap(fn: Handler) -> Handler:
        _METHODS[name] = fn
        _OUTPUT_BOUNDS[name] = output_bytes
        return fn

    return wrap


def _build_fingerprint() -> str:
    root = Path(cwcore.__file__).parent
    h = hashlib.blake2b(digest_size=8)
    for path in sorted(root.rglob("*.py")):
        h.update(path.read_bytes())
    return f"{cwcore.__version__}+{h.hexdigest()}"


def store_path(home: Path) -> Path:
    return home / "store"


class Engine:
    """One open store and its services. Not thread-safe for writes without ``store.lock``."""

    capabilities = CAPABILITIES

    def __init__(self, home: Path) -> None:
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.settings, _ = config.load(home)
        self.store = Store(store_path(home), sync=self.settings.durable_sync)
        self.admission = Admission(self.store)
        self.reader = Reader(self.store)
        self.retention = Retention(self.store)
        self.build = _build_fingerprint()
        self._workers: list[Periodic] = []
        self.compaction: dict[str, Any] = {}

    # -- Service protocol ---------------------------------------------------------------------

    def call(
        self, name: str, params: dict[str, Any], emit: Emit, cancel: threading.Event
    ) -> dict[str, Any]:
        handler = _METHODS.get(name)
        if handler is None:
            raise InvalidInput(f"unknown method {name!r}")
        if not isinstance(params, dict):
            raise InvalidInput("params must be an object")
        return handler(self, params, emit, cancel)

    def max_output_bytes(self, name: str, params: dict[str, Any]) -> int:
        return _OUTPUT_BOUNDS.get(name, 1 * MiB)

    def status(self) -> dict[str, Any]:
        counters = self.store.meta_get("counters") or {}
        return {
            "store": str(self.store.path),
            "outbox_depth": int(counters.get("outbox", 0)) - self._indexed_seq(),
            "rocksdb_bytes": self.store.size_on_disk(),
            "pending_compaction_bytes": sum(
                self.store.property_int("rocksdb.estimate-pending-compaction-bytes", f)
                for f in FAMILIES
            ),
            "workers": {w.name: w.status() for w in self._workers},
        }

    def _indexed_seq(self) -> int:
        cursor = self.store.meta_get("index-cursor") or {}
        return int(cursor.get("seq", 0))

    def start_workers(self) -> None:
        """Background workers: retention (expiry by archive kind) and the compaction monitor."""
        self._workers = [
            Periodic("retention", lambda: self.retention.expire(self.settings).to_json(), 3600.0),
            Periodic("compaction", self._sample_compaction, 60.0),
        ]
        for worker in self._workers:
            worker.start()

    def _sample_compaction(self) -> dict[str, Any]:
        """Record RocksDB's own view of pending compaction; RocksDB compacts in the background."""
        self.compaction = {
            "pending_compaction_bytes": sum(
                self.store.property_int("rocksdb.estimate-pending-compaction-bytes", f)
                for f in FAMILIES
            ),
            "running_compactions": self.store.property_int("rocksdb.num-running-compactions"),
            "sampled_at": time.time(),
        }
        return self.compaction

    def idle(self) -> bool:
        return not any(w.busy for w in self._workers)

    def close(self) -> None:
        for worker in self._workers:
            worker.stop()
        self.store.close()


def make_service(home: Path) -> Engine:
    """The daemon's service factory."""
    return Engine(home)


# -- methods --------------------------------------------------------------------------------------


def _str(params: dict[str, Any], name: str, default: str | None = None) -> str | None:
    value = params.get(name, default)
    if value is not None and not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


@method("import")
def _import(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    paths = params.get("paths")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise InvalidInput("paths must be a non-empty list of strings")
    fmt = _str(params, "format", "auto") or "auto"
    pipeline.check_format(fmt)
    summary = pipeline.import_paths(
        engine.admission,
        paths,
        fmt=fmt,
        project=_str(params, "project"),
        settings=engine.settings,
        emit=emit,
        cancelled=cancel.is_set,
    )
    return summary.to_json()


@method("doctor")
def _doctor(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    counts = engine.store.meta_get("counts") or {}
    sizes = {
        family: engine.store.property_int("rocksdb.estimate-live-data-size", family)
        for family in FAMILIES
    }
    sizes["disk"] = engine.store.size_on_disk()
    return {
        "store": str(engine.store.path),
        "version": cwcore.__version__,
        "schema": engine.store.schema_version,
        "sizes": sizes,
        "counts": {
            "sessions": int(counts.get("sessions", 0)),
            "documents": int(counts.get("documents", 0)),
            "messages": int(counts.get("messages", 0)),
            "chunks": int(counts.get("chunks", 0)),
            "events": int(counts.get("events", 0)),
        },
        "projects": sorted(engine.reader.projects()),
    }


@method("sessions")
def _sessions(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    limit = params.get("limit", 50)
    if not isinstance(limit, int) or isinstance(limit, bool):
        raise InvalidInput("limit must be an integer")
    return browse.list_sessions(
        engine.reader,
        project=_str(params, "project"),
        agent=_str(params, "agent"),
        since=_str(params, "since"),
        limit=limit,
        cursor=_str(params, "cursor"),
    )


@method("show", output_bytes=16 * MiB)
def _show(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    session = _str(params, "session")
    if not session:
        raise InvalidInput("session is required")
    return browse.transcript(
        engine.reader,
        session,
        include_all=bool(params.get("all", False)),
        include_superseded=bool(params.get("includeSuperseded", False)),
    )


@method("export", output_bytes=16 * MiB)
def _export(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    session = _str(params, "session")
    if not session:
        raise InvalidInput("session is required")
    fmt = _str(params, "format", "md") or "md"
    return {"text": browse.export_session(engine.reader, session, fmt)}


@method("forget")
def _forget(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    target = _str(params, "target")
    if not target:
        raise InvalidInput("target (a session or document id) is required")
    return engine.retention.forget(target).to_json()


@method("sync")
def _sync(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    from cwcore.clock import parse_time
    from cwcore.importers import sync

    since = _str(params, "since")
    home = _str(params, "home")
    summary = sync.sync(
        engine.store,
        engine.admission,
        engine.settings,
        since=parse_time(since) if since else None,
        home=Path(home) if home else None,
        emit=emit,
        cancelled=cancel.is_set,
    )
    return summary.to_json()

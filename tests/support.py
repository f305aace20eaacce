"""The one place tests reach past the :class:`~cwcore.api.Archive` facade into the engine.

A test that must see or drive what the facade hides (a worker's step, the store under a
search, the semantic tier's model) asks here, so the engine's private names appear in one file:
when one is renamed, this module changes and the tests do not. ``tests/helpers.py`` builds
inputs through the public surface only; what knows the engine's inside is kept apart from it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from cwcore.api import Archive
    from cwcore.engine import Engine
    from cwcore.index.worker import IndexWorker
    from cwcore.retrieve.search import SearchContext
    from cwcore.semantic.runtime import Semantic
    from cwcore.services import Services
    from cwcore.store.rocks import Store


def engine_of(archive: Archive) -> Engine:
    """An embedded archive's engine: for tests that call its parts (store, reader, indexer,
    admission) or its worker steps directly."""
    return archive.engine


def store_of(archive: Archive) -> Store:
    """An embedded archive's open store: for tests that read records under the facade or write
    ones it would never write (faults, older layouts)."""
    return archive.engine.store


def search_context_of(archive: Archive) -> SearchContext:
    """What explicit search reads (limits, ranking params): tests set the params of a run and
    check the limits the settings gave."""
    return archive.engine.search_context()


def semantic_of(source: Archive | Services) -> Semantic:
    """The semantic tier of an archive's (or an open engine's) engine, the one search and the
    semantic worker use: tests query it and give it a model."""
    from cwcore.api import Archive
    from cwcore.semantic.runtime import for_engine

    return for_engine(source.engine if isinstance(source, Archive) else source)


def use_embedder(semantic: Semantic, embedder: object) -> Semantic:
    """Have ``semantic`` use ``embedder`` instead of loading its own (the session's loaded
    model, a fake, a slow one, one whose model folder is missing); returns ``semantic``."""
    semantic._embedder = embedder  # type: ignore[assignment]
    return semantic


def maintenance_step(archive: Archive) -> dict[str, Any]:
    """One run of the daemon's maintenance worker now (retention, expired leases, hint upkeep),
    its report: embedded, no worker runs it on its own."""
    return archive.engine._maintenance_step()


def sample_compaction(engine: Engine) -> dict[str, Any]:
    """One run of the daemon's 60 s compaction sample now (it settles the WAL and may trim the
    heap), the sample it records."""
    return engine._sample_compaction()


def index_idle_for(engine: Engine, seconds: float) -> None:
    """Date the index worker's last work (or merge) ``seconds`` ago, as if it had been idle
    that long: the heap trim and the quiet-time merge wait for an idle index worker."""
    import time

    engine._index_busy_at = time.monotonic() - seconds


def graph_step(engine: Engine, timeout: float = 60.0) -> float:
    """Run the semantic worker's graph step now, as if its last look were long ago, and again
    until the build it started (if any) has ended; returns the seconds the step that last set
    the next look put it after that step's start (how long the build took does not count: a
    slow build on a loaded machine must not look like a shorter interval)."""
    import time

    semantic = semantic_of(engine)
    engine._graph_check_at = 0.0
    delay = 0.0

    def step() -> None:
        nonlocal delay
        before, started = engine._graph_check_at, time.monotonic()
        engine._graph_step(semantic)
        if engine._graph_check_at != before:
            delay = engine._graph_check_at - started

    step()
    deadline = time.monotonic() + timeout
    while engine._graph_build is not None and time.monotonic() < deadline:
        time.sleep(0.05)
        step()
    return delay


def graph_build_of(engine: Engine) -> Any:
    """The vectors' graph build the engine's semantic worker has running (None when none)."""
    return engine._graph_build


def store_sequence(store: Store) -> int:
    """RocksDB's latest sequence number, which every committed write raises: equal numbers
    before and after prove that nothing was written."""
    return int(store._db.latest_sequence_number())


def die_before_publication(worker: IndexWorker, why: str) -> None:
    """Make ``worker`` die (``KeyboardInterrupt(why)``, as a kill would stop it) after its page
    committed and before publishing it: the crash window publication must survive."""

    def die(*_args: object, **_kwargs: object) -> None:
        raise KeyboardInterrupt(why)

    worker._publish = die  # type: ignore[method-assign]


def open_scans(store: Store) -> int:
    """The store's iterators not yet released: zero once every scan is finished or closed
    (a leaked iterator pins a RocksDB snapshot and blocks close)."""
    return int(store._open_scans)

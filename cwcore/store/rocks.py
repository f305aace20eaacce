"""The rocksdict wrapper: column families, schema version, batches, prefix scans.

Traps of rocksdict 0.3.29 this module contains: iterating a snapshot returns live data,
so consistent scans use generation-addressed immutable keys; ``set_iterate_lower_bound`` is ignored,
so scans seek to their lower bound; ``close()`` keeps the LOCK while any column-family handle or
iterator lives, so :meth:`Store.close` drops every handle first (and runs a full garbage
collection only while a scan is still open: one over a large heap, such as a test worker's,
took 0.3-0.45 s); zlib is not compiled in, so compression is zstd.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import rocksdict as rd

from cwcore.errors import StoreError, StoreLocked, StoreVersionError
from cwcore.store import codec
from cwcore.store.keys import META, prefix_end

#: Column families. Canonical: events, documents, chunks, scopes, ordinals, outbox, requests,
#: supersession. Derived (rebuildable, filled by the indexing and later layers): the rest.
CANONICAL_FAMILIES = (
    "events",
    "documents",
    "chunks",
    "scopes",
    "ordinals",
    "outbox",
    "requests",
    "supersession",
)
DERIVED_FAMILIES = (
    "windows",
    "exact",
    "postings",
    "relations",
    "importance",
    "stats",
    "leases",
    "hints",
    "memory",
    "vectors",
    "feedback",
)
FAMILIES = CANONICAL_FAMILIES + DERIVED_FAMILIES

#: The store schema this build writes. A store with a higher number is refused.
#: 2: the ``session-order`` index (sessions newest first), kept with every session record.
#: 3: the ``session-native`` index (a session is its agent's and its native id's).
#: 4: ``session-order`` summaries carry the session's message count (the facets read no records).
SCHEMA_VERSION = 4


def _add_session_order(store: Store) -> None:
    from cwcore.store import session_order

    session_order.rebuild(store)


#: Migrations from version N to N+1, run in order on open: ``MIGRATIONS[N](store)``. Each must
#: be safe to re-run (the version is recorded only after it finishes).
def _add_session_identity(store: Store) -> None:
    from cwcore.store import identity

    identity.backfill(store)


MIGRATIONS: dict[int, Callable[[Store], None]] = {
    1: _add_session_order,
    2: _add_session_identity,
    3: _add_session_order,  # rebuilt with the message counts in the summaries
}


#: The cap on the write-ahead log's total size. RocksDB's default (0) is four times what the
#: memtables of all column families may hold (20 families x 2 x 64 MiB x 4, about 10 GiB), and
#: a family written rarely (meta, leases, stats, memory...) keeps every log file since its last
#: flush alive: the log grew with everything written while the daemon ran (4.3 GB at 1M
#: messages) and a crash replayed all of it. Past this cap RocksDB flushes the families whose
#: memtables pin the oldest log file and deletes it, so the log on disk, the memtables' memory and
#: the replay after a crash stay within a small multiple of it. The WAL write stays the
#: acknowledgement boundary: a flush only moves committed data from the log into tables.
MAX_TOTAL_WAL_BYTES = 64 * 1024 * 1024

#: :meth:`Store.settle_wal` flushes every memtable when the log holds more than this: a daemon
#: that stops writing does not keep up to :data:`MAX_TOTAL_WAL_BYTES` of log beside its tables.
SETTLE_WAL_BYTES = 8 * 1024 * 1024


#: The one block cache (uncompressed data blocks read) that every column family of a store
#: shares. RocksDB's default gives each family's options its own 32 MiB cache: 20 caches, up to
#: 640 MiB, filled by whatever reads a family sees, so resident memory grew with the store and
#: with every large import (the admission's point reads of missing chunk keys filled the
#: ``chunks`` cache alone to 31 MiB during a 40 MB file) and stayed there (issue 32). Shared, the
#: families' hot blocks compete for one bounded budget: twice one default cache, so a search's
#: working set (postings, windows, exact, documents) still fits.
BLOCK_CACHE_BYTES = 64 * 1024 * 1024


def _options(max_wal_bytes: int = MAX_TOTAL_WAL_BYTES, cache: rd.Cache | None = None) -> rd.Options:
    opts = rd.Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)
    opts.set_compression_type(rd.DBCompressionType.zstd())
    opts.set_max_total_wal_size(max_wal_bytes)
    if cache is not None:
        table = rd.BlockBasedOptions()  # RocksDB's defaults, but for the cache
        table.set_block_cache(cache)
        opts.set_block_based_table_factory(table)
    return opts


class Batch:
    """A cross-family WriteBatch; nothing is visible until :meth:`Store.commit`."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._wb = rd.WriteBatch(raw_mode=True)
        self.bytes = 0
        self.mutations = 0

    def put(self, family: str, key: bytes, value: bytes) -> None:
        self._wb.put(key, value, self._store.handle(family))
        self.bytes += len(key) + len(value)
        self.mutations += 1

    def delete(self, family: str, key: bytes) -> None:
        self._wb.delete(key, self._store.handle(family))
        self.bytes += len(key)
        self.mutations += 1

    def delete_range(self, family: str, begin: bytes, end: bytes) -> None:
        """Delete every key of ``family`` in ``[begin, end)`` (one range tombstone)."""
        self._wb.delete_range(begin, end, self._store.handle(family))
        self.mutations += 1


class Store:
    """One open RocksDB database under ``path``. Owned by one process (normally the daemon)."""

    def __init__(
        self,
        path: Path,
        *,
        sync: bool = False,
        read_only: bool = False,
        max_wal_bytes: int = MAX_TOTAL_WAL_BYTES,
        block_cache_bytes: int = BLOCK_CACHE_BYTES,
    ) -> None:
        """``max_wal_bytes`` caps the write-ahead log (:data:`MAX_TOTAL_WAL_BYTES`);
        ``block_cache_bytes`` is the block cache all column families share
        (:data:`BLOCK_CACHE_BYTES`). Both bound resident memory whatever the store's size."""
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        # Scans whose rocksdict iterator is still alive (started and not yet finished or
        # discarded); see close().
        self._open_scans = 0
        self._scans_lock = threading.Lock()
        self._cache = rd.Cache(block_cache_bytes)
        try:
            self._db: Any = rd.Rdict(
                str(path),
                options=_options(max_wal_bytes, self._cache),
                column_families={name: _options(max_wal_bytes, self._cache) for name in FAMILIES},
            )
        except Exception as exc:  # rocksdict raises plain Exception subclasses
            text = str(exc)
            if "lock" in text.lower():
                raise StoreLocked(
                    f"the store at {path} is open in another process (is the daemon running?)"
                ) from None
            raise StoreError(f"cannot open the store at {path}: {text}") from None
        self._families: dict[str, Any] = {}
        self._handles: dict[str, Any] = {}
        for name in FAMILIES:
            self._families[name] = self._db.get_column_family(name)
            self._handles[name] = self._db.get_column_family_handle(name)
        self._write_options = rd.WriteOptions()
        self._write_options.sync = sync
        self._check_schema(read_only)

    # -- schema -------------------------------------------------------------------------------

    def _check_schema(self, read_only: bool) -> None:
        raw = self._db.get(META.encode("schema"))
        if raw is None:
            if not read_only:
                self._db.put(
                    META.encode("schema"), codec.encode_record({"version": SCHEMA_VERSION})
                )
            return
        version = int(codec.decode_record(raw, "schema")["version"])
        if version > SCHEMA_VERSION:
            self.close()
            raise StoreVersionError(
                f"the store at {self.path} has schema {version}; this cw knows up to "
                f"{SCHEMA_VERSION}: upgrade cw"
            )
        while version < SCHEMA_VERSION:
            try:
                MIGRATIONS[version](self)
            except BaseException:
                self.close()  # release the LOCK: the next open runs the migration again
                raise
            version += 1
            self._db.put(META.encode("schema"), codec.encode_record({"version": version}))

    @property
    def schema_version(self) -> int:
        return int(codec.decode_record(self._db.get(META.encode("schema")), "schema")["version"])

    # -- access -------------------------------------------------------------------------------

    def handle(self, family: str) -> Any:
        return self._handles[family]

    def get(self, family: str, key: bytes) -> bytes | None:
        value: bytes | None = self._families[family].get(key)
        return value

    def get_many(self, family: str, keys: list[bytes]) -> list[bytes | None]:
        cf = self._families[family]
        result: list[bytes | None] = cf.get(keys)
        return result

    def batch(self) -> Batch:
        return Batch(self)

    def commit(self, batch: Batch) -> None:
        """Write the batch atomically (WAL first). This is the acknowledgement boundary."""
        self._db.write(batch._wb, self._write_options)

    def scan(
        self,
        family: str,
        prefix: bytes,
        *,
        start: bytes | None = None,
        reverse: bool = False,
        limit: int | None = None,
    ) -> Iterator[tuple[bytes, bytes]]:
        """Yield ``(key, value)`` for keys starting with ``prefix``, in key order (or reversed).

        ``start`` (inclusive, must share ``prefix``) resumes a scan; with ``reverse`` it is the
        upper bound. The iterator is closed when the generator finishes or is discarded.
        """
        it = self._families[family].iter()
        with self._scans_lock:
            self._open_scans += 1
        try:
            if reverse:
                upper = start if start is not None else prefix_end(prefix)
                if upper is None:
                    it.seek_to_last()
                else:
                    it.seek_for_prev(upper)
                    if it.valid() and start is None and it.key() == upper:
                        it.prev()
            else:
                it.seek(start if start is not None else prefix)
            count = 0
            while it.valid():
                key = it.key()
                if not key.startswith(prefix):
                    break
                yield key, it.value()
                count += 1
                if limit is not None and count >= limit:
                    break
                if reverse:
                    it.prev()
                else:
                    it.next()
        finally:
            del it
            with self._scans_lock:
                self._open_scans -= 1

    def scan_prefixes(self, family: str, prefixes: list[bytes]) -> list[list[tuple[bytes, bytes]]]:
        """``(key, value)`` of the keys under each of ``prefixes``, in key order: what
        :meth:`scan` gives for each, read through one iterator that seeks from prefix to prefix
        (a search's scope of many sessions: an iterator costs more to open than a seek)."""
        it = self._families[family].iter()
        with self._scans_lock:
            self._open_scans += 1
        try:
            out: list[list[tuple[bytes, bytes]]] = []
            for prefix in prefixes:
                found = []
                it.seek(prefix)
                while it.valid():
                    key = it.key()
                    if not key.startswith(prefix):
                        break
                    found.append((key, it.value()))
                    it.next()
                out.append(found)
            return out
        finally:
            del it
            with self._scans_lock:
                self._open_scans -= 1

    def meta_get(self, name: str) -> dict[str, Any] | None:
        raw = self._db.get(META.encode(name))
        return None if raw is None else codec.decode_record(raw, f"meta {name}")

    def meta_put(self, batch: Batch, name: str, body: dict[str, Any]) -> None:
        batch._wb.put(META.encode(name), codec.encode_record(body))
        batch.bytes += len(name)
        batch.mutations += 1

    def property_int(self, name: str, family: str | None = None) -> int:
        target = self._db if family is None else self._families[family]
        try:
            value = target.property_int_value(name)
        except Exception:
            return 0
        return int(value or 0)

    def size_on_disk(self) -> int:
        total = 0
        for file in self.path.rglob("*"):
            try:
                if file.is_file():
                    total += file.stat().st_size
            except FileNotFoundError:  # a flush or compaction deleted it meanwhile
                pass
        return total

    def wal_bytes(self) -> int:
        """The write-ahead log files' total size: what a reopen after a crash replays."""
        total = 0
        for file in self.path.glob("*.log"):
            try:
                total += file.stat().st_size
            except FileNotFoundError:  # a flush deleted it meanwhile
                pass
        return total

    def flush(self) -> None:
        self._db.flush()
        for family in list(self._families.values()):
            family.flush()

    def settle_wal(self, limit: int = SETTLE_WAL_BYTES) -> bool:
        """Flush every memtable when the log holds more than ``limit`` bytes (RocksDB then
        deletes the log files no memtable needs); returns whether it flushed. Nothing committed
        changes: the data moves from the log into tables."""
        if self._db is None or self.wal_bytes() <= limit:
            return False
        self.flush()
        return True

    @property
    def lock(self) -> threading.RLock:
        """Serializes writers inside one process (RocksDB itself is thread-safe)."""
        return self._lock

    def close(self) -> None:
        """Close the database. Every handle is dropped first so the LOCK is released.

        Only this object holds the column families and handles, so clearing them frees them at
        once. A scan left open (a suspended generator, perhaps kept alive only by a reference
        cycle such as a traceback) holds an iterator, and an iterator holds the LOCK: only then is
        a full garbage collection run, to finalize such generators.
        """
        db = getattr(self, "_db", None)
        if db is None:
            return
        self._families.clear()
        self._handles.clear()
        if self._open_scans:
            gc.collect()
        try:
            db.close()
        finally:
            self._db = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

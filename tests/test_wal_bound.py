"""The write-ahead log stays bounded while the store is open (issue 32).

Families written rarely (meta, leases, stats, memory, hints, feedback) used to pin every log file
since their last flush: the log grew with everything written until close, and a crash replayed
all of it. ``max_total_wal_size`` makes RocksDB flush the families that pin the oldest log; these
tests write far more than the cap through a busy family while touching the rare ones, and check
the log on disk, what survives a reopen, and what a reopen after ``kill -9`` finds to replay.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from cwcore.engine import Engine
from cwcore.methods import TABLE
from cwcore.store.rocks import MAX_TOTAL_WAL_BYTES, SETTLE_WAL_BYTES, Store
from tests.support import sample_compaction

CAP = 2 * 1024 * 1024
CHUNK = 128 * 1024
RARE = ("leases", "stats", "memory", "hints", "feedback", "requests")


def _payload(i: int) -> bytes:
    # Incompressible enough that tables are not tiny, distinct per batch.
    return os.urandom(CHUNK // 2) + (b"%08d" % i) * (CHUNK // 16)


def _write(store: Store, i: int) -> None:
    batch = store.batch()
    batch.put("postings", b"p%08d" % i, _payload(i))
    if i % 10 == 0:  # the rarely written families get a small write now and then
        for family in RARE:
            batch.put(family, b"r%08d" % i, b"rare %d" % i)
        store.meta_put(batch, "wal-test", {"last": i})
    store.commit(batch)


def _settled(store: Store, deadline_s: float = 60.0) -> None:
    """Wait until no flush is pending or running (a wait, never a timing assertion)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pending = (
            store.property_int("rocksdb.num-running-flushes")
            + store.property_int("rocksdb.mem-table-flush-pending")  # the default family (meta)
            + sum(
                store.property_int("rocksdb.mem-table-flush-pending", f)
                for f in ("postings", *RARE)
            )
        )
        if pending == 0:
            return
        time.sleep(0.01)


def test_the_default_store_caps_its_log(tmp_path: Path) -> None:
    Store(tmp_path / "s").close()
    options = max((tmp_path / "s").glob("OPTIONS-*"), key=lambda p: p.stat().st_mtime)
    assert f"max_total_wal_size={MAX_TOTAL_WAL_BYTES}" in options.read_text()
    assert MAX_TOTAL_WAL_BYTES <= 64 * 1024 * 1024


def test_the_log_stays_within_its_cap_while_rare_families_are_touched(tmp_path: Path) -> None:
    batches = 240  # 30 MiB through the log, 15 times the cap
    store = Store(tmp_path / "s", max_wal_bytes=CAP)
    peak = 0
    try:
        for i in range(batches):
            _write(store, i)
            if i % 20 == 19:
                _settled(store)
                peak = max(peak, store.wal_bytes())
        # Without the cap every log file since the open stays: all 30 MiB.
        assert peak <= 2 * CAP + CHUNK, peak
    finally:
        store.close()
    with Store(tmp_path / "s", max_wal_bytes=CAP) as reopened:
        for i in range(0, batches, 10):
            for family in RARE:
                assert reopened.get(family, b"r%08d" % i) == b"rare %d" % i
        assert reopened.meta_get("wal-test") == {"last": (batches - 1) // 10 * 10}
        assert reopened.get("postings", b"p%08d" % (batches - 1)) is not None
        assert sum(1 for _ in reopened.scan("postings", b"p")) == batches


def test_settle_wal_flushes_a_log_past_its_limit(tmp_path: Path) -> None:
    store = Store(tmp_path / "s")
    try:
        for i in range(16):
            _write(store, i)
        before = store.wal_bytes()
        assert before > 1024 * 1024
        assert store.settle_wal(limit=before + 1) is False
        assert store.settle_wal(limit=1024 * 1024) is True
        assert store.wal_bytes() < CHUNK
        assert store.settle_wal(limit=1024 * 1024) is False
    finally:
        store.close()
    with Store(tmp_path / "s") as reopened:
        assert reopened.get("leases", b"r%08d" % 10) == b"rare 10"
        assert sum(1 for _ in reopened.scan("postings", b"p")) == 16


def test_the_daemons_compaction_sample_flushes_a_log_past_the_settle_limit(cw_home: Path) -> None:
    engine = Engine(cw_home, TABLE)
    try:
        i = 0
        while engine.store.wal_bytes() <= SETTLE_WAL_BYTES:
            _write(engine.store, i)
            i += 1
        sample = sample_compaction(engine)  # the 60 s "compaction" worker's step
        assert sample["wal_flushed"] is True
        assert sample["wal_bytes"] < SETTLE_WAL_BYTES
        assert sample_compaction(engine)["wal_flushed"] is False
        assert engine.store.get("leases", b"r%08d" % 0) == b"rare 0"
    finally:
        engine.close()


CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.test_wal_bound import CAP, _settled, _write
from cwcore.store.rocks import Store
store = Store(Path({path!r}), max_wal_bytes=CAP)
i = 0
while True:
    _write(store, i)
    print(i, flush=True)
    if i % 20 == 19:
        _settled(store)  # a writer that does not outrun the flushes, as the daemon's
    i += 1
"""


def test_a_reopen_after_kill_9_finds_a_bounded_log_and_every_acknowledged_write(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s"
    root = str(Path(__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(root=root, path=str(path))],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    acked = -1
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            acked = int(line)
            if acked >= 240:  # 30 MiB written, 15 times the cap
                break
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert acked >= 240
    logs = sum(f.stat().st_size for f in path.glob("*.log"))
    # What the reopen replays. Without the cap: every byte written since the open. A flush the
    # kill interrupted may leave its log behind, so allow a few caps.
    assert logs <= 8 * CAP, logs
    with Store(path, max_wal_bytes=CAP) as reopened:
        for i in range(acked + 1):
            assert reopened.get("postings", b"p%08d" % i) is not None, i
        for i in range(0, acked + 1, 10):
            for family in RARE:
                assert reopened.get(family, b"r%08d" % i) == b"rare %d" % i

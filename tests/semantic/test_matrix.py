"""The int8 matrix file behind semantic search: same results as an exact float scan, kept across
restarts, rebuilt when stale, never torn by a crash (a real subprocess killed mid-write)."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.semantic import matrix as vmatrix
from cwcore.semantic import store as vstore
from cwcore.semantic.search import SemanticIndex
from cwcore.store.rocks import Store
from tests.semantic.vectors import exact, fill, forget_shared, unit

REPO = Path(__file__).resolve().parents[2]
#: Cosines come from the stored float16 rows (the int8 file only picks candidates): they equal
#: an exact float32 scan over the same rows up to float32 summation order.
TOLERANCE = 1e-5


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "store")
    yield s
    s.close()


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), rows_per=st.sampled_from([1, 3]))
def test_results_equal_an_exact_scan(tmp_path_factory, seed: int, rows_per: int) -> None:
    """Same top-10 windows and the same cosines (within TOLERANCE) as a float32 scan, unscoped
    and scoped, one row or several per window."""
    folder = tmp_path_factory.mktemp("exact")
    store = Store(folder / "store")
    try:
        fill(store, 1, 1500, seed, rows_per=rows_per)
        index = SemanticIndex(store)
        rng = np.random.default_rng(seed + 1)
        # a small scope gathers its rows; a large one scans every row and masks the rest
        small = {int(w) for w in rng.choice(np.arange(1, 1501), 200, replace=False)}
        large = {int(w) for w in rng.choice(np.arange(1, 1501), 1200, replace=False)}
        for q in unit(rng, 4):
            wids, cos = index.search(q, 10)
            ref_w, ref_s = exact(store, q, 10)
            assert [int(w) for w in wids] == ref_w
            assert np.allclose(cos, ref_s, atol=TOLERANCE)
            for scope in (small, large):
                wids, cos = index.search(q, 10, np.array(sorted(scope), np.uint32))
                ref_w, ref_s = exact(store, q, 10, scope)
                assert [int(w) for w in wids] == ref_w
                assert np.allclose(cos, ref_s, atol=TOLERANCE)
    finally:
        forget_shared()
        store.close()


def test_int8_rows_stay_close_to_the_float_rows() -> None:
    """The quantization itself: cosine error of int8 row × int8 query well under 1e-2 (the
    candidate margin; exact cosines are recomputed anyway)."""
    rng = np.random.default_rng(3)
    rows, q = unit(rng, 2000), unit(rng, 1)[0]
    qi, qs = vmatrix.quantize(q[None])
    ri, rs = vmatrix.quantize(rows)
    approx = vmatrix.dots(ri, qi[0]) * rs * qs[0]
    assert np.abs(approx - rows @ q).max() < 5e-3
    # the numpy fallback and the compiled kernel agree exactly (integer sums)
    ref = ri.astype(np.int64) @ qi[0].astype(np.int64)
    assert np.array_equal(vmatrix.dots(ri, qi[0]), ref.astype(np.float32))


def test_the_numpy_fallback_matches_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(4)
    rows, _ = vmatrix.quantize(unit(rng, 5000))
    q, _ = vmatrix.quantize(unit(rng, 1))
    strided = vmatrix.records(unit(rng, 300), np.arange(300), np.arange(300), np.zeros(300))
    kernel = [vmatrix.dots(rows, q[0]), vmatrix.dots(strided["v"], q[0])]
    monkeypatch.setattr(vmatrix, "PARALLEL_ROWS", 1000)  # the same sums in parts on two threads
    assert np.array_equal(vmatrix.dots(rows, q[0]), kernel[0])
    assert np.array_equal(vmatrix.dots(rows[:4999], q[0]), kernel[0][:4999])
    monkeypatch.setattr(vmatrix, "_kernel", [None])
    assert np.array_equal(vmatrix.dots(rows, q[0]), kernel[0])
    assert np.array_equal(vmatrix.dots(strided["v"], q[0]), kernel[1])


def test_the_file_survives_a_restart(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(store, 1, 300, seed=1)
    q = unit(np.random.default_rng(9), 1)[0]
    before = SemanticIndex(store).search(q, 10)
    data = json.loads((store.path / vmatrix.DIRNAME / vmatrix.META).read_text())["data"]
    forget_shared()
    scanned: list[int] = []
    real_scan = vstore.scan

    def counting(*args, **kwargs):
        for item in real_scan(*args, **kwargs):
            scanned.append(item.wid)
            yield item

    monkeypatch.setattr(vstore, "scan", counting)
    again = SemanticIndex(store)
    assert again.refresh() == 0 and again.rows == 300
    assert scanned == []  # mapped, not read again from RocksDB
    after = again.search(q, 10)
    assert np.array_equal(before[0], after[0]) and np.array_equal(before[1], after[1])
    # new rows after the restart are appended to the same file
    fill(store, 301, 320, seed=2)
    assert again.refresh() == 20 and sorted(set(scanned)) == list(range(301, 321))
    meta = json.loads((store.path / vmatrix.DIRNAME / vmatrix.META).read_text())
    assert meta["data"] == data and meta["rows"] == 320
    folder = store.path / vmatrix.DIRNAME  # owner-only, as the rest of the store
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE(p.stat().st_mode) for p in folder.iterdir()} == {0o600}


def test_a_stale_or_damaged_file_is_rebuilt(store: Store) -> None:
    fill(store, 1, 200, seed=4)
    q = unit(np.random.default_rng(8), 1)[0]
    ref = exact(store, q, 10)
    SemanticIndex(store).refresh()
    folder = store.path / vmatrix.DIRNAME
    old = json.loads((folder / vmatrix.META).read_text())["data"]
    # rows taken back (a validation): a new epoch; the file is swapped for a new one
    st_ = vstore.state(store)
    batch = store.batch()
    vstore.put_state(batch, {**st_, "epoch": 1})
    store.commit(batch)
    index = SemanticIndex(store)
    wids, _ = index.search(q, 10)
    assert [int(w) for w in wids] == ref[0]
    new = json.loads((folder / vmatrix.META).read_text())["data"]
    assert new != old and not (folder / old).exists()
    assert sorted(p.name for p in folder.iterdir()) == sorted([vmatrix.META, new])
    # a damaged meta, then a truncated data file: rebuilt from RocksDB each time
    for damage in ("meta", "data"):
        forget_shared()
        if damage == "meta":
            (folder / vmatrix.META).write_text("{not json")
        else:
            name = json.loads((folder / vmatrix.META).read_text())["data"]
            with open(folder / name, "r+b") as f:
                f.truncate(1000)
        index = SemanticIndex(store)
        assert index.refresh() == 200
        wids, cos = index.search(q, 10)
        assert [int(w) for w in wids] == ref[0] and np.allclose(cos, ref[1], atol=TOLERANCE)


def test_garbage_past_the_committed_rows_is_ignored(store: Store) -> None:
    """What a crash between writing rows and replacing the meta leaves: records past ``rows``,
    a half-written temporary meta, a data file no meta names. The committed state is used,
    the rest overwritten or deleted."""
    fill(store, 1, 100, seed=5)
    SemanticIndex(store).refresh()
    folder = store.path / vmatrix.DIRNAME
    meta = json.loads((folder / vmatrix.META).read_text())
    with open(folder / meta["data"], "ab") as f:
        f.write(os.urandom(vmatrix.RECORD.itemsize * 3 + 17))  # torn rows past the commit
    (folder / "meta.json.dead.tmp").write_text('{"format": 1, "rows": 99')
    (folder / "rows-000000000000.i8").write_bytes(os.urandom(4000))
    forget_shared()
    fill(store, 101, 110, seed=6)
    index = SemanticIndex(store)
    assert index.refresh() == 10 and index.rows == 110
    assert sorted(p.name for p in folder.iterdir()) == sorted([vmatrix.META, meta["data"]])
    q = unit(np.random.default_rng(1), 1)[0]
    wids, cos = index.search(q, 10)
    ref = exact(store, q, 10)
    assert [int(w) for w in wids] == ref[0] and np.allclose(cos, ref[1], atol=TOLERANCE)


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    sys.path.insert(0, sys.argv[1])
    from cwcore.semantic import matrix as vmatrix
    from cwcore.semantic.search import SemanticIndex
    from cwcore.store.rocks import Store
    from tests.semantic.vectors import fill

    store = Store(Path(sys.argv[2]))
    where = sys.argv[3]
    fill(store, 201, 260, seed=12)  # committed to RocksDB before the index writes
    if where == "append":  # killed halfway through writing the rows
        real = vmatrix.MatrixFile.append
        def torn(self, recs, at):
            real(self, recs[: len(recs) // 2], at)
            self._fh.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        vmatrix.MatrixFile.append = torn
    else:  # rows written and synced, killed before the meta is swapped in
        def die(*args):
            os.kill(os.getpid(), signal.SIGKILL)
        os.replace = die
    SemanticIndex(store).refresh()
    """
)


@pytest.mark.parametrize("where", ["append", "meta"])
def test_a_process_killed_mid_write_leaves_a_whole_file(tmp_path: Path, where: str) -> None:
    path = tmp_path / "store"
    store = Store(path)
    fill(store, 1, 200, seed=11)
    SemanticIndex(store).refresh()
    committed = json.loads((path / vmatrix.DIRNAME / vmatrix.META).read_text())
    store.close()
    forget_shared()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, str(REPO), str(path), where],
        cwd=REPO,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()
    # the meta still names the old, whole file
    meta = json.loads((path / vmatrix.DIRNAME / vmatrix.META).read_text())
    assert (meta["data"], meta["rows"], meta["done"]) == (
        committed["data"],
        200,
        committed["done"],
    )
    store = Store(path)
    try:
        index = SemanticIndex(store)
        assert index.refresh() == 60 and index.rows == 260
        q = unit(np.random.default_rng(2), 1)[0]
        wids, cos = index.search(q, 10)
        ref = exact(store, q, 10)
        assert [int(w) for w in wids] == ref[0] and np.allclose(cos, ref[1], atol=TOLERANCE)
    finally:
        forget_shared()
        store.close()


def _mapped_kb(name: str) -> int:
    """Resident kB of this process's mappings of a file called ``name`` (/proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if head and "-" in head[0] and len(head) >= 5:  # a mapping's first line
            inside = line.endswith(name)
        elif inside and line.startswith("Rss:"):
            total += int(head[1])
    return total


@pytest.mark.skipif(not Path("/proc/self/smaps").exists(), reason="needs Linux /proc")
def test_dropped_pages_leave_the_resident_set_and_come_back_on_the_next_scan(
    store: Store,
) -> None:
    """What the daemon does once the model is released: the matrix file's pages leave its
    resident set, and the next search reads them again with the same answer."""
    fill(store, 1, 20_000, seed=7)
    index = SemanticIndex(store)
    q = unit(np.random.default_rng(8), 1)[0]
    before = index.search(q, 10)
    name = str(index._m.file.meta["data"])
    assert _mapped_kb(name) > 7_000  # 20,000 rows of 400 bytes, every page read by the scan
    index.drop_pages()
    assert _mapped_kb(name) < 100
    after = index.search(q, 10)
    assert after[0].tolist() == before[0].tolist()
    assert np.allclose(after[1], before[1])
    assert _mapped_kb(name) > 7_000

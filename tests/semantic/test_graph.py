"""The nearest-neighbour graph over the matrix file: searched only where it pays, never returns a
hidden row, misses nothing committed after it, is rebuilt rather than trusted when stale, and is
built deterministically and atomically in a child process (a real one)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.engine import GRAPH_CHECK_S, GRAPH_RETRY_S
from cwcore.semantic import graph as vgraph
from cwcore.semantic import matrix as vmatrix
from cwcore.semantic.search import SemanticIndex
from cwcore.store.rocks import Store
from tests.semantic.vectors import exact, fill, forget_shared, unit
from tests.support import engine_of, graph_build_of, graph_step, semantic_of, store_of

#: A small archive stands for a large one: the tests lower the row count a graph needs.
MIN_ROWS = 1_000
WINDOWS = 3_000


def clustered(rng: np.random.Generator, n: int, centers: int = 40) -> np.ndarray:
    """Unit rows around a few directions, as sentence embeddings are (random 384-d rows are all
    nearly orthogonal, so no index, exact or not, has neighbours to find in them)."""
    base = unit(rng, centers)
    rows = base[np.arange(n) % centers] + 0.5 * unit(rng, n)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def near(rng: np.random.Generator, rows: np.ndarray) -> np.ndarray:
    q = rows + 0.3 * unit(rng, len(rows))
    return q / np.linalg.norm(q, axis=1, keepdims=True)


@pytest.fixture
def low_floor(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(vgraph, "GRAPH_MIN_ROWS", MIN_ROWS)


@pytest.fixture
def store(tmp_path: Path):
    s = Store(tmp_path / "store")
    yield s
    forget_shared()
    s.close()


@pytest.fixture
def rows() -> np.ndarray:
    return clustered(np.random.default_rng(5), WINDOWS)


def built(store: Store, rows: np.ndarray) -> SemanticIndex:
    fill(store, 1, len(rows), seed=0, vectors=rows)
    index = SemanticIndex(store)
    index.refresh()
    assert vgraph.build(index.directory, MIN_ROWS) is not None
    return index


class Calls:
    """Counts the graph's searches (which path a search took)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.n = 0
        real = vgraph.Graph.search

        def search(graph: vgraph.Graph, query: np.ndarray, count: int) -> np.ndarray:
            self.n += 1
            return real(graph, query, count)

        monkeypatch.setattr(vgraph.Graph, "search", search)


def test_when_a_graph_is_wanted(low_floor: None) -> None:
    assert not vgraph.wanted(MIN_ROWS - 1, 0)
    assert vgraph.wanted(MIN_ROWS, 0)
    assert not vgraph.wanted(1_249, 1_000)  # a tail under a quarter: scanned exactly
    assert vgraph.wanted(1_250, 1_000)
    assert not vgraph.wanted(1_000, 1_000)


def test_the_graph_finds_what_the_exact_scan_finds(
    store: Store, rows: np.ndarray, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = built(store, rows)
    calls = Calls(monkeypatch)
    rng = np.random.default_rng(6)
    targets = rng.choice(len(rows), 40, replace=False)
    recall = []
    for target, q in zip(targets, near(rng, rows[targets]), strict=True):
        wids, cos = index.search(q, 10)
        ref_w, _ = exact(store, q, 10)
        assert int(wids[0]) == ref_w[0] == int(target) + 1  # the planted neighbour first
        # every returned cosine is the window's exact one (the graph only picks candidates)
        assert np.allclose(cos, [exact(store, q, 1, {int(w)})[1][0] for w in wids], atol=1e-5)
        recall.append(len(set(map(int, wids)) & set(ref_w)) / 10)
    assert calls.n == len(targets)
    assert np.mean(recall) >= 0.95


def test_rows_committed_after_the_graph_are_scanned_exactly(
    store: Store, rows: np.ndarray, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = built(store, rows)
    calls = Calls(monkeypatch)
    rng = np.random.default_rng(7)
    late = clustered(rng, 50)
    fill(store, WINDOWS + 1, WINDOWS + 50, seed=0, vectors=late)
    for i, q in enumerate(near(rng, late[:10])):
        wids, _ = index.search(q, 5)
        assert int(wids[0]) == WINDOWS + 1 + i
    assert calls.n == 10 and index.rows == WINDOWS + 50


def test_hidden_windows_never_come_back(
    store: Store, rows: np.ndarray, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dead`` windows are dropped from the graph's rows; when they hide so many of its
    nearest rows that fewer than the wanted ones are left, the search scans every row instead
    and gives the exact scan's answer over the visible windows."""
    index = built(store, rows)
    calls = Calls(monkeypatch)
    q = near(np.random.default_rng(8), rows[[17]])[0]
    ranked = exact(store, q, WINDOWS)[0]
    everyone = set(range(1, WINDOWS + 1))
    dead = np.array(ranked[:3], np.uint32)  # the three nearest
    wids, _ = index.search(q, 10, dead=dead)
    ref = exact(store, q, 10, everyone - set(ranked[:3]))[0]
    assert not {int(w) for w in wids} & set(ranked[:3])
    assert int(wids[0]) == ref[0] and len({int(w) for w in wids} & set(ref)) >= 8
    dead = np.array(ranked[:1000], np.uint32)  # the graph's whole neighbourhood of q
    wids, _ = index.search(q, 10, dead=dead)
    assert [int(w) for w in wids] == exact(store, q, 10, everyone - set(ranked[:1000]))[0]
    assert calls.n == 2  # asked both times; the second answer came from the full scan


def test_a_small_scope_is_scanned_exactly(
    store: Store, rows: np.ndarray, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = built(store, rows)
    calls = Calls(monkeypatch)
    scope = set(range(1, WINDOWS + 1, 7))  # a seventh of the windows
    for q in near(np.random.default_rng(9), rows[:5]):
        wids, cos = index.search(q, 10, np.array(sorted(scope), np.uint32))
        ref_w, ref_s = exact(store, q, 10, scope)
        assert [int(w) for w in wids] == ref_w and np.allclose(cos, ref_s, atol=1e-5)
    assert calls.n == 0


def test_small_archives_and_stale_graphs_are_scanned_exactly(
    store: Store, rows: np.ndarray, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = built(store, rows)
    calls = Calls(monkeypatch)
    q = near(np.random.default_rng(10), rows[:1])[0]
    monkeypatch.setattr(vgraph, "GRAPH_MIN_ROWS", WINDOWS + 1)  # fewer rows than a graph needs
    assert [int(w) for w in index.search(q, 10)[0]] == exact(store, q, 10)[0]
    assert calls.n == 0
    monkeypatch.setattr(vgraph, "GRAPH_MIN_ROWS", MIN_ROWS)
    index.search(q, 10)
    assert calls.n == 1
    # the handler takes its rows back (a new epoch): the matrix file is written afresh, and
    # the graph of the old file is not used for the new one
    fill(store, 1, WINDOWS, seed=3, epoch=1, vectors=clustered(np.random.default_rng(3), WINDOWS))
    wids, _ = index.search(q, 10)
    assert [int(w) for w in wids] == exact(store, q, 10)[0]
    assert calls.n == 1
    assert index.graph_rows() == 0 and index.graph_due()  # due again: a graph of the new file


def test_a_build_is_deterministic_atomic_and_replaces_the_old_graph(
    tmp_path: Path, rows: np.ndarray, low_floor: None
) -> None:
    digests = []
    for name in ("a", "b"):
        store = Store(tmp_path / name)
        try:
            fill(store, 1, WINDOWS, seed=0, vectors=rows)
            index = SemanticIndex(store)
            index.refresh()
            folder = index.directory
            (folder / "graph-0123456789ab.usearch.part").write_bytes(b"a build killed midway")
            meta = vgraph.build(folder, MIN_ROWS)
            assert meta is not None and meta.rows == WINDOWS
            assert vgraph.build(folder, MIN_ROWS) is None  # nothing new to cover
            digests.append((folder / meta.file).read_bytes())
            names = sorted(p.name for p in folder.iterdir() if p.name.startswith("graph"))
            assert names == sorted([meta.file, vgraph.META, vgraph.LOCK])
            body = json.loads((folder / vgraph.META).read_text())
            data = json.loads((folder / vmatrix.META).read_text())["data"]
            assert body["data"] == data and body["rows"] == WINDOWS
        finally:
            forget_shared()
            store.close()
    assert digests[0] == digests[1]


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 300),
    kinds=st.integers(1, 40),
)
def test_each_row_maps_to_an_identical_representative(seed: int, n: int, kinds: int) -> None:
    rng = np.random.default_rng(seed)
    base = rng.integers(-127, 128, (kinds, 384), dtype=np.int8)
    rows = base[rng.integers(0, kinds, n)]
    rep = vgraph.distinct(rows, step=7)  # several chunks
    assert np.array_equal(rows[rep], rows)  # an identical row
    assert np.array_equal(rep[rep], rep)  # which represents itself
    for i in range(n):  # equal rows share one representative: the first of them
        assert rep[i] == np.flatnonzero(np.all(rows == rows[i], axis=1))[0]


def test_identical_rows_are_one_node_and_all_come_back(
    store: Store, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An archive whose texts each appear ten times (a resumed session's copied history): the
    graph holds each distinct row once and a search gets every copy of what it finds, so it
    answers as the exact scan does."""
    rng = np.random.default_rng(14)
    kinds = clustered(rng, WINDOWS // 10)
    rows = np.repeat(kinds, 10, axis=0)
    index = built(store, rows)
    meta = vgraph.read_meta(index.directory)
    assert meta is not None and meta.nodes == WINDOWS // 10 and meta.rows == WINDOWS
    assert meta.groups is not None
    calls = Calls(monkeypatch)
    targets = rng.choice(WINDOWS, 30, replace=False)
    for target, q in zip(targets, near(rng, rows[targets]), strict=True):
        wids, cos = index.search(q, 10)
        ref_w, ref_s = exact(store, q, 10)
        copies = {int(w) for w in range(target - target % 10 + 1, target - target % 10 + 11)}
        assert {int(w) for w in wids} == copies == set(ref_w)  # all ten copies, the exact ten
        assert np.allclose(np.sort(cos), np.sort(ref_s), atol=1e-5)
    assert calls.n == len(targets)


def test_a_graph_whose_file_is_missing_or_damaged_is_not_used(
    store: Store, rows: np.ndarray, low_floor: None
) -> None:
    index = built(store, rows)
    meta = vgraph.read_meta(index.directory)
    assert meta is not None
    (index.directory / meta.file).write_bytes(b"not a graph")
    assert vgraph.Graph.open(index.directory, meta.data) is None
    (index.directory / meta.file).unlink()
    assert vgraph.read_meta(index.directory) is None
    q = near(np.random.default_rng(11), rows[:1])[0]
    assert [int(w) for w in index.search(q, 10)[0]] == exact(store, q, 10)[0]


def test_the_child_builds_it_and_a_failure_is_one_line(
    store: Store, rows: np.ndarray, tmp_path: Path
) -> None:
    fill(store, 1, WINDOWS, seed=0, vectors=rows)
    index = SemanticIndex(store)
    index.refresh()
    assert vgraph.wait(vgraph.start(index.directory, min_rows=MIN_ROWS)) is True
    meta = vgraph.read_meta(index.directory)
    assert meta is not None and meta.rows == WINDOWS
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(RuntimeError) as failed:
        vgraph.wait(vgraph.start(blocked, min_rows=MIN_ROWS))
    assert "\n" not in str(failed.value) and str(failed.value)


def test_a_build_past_its_deadline_is_killed_and_reported_once(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], stderr=subprocess.PIPE
    )
    running = vgraph.Build(child, timeout=0.0)
    assert running.done() is False  # past its deadline: killed
    assert not running.running
    with pytest.raises(RuntimeError, match="exited"):
        running.done()
    running.kill()  # reaped already: nothing left to do


def test_a_stopped_wait_ends_the_build(store: Store, rows: np.ndarray) -> None:
    fill(store, 1, WINDOWS, seed=0, vectors=rows)
    index = SemanticIndex(store)
    index.refresh()
    started = time.monotonic()
    running = vgraph.start(index.directory, min_rows=MIN_ROWS)
    assert vgraph.wait(running, stopped=lambda: True) is False
    assert not running.running
    assert time.monotonic() - started < 5
    assert vgraph.read_meta(index.directory) is None


def test_the_daemon_worker_builds_it_when_due_and_search_uses_it(
    tmp_path: Path, rows: np.ndarray, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "true")
    with Archive.open(tmp_path / "home", embedded=True) as archive:
        fill(store_of(archive), 1, WINDOWS, seed=0, vectors=rows)
        semantic = semantic_of(archive)
        assert semantic.maintain_graph() is True
        assert semantic.maintain_graph() is False  # covers every row
        assert archive.call("semantic.status")["graphRows"] == WINDOWS
        calls = Calls(monkeypatch)
        q = near(np.random.default_rng(12), rows[[3]])[0]
        wids, _ = semantic.index().search(q, 10)
        assert int(wids[0]) == 4 and calls.n == 1
        # the worker's step: a due graph is built; a failed build is logged and retried much
        # later, and search keeps working meanwhile
        fill(store_of(archive), WINDOWS + 1, 2 * WINDOWS, seed=1)
        assert graph_step(engine_of(archive)) == pytest.approx(GRAPH_CHECK_S, abs=5)
        assert archive.call("semantic.status")["graphRows"] == 2 * WINDOWS
        fill(store_of(archive), 2 * WINDOWS + 1, 3 * WINDOWS, seed=2)

        real_start = vgraph.start

        def fails(_directory: Path, **kwargs: object) -> vgraph.Build:
            return real_start(tmp_path / "a-file", **kwargs)  # type: ignore[arg-type]

        (tmp_path / "a-file").write_text("")
        monkeypatch.setattr(vgraph, "start", fails)
        assert graph_step(engine_of(archive)) > GRAPH_RETRY_S - 5
        assert archive.call("semantic.status")["graphRows"] == 2 * WINDOWS
        assert len(semantic.index().search(q, 10)[0]) == 10


def test_the_worker_goes_on_while_a_build_runs_and_closing_ends_it(
    tmp_path: Path, rows: np.ndarray, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The step starts the child and returns: embedding is not held up by a build. Closing the
    engine (``cw daemon stop``) kills a build still running."""
    monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "true")

    def slow(_directory: Path, **_kwargs: object) -> vgraph.Build:
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"], stderr=subprocess.PIPE
        )
        return vgraph.Build(child, timeout=120)

    monkeypatch.setattr(vgraph, "start", slow)
    with Archive.open(tmp_path / "home", embedded=True) as archive:
        fill(store_of(archive), 1, WINDOWS, seed=0, vectors=rows)
        engine = engine_of(archive)
        started = time.monotonic()
        graph_step(engine, timeout=0.0)  # one step, no waiting for the build
        assert time.monotonic() - started < 5
        running = graph_build_of(engine)
        assert running is not None and running.running
    assert not running.running  # closed with the engine


def test_dropped_pages_unmap_the_graph_until_the_next_search(
    store: Store, rows: np.ndarray, low_floor: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = built(store, rows)
    q = near(np.random.default_rng(13), rows[:1])[0]
    index.search(q, 5)
    assert index._m.graph is not None
    index.drop_pages()
    assert index._m.graph is None
    calls = Calls(monkeypatch)
    assert int(index.search(q, 5)[0][0]) == 1 and calls.n == 1
    assert os.path.exists(index.directory / vgraph.META)

"""A nearest-neighbour graph over the int8 matrix file, for the scans of large archives.

An exact scan reads every row of the matrix file (:mod:`cwcore.semantic.matrix`): 5–10 ms at
100k rows, 40–70 ms at 500k–1M, bound by memory bandwidth. From :data:`GRAPH_MIN_ROWS` rows a
search that covers most rows asks an HNSW graph (usearch) over the distinct rows' sign bits
(48 bytes a row, Hamming distance) for a few times more rows than it wants, keeps the best of
them by their int8 score, and scans exactly only the rows committed since the graph was built
(the tail); the candidates are then re-scored exactly as before
(:class:`~cwcore.semantic.search.SemanticIndex`), so the graph changes which rows are candidates,
never a returned score. Sign bits keep the graph small (about 200 bytes a row with its links,
against 530 with int8 rows, which the matrix file holds already). Identical rows are one node
(a graph of many equal points links copies to copies and loses its way), and a search expands
each node it finds to every record holding it. Recall against the exact scan is measured in
docs/semantic.md.

The graph is derived from the matrix file alone and rebuilt from it, never updated in place:

* ``graph-<token>.usearch`` — the usearch index of the sign bits (bit set: component > 0) of the
  distinct rows among the data file's first ``rows`` records, keyed by the record number of each
  one's first record; ``graph-<token>.groups.npy`` (when some rows are equal) — the nodes, where
  each one's records start, and the records grouped by node (uint32); ``graph.json`` —
  ``format``, ``data`` (the matrix data file it was built from), ``rows``, ``nodes``, ``file``,
  ``groups``, the build parameters. A graph of another data file (the matrix was rebuilt: new
  model or epoch) or of more rows than the matrix holds is ignored.
* A build (:func:`build`) runs in a child process (``python -m cwcore.semantic.graph DIR
  MIN_ROWS``, niced, one thread; :func:`start`): the daemon's memory stays its own, and a build
  is deterministic (one thread inserts in record order: the same rows give the same bytes). It
  writes the new files under temporary names, fsyncs and renames them, then replaces
  ``graph.json`` atomically and deletes graph files it does not name; a lock file keeps two
  builds of one folder apart. A crash at any point leaves ``graph.json`` naming complete files
  or none.
* :func:`wanted` says when to build: once the matrix has :data:`GRAPH_MIN_ROWS` rows, and again
  when the tail reaches a quarter of the rows the graph covers, so the tail's exact scan stays a
  fraction of a full one and the builds' total cost is a few times the last one's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import math
import os
import secrets
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cwcore.semantic import matrix as vmatrix

FORMAT = 2  # 2: distinct rows only, with their groups (1 held every row)
META = "graph.json"
LOCK = "graph.lock"
#: Rows from which a graph is built and searched: below it the exact scan costs under ~2 ms.
GRAPH_MIN_ROWS = 50_000
#: A new graph is built when the rows committed since the last one reach this share of it.
REBUILD_SHARE = 0.25
#: HNSW links per node (usearch's ``connectivity``) and candidate lists while building and
#: searching (``expansion_add``, ``expansion_search``; a search asks for at least its count).
#: Chosen on the 190k archive's rows (docs/semantic.md): 32 links cost more and found no more.
CONNECTIVITY = 16
EXPANSION_ADD = 128
EXPANSION_SEARCH = 64
#: Distinct rows a search asks the graph for at least, however many records hold each: the
#: nearest by sign bits hold the nearest by cosine only with a margin (chosen on the 190k and 1M
#: bench archives, where each text is there 4 and 21 times: docs/semantic.md).
SEARCH_MIN_NODES = 600
#: Seconds a build may take before the caller stops waiting for it (the child is killed).
BUILD_TIMEOUT_S = 3600.0
#: Seconds between two looks at a running build (and at the caller's stop signal).
POLL_S = 0.2


@dataclass(frozen=True)
class GraphMeta:
    """What ``graph.json`` says: the graph file ``file`` holds the distinct rows (``nodes``) of
    the first ``rows`` records of the matrix data file ``data``; ``groups`` (None when every row
    is distinct) names the file that maps each node to the records holding the same row."""

    data: str
    rows: int
    file: str
    nodes: int
    groups: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "data": self.data,
            "rows": self.rows,
            "file": self.file,
            "nodes": self.nodes,
            "groups": self.groups,
            "connectivity": CONNECTIVITY,
            "expansionAdd": EXPANSION_ADD,
        }


def read_meta(directory: Path) -> GraphMeta | None:
    """The committed graph's meta, or None (none built, unreadable, another format, a file it
    names missing)."""
    try:
        body = json.loads((directory / META).read_text())
        if body.get("format") != FORMAT:
            return None
        groups = body.get("groups")
        meta = GraphMeta(
            str(body["data"]),
            int(body["rows"]),
            str(body["file"]),
            int(body["nodes"]),
            None if groups is None else str(groups),
        )
        named = [meta.file] + ([meta.groups] if meta.groups else [])
        if not all((directory / name).is_file() for name in named):
            return None
        return meta
    except (OSError, ValueError, KeyError, TypeError):
        return None


def wanted(matrix_rows: int, covered: int) -> bool:
    """Whether a graph should be built for a matrix of ``matrix_rows`` committed rows whose
    current graph covers ``covered`` of them (0: none, or one of another data file)."""
    if matrix_rows < GRAPH_MIN_ROWS:
        return False
    return covered <= 0 or matrix_rows - covered >= covered * REBUILD_SHARE


#: Odd 64-bit multipliers of the rows' 48 eight-byte words: a row's hash is their wrapping dot
#: product (fixed, so builds are deterministic).
_HASH_K = np.random.default_rng(0x6377).integers(1, 2**63, vmatrix.DIM // 8, dtype=np.uint64) | 1


def distinct(rows: np.ndarray, step: int = 65_536) -> np.ndarray:
    """For each int8 row of ``rows`` (n, DIM), the index of the first row equal to it (its
    representative; itself when it is the first). Rows are hashed, then each compared with the
    first row of its hash: a row that differs from it (a collision) represents itself, so every
    row maps to an identical one."""
    n = len(rows)
    hashes = np.empty(n, np.uint64)
    for lo in range(0, n, step):
        words = np.ascontiguousarray(rows[lo : lo + step]).view(np.uint64)
        with np.errstate(over="ignore"):
            hashes[lo : lo + step] = (words * _HASH_K).sum(axis=1, dtype=np.uint64)
    _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
    rep = first[inverse.reshape(-1)].astype(np.int64)
    for lo in range(0, n, step):
        hi = min(n, lo + step)
        part = rep[lo:hi]
        same = np.all(np.asarray(rows[lo:hi]) == np.asarray(rows[part]), axis=1)
        part[~same] = np.arange(lo, hi)[~same]
    return rep


def sign_bits(rows: np.ndarray) -> np.ndarray:
    """The packed sign bits of int8 ``rows`` (n, DIM) or of one row: (n, DIM / 8) uint8."""
    return np.packbits(np.asarray(rows) > 0, axis=-1)


def _commit_file(part: Path, final: Path) -> None:
    with open(part, "rb") as f:
        os.fsync(f.fileno())
    os.replace(part, final)


def _new_index() -> Any:
    from usearch.index import Index  # imported by builds and graph searches only

    return Index(
        ndim=vmatrix.DIM,
        metric="hamming",
        dtype="b1",
        connectivity=CONNECTIVITY,
        expansion_add=EXPANSION_ADD,
        expansion_search=EXPANSION_SEARCH,
        enable_key_lookups=False,
    )


def build(directory: Path, min_rows: int | None = None) -> GraphMeta | None:
    """Build the graph of the matrix file's committed rows in ``directory`` and commit it.
    Returns its meta; None when another build holds the lock, the matrix has fewer than
    ``min_rows`` rows (default :data:`GRAPH_MIN_ROWS`), or the committed graph already covers
    every row."""
    floor = GRAPH_MIN_ROWS if min_rows is None else min_rows
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    with open(directory / LOCK, "a+b") as lock:
        try:
            fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another build of this folder is under way
        matrix = vmatrix.MatrixFile(directory).read_meta()
        if matrix is None or int(matrix["rows"]) < floor:
            return None
        data, rows = str(matrix["data"]), int(matrix["rows"])
        old = read_meta(directory)
        if old is not None and old.data == data and old.rows >= rows:
            return None
        recs = np.memmap(directory / data, vmatrix.RECORD, mode="r", shape=(rows,))
        # One node per distinct row: a graph of many identical rows (a resumed session's copied
        # history, the same tool output again) links copies to copies and loses its way.
        rep = distinct(recs["v"])
        nodes = np.flatnonzero(rep == np.arange(rows))
        index = _new_index()
        step = 65_536  # bounded copies of the strided records
        for lo in range(0, len(nodes), step):
            part = nodes[lo : lo + step]
            index.add(part.astype(np.uint64), sign_bits(recs["v"][part]), threads=1)
        token = secrets.token_hex(6)
        name = f"graph-{token}.usearch"
        part_file = directory / f"{name}.part"
        index.save(str(part_file))
        _commit_file(part_file, directory / name)
        groups = None
        if len(nodes) < rows:
            groups = f"graph-{token}.groups.npy"
            order = np.argsort(rep, kind="stable").astype(np.uint32)
            starts = np.searchsorted(rep[order], nodes).astype(np.uint32)
            part_file = directory / f"{groups}.part"
            with open(part_file, "wb") as f:
                np.save(f, np.concatenate([nodes.astype(np.uint32), starts, order]))
            _commit_file(part_file, directory / groups)
        meta = GraphMeta(data, rows, name, len(nodes), groups)
        # ``.part``, not the matrix file's ``.tmp``: its clean-up deletes those it meets
        vmatrix.write_json(directory / META, meta.to_json(), suffix=".part")
        keep = {name, groups, META, LOCK}
        for path in directory.glob("graph*"):
            if path.name not in keep:
                with contextlib.suppress(OSError):
                    path.unlink()
        return meta


class Build:
    """A graph build running in a child process (:func:`start`): the caller polls :meth:`done`
    between its own work, or waits with :func:`wait`."""

    def __init__(self, child: subprocess.Popen[bytes], timeout: float) -> None:
        self._child = child
        self.deadline = time.monotonic() + timeout

    def done(self) -> bool:
        """True once the child has exited cleanly, False while it runs; raises
        :class:`RuntimeError` with the child's last line when it failed. Past its deadline the
        child is killed, which the next call reports as a failure."""
        child = self._child
        if child.poll() is None:
            if time.monotonic() > self.deadline:
                self.kill()
            return False
        if child.returncode == 0:
            return True
        err = child.stderr.read() if child.stderr is not None and not child.stderr.closed else b""
        lines = err.decode("utf-8", "replace").strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"graph build exited {child.returncode}")

    @property
    def running(self) -> bool:
        return self._child.poll() is None

    def kill(self) -> None:
        """End the child now (a build is redone from the start; its partial file is deleted by
        the next one)."""
        if self._child.poll() is None:
            self._child.kill()
            self._child.wait()
        if self._child.stderr is not None:
            self._child.stderr.close()


def start(
    directory: Path, *, min_rows: int | None = None, timeout: float = BUILD_TIMEOUT_S
) -> Build:
    """Start :func:`build` in a child process (niced, one thread) and return at once."""
    floor = GRAPH_MIN_ROWS if min_rows is None else min_rows
    child = subprocess.Popen(
        [sys.executable, "-m", "cwcore.semantic.graph", str(directory), str(floor)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,  # one line at most: main() catches everything
    )
    return Build(child, timeout)


def wait(running: Build, stopped: Callable[[], bool] = lambda: False) -> bool:
    """Wait for ``running``: True when it exited cleanly, False when ``stopped()`` turned true
    first or its deadline passed (the child is killed). Raises :class:`RuntimeError` with the
    child's last line when it failed."""
    try:
        while not running.done():
            if stopped() or not running.running:
                return False
            time.sleep(POLL_S)
        return True
    finally:
        running.kill()


class Graph:
    """A committed graph, memory-mapped read-only (usearch's ``view``: file-backed pages the
    kernel may drop), and its groups in memory (4 bytes a row; none when every row is
    distinct). Searches are serialized: one usearch search context is shared."""

    def __init__(self, meta: GraphMeta, index: Any, groups: np.ndarray | None) -> None:
        self.meta = meta
        self._index = index
        self._lock = threading.Lock()
        self._nodes = self._starts = self._order = None
        if groups is not None:
            k = meta.nodes
            self._nodes, self._starts, self._order = groups[:k], groups[k : 2 * k], groups[2 * k :]

    @classmethod
    def open(cls, directory: Path, data: str) -> Graph | None:
        """The graph of matrix data file ``data`` when one is committed; None otherwise (or
        when usearch cannot map it)."""
        meta = read_meta(directory)
        if meta is None or meta.data != data or meta.rows <= 0:
            return None
        try:
            from usearch.index import Index

            index = Index.restore(str(directory / meta.file), view=True)
            groups = None
            if meta.groups is not None:
                groups = np.load(directory / meta.groups, allow_pickle=False)
        except Exception:  # a damaged or foreign file: the exact scan serves meanwhile
            return None
        if index is None or len(index) != meta.nodes:
            return None
        if groups is not None and (
            groups.dtype != np.uint32 or len(groups) != 2 * meta.nodes + meta.rows
        ):
            return None
        return cls(meta, index, groups)

    def search(self, query: np.ndarray, count: int) -> np.ndarray:
        """Record numbers of (about) the ``count`` records whose sign bits are nearest to those
        of the int8 ``query``, nearest first (int64): the nearest distinct rows, each with every
        record that holds it, as many rows as ``count`` records hold on average."""
        if self.meta.nodes < self.meta.rows:  # fewer nodes hold the rows, but never fewer
            # than a Hamming ranking needs to hold the cosine ranking's best (SEARCH_MIN_NODES)
            nodes = math.ceil(count * self.meta.nodes / self.meta.rows)
            count = max(nodes, min(count, SEARCH_MIN_NODES))
        count = min(count, self.meta.nodes)
        if count <= 0:
            return np.zeros(0, np.int64)
        with self._lock:
            found = self._index.search(sign_bits(query), count, threads=1)
        keys = np.asarray(found.keys, dtype=np.int64)
        keys = keys[(keys >= 0) & (keys < self.meta.rows)]
        if self._nodes is None or not len(keys):
            return keys
        assert self._starts is not None and self._order is not None
        at = np.searchsorted(self._nodes, keys)
        lo = self._starts[at].astype(np.int64)
        hi = np.append(self._starts, self.meta.rows)[at + 1].astype(np.int64)
        lengths = hi - lo
        # each group's records, groups in the graph's order: lo repeated, plus 0..length-1
        offsets = np.repeat(lo - np.cumsum(lengths) + lengths, lengths) + np.arange(lengths.sum())
        return self._order[offsets].astype(np.int64)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not argv[1].isdigit():
        print("usage: python -m cwcore.semantic.graph MATRIX_DIR MIN_ROWS", file=sys.stderr)
        return 2
    with contextlib.suppress(OSError):
        os.nice(19)  # background work, as the embedding threads: a request goes first
    try:
        build(Path(argv[0]), int(argv[1]))
    except Exception as exc:  # one line for the parent
        print(f"{type(exc).__name__}: {exc}".replace("\n", " "), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

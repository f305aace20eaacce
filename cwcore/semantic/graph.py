"""A nearest-neighbour graph over the int8 matrix file, for the scans of large archives.

An exact scan reads every row of the matrix file (:mod:`cwcore.semantic.matrix`): 4–6 ms at
100k rows, 40–70 ms at 500k–1M, bound by memory bandwidth. Above :data:`GRAPH_MIN_ROWS` rows a
search that covers most rows asks an HNSW graph (usearch, int8 rows, cosine) for its candidate
rows instead, and scans exactly only the rows committed since the graph was built (the tail);
the candidates are then re-scored exactly as before
(:class:`~cwcore.semantic.search.SemanticIndex`), so what the graph changes is which rows are
candidates, never a returned score. Recall against
the exact scan is measured in docs/semantic.md.

The graph is derived from the matrix file alone and rebuilt from it, never updated in place:

* ``graph-<token>.usearch`` — the usearch index of the sign bits of the data file's first
  ``rows`` records (bit set: component > 0), keyed by record number; ``graph.json`` —
  ``format``, ``data`` (the matrix data file it was built from), ``rows``, ``file``, the build
  parameters. A graph of another data file (the matrix was rebuilt: new model or epoch) or of
  more rows than the matrix holds is ignored.
* A build (:func:`build`) runs in a child process (``python -m cwcore.semantic.graph DIR
  MIN_ROWS``, niced, one thread): the daemon's memory stays its own, and a build is
  deterministic (one thread inserts in record order: the same rows give the same bytes). It
  writes the new file under a temporary name, fsyncs it, renames it, then replaces
  ``graph.json`` atomically and deletes graph files it does not name; a lock file keeps two
  builds of one folder apart. A crash at any point leaves ``graph.json`` naming a complete
  graph or none.
* :func:`wanted` says when to build: once the matrix has :data:`GRAPH_MIN_ROWS` rows, and again
  when the tail reaches a quarter of the rows the graph covers, so the tail's exact scan stays a
  fraction of a full one and the builds' total cost is a few times the last one's.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
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

FORMAT = 1
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
#: Seconds a build may take before the caller stops waiting for it (the child is killed).
BUILD_TIMEOUT_S = 3600.0
#: Seconds between two looks at a running build (and at the caller's stop signal).
POLL_S = 0.2


@dataclass(frozen=True)
class GraphMeta:
    """What ``graph.json`` says: the graph file ``file`` holds the first ``rows`` records of
    the matrix data file ``data``."""

    data: str
    rows: int
    file: str

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "data": self.data,
            "rows": self.rows,
            "file": self.file,
            "connectivity": CONNECTIVITY,
            "expansionAdd": EXPANSION_ADD,
        }


def read_meta(directory: Path) -> GraphMeta | None:
    """The committed graph's meta, or None (none built, unreadable, another format, its file
    missing)."""
    try:
        body = json.loads((directory / META).read_text())
        if body.get("format") != FORMAT:
            return None
        meta = GraphMeta(str(body["data"]), int(body["rows"]), str(body["file"]))
        if not (directory / meta.file).is_file():
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


def sign_bits(rows: np.ndarray) -> np.ndarray:
    """The packed sign bits of int8 ``rows`` (n, DIM) or of one row: (n, DIM / 8) uint8."""
    return np.packbits(np.asarray(rows) > 0, axis=-1)


def _write_json(directory: Path, name: str, body: dict[str, Any]) -> None:
    tmp = directory / f"{name}.{secrets.token_hex(4)}.part"
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(json.dumps(body, sort_keys=True))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, directory / name)
    vmatrix.fsync_dir(directory)


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
        index = _new_index()
        step = 65_536  # bounded copies of the strided records
        for lo in range(0, rows, step):
            hi = min(rows, lo + step)
            index.add(np.arange(lo, hi, dtype=np.uint64), sign_bits(recs["v"][lo:hi]), threads=1)
        name = f"graph-{secrets.token_hex(6)}.usearch"
        part = directory / f"{name}.part"
        index.save(str(part))
        with open(part, "rb") as f:
            os.fsync(f.fileno())
        os.replace(part, directory / name)
        meta = GraphMeta(data, rows, name)
        _write_json(directory, META, meta.to_json())
        for path in directory.glob("graph*"):
            if path.name not in (name, META, LOCK):
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
        """True once the child has exited cleanly, False while it runs (killed, and False
        forever, past its deadline); raises :class:`RuntimeError` with the child's last line
        when it failed."""
        child = self._child
        if child.poll() is None:
            if time.monotonic() > self.deadline:
                self.kill()
            return False
        if child.returncode == 0:
            return True
        err = child.stderr.read() if child.stderr is not None else b""
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
    kernel may drop). Searches are serialized: one usearch search context is shared."""

    def __init__(self, meta: GraphMeta, index: Any) -> None:
        self.meta = meta
        self._index = index
        self._lock = threading.Lock()

    @classmethod
    def open(cls, directory: Path, data: str, rows: int) -> Graph | None:
        """The graph of matrix data file ``data`` when one is committed and covers at most its
        ``rows`` committed rows; None otherwise (or when usearch cannot map it)."""
        meta = read_meta(directory)
        if meta is None or meta.data != data or meta.rows > rows or meta.rows <= 0:
            return None
        try:
            from usearch.index import Index

            index = Index.restore(str(directory / meta.file), view=True)
        except Exception:  # a damaged or foreign file: the exact scan serves meanwhile
            return None
        if index is None or len(index) != meta.rows:
            return None
        return cls(meta, index)

    def search(self, query: np.ndarray, count: int) -> np.ndarray:
        """Record numbers of (about) the ``count`` rows whose sign bits are nearest to those of
        the int8 ``query`` (int64, nearest first; fewer when the graph holds fewer)."""
        count = min(count, self.meta.rows)
        if count <= 0:
            return np.zeros(0, np.int64)
        with self._lock:
            found = self._index.search(sign_bits(query), count, threads=1)
        keys = np.asarray(found.keys, dtype=np.int64)
        return keys[(keys >= 0) & (keys < self.meta.rows)]


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

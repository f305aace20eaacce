"""The int8 matrix file: a derived, memory-mapped copy of the stored window vectors for search.

The canonical vectors are the float16 rows in RocksDB (:mod:`cwcore.semantic.store`). Search
scans this file instead of holding a float32 copy in anonymous memory: each row is quantized to
int8 with its own scale (``row ≈ scale × int8``), so 1M rows are 400 MB of file-backed pages the
kernel may drop and share, not 1.5 GB of heap. Scanning is one compiled int8 dot product per row
(:func:`dots`, numkong's SIMD kernels); search then re-scores its candidates from the canonical
float16 rows, so results and scores are those of an exact float scan (docs/semantic.md).

Layout of the folder ``<store>/semantic-matrix/``:

* ``rows-<token>.i8`` — fixed-size records (:data:`RECORD`, 400 bytes): the int8 row, its scale,
  the window's wid and ordinal, the row's index within the window's rows.
* ``meta.json`` — what the data file holds: ``format``, ``dim``, ``model``, ``epoch`` (the
  handler's, :mod:`cwcore.semantic.store`), ``done`` (the handler's passed wid ranges that are
  in the file), ``rows`` (records valid from the start of the file) and ``data`` (its name).

Writes are crash-safe without a lock file: rows are appended past ``rows`` (invisible until
``meta.json`` says otherwise), the data file is flushed and fsynced, then ``meta.json`` is
replaced atomically (write a temporary file, fsync, ``os.replace``). A rebuild (the handler took
rows back: a new epoch or model) writes a new data file under a new name and swaps ``meta.json``
to it, then deletes the old one. A crash at any point leaves ``meta.json`` naming a complete file
of the old or the new state; records past ``rows`` and data files it does not name are garbage,
overwritten or deleted by the next writer. A file that does not match the handler's state
(another model or epoch, ranges the handler no longer has) is rebuilt from RocksDB.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
FORMAT = 1
DIRNAME = "semantic-matrix"
META = "meta.json"
#: One row: int8 vector, float32 scale, wid, ordinal, row index within the window, padding.
RECORD = np.dtype(
    [
        ("v", "i1", (DIM,)),
        ("scale", "<f4"),
        ("wid", "<u4"),
        ("ordinal", "<u4"),
        ("sub", "<u2"),
        ("pad", "<u2"),
    ]
)

_kernel: list[Any] = []  # numkong, imported on the first scan (the CLI's start stays lean)


def _numkong() -> Any:
    """The compiled kernels (numkong), or None where it is missing: the numpy path of
    :func:`dots` is the reference and the fallback."""
    if not _kernel:
        try:
            import numkong

            _kernel.append(numkong)
        except ImportError:  # pragma: no cover - numkong is a dependency
            _kernel.append(None)
    return _kernel[0]


#: Rows from which a scan runs in parts on two threads.
PARALLEL_ROWS = 262_144
#: Rows per chunk of the numpy fallback (bounded temporary float32 copy: 6 MB).
_CHUNK = 4096


def quantize(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(int8 rows, float32 scales)`` with ``rows ≈ scales[:, None] × int8``; symmetric, each
    row's largest component maps to ±127 (an all-zero row gets scale 0)."""
    x = np.asarray(rows, dtype=np.float32).reshape(-1, DIM)
    peak = np.abs(x).max(axis=1) if len(x) else np.zeros(0, np.float32)
    scale = (peak / 127.0).astype(np.float32)
    safe = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.clip(np.rint(x / safe[:, None]), -127, 127).astype(np.int8)
    return q, scale


_pool: list[ThreadPoolExecutor] = []
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    with _pool_lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(2, thread_name_prefix="cw-scan"))
        return _pool[0]


def _cdist(nk: Any, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    out = nk.cdist(query.reshape(1, DIM), vectors, metric="dot", out_dtype="float32")
    return np.asarray(out, dtype=np.float32).reshape(-1)


def dots(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Integer dot products of int8 ``vectors`` (n, DIM; rows may be strided) with the int8
    ``query`` (DIM,), as float32 (exact: |dot| ≤ 384 × 127² < 2^24)."""
    if not len(vectors):
        return np.zeros(0, np.float32)
    nk = _numkong()
    if nk is not None:
        n = len(vectors)
        if n >= PARALLEL_ROWS and (os.cpu_count() or 1) > 1:
            # numkong parallelizes over query rows only (one here), and releases the GIL: four
            # parts on two threads (measured at 1M rows: 67 ms in one call, 38 ms so).
            out = np.empty(n, np.float32)
            step = -(-n // 4)

            def part(lo: int) -> None:
                out[lo : lo + step] = _cdist(nk, vectors[lo : lo + step], query)

            list(_executor().map(part, range(0, n, step)))
            return out
        return _cdist(nk, vectors, query)
    qf = query.astype(np.float32)
    res = np.empty(len(vectors), np.float32)
    for lo in range(0, len(vectors), _CHUNK):
        res[lo : lo + _CHUNK] = vectors[lo : lo + _CHUNK].astype(np.float32) @ qf
    return res


def records(
    rows: np.ndarray, wids: np.ndarray, ordinals: np.ndarray, subs: np.ndarray
) -> np.ndarray:
    """The file records of float rows and their identities."""
    q, scale = quantize(rows)
    out = np.zeros(len(q), RECORD)
    out["v"] = q
    out["scale"] = scale
    out["wid"] = wids
    out["ordinal"] = ordinals
    out["sub"] = subs
    return out


def fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_json(path: Path, body: dict[str, Any], suffix: str = ".tmp") -> None:
    """Replace ``path`` with ``body`` as JSON, atomically: a temporary file beside it (named
    ``<name>.<random><suffix>``), fsynced, renamed over it, the folder fsynced."""
    tmp = path.with_name(f"{path.name}.{secrets.token_hex(4)}{suffix}")
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(json.dumps(body, sort_keys=True))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


class MatrixFile:
    """The folder's data file and meta; one writer per process (the caller serializes)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.meta: dict[str, Any] | None = None
        self._fh: Any = None  # the open data file (appends)

    # -- meta ---------------------------------------------------------------------------------

    def read_meta(self) -> dict[str, Any] | None:
        """The committed meta, or None (missing, unreadable, another format, its data file
        shorter than it says)."""
        try:
            meta = json.loads((self.dir / META).read_text())
            if meta.get("format") != FORMAT or meta.get("dim") != DIM:
                return None
            size = (self.dir / str(meta["data"])).stat().st_size
            if size < int(meta["rows"]) * RECORD.itemsize:
                return None
            meta["done"] = [(int(a), int(b)) for a, b in meta["done"]]
            return dict(meta)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def _write_meta(self, meta: dict[str, Any]) -> None:
        write_json(self.dir / META, {**meta, "done": [list(r) for r in meta["done"]]})
        self.meta = meta

    # -- data ---------------------------------------------------------------------------------

    def adopt(self, meta: dict[str, Any]) -> np.ndarray:
        """Take ``meta`` (from :meth:`read_meta`) as the current file; returns its records
        (memory-mapped, read-only)."""
        self.close()
        self.meta = meta
        self._cleanup()
        return self.view()

    def start(self, model: str | None, epoch: int) -> None:
        """Begin a new, empty data file (a rebuild); the old one stays valid until
        :meth:`commit` swaps ``meta.json`` to the new one."""
        self.close()
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # owner-only, as the store
        name = f"rows-{secrets.token_hex(6)}.i8"
        fd = os.open(self.dir / name, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self._fh = os.fdopen(fd, "w+b")  # kept open for appends
        self.meta = {
            "format": FORMAT,
            "dim": DIM,
            "model": model,
            "epoch": epoch,
            "done": [],
            "rows": 0,
            "data": name,
            "new": True,  # not committed yet: the old meta still names the old file
        }

    def append(self, recs: np.ndarray, at: int) -> None:
        """Write records from row ``at`` on (past the committed rows: invisible until
        :meth:`commit`)."""
        assert self.meta is not None
        if self._fh is None:
            self._fh = open(self.dir / str(self.meta["data"]), "r+b")  # noqa: SIM115
        self._fh.seek(at * RECORD.itemsize)
        self._fh.write(np.ascontiguousarray(recs, RECORD).tobytes())

    def commit(self, rows: int, done: list[tuple[int, int]]) -> None:
        """Make the first ``rows`` records and the ``done`` ranges the file's committed state:
        data fsynced first, then the meta replaced atomically."""
        assert self.meta is not None
        if self._fh is not None:
            self._fh.flush()
            os.fsync(self._fh.fileno())
        new = bool(self.meta.pop("new", False))
        self._write_meta({**self.meta, "rows": rows, "done": list(done)})
        if new:
            self._cleanup()

    def view(self) -> np.ndarray:
        """The committed records, memory-mapped read-only (an empty array when there are
        none)."""
        assert self.meta is not None
        rows = int(self.meta["rows"])
        if not rows:
            return np.zeros(0, RECORD)
        return np.memmap(self.dir / str(self.meta["data"]), RECORD, mode="r", shape=(rows,))

    def _cleanup(self) -> None:
        """Delete data files and temporaries the committed meta does not name (left by a
        rebuild or a crash)."""
        keep = None if self.meta is None else str(self.meta["data"])
        for path in self.dir.glob("*"):
            if path.name == META or path.name == keep:
                continue
            if path.name.startswith("rows-") or path.name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    path.unlink()

    def close(self) -> None:
        if self._fh is not None:
            with contextlib.suppress(OSError):
                self._fh.close()
            self._fh = None

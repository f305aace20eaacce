"""The semantic index handler: embed published windows that have no vector yet, newest first.

:func:`embed_pending` is one bounded step (the daemon's worker calls it repeatedly; the eval
calls it until it returns 0). It reads the published generation, takes up to ``max_windows``
windows from the top of the highest range not passed yet (``wid <= maxWid`` only, so
unpublished work stays invisible; wids follow admission order, so recent history gains semantic
search first), skips retired and forgotten ones, embeds their text and commits rows + the passed
ranges in one batch.

Two ways to turn a window into vectors (``mode``), measured on LongMemEval (docs/evaluation.md):

* ``window`` — the window's text, truncated by the model to its first 256 tokens: one row.
* ``message`` — each message (manifest part) the window covers, clipped to the window, each
  truncated to 256 tokens: one row per message (at most :data:`MAX_ROWS`); a window's cosine is
  its best row's.

:data:`DEFAULT_MODE` is the one the evaluation chose. Changing the model or the mode clears the
stored vectors (they are not comparable) and starts over from wid 1.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cwcore.contract.index import SemanticProgress
from cwcore.errors import CorruptRecord, NotFound
from cwcore.index import derived
from cwcore.index.derived import StoredWindow
from cwcore.semantic import store as vstore
from cwcore.semantic.embedder import ChainCache, Embedder, VectorCache, clip
from cwcore.store import keys
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.store.rocks import Store

MODES = ("window", "message")
DEFAULT_MODE = "window"
MAX_ROWS = 16
BATCH_WINDOWS = 64
STEP_WINDOWS = 16  # one daemon worker step: a few seconds of CPU at 256 tokens


def window_texts(
    reader: Reader, record: StoredWindow, mode: str, manifest: Manifest | None = None
) -> list[str]:
    """The texts a window is embedded from (empty when it holds no text)."""
    if manifest is None:
        manifest = reader.manifest(record["documentId"], int(record["version"]))
    start, end = int(record["byteStart"]), int(record["byteEnd"])
    if mode == "window":
        text = reader.read_bytes(manifest, start, end).decode("utf-8", "replace")
        return [clip(text)] if text.strip() else []
    texts: list[str] = []
    data = reader.read_bytes(manifest, start, end)
    for part in manifest["parts"]:
        lo, hi = max(start, int(part["start"])), min(end, int(part["end"]))
        if lo >= hi:
            continue
        text = data[lo - start : hi - start].decode("utf-8", "replace")
        if text.strip():
            texts.append(clip(text))
        if len(texts) >= MAX_ROWS:
            break
    return texts


def _dead_ordinals(store: Store, ordinals: Sequence[int]) -> set[int]:
    ordinals = sorted(set(ordinals))
    found = store.get_many("ordinals", [keys.TOMBSTONE.encode(o) for o in ordinals])
    return {o for o, t in zip(ordinals, found, strict=True) if t is not None}


def prepare(store: Store, embedder: Embedder, mode: str) -> dict[str, Any]:
    """The handler state for this model and mode (stored vectors of another are cleared)."""
    st = vstore.state(store)
    if st.get("model") != embedder.model_id or st.get("mode") != mode:
        vstore.clear(store, model=embedder.model_id, mode=mode)
        st = vstore.state(store)
    return st


def _check_renumbered(store: Store, st: dict[str, Any], max_wid: int) -> dict[str, Any]:
    """Detect a rebuild cheaply and validate if so (:func:`_stale`)."""
    if _stale(store, st, max_wid):
        vstore.validate(store)
        st = vstore.state(store)
    return st


def _stale(store: Store, st: dict[str, Any], max_wid: int) -> bool:
    """Whether the passed ranges describe another numbering of the windows: a range reaches
    past the published windows, or the vector at either end of a range no longer matches the
    window there (a few point reads, never a scan)."""
    ranges = vstore.done_ranges(st)
    if ranges and ranges[-1][1] > max_wid:
        return True
    for wid in sorted({w for r in ranges for w in r})[-4:]:
        item = vstore.get(store, wid)
        if item is not None and not vstore.matches(item, derived.window_record(store, wid)):
            return True
    return False


#: A step whose windows' texts all have vectors already (a rebuild's renumbered windows, repeated
#: texts) costs reads only, so it passes up to this many windows instead of ``max_windows``.
CACHED_STEP_WINDOWS = 1024
#: Weight of the newest step in the handler's smoothed rate (windows/s).
RATE_WEIGHT = 0.3


def _read_chunk(
    store: Store,
    reader: Reader,
    wids: list[int],
    mode: str,
    manifests: dict[tuple[str, int], Manifest],
) -> list[tuple[int, StoredWindow, list[str]]]:
    """The windows of ``wids`` to embed and their texts (retired, forgotten and already embedded
    windows left out)."""
    records = derived.window_records(store, wids)
    existing = store.get_many(vstore.FAMILY, [vstore.VECTOR.encode(w) for w in wids])
    dead = _dead_ordinals(store, [int(r["ordinal"]) for r in records if r is not None])
    todo: list[tuple[int, StoredWindow, list[str]]] = []
    for wid, record, raw in zip(wids, records, existing, strict=True):
        if record is None or int(record["ordinal"]) in dead:
            continue  # forgotten or retired: never searched, never embedded
        if raw is not None and vstore.matches(vstore.WindowVectors.unpack(wid, raw), record):
            continue  # already embedded (a replay after validate)
        ref = (record["documentId"], int(record["version"]))
        try:
            if ref not in manifests:
                manifests[ref] = reader.manifest(*ref)
            texts = window_texts(reader, record, mode, manifests[ref])
        except (NotFound, CorruptRecord):
            continue  # forgotten while we looked: nothing to embed
        todo.append((wid, record, texts))
    return todo


def embed_pending(
    store: Store,
    reader: Reader,
    max_windows: int = BATCH_WINDOWS,
    *,
    embedder: Embedder,
    mode: str = DEFAULT_MODE,
    cache: VectorCache | None = None,
    timeout: float | None = None,
    between_groups: Callable[[], object] | None = None,
) -> int:
    """Embed up to ``max_windows`` published windows not passed yet, newest first (the top of
    the highest gap, :func:`~cwcore.semantic.store.next_chunk`); returns windows passed (0 when
    nothing is pending). Windows whose texts already have a vector in the content table (a
    rebuild's renumbered windows, repeated texts) cost no model time: while a step finds only
    such windows it goes on, up to :data:`CACHED_STEP_WINDOWS`. Raises a categorized
    ModelUnavailable when the model fails; nothing is committed then, so the next call retries
    the same windows. ``between_groups`` is called before each inference group
    (:meth:`Embedder.embed`). When every window has been passed after a validation, content
    entries no window references any more are swept."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    started = time.monotonic()
    with store.lock:
        st = prepare(store, embedder, mode)
        max_wid = int(derived.generation(store).get("maxWid", 0))
        st = _check_renumbered(store, st, max_wid)
    before = vstore.done_ranges(st)
    ranges = list(before)
    content = vstore.ContentTable(store)
    manifests: dict[tuple[str, int], Manifest] = {}
    todo: list[tuple[int, StoredWindow, list[str]]] = []
    scanned = 0
    while scanned < CACHED_STEP_WINDOWS:
        chunk = vstore.next_chunk(ranges, max_wid, max_windows)
        if chunk is None:
            break
        lo, hi = chunk
        part = _read_chunk(store, reader, list(range(lo, hi + 1)), mode, manifests)
        todo.extend(part)
        ranges = vstore.add_range(ranges, lo, hi)
        scanned += hi - lo + 1
        digests = list(dict.fromkeys(embedder.digest(t) for _, _, texts in part for t in texts))
        if any(v is None for v in content.get_many(digests)):
            break  # this chunk needs the model: embed it now
    if not scanned:
        if st.get("sweep"):
            with store.lock:
                vstore.sweep(store)
                st = vstore.state(store)
                vstore.commit_windows(store, [], {**st, "sweep": False})
        return 0
    flat = [t for _, _, texts in todo for t in texts]
    kwargs: dict[str, Any] = {"cache": ChainCache(content, cache)}
    if between_groups is not None:
        kwargs["between_groups"] = between_groups
    if timeout is not None:
        kwargs["timeout"] = timeout
    vectors = embedder.embed(flat, **kwargs) if flat else np.zeros((0, vstore.DIM), np.float32)
    items = []
    pos = 0
    for wid, record, texts in todo:
        n = len(texts)
        items.append(
            vstore.WindowVectors(
                wid,
                int(record["ordinal"]),
                int(record["byteStart"]),
                int(record["byteEnd"]),
                [embedder.digest(t) for t in texts],
                vectors[pos : pos + n].astype(np.float16),
            )
        )
        pos += n
    elapsed = max(time.monotonic() - started, 1e-3)
    with store.lock:
        now = vstore.state(store)
        if (
            vstore.done_ranges(now) != before
            or now.get("epoch") != st.get("epoch")
            or now.get("model") != embedder.model_id
        ):
            return 0  # someone else advanced or reset meanwhile: drop this batch
        rate = scanned / elapsed
        old = now.get("rate")
        new_state = {
            **now,
            "cursor": ranges[-1][1],
            "done": [list(r) for r in ranges],
            "windows": int(now.get("windows", 0)) + len(items),
            "rows": int(now.get("rows", 0)) + pos,
            "rate": round(rate if not old else (1 - RATE_WEIGHT) * old + RATE_WEIGHT * rate, 3),
        }
        vstore.commit_windows(store, items, new_state, content)
    return scanned


def status(store: Store, *, enabled: bool = True) -> SemanticProgress:
    """For ``cw index status``: embedded windows, pending windows, model and mode, what search
    uses, and the handler's pace. A few point reads (the handler state, the published generation,
    the vectors at the ends of the passed ranges and their windows), never a scan.

    ``state`` is ``disabled`` (semanticRetrieval off), ``waiting`` (nothing embedded yet: search
    is lexical only), ``embedding`` (search uses the vectors embedded so far: ``partial``),
    ``complete`` (every published window is embedded) or ``revalidating`` (a rebuild renumbered
    the windows after these vectors were made: none counts as embedded until the handler's next
    step has checked them again). ``cursor`` counts the windows the handler has passed (newest
    first, so it is a count, not a wid) and ``progress`` is their share of the published
    windows (retired and empty windows are passed without a vector); ``embedded`` never exceeds
    ``total``. ``rate`` is the handler's smoothed pace while it runs (windows/s) and ``eta_s``
    the time left at that pace (None when unknown or nothing is pending); neither counts time
    the daemon is not running."""
    st = vstore.state(store)
    max_wid = int(derived.generation(store).get("maxWid", 0))
    # The handler's own staleness test: until it has run, the stored counts describe another
    # numbering of the windows.
    stale = _stale(store, st, max_wid)
    done = 0 if stale else vstore.passed(vstore.done_ranges(st), max_wid)
    pending = max(0, max_wid - done)
    rows = 0 if stale else int(st.get("rows", 0))
    embedded = 0 if stale else min(int(st.get("windows", 0)), done)
    if not enabled:
        state = "disabled"
    elif stale:
        state = "revalidating"
    elif not pending:
        state = "complete"
    elif not rows:
        state = "waiting"
    else:
        state = "embedding"
    rate = float(st["rate"]) if st.get("rate") else None
    eta = round(pending / rate, 1) if rate and pending and enabled else None
    return SemanticProgress(
        embedded=embedded,
        rows=rows,
        pending=pending,
        cursor=done,
        max_wid=max_wid,
        total=max_wid,
        progress=round(done / max_wid, 4) if max_wid else (0.0 if stale else 1.0),
        state=state,
        partial=state in ("embedding", "revalidating"),
        model=st.get("model"),
        mode=st.get("mode") or DEFAULT_MODE,
        rate=rate,
        eta_s=eta,
    )

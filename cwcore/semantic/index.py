"""The semantic index handler: embed published windows that have no vector yet, in wid order.

:func:`embed_pending` is one bounded step (the daemon's worker calls it repeatedly; the eval
calls it until it returns 0). It reads the published generation, takes up to ``max_windows``
windows after the cursor (``wid <= maxWid`` only, so unpublished work stays invisible), skips
retired and forgotten ones, embeds their text and commits rows + cursor in one batch.

Two ways to turn a window into vectors (``mode``), measured on LongMemEval (docs/evaluation.md):

* ``window`` — the window's text, truncated by the model to its first 256 tokens: one row.
* ``message`` — each message (manifest part) the window covers, clipped to the window, each
  truncated to 256 tokens: one row per message (at most :data:`MAX_ROWS`); a window's cosine is
  its best row's.

:data:`DEFAULT_MODE` is the one the evaluation chose. Changing the model or the mode clears the
stored vectors (they are not comparable) and starts over from wid 1.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from cwcore.errors import CorruptRecord, NotFound
from cwcore.index import derived
from cwcore.index.results import SemanticProgress
from cwcore.semantic import store as vstore
from cwcore.semantic.embedder import ChainCache, Embedder, VectorCache, clip
from cwcore.store import keys
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store

MODES = ("window", "message")
DEFAULT_MODE = "window"
MAX_ROWS = 16
BATCH_WINDOWS = 64
STEP_WINDOWS = 16  # one daemon worker step: a few seconds of CPU at 256 tokens


def window_texts(
    reader: Reader, record: dict[str, Any], mode: str, manifest: dict[str, Any] | None = None
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
    """Detect a rebuild cheaply (the cursor's own window changed) and validate if so."""
    cursor = int(st.get("cursor", 0))
    if cursor == 0:
        return st
    stale = cursor > max_wid
    if not stale:
        last = vstore.get(store, cursor)
        stale = last is not None and not vstore.matches(last, derived.window_record(store, cursor))
    if stale:
        vstore.validate(store)
        st = vstore.state(store)
    return st


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
    """Embed up to ``max_windows`` published windows after the cursor; returns windows done
    (0 when nothing is pending). Raises a categorized ModelUnavailable when the model fails;
    nothing is committed then, so the next call retries the same windows. ``between_groups``
    is called before each inference group (:meth:`Embedder.embed`)."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    with store.lock:
        st = prepare(store, embedder, mode)
        max_wid = int(derived.generation(store).get("maxWid", 0))
        st = _check_renumbered(store, st, max_wid)
        cursor = int(st.get("cursor", 0))
    if cursor >= max_wid:
        return 0
    wids = list(range(cursor + 1, min(max_wid, cursor + max_windows) + 1))
    records = derived.window_records(store, wids)
    existing = store.get_many(vstore.FAMILY, [vstore.VECTOR.encode(w) for w in wids])
    dead = _dead_ordinals(store, [int(r["ordinal"]) for r in records if r is not None])
    manifests: dict[tuple[str, int], dict[str, Any]] = {}
    todo: list[tuple[int, dict[str, Any], list[str]]] = []
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
    content = vstore.ContentTable(store)
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
    with store.lock:
        st = vstore.state(store)
        if int(st.get("cursor", 0)) != cursor or st.get("model") != embedder.model_id:
            return 0  # someone else advanced or reset meanwhile: drop this batch
        new_state = {
            **st,
            "cursor": wids[-1],
            "windows": int(st.get("windows", 0)) + len(items),
            "rows": int(st.get("rows", 0)) + pos,
        }
        vstore.commit_windows(store, items, new_state, content)
    return len(wids)


def status(store: Store, *, enabled: bool = True) -> SemanticProgress:
    """For ``cw index status``: embedded windows, pending windows, model and mode, and what
    search uses. Two point reads (the handler state and the published generation), no scan.

    ``state`` is ``disabled`` (semanticRetrieval off), ``waiting`` (nothing embedded yet: search
    is lexical only), ``embedding`` (search uses the vectors embedded so far: ``partial``),
    ``complete`` (every published window is embedded) or ``revalidating`` (a rebuild renumbered
    the windows after these vectors were made: none counts as embedded until the handler's next
    step has checked them again). ``progress`` is the share of published windows the handler
    has passed (retired and empty windows are passed without a vector); ``embedded`` never
    exceeds ``total``."""
    st = vstore.state(store)
    max_wid = int(derived.generation(store).get("maxWid", 0))
    stored = int(st.get("cursor", 0))
    # The handler's own staleness test (its cursor's window changed or is gone), two point
    # reads: until it has run, the stored counts describe another numbering of the windows.
    stale = stored > max_wid
    if not stale and stored:
        last = vstore.get(store, stored)
        stale = last is not None and not vstore.matches(last, derived.window_record(store, stored))
    cursor = 0 if stale else min(stored, max_wid)
    pending = max(0, max_wid - cursor)
    rows = 0 if stale else int(st.get("rows", 0))
    embedded = 0 if stale else min(int(st.get("windows", 0)), cursor)
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
    return SemanticProgress(
        embedded=embedded,
        rows=rows,
        pending=pending,
        cursor=cursor,
        max_wid=max_wid,
        total=max_wid,
        progress=round(cursor / max_wid, 4) if max_wid else (0.0 if stale else 1.0),
        state=state,
        partial=state in ("embedding", "revalidating"),
        model=st.get("model"),
        mode=st.get("mode") or DEFAULT_MODE,
    )

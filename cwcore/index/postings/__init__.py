"""Persisted BM25 postings: immutable segments of per-term blocks, a manifest, tiered merges.

Layout (see ``docs/postings.md`` for the full description and the measured numbers):

* A **segment** is a batch of indexed documents written once and never changed. For each term it
  holds one *term entry* ``TERM(generation, segment, digest)`` whose value starts with the term's
  segment statistics (df, max tf, min document length) and then either carries the postings
  inline (df ≤ :data:`INLINE_POSTINGS`) or a directory of blocks ``BLOCK(generation, segment,
  digest, n)`` of at most :data:`BLOCK_POSTINGS` postings each.
* A **posting** is ``(ordinal, tf, dl)``: the document's uint32 ordinal, its BM25F-weighted term
  frequency and its weighted length. Carrying ``dl`` in every posting (1–2 bytes in practice)
  spares a per-document length lookup at query time.
* Block values are columnar: sorted ordinals (raw uint32, or uint8/uint16 deltas), then tf, then
  dl, each in the narrowest exact encoding (uint8/uint16/uint32 fixed point with a power-of-two
  scale, else float32/float64). Decoding is ``np.frombuffer`` plus at most a cumulative sum and a
  cast — never a per-posting Python loop. RocksDB compresses the SST blocks with zstd.
* The **manifest** ``MANIFEST(generation)`` lists the live segments and the corpus statistics
  BM25 needs: live document count and live total length. It is switched atomically, in the same
  WriteBatch as the segment it publishes (flush) or the segments it replaces (merge).
* ``DOC(generation, ordinal)`` records each indexed document (weighted length, state, number of
  terms): flushes skip ordinals already indexed (idempotent replay) and :meth:`PostingIndex.retire`
  subtracts a retired document from the statistics exactly once.
* ``RETIRED(generation)`` is the sorted uint32 array of retired ordinals whose postings are still
  physically present; readers hide them and merges drop them.

Document frequency is the sum of per-segment df over the live segments minus the retired ordinals
found in the term's postings, so after :meth:`PostingIndex.retire` the statistics are exact. A
query-time ``dead`` mask (tombstones not yet retired, scope filters) only hides hits; it does not
change N, avgdl or df, the way Lucene counts deleted documents until a merge.

One :class:`PostingIndex` per store and generation per process: writers and the merger serialize
on ``store.lock``; readers take no lock and retry when the manifest changes under them.

Modules: :mod:`.codec` (block and term-entry encodings), :mod:`.layout` (keys, manifest, segment
records), :mod:`.writer` (:class:`PostingWriter`, flushes), :mod:`.reader` (:class:`PostingReader`:
plan, fetch, lookup, views), :mod:`.merge` (tiered merges), :mod:`.index` (:class:`PostingIndex`:
state, retirement, recovery), :mod:`.tuning` (the knobs). Import from the package.
"""

from __future__ import annotations

import sys
import types
from typing import Any

from cwcore.index.postings import tuning
from cwcore.index.postings.codec import (
    BlockView,
    F64Array,
    Postings,
    TermEntry,
    U32Array,
    decode_block,
    decode_entry,
    encode_block,
    encode_entry,
    value_codec,
    view_block,
)
from cwcore.index.postings.index import PostingIndex
from cwcore.index.postings.layout import (
    BLOCK,
    DOC,
    MANIFEST,
    POSTINGS_CF,
    RETIRED,
    STATS_CF,
    TERM,
    FlushResult,
    Manifest,
    MergeResult,
    Segment,
    Snapshot,
    block_key,
    doc_key,
    stats_of,
    term_digest,
    term_key,
)
from cwcore.index.postings.reader import (
    ManifestChanged,
    MemoReader,
    PostingReader,
    TermPlan,
    retired_in,
)
from cwcore.index.postings.tuning import (
    BLOCK_POSTINGS,
    FLUSH_DOCS,
    FLUSH_POSTINGS,
    INLINE_POSTINGS,
    MERGE_BATCH_BYTES,
    MERGE_FACTOR,
)
from cwcore.index.postings.writer import PostingWriter

__all__ = [
    "BLOCK",
    "BLOCK_POSTINGS",
    "DOC",
    "FLUSH_DOCS",
    "FLUSH_POSTINGS",
    "INLINE_POSTINGS",
    "MANIFEST",
    "MERGE_BATCH_BYTES",
    "MERGE_FACTOR",
    "POSTINGS_CF",
    "RETIRED",
    "STATS_CF",
    "TERM",
    "BlockView",
    "F64Array",
    "FlushResult",
    "Manifest",
    "ManifestChanged",
    "MemoReader",
    "MergeResult",
    "PostingIndex",
    "PostingReader",
    "PostingWriter",
    "Postings",
    "Segment",
    "Snapshot",
    "TermEntry",
    "TermPlan",
    "U32Array",
    "block_key",
    "decode_block",
    "decode_entry",
    "doc_key",
    "encode_block",
    "encode_entry",
    "retired_in",
    "stats_of",
    "term_digest",
    "term_key",
    "tuning",
    "value_codec",
    "view_block",
]


class _Package(types.ModuleType):
    """This package's module type: setting a tuning knob on it (``postings.BLOCK_POSTINGS = 10``,
    as the tests do with ``monkeypatch``) also sets it in :mod:`.tuning`, where the code reads it
    at call time. Without this, the write would only rebind the name re-exported here."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in tuning.NAMES:
            setattr(tuning, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

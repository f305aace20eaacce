"""Writing segments: :class:`PostingWriter` buffers documents and flushes each batch of them as
one immutable segment in one WriteBatch (term entries, blocks, ``DOC`` records, the manifest)."""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from cwcore.index.postings import tuning
from cwcore.index.postings.codec import (
    _BLOCK_HEAD,
    _BLOCK_V1,
    _ENTRY_HEAD,
    _ENTRY_V1,
    _INLINE,
    _KIND_DTYPES,
    _MAX_ORDINAL,
    _ORD_RAW,
    _U32,
    F64Array,
    Postings,
    U32Array,
    _encode_values,
    _padded,
    encode_block,
    encode_entry,
    value_codec,
)
from cwcore.index.postings.layout import (
    _BE32,
    _BLOCK_HEAD_KEY,
    _DOC_REC,
    _DOC_V1,
    _LIVE,
    POSTINGS_CF,
    STATS_CF,
    TERM,
    FlushResult,
    Manifest,
    Segment,
    doc_key,
    term_digest,
)
from cwcore.store.rocks import Batch

if TYPE_CHECKING:
    from cwcore.index.postings.index import PostingIndex


def _write_term(
    batch: Batch,
    key_prefix: bytes,
    digest: bytes,
    postings: Postings,
    codecs: tuple[int, int] | None = None,
) -> None:
    """Write one term's postings in one segment (``key_prefix`` = ``TERM.prefix(gen, seg)``)."""
    ordinals, tf, dl = postings
    stats = (len(ordinals), float(tf.max()), float(dl.min()))
    tf_codec, dl_codec = codecs if codecs is not None else (None, None)
    if len(ordinals) <= tuning.INLINE_POSTINGS:
        batch.put(
            POSTINGS_CF,
            key_prefix + digest,
            encode_entry(stats, encode_block(*postings, tf_codec, dl_codec), ()),
        )
        return
    size = tuning.BLOCK_POSTINGS
    blocks = [
        Postings(ordinals[i : i + size], tf[i : i + size], dl[i : i + size])
        for i in range(0, len(ordinals), size)
    ]
    block_prefix = _BLOCK_HEAD_KEY + key_prefix[2:] + digest
    for number, block in enumerate(blocks):
        batch.put(POSTINGS_CF, block_prefix + _BE32.pack(number), encode_block(*block))
    batch.put(POSTINGS_CF, key_prefix + digest, encode_entry(stats, None, blocks))


class PostingWriter:
    """Buffers documents and flushes them as one segment, in bounded memory.

    ``add`` takes a document's ordinal, its ``{term: weighted tf}`` and its weighted length; a
    flush happens automatically past ``max_docs`` documents or ``max_postings`` postings, and
    :meth:`flush` publishes what is buffered. Buffered documents are not searchable until flushed.
    """

    def __init__(
        self,
        index: PostingIndex,
        *,
        max_docs: int = tuning.FLUSH_DOCS,
        max_postings: int = tuning.FLUSH_POSTINGS,
    ) -> None:
        self.index = index
        self.max_docs = max_docs
        self.max_postings = max_postings
        self.flushed: list[FlushResult] = []
        self._reset()

    def _reset(self) -> None:
        self._vocab: dict[str, int] = {}
        self._terms: list[str] = []
        self._tids = array("I")
        self._tfs = array("d")
        self._doc_ords = array("I")
        self._doc_lens = array("d")
        self._doc_terms = array("I")
        self._seen: set[int] = set()

    @property
    def pending_docs(self) -> int:
        return len(self._doc_ords)

    def add(self, ordinal: int, tfs: Mapping[str, float], doc_len: float) -> None:
        """Buffer one document. ``tfs`` values must be finite and > 0; ``doc_len`` finite, > 0
        when there are terms, and ≥ 0 otherwise (an empty document still counts in N).
        Raises ValueError on a bad document and on an ordinal already buffered."""
        if not 0 <= ordinal <= _MAX_ORDINAL:
            raise ValueError(f"ordinal {ordinal} is not a uint32")
        if ordinal in self._seen:
            raise ValueError(f"ordinal {ordinal} is already buffered")
        values = tfs.values()
        if tfs and not (min(values) > 0 and math.isfinite(sum(values))):
            raise ValueError(f"ordinal {ordinal}: term frequencies must be finite and > 0")
        if not math.isfinite(doc_len) or doc_len < 0 or (tfs and doc_len <= 0):
            raise ValueError(f"ordinal {ordinal}: bad document length {doc_len}")
        vocab = self._vocab
        try:
            ids = [vocab[term] for term in tfs]
        except KeyError:  # new terms: give them ids, then map again
            terms = self._terms
            for term in tfs:
                if term not in vocab:
                    vocab[term] = len(terms)
                    terms.append(term)
            ids = [vocab[term] for term in tfs]
        self._tids.extend(ids)
        self._tfs.extend(values)
        self._seen.add(ordinal)
        self._doc_ords.append(ordinal)
        self._doc_lens.append(float(doc_len))
        self._doc_terms.append(len(tfs))
        if len(self._doc_ords) >= self.max_docs or len(self._tids) >= self.max_postings:
            self.flush()

    def flush(self, batch: Batch | None = None) -> FlushResult | None:
        """Write the buffered documents as one segment in one WriteBatch; None if empty.

        With ``batch``, the segment and the manifest are staged into the caller's batch and the
        caller commits (the indexer publishes them together with its generation)."""
        if not self._doc_ords:
            return None
        index, store = self.index, self.index.store
        doc_ords = np.frombuffer(self._doc_ords, dtype=np.uint32)
        doc_lens = np.frombuffer(self._doc_lens, dtype=np.float64)
        doc_terms = np.frombuffer(self._doc_terms, dtype=np.uint32)
        tids = np.frombuffer(self._tids, dtype=np.uint32)
        tfs = np.frombuffer(self._tfs, dtype=np.float64)
        doc_keys = [doc_key(index.generation, o) for o in doc_ords.tolist()]
        with store.lock:
            manifest = Manifest.decode(index.manifest_raw())
            fresh = np.array(
                [raw is None for raw in store.get_many(STATS_CF, doc_keys)], dtype=bool
            )
            skipped = int((~fresh).sum())
            post_fresh = np.repeat(fresh, doc_terms)
            ords = np.repeat(doc_ords, doc_terms)[post_fresh]
            dls = np.repeat(doc_lens, doc_terms)[post_fresh]
            tids, tfs = tids[post_fresh], tfs[post_fresh]
            own = batch is None
            if batch is None:
                batch = store.batch()
            segment_id = None
            if len(ords):
                segment_id = manifest.next_segment
                manifest.next_segment += 1
                self._write_segment(batch, segment_id, ords, tids, tfs, dls)
            n_docs = int(fresh.sum())
            length = float(doc_lens[fresh].sum())
            for key, dl, nterms, ok in zip(
                doc_keys, doc_lens.tolist(), doc_terms.tolist(), fresh.tolist(), strict=True
            ):
                if ok:
                    batch.put(STATS_CF, key, _DOC_REC.pack(_DOC_V1, _LIVE, dl, nterms))
            if n_docs:
                kept = doc_ords[fresh]
                if segment_id is not None:
                    manifest.segments.append(
                        Segment(
                            segment_id, n_docs, len(ords), length, int(kept.min()), int(kept.max())
                        )
                    )
                manifest.live_docs += n_docs
                manifest.live_length += length
                manifest.max_ordinal = max(manifest.max_ordinal, int(kept.max()))
                index._put_manifest(batch, manifest)
                if own:
                    store.commit(batch)
        result = FlushResult(segment_id, n_docs, len(ords), skipped)
        self.flushed.append(result)
        self._reset()
        return result

    def _write_segment(
        self,
        batch: Batch,
        segment_id: int,
        ords: U32Array,
        tids: U32Array,
        tfs: F64Array,
        dls: F64Array,
    ) -> None:
        order = np.lexsort((ords, tids))
        ords, tids, tfs, dls = ords[order], tids[order], tfs[order], dls[order]
        starts = np.flatnonzero(np.concatenate(([True], tids[1:] != tids[:-1])))
        ends = np.append(starts[1:], len(tids))
        # Inline entries are sliced out of segment-wide encoded columns: one numpy pass for the
        # whole segment instead of several per term (most terms of a segment are short).
        tf_codec, dl_codec = value_codec(tfs), value_codec(dls)
        ord_bytes = ords.astype(_U32).tobytes()
        tf_bytes = _encode_values(tfs, tf_codec)
        dl_bytes = _encode_values(dls, dl_codec)
        tf_size = _KIND_DTYPES[tf_codec >> 4].itemsize
        dl_size = _KIND_DTYPES[dl_codec >> 4].itemsize
        max_tf = np.maximum.reduceat(tfs, starts).tolist()
        min_dl = np.minimum.reduceat(dls, starts).tolist()
        firsts = ords[starts].tolist()
        prefix = TERM.prefix(self.index.generation, segment_id)
        terms = self._terms
        put = batch.put
        entry_head, block_head = _ENTRY_HEAD.pack, _BLOCK_HEAD.pack
        rows = zip(
            tids[starts].tolist(),
            starts.tolist(),
            ends.tolist(),
            max_tf,
            min_dl,
            firsts,
            strict=True,
        )
        inline_max = tuning.INLINE_POSTINGS
        for tid, start, end, top_tf, low_dl, first in rows:
            digest = term_digest(terms[tid])
            n = end - start
            if n > inline_max:
                postings = Postings(ords[start:end], tfs[start:end], dls[start:end])
                _write_term(batch, prefix, digest, postings)
                continue
            value = b"".join(
                (
                    entry_head(_ENTRY_V1, _INLINE, 0, n, top_tf, low_dl),
                    block_head(_BLOCK_V1, _ORD_RAW, tf_codec, dl_codec, n, first),
                    ord_bytes[4 * start : 4 * end],
                    _padded(tf_bytes[tf_size * start : tf_size * end]),
                    _padded(dl_bytes[dl_size * start : dl_size * end]),
                )
            )
            put(POSTINGS_CF, prefix + digest, value)

"""Where the posting layout sits in RocksDB: key layouts, the manifest and its records.

* ``TERM(generation, segment, digest)`` → term entry, ``BLOCK(generation, segment, digest, n)``
  → block of postings (postings CF). Segment-first order lets a merge delete a whole segment
  with two range tombstones.
* ``MANIFEST(generation)`` → :class:`Manifest`: the live segments and the corpus statistics.
* ``DOC(generation, ordinal)`` → indexed document record (:data:`_DOC_REC`).
* ``RETIRED(generation)`` → sorted uint32 ordinals retired but still present in segments.
"""

from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass, field
from typing import Any

from cwcore.errors import CorruptRecord
from cwcore.index.postings import tuning
from cwcore.index.postings.codec import U32Array
from cwcore.store import codec, keys

# --- Layouts (tags 0x90-0x9F, registered in cwcore.store.keys). --------------------------------

#: postings CF: generation, segment, term digest -> term entry.
TERM = keys.BM25_TERM
#: postings CF: generation, segment, term digest, block number -> block of postings.
BLOCK = keys.BM25_BLOCK
#: stats CF: generation -> manifest (segments, live statistics).
MANIFEST = keys.BM25_MANIFEST
#: stats CF: generation, ordinal -> indexed document record.
DOC = keys.BM25_DOC
#: stats CF: generation -> sorted uint32 ordinals retired but still present in segments.
RETIRED = keys.BM25_RETIRED

POSTINGS_CF = "postings"
STATS_CF = "stats"

_DOC_V1 = 1
_DOC_REC = struct.Struct("<BBdI")  # version, state, weighted length, number of terms
_LIVE, _RETIRED = 0, 1


def term_digest(term: str) -> bytes:
    """The 16-byte key field naming ``term`` (BLAKE2b-128 of its UTF-8 bytes)."""
    return hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def term_key(generation: int, segment: int, digest: bytes) -> bytes:
    """``TERM.encode(generation, segment, digest)`` without the generic encoder's overhead."""
    return _TERM_HEAD + _GEN_SEG.pack(generation, segment) + digest


def block_key(generation: int, segment: int, digest: bytes, number: int) -> bytes:
    """``BLOCK.encode(generation, segment, digest, number)``, fast."""
    return _BLOCK_HEAD_KEY + _GEN_SEG.pack(generation, segment) + digest + _BE32.pack(number)


def doc_key(generation: int, ordinal: int) -> bytes:
    """``DOC.encode(generation, ordinal)``, fast."""
    return _DOC_HEAD_KEY + _BE32.pack(generation) + _BE32.pack(ordinal)


_TERM_HEAD = bytes((TERM.tag, TERM.version))
_BLOCK_HEAD_KEY = bytes((BLOCK.tag, BLOCK.version))
_DOC_HEAD_KEY = bytes((DOC.tag, DOC.version))
_GEN_SEG = struct.Struct(">IQ")
_BE32 = struct.Struct(">I")


# --- Manifest. ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """A live segment: ``docs`` indexed documents (retired ones included until merged away)."""

    id: int
    docs: int
    postings: int
    length: float
    min_ordinal: int
    max_ordinal: int

    @property
    def tier(self) -> int:
        """floor(log_MERGE_FACTOR(docs)): segments of one tier are merged together."""
        factor = tuning.MERGE_FACTOR
        return 0 if self.docs < factor else int(math.log(self.docs, factor) + 1e-9)


@dataclass
class Manifest:
    """The switchable state of one generation (``live_length``: sum of live weighted lengths)."""

    segments: list[Segment] = field(default_factory=list)
    next_segment: int = 1
    live_docs: int = 0
    live_length: float = 0.0
    max_ordinal: int = -1
    merging: list[int] = field(default_factory=list)  # segment ids being built by a merge

    def encode(self) -> bytes:
        return codec.encode_record(
            {
                "segments": [
                    [s.id, s.docs, s.postings, s.length, s.min_ordinal, s.max_ordinal]
                    for s in self.segments
                ],
                "next_segment": self.next_segment,
                "live_docs": self.live_docs,
                "live_length": self.live_length,
                "max_ordinal": self.max_ordinal,
                "merging": self.merging,
            }
        )

    @classmethod
    def decode(cls, raw: bytes | None) -> Manifest:
        if raw is None:
            return cls()
        body = codec.decode_record(raw, "bm25 manifest")
        try:
            return cls(
                segments=[
                    Segment(int(a), int(b), int(c), float(d), int(e), int(f))
                    for a, b, c, d, e, f in body["segments"]
                ],
                next_segment=int(body["next_segment"]),
                live_docs=int(body["live_docs"]),
                live_length=float(body["live_length"]),
                max_ordinal=int(body["max_ordinal"]),
                merging=[int(x) for x in body["merging"]],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptRecord(f"bm25 manifest: {exc}") from None

    @property
    def avgdl(self) -> float:
        return self.live_length / self.live_docs if self.live_docs else 0.0


@dataclass(frozen=True)
class Snapshot:
    """What one query reads: the manifest, the retired ordinals, and the raw manifest bytes."""

    manifest: Manifest
    retired: U32Array
    raw: bytes | None


@dataclass(frozen=True)
class FlushResult:
    segment: int | None
    docs: int
    postings: int
    skipped: int  # ordinals already indexed (an idempotent replay)


@dataclass(frozen=True)
class MergeResult:
    segment: int
    inputs: tuple[int, ...]
    docs: int
    postings: int
    dropped_postings: int
    dropped_docs: int


def stats_of(manifest: Manifest) -> dict[str, Any]:
    """A JSON-ready summary for ``cw index status`` and benchmarks."""
    return {
        "segments": len(manifest.segments),
        "tiers": sorted({s.tier for s in manifest.segments}),
        "live_docs": manifest.live_docs,
        "avgdl": round(manifest.avgdl, 3),
        "postings": sum(s.postings for s in manifest.segments),
    }

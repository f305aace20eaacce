"""Tuning of the posting layout (documented in ``docs/postings.md``).

The other modules read these as ``tuning.NAME`` when they run, never as copies taken at import,
and setting one on the package (``postings.BLOCK_POSTINGS = 10``, as tests do) sets it here: see
``postings/__init__.py``.
"""

from __future__ import annotations

#: Postings per block: a common term's list is split so values stay well below a MiB and a
#: budgeted query can read only the newest blocks.
BLOCK_POSTINGS = 16384
#: A term with at most this many postings in a segment is stored inside its term entry.
INLINE_POSTINGS = 64
#: A flush happens when the writer buffers this many documents or postings (bounded memory).
FLUSH_DOCS = 8192
FLUSH_POSTINGS = 262_144
#: Segments of one tier merged together; tier = floor(log_MERGE_FACTOR(docs)).
MERGE_FACTOR = 8
#: A merge commits its new segment in WriteBatches of about this many bytes.
MERGE_BATCH_BYTES = 4 << 20

#: The names above: what ``postings/__init__.py`` forwards.
NAMES = frozenset(
    (
        "BLOCK_POSTINGS",
        "INLINE_POSTINGS",
        "FLUSH_DOCS",
        "FLUSH_POSTINGS",
        "MERGE_FACTOR",
        "MERGE_BATCH_BYTES",
    )
)

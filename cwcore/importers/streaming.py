"""Streamed import of one large file: a session arrives in chunks, each admitted and released.

An importer may offer ``stream(path, *, project=None)`` beside ``parse``: an iterator of
:class:`SessionChunk` and :class:`LineProblem` items, in file order. The pipeline admits each chunk
as it comes, so memory is bounded by a chunk (about :data:`CHUNK_BYTES` of source lines, or one
turn when a turn is larger), not by the file. Importers without ``stream`` keep returning a whole
:class:`~cwcore.model.FileParse`.

The contract a streaming importer keeps, so a streamed import stores exactly the documents the
whole-file path stores (same ids, same content, same versions):

* a session's chunks are consecutive runs of its messages in file order, and every chunk after
  the first starts at a real user message that no later message of the session continues from
  before it (no branch, parent link or thinking anchor crosses the cut: see
  :func:`cwcore.importers.documents.build_documents`);
* each chunk's :class:`~cwcore.model.ParsedSession` carries the whole session's ``started`` and
  explicit ``title``, its own ``events`` (the chunk's source lines) and ``messages``;
* ``messages`` (the whole session's count of :func:`~cwcore.importers.documents.session_counts`)
  and ``title_messages`` (the few user messages a derived title can come from) describe the whole
  session on every chunk;
* identical source lines never appear in two chunks of a session (admission tells repeated lines
  apart by their occurrence within one call).
"""

from __future__ import annotations

import ctypes
import sys
from dataclasses import dataclass

from cwcore.model import Message, ParsedSession

#: Source bytes a chunk gathers before it is cut at the next safe turn boundary.
CHUNK_BYTES = 4 * 1024 * 1024
#: An import that read at least this many bytes hands freed heap back to the system after.
RELEASE_AFTER_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class SessionChunk:
    """A run of one session's messages and their source lines (see the module contract).
    ``index`` is 0 for the session's first chunk."""

    session: ParsedSession
    index: int
    messages: int
    title_messages: tuple[Message, ...] = ()


@dataclass(frozen=True)
class LineProblem:
    """A source line that could not be read (1-based ``line``), and why."""

    line: int
    reason: str


def release_freed_memory() -> bool:
    """Hand the heap that Python freed back to the system (glibc ``malloc_trim(0)``): glibc
    keeps freed memory in its arenas for reuse, so a daemon that imported a large file would
    otherwise stay at its peak until it restarts. Linux with glibc only; elsewhere (or when the
    C library has no ``malloc_trim``) nothing is done. Returns whether memory was released."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        trim = ctypes.CDLL(None).malloc_trim  # the C library the interpreter runs on
    except (OSError, AttributeError):  # musl and others: no malloc_trim
        return False
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return bool(trim(0))

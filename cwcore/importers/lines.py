"""Reading source files line by line with memory bounded by the line limit, not by the input.

:func:`iter_lines` yields every line of a binary file with its 1-based number. A line longer than
``limit`` bytes (:data:`~cwcore.store.limits.MAX_LINE_BYTES` by default; the newline is not
counted, a ``\\r`` before it is) is yielded as an :class:`Overlong` marker instead of its bytes: it
is read and dropped in blocks of :data:`BLOCK_BYTES`, so a file of one 512 MiB line costs about
``limit`` plus two blocks of memory, never the line. :func:`read_head` is the bounded head that
format sniffing looks at.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from cwcore.store.limits import MAX_LINE_BYTES

#: Bytes read per block.
BLOCK_BYTES = 1024 * 1024
#: Bytes per read while looking for the head: most heads are a few KiB.
HEAD_BLOCK_BYTES = 64 * 1024
#: How many leading lines sniffing receives.
SNIFF_LINES = 20
#: Most bytes sniffing reads from a file: one line at the line limit. Lines the budget cuts off
#: are not part of the head.
SNIFF_BYTES = MAX_LINE_BYTES


@dataclass(frozen=True)
class Overlong:
    """A line over the limit, skipped: its length in bytes (newline excluded)."""

    size: int

    def reason(self, limit: int = MAX_LINE_BYTES) -> str:
        return f"line is {self.size:,} bytes; the limit is {limit:,} (skipped)"


def iter_lines(
    fh: BinaryIO, limit: int = MAX_LINE_BYTES, block: int = BLOCK_BYTES
) -> Iterator[tuple[int, bytes | Overlong]]:
    """``(number, line)`` for every line of ``fh`` (newline stripped), or ``(number,
    Overlong)`` for a line over ``limit`` bytes. A last line without a newline is yielded too."""
    number = 0
    pending: list[bytes] = []  # pieces of the current line while it spans blocks
    size = 0  # bytes of the current line so far
    while chunk := fh.read(block):
        pieces = chunk.split(b"\n")
        for piece in pieces[:-1]:
            number += 1
            total = size + len(piece)
            if total > limit:
                yield number, Overlong(total)
            elif pending:
                pending.append(piece)
                yield number, b"".join(pending)
            else:
                yield number, piece
            pending, size = [], 0
        tail = pieces[-1]
        size += len(tail)
        if size > limit:
            pending = []  # over the limit: only its length is kept from here on
        elif tail:
            pending.append(tail)
    if size:
        yield number + 1, Overlong(size) if size > limit else b"".join(pending)


def read_head(path: Path, lines: int = SNIFF_LINES, budget: int = SNIFF_BYTES) -> list[bytes]:
    """The first ``lines`` complete lines of ``path`` (``\\r\\n`` stripped) found in its first
    ``budget`` bytes. Reads in small blocks and stops as soon as it has them; a line the budget
    cuts off is left out, so at most ``budget`` bytes are read or held."""
    out: list[bytes] = []
    pending = bytearray()  # the line being read
    left = budget
    with path.open("rb") as fh:
        while len(out) < lines and left > 0:
            chunk = fh.read(min(HEAD_BLOCK_BYTES, left))
            if not chunk:
                if pending:
                    out.append(bytes(pending).rstrip(b"\r"))  # a last line without newline
                break
            left -= len(chunk)
            start = 0
            while len(out) < lines and (end := chunk.find(b"\n", start)) >= 0:
                pending += chunk[start:end]
                out.append(bytes(pending).rstrip(b"\r"))
                pending.clear()
                start = end + 1
            pending += chunk[start:]
    return out


def read_prefix(path: Path, limit: int = SNIFF_BYTES) -> bytes:
    """The first ``limit`` bytes of a file (empty when it cannot be read): what a sniffer of a
    one-object JSON format looks at."""
    try:
        with path.open("rb") as fh:
            return fh.read(limit)
    except OSError:
        return b""

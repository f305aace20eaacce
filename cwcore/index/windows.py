"""Search windows: token ranges of a document, derived per index generation.

A document of at most ``window_tokens`` tokens is one window; a longer one is cut into windows of
``window_tokens`` tokens overlapping by ``window_overlap`` of that (spec 003: about 900 tokens,
15 percent). Windows reference the document's text by character and UTF-8 byte offsets; they
never copy payload bytes. At most :data:`MAX_WINDOWS` windows are kept per document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cwcore.index.tokenize import Token

MAX_WINDOWS = 4096


@dataclass(frozen=True)
class Window:
    """One window: ``index`` within its document, token range, and text offsets.

    ``start``/``end`` are character offsets, ``byte_start``/``byte_end`` UTF-8 byte offsets into
    the document text; ``first_token``/``last_token`` index the document's token list
    (``last_token`` exclusive).
    """

    index: int
    first_token: int
    last_token: int
    start: int
    end: int
    byte_start: int
    byte_end: int


def byte_offsets(text: str, char_positions: Sequence[int]) -> dict[int, int]:
    """UTF-8 byte offset of each character position of ``text``, in one pass."""
    if text.isascii():
        return {p: p for p in char_positions}
    out: dict[int, int] = {}
    size = 0
    last = 0
    for pos in sorted(set(char_positions)):
        size += len(text[last:pos].encode("utf-8", "surrogatepass"))
        last = pos
        out[pos] = size
    return out


def cut(
    text: str, tokens: Sequence[Token], size: int = 900, overlap: float = 0.15
) -> tuple[list[Window], bool]:
    """Windows of ``text`` given its tokens; returns ``(windows, truncated)``.

    ``truncated`` is True when the document needed more than :data:`MAX_WINDOWS` windows and the
    tail was not windowed (the handler then reports ``partial``).
    """
    size = max(16, size)
    step = max(1, size - int(size * overlap))
    n = len(tokens)
    spans: list[tuple[int, int, int, int]] = []  # first token, last token, start, end
    if n <= size:
        spans.append((0, n, 0, len(text)))
    else:
        first = 0
        while first < n and len(spans) < MAX_WINDOWS:
            last = min(n, first + size)
            start = 0 if first == 0 else tokens[first][1]
            end = len(text) if last == n else tokens[last - 1][2]
            spans.append((first, last, start, end))
            if last == n:
                break
            first += step
    truncated = bool(spans) and spans[-1][1] < n
    offsets = sorted({p for _, _, s, e in spans for p in (s, e)})
    byte_at = byte_offsets(text, offsets)
    windows = [
        Window(i, f, last, s, e, byte_at[s], byte_at[e]) for i, (f, last, s, e) in enumerate(spans)
    ]
    return windows, truncated

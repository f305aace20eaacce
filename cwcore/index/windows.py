"""Search windows: token ranges of a document, derived per index generation.

A window holds at most ``window_tokens`` tokens (about 900) and at most ``max_unique`` distinct
terms (the BM25 analysis cap of 256 unique terms a window): text dense in distinct terms (code,
paths, tables) gets shorter windows, so every term of it stays findable and no window has to drop
terms. A document that fits both bounds is one window; a longer one is cut into windows that
overlap by ``window_overlap`` (15 percent) of the previous window's tokens. Windows reference the
document's text by character and UTF-8 byte offsets; they never copy payload bytes. At most
:data:`MAX_WINDOWS` windows are kept per document.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cwcore.text.tokenize import Token

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
    text: str,
    tokens: Sequence[Token],
    size: int = 900,
    overlap: float = 0.15,
    max_unique: int | None = None,
) -> tuple[list[Window], bool]:
    """Windows of ``text`` given its tokens; returns ``(windows, truncated)``.

    ``truncated`` is True when the document needed more than :data:`MAX_WINDOWS` windows and the
    tail was not windowed (the handler then reports ``partial``). ``max_unique``: the most
    distinct terms a window may hold (None: no bound).
    """
    size = max(16, size)
    n = len(tokens)
    spans: list[tuple[int, int, int, int]] = []  # first token, last token, start, end
    first = 0
    while True:
        last = _window_end(tokens, first, size, max_unique)
        start = 0 if first == 0 else tokens[first][1]
        end = len(text) if last == n else tokens[last - 1][2]
        spans.append((first, last, start, end))
        if last >= n or len(spans) >= MAX_WINDOWS:
            break
        first = max(first + 1, last - int((last - first) * overlap))
    truncated = spans[-1][1] < n
    offsets = sorted({p for _, _, s, e in spans for p in (s, e)})
    byte_at = byte_offsets(text, offsets)
    windows = [
        Window(i, f, last, s, e, byte_at[s], byte_at[e]) for i, (f, last, s, e) in enumerate(spans)
    ]
    return windows, truncated


def _window_end(tokens: Sequence[Token], first: int, size: int, max_unique: int | None) -> int:
    """Exclusive end of the window starting at token ``first``: ``first + size`` tokens, or
    earlier, at the first occurrence of the term that would be the ``max_unique + 1``-th
    distinct one."""
    limit = min(len(tokens), first + size)
    if max_unique is None or limit - first <= max_unique:
        return limit  # fewer tokens than the unique-term bound: it cannot bind
    terms = [t[0] for t in tokens[first:limit]]
    distinct = list(dict.fromkeys(terms))  # in order of first occurrence
    if len(distinct) <= max_unique:
        return limit
    return first + terms.index(distinct[max_unique])

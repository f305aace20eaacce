"""Match-centred snippets with highlight spans.

A snippet is a slice of a window's text of about :data:`SNIPPET_CHARS` characters centred on the
first match, widened to word boundaries, with ``…`` where it was cut. Highlights are
``[start, end]`` character offsets into the snippet. Snippets are archived text: faces quote them
as data and label them historical; the retriever never adds words of its own to them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

from cwcore.index.tokenize import fold, tokens_with_offsets

SNIPPET_CHARS = 280
ELLIPSIS = "…"


def term_spans(text: str, terms: Iterable[str], limit: int = 64) -> list[tuple[int, int]]:
    """Character spans in ``text`` where any of the search ``terms`` occurs as a word.

    A case-insensitive word-bounded regex finds them without tokenizing the whole window (the
    hot part of building snippets); only when it finds nothing — accents or CJK, where folding
    matters — does it fall back to the tokenizer's folded terms.
    """
    wanted = tuple(sorted({fold(t) for t in terms}, key=lambda t: (-len(t), t)))
    if not wanted:
        return []
    pattern = _pattern(wanted)
    spans = [m.span() for _, m in zip(range(limit), pattern.finditer(text), strict=False)]
    if spans:
        return spans
    folded = set(wanted)
    return [(s, e) for term, s, e in tokens_with_offsets(text) if term in folded][:limit]


@functools.lru_cache(maxsize=256)
def _pattern(terms: tuple[str, ...]) -> re.Pattern[str]:
    """One compiled word-bounded alternation per term set (all hits of a search share it)."""
    body = "|".join(map(re.escape, terms))
    return re.compile(r"(?<![^\W_])(?:" + body + r")(?![^\W_])", re.I)


def literal_spans(text: str, values: Iterable[str]) -> list[tuple[int, int]]:
    """Character spans of literal (case-sensitive) occurrences of ``values``."""
    spans: list[tuple[int, int]] = []
    for value in values:
        start = text.find(value)
        while start != -1 and len(spans) < 64:
            spans.append((start, start + len(value)))
            start = text.find(value, start + len(value))
    return sorted(spans)


def make_snippet(
    text: str, spans: list[tuple[int, int]], width: int = SNIPPET_CHARS
) -> tuple[str, list[list[int]]]:
    """``(snippet, highlights)`` centred on the first span (or the text's start)."""
    spans = sorted(spans)
    if len(text) <= width:
        lo, hi = 0, len(text)
    else:
        centre = (spans[0][0] + spans[0][1]) // 2 if spans else 0
        lo = max(0, min(centre - width // 2, len(text) - width))
        hi = min(len(text), lo + width)
        if lo > 0:
            space = text.rfind(" ", max(0, lo - 20), lo + 1)
            lo = space + 1 if space != -1 else lo
        if hi < len(text):
            space = text.find(" ", hi - 1, min(len(text), hi + 20))
            hi = space if space != -1 else hi
    body = text[lo:hi].strip()
    offset = lo + (len(text[lo:hi]) - len(text[lo:hi].lstrip()))
    prefix = ELLIPSIS if lo > 0 else ""
    suffix = ELLIPSIS if hi < len(text) else ""
    shift = len(prefix) - offset
    highlights = [
        [s + shift, e + shift] for s, e in spans if s >= offset and e <= offset + len(body)
    ]
    return prefix + body + suffix, highlights

"""Match-centred snippets with highlight spans.

A snippet is a slice of a window's text of about :data:`SNIPPET_CHARS` characters placed where
the matches are densest: of every slice that starts at a match, the one holding the most
distinct matched terms, each weighted by its IDF (so a rare query term outweighs a common one,
and one term repeated ten times counts once). It is widened to word boundaries, with ``…``
where it was cut. Highlights are ``[start, end]`` character offsets into the snippet.

Snippets are for reading in a list: runs of white space (newlines, tabs) become one space, and
the escapes of JSON text that tool payloads carry (``\\n``, ``\\t``, ``\\"``, ``\\\\``, ``\\/``,
``\\uXXXX``) read as the characters they stand for. Recall still returns the exact bytes.
Snippets are archived text: faces quote them as data and label them historical; the retriever
never adds words of its own to them.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from cwcore.index.tokenize import fold, tokens_with_offsets

SNIPPET_CHARS = 280
ELLIPSIS = "…"

Span = tuple[int, int]


def term_spans(text: str, terms: Iterable[str], limit: int = 64) -> list[Span]:
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


def literal_spans(text: str, values: Iterable[str]) -> list[Span]:
    """Character spans of literal (case-sensitive) occurrences of ``values``."""
    spans: list[Span] = []
    for value in values:
        start = text.find(value)
        while start != -1 and len(spans) < 64:
            spans.append((start, start + len(value)))
            start = text.find(value, start + len(value))
    return sorted(spans)


def densest(
    text: str, spans: list[Span], width: int, weights: Mapping[str, float] | None = None
) -> Span | None:
    """The extent of the best group of spans that fits in ``width`` characters: the group
    (spans from one start onwards that end within ``width``) with the largest sum of its
    distinct terms' weights (a term's weight from ``weights`` by folded text, else 1); ties go
    to the earliest. None without spans."""
    if not spans:
        return None
    ordered = sorted(spans)
    keys = [fold(text[s:e]) for s, e in ordered]
    best: tuple[float, int, int] | None = None  # (score, first, last)
    for i, (start, _) in enumerate(ordered):
        seen: set[str] = set()
        score = 0.0
        last = i
        for j in range(i, len(ordered)):
            if ordered[j][1] - start > width:
                break
            last = j
            if keys[j] not in seen:
                seen.add(keys[j])
                score += (weights or {}).get(keys[j], 1.0)
        if best is None or score > best[0] + 1e-9:
            best = (score, i, last)
    assert best is not None
    return ordered[best[1]][0], ordered[best[2]][1]


def make_snippet(
    text: str,
    spans: list[Span],
    width: int = SNIPPET_CHARS,
    weights: Mapping[str, float] | None = None,
) -> tuple[str, list[list[int]]]:
    """``(snippet, highlights)`` around the densest matches (or the text's start)."""
    spans = sorted(spans)
    if len(text) <= width:
        lo, hi = 0, len(text)
    else:
        group = densest(text, spans, width, weights)
        centre = (group[0] + group[1]) // 2 if group else 0
        lo = max(0, min(centre - width // 2, len(text) - width))
        hi = min(len(text), lo + width)
        if lo > 0:
            space = text.rfind(" ", max(0, lo - 20), lo + 1)
            lo = space + 1 if space != -1 else lo
        if hi < len(text):
            space = text.find(" ", hi - 1, min(len(text), hi + 20))
            hi = space if space != -1 else hi
    body, where = readable(text[lo:hi])
    prefix = ELLIPSIS if lo > 0 else ""
    suffix = ELLIPSIS if hi < len(text) else ""
    shift = len(prefix)
    highlights = []
    for s, e in spans:
        if s < lo or e > hi:
            continue
        a, b = where[s - lo], where[e - lo]
        if b > a:
            highlights.append([a + shift, b + shift])
    return prefix + body + suffix, highlights


_ESCAPES = {"n": " ", "t": " ", "r": " ", '"': '"', "\\": "\\", "/": "/", "b": "", "f": ""}
_HEX = frozenset("0123456789abcdefABCDEF")


def readable(text: str) -> tuple[str, list[int]]:
    """``text`` with white-space runs as one space, JSON escapes decoded and the ends trimmed,
    plus ``where``: for each offset ``i`` of ``text`` (and ``len(text)``), the offset in the
    result where that character's output begins (so spans map onto the result)."""
    out: list[str] = []
    where = [0] * (len(text) + 1)
    size = 0
    i = 0
    n = len(text)
    while i < n:
        ch = text[i]
        piece = ch
        step = 1
        if ch == "\\" and i + 1 < n:
            nxt = text[i + 1]
            if nxt in _ESCAPES:
                piece, step = _ESCAPES[nxt], 2
            elif nxt == "u" and i + 6 <= n and all(c in _HEX for c in text[i + 2 : i + 6]):
                code = int(text[i + 2 : i + 6], 16)
                piece = " " if chr(code).isspace() else chr(code)
                if 0xD800 <= code <= 0xDFFF:
                    piece = "\ufffd"
                step = 6
        if piece.isspace():
            piece = "" if (not out or out[-1] == " ") else " "
        for k in range(step):
            where[i + k] = size
        if piece:
            out.append(piece)
            size += len(piece)
        i += step
    where[n] = size
    # Trim a trailing space; a leading one cannot occur (spaces are never first).
    if out and out[-1] == " ":
        out.pop()
        size -= 1
        where = [min(w, size) for w in where]
    return "".join(out), where

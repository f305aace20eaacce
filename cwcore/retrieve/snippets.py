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

import bisect
import functools
import re
from collections.abc import Iterable, Mapping, Sequence

from cwcore.text.stems import PREFIX, is_prose, stem_term
from cwcore.text.tokenize import fold, tokens_with_offsets

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
    if text.isascii():
        # Most windows are ASCII: lowering keeps every offset, and a case-sensitive search with
        # ASCII word boundaries runs about twice as fast as the Unicode, case-folding pattern.
        plain = tuple(t for t in wanted if t.isascii())
        if not plain:
            return []
        low = text.lower()
        found = _found_spans(low, plain, limit)
        if found is not None:
            return found
        return [
            m.span()
            for _, m in zip(range(limit), _ascii_pattern(plain).finditer(low), strict=False)
        ]
    pattern = _pattern(wanted)
    spans = [m.span() for _, m in zip(range(limit), pattern.finditer(text), strict=False)]
    if spans:
        return spans
    folded = set(wanted)
    return [(s, e) for term, s, e in tokens_with_offsets(text) if term in folded][:limit]


def form_spans(text: str, stems: Iterable[str], limit: int = 64) -> list[Span]:
    """Character spans in ``text`` of the words whose stem term is one of ``stems``
    (:mod:`cwcore.text.stems`): the other forms of the query's words a search matched through
    their stems (``coach`` for ``coaching``). Found by the stem as a word prefix, then checked by
    stemming the word, so a form whose stem is not its prefix (``happy``, ``happi``) is not
    highlighted."""
    wanted = frozenset(stems)
    prefixes = tuple(sorted({s[len(PREFIX) :] for s in wanted}, key=lambda t: (-len(t), t)))
    if not prefixes:
        return []
    words: Iterable[Span]
    if text.isascii():
        low = text.lower()  # ASCII: the same offsets
        words = _prefixed_words(low, prefixes)
    else:
        low = text
        words = (m.span() for m in _form_pattern(prefixes).finditer(text))
    spans: list[Span] = []
    verdicts: dict[str, bool] = {}  # a window repeats its words: each is stemmed once
    for start, end in words:
        word = low[start:end].lower()
        ok = verdicts.get(word)
        if ok is None:
            ok = verdicts[word] = is_prose(word) and stem_term(word) in wanted
        if ok:
            spans.append((start, end))
            if len(spans) >= limit:
                break
    return spans


_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyz")


def _prefixed_words(low: str, prefixes: tuple[str, ...]) -> list[Span]:
    """What :func:`_form_pattern` finds in the lowered ASCII ``low``, by ``str.find`` per prefix
    (a dozen substring searches cost far less than the case-insensitive alternation tried at
    every position): the whole run of letters from a prefix that no letter or digit precedes,
    when no digit follows the run; in text order, each once."""
    size = len(low)
    found: set[Span] = set()
    for prefix in prefixes:
        at = low.find(prefix)
        while at != -1:
            if at == 0 or low[at - 1] not in _ALNUM:
                end = at + len(prefix)
                while end < size and low[end] in _LETTERS:
                    end += 1
                if end == size or low[end] not in _ALNUM:
                    found.add((at, end))
            at = low.find(prefix, at + 1)
    return sorted(found)


@functools.lru_cache(maxsize=256)
def _form_pattern(prefixes: tuple[str, ...]) -> re.Pattern[str]:
    body = "|".join(map(re.escape, prefixes))
    return re.compile(r"(?<![A-Za-z0-9])(?:" + body + r")[A-Za-z]*(?![A-Za-z0-9])", re.I)


def with_forms(spans: list[Span], forms: list[Span], limit: int = 64) -> list[Span]:
    """``spans`` and the ``forms`` that overlap none of them, in text order, at most ``limit``
    (a search term may hold a form: ``bug`` inside ``bug_report``)."""
    if not forms:
        return spans
    kept = sorted(spans)
    starts = [s for s, _ in kept]
    for start, end in forms:
        at = bisect.bisect_right(starts, start)
        if (at and kept[at - 1][1] > start) or (at < len(kept) and kept[at][0] < end):
            continue
        kept.insert(at, (start, end))
        starts.insert(at, start)
    return kept[:limit]


_ALNUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _found_spans(low: str, terms: tuple[str, ...], limit: int) -> list[Span] | None:
    """What :func:`_ascii_pattern` finds in ``low`` (``terms`` longest first), by ``str.find``
    per term: a window holds each query term a few times, and a dozen substring searches cost
    less than trying every alternative at every position. The pattern's rules, restated: an
    occurrence counts when no ASCII letter or digit touches either end; scanning left to right,
    the longest counting occurrence at a position wins and later ones may not overlap it; the
    first ``limit`` are kept. None when some term occurs more than ``limit`` times (then the
    pattern, which stops at ``limit``, is the cheaper scan)."""
    size = len(low)
    found: list[tuple[int, int]] = []  # (start, -length): longest first at one start
    for term in terms:
        length = len(term)
        at = low.find(term)
        seen = 0
        while at != -1:
            seen += 1
            if seen > limit:
                return None
            end = at + length
            if (at == 0 or low[at - 1] not in _ALNUM) and (end == size or low[end] not in _ALNUM):
                found.append((at, -length))
            at = low.find(term, at + 1)
    found.sort()
    spans: list[Span] = []
    last = 0
    for start, neg in found:
        if start < last:
            continue
        last = start - neg
        spans.append((start, last))
        if len(spans) >= limit:
            break
    return spans


@functools.lru_cache(maxsize=256)
def _ascii_pattern(terms: tuple[str, ...]) -> re.Pattern[str]:
    body = "|".join(map(re.escape, terms))
    return re.compile(r"(?<![A-Za-z0-9])(?:" + body + r")(?![A-Za-z0-9])")


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
    to the earliest. None without spans. One sliding pass over the sorted spans."""
    if not spans:
        return None
    ordered = sorted(spans)
    # ASCII text folds by lowering: lowered once, each span is a slice of it.
    low = text.lower() if text.isascii() else None
    keys = [low[s:e] if low is not None else fold(text[s:e]) for s, e in ordered]
    table = weights or {}
    weight = [table.get(k, 1.0) for k in keys]
    ends = [e for _, e in ordered]
    n = len(ordered)
    counts: dict[str, int] = {}
    best = (-1.0, 0, 0)  # (score, first, last)
    score = 0.0
    j = 0  # next span not yet in the group
    for i, (start, _) in enumerate(ordered):
        while j < n and (j == i or ends[j] - start <= width):
            key = keys[j]
            seen = counts.get(key, 0) + 1
            counts[key] = seen
            if seen == 1:
                score += weight[j]
            j += 1
        if score > best[0] + 1e-9:
            best = (score, i, j - 1)
        key = keys[i]
        counts[key] -= 1
        if not counts[key]:
            score -= weight[i]
    return ordered[best[1]][0], ordered[best[2]][1]


def outermost(spans: Iterable[Span]) -> list[Span]:
    """``spans`` sorted, without those inside another (a literal anchor ``bug_report`` inside
    ``bug_report.yml`` at the same place is one match, the longer one) or repeated."""
    out: list[Span] = []
    for s, e in sorted(spans, key=lambda span: (span[0], -span[1])):
        if out and e <= out[-1][1]:
            continue
        out.append((s, e))
    return out


def make_snippet(
    text: str,
    spans: list[Span],
    width: int = SNIPPET_CHARS,
    weights: Mapping[str, float] | None = None,
) -> tuple[str, list[list[int]]]:
    """``(snippet, highlights)`` around the densest matches (or the text's start). A span
    inside another is not a match of its own (:func:`outermost`): it neither pulls the window
    nor gets a highlight of its own. A matched word without a weight that holds another matched
    word (an anchor ``bug_report.yml`` and its stem ``bug_report``) weighs one and a half."""
    spans = outermost(spans)
    if len(text) <= width:
        lo, hi = 0, len(text)
    else:
        group = densest(text, spans, width, specific(text, spans, weights))
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
        a, b = where(s - lo), where(e - lo)
        if b > a:
            highlights.append([a + shift, b + shift])
    return prefix + body + suffix, highlights


def specific(
    text: str, spans: list[Span], weights: Mapping[str, float] | None = None
) -> dict[str, float]:
    """``weights`` (by folded text, as :func:`densest` reads them) plus, for each matched word
    it does not weigh, 1.5 when the word holds another matched word (the more specific match:
    ``bug_report.yml`` over the ``bug_report`` of a ``bug_report.md`` nearby), else 1."""
    low = text.lower() if text.isascii() else None
    keys = {low[s:e] if low is not None else fold(text[s:e]) for s, e in spans}
    out = dict(weights or {})
    for key in keys:
        if key not in out:
            out[key] = 1.0 + 0.5 * any(o != key and o in key for o in keys)
    return out


def focus(text: str, highlights: Iterable[Sequence[int]], width: int) -> Span:
    """The ``[lo, hi)`` slice of ``text``, at most ``width`` characters (at least 1), that a
    face with room for only ``width`` characters of a snippet shows: centred on the group of
    highlights with the most distinct highlighted words (case-folded; a word that holds another
    highlighted word counts one and a half, :func:`specific`; ties to the earliest group: the
    exact anchor or the densest cluster of query terms the snippet was cut around), moved in to
    word boundaries where that costs at most an eighth of ``width``. The whole text when it
    fits; ``(0, width)`` without highlights. Highlights longer than ``width`` count only when no
    other fits; then the first keeps its start in view."""
    width = max(1, width)
    size = len(text)
    if size <= width:
        return 0, size
    spans = outermost(
        (max(0, int(h[0])), min(size, int(h[1])))
        for h in highlights
        if len(h) == 2 and int(h[0]) < int(h[1])
    )
    # A highlight wider than the room is looked at only when no other one fits.
    fitting = [s for s in spans if s[1] - s[0] <= width] or spans
    group = densest(text, fitting, width, specific(text, fitting))
    if group is None:
        return 0, width
    first, last = group
    lo = first if last - first >= width else (first + last) // 2 - width // 2
    lo = max(0, min(lo, size - width, first))
    hi = min(size, lo + width)
    slack = width // 8
    if lo > 0:
        # Start after a space when one is near: the row then begins with a whole word.
        space = text.find(" ", lo, min(first, lo + slack))
        if space != -1:
            lo = space + 1
    if hi < size:
        space = text.rfind(" ", max(last, hi - slack), hi)
        if space != -1:
            hi = space
    return lo, hi


def fit_snippet(
    text: str,
    spans: list[Span],
    tokens: int,
    weights: Mapping[str, float] | None = None,
) -> tuple[str, list[list[int]]]:
    """The widest snippet (at most :data:`SNIPPET_CHARS` characters) whose conservative token
    estimate is at most ``tokens``; an empty snippet when even a few characters do not fit."""
    from cwcore.text.tokens import estimate

    snippet, highlights = make_snippet(text, spans, weights=weights)
    if estimate(snippet) <= tokens:
        return snippet, highlights
    lo, hi = 0, SNIPPET_CHARS  # the widest width known to fit, and one known not to
    best: tuple[str, list[list[int]]] = ("", [])
    while hi - lo > 4:
        mid = (lo + hi) // 2
        candidate = make_snippet(text, spans, width=mid, weights=weights)
        if estimate(candidate[0]) <= tokens:
            lo, best = mid, candidate
        else:
            hi = mid
    return best


_ESCAPES = {"n": " ", "t": " ", "r": " ", '"': '"', "\\": "\\", "/": "/", "b": "", "f": ""}
# What readable() rewrites: a JSON escape (a \uXXXX code or one of _ESCAPES) or a run of white
# space. Everything between two matches is copied as it is.
_REWRITE = re.compile(r'\\(?:u[0-9a-fA-F]{4}|[ntr"\\/bf])|\s*[^\S ]\s*| {2,}')


def _replacement(token: str) -> str:
    if token[0] != "\\":
        return " "
    if token[1] != "u":
        return _ESCAPES[token[1]]
    code = int(token[2:], 16)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    char = chr(code)
    return " " if char.isspace() else char


class OffsetMap:
    """Maps offsets of a source text onto the text :func:`readable` made of it."""

    def __init__(self, starts: list[int], outs: list[int], copied: list[bool], size: int) -> None:
        self._starts, self._outs, self._copied, self._size = starts, outs, copied, size

    def __call__(self, pos: int) -> int:
        i = bisect.bisect_right(self._starts, pos) - 1
        if i < 0:
            return 0
        out = self._outs[i] + (pos - self._starts[i] if self._copied[i] else 0)
        return min(out, self._size)


def readable(text: str) -> tuple[str, OffsetMap]:
    """``text`` with white-space runs as one space, JSON escapes decoded and the end trimmed,
    plus the map from each offset of ``text`` (``0 … len(text)``) to where that character's
    output begins in the result (so spans map onto it)."""
    out: list[str] = []
    starts: list[int] = []
    outs: list[int] = []
    copied: list[bool] = []
    size = 0  # length of the output so far
    pos = 0  # next unread offset of text
    last_space = True  # no space at the start
    for m in _REWRITE.finditer(text):
        start, end = m.span()
        if start > pos and last_space and text[pos] == " ":
            # A single space right after a rewritten one: dropped (white space stays one space).
            starts.append(pos)
            outs.append(size)
            copied.append(False)
            pos += 1
        if start > pos:
            starts.append(pos)
            outs.append(size)
            copied.append(True)
            out.append(text[pos:start])
            size += start - pos
            last_space = text[start - 1] == " "
        piece = _replacement(m.group())
        if piece == " ":
            piece = "" if last_space else " "
            last_space = True
        elif piece:
            last_space = False
        starts.append(start)
        outs.append(size)
        copied.append(False)
        if piece:
            out.append(piece)
            size += len(piece)
        pos = end
    if pos < len(text) and last_space and text[pos] == " ":
        starts.append(pos)
        outs.append(size)
        copied.append(False)
        pos += 1
    if pos < len(text):
        starts.append(pos)
        outs.append(size)
        copied.append(True)
        out.append(text[pos:])
        size += len(text) - pos
    starts.append(len(text))
    outs.append(size)
    copied.append(False)
    body = "".join(out)
    if body.endswith(" "):
        body = body[:-1]
    return body, OffsetMap(starts, outs, copied, len(body))

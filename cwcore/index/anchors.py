"""Exact anchors: the literal, case-sensitive evidence that exact search matches first.

An anchor is a span of text that names something precisely — a file path, a qualified or
camel/snake-case symbol, an error code or error message, a commit hash, a command-line flag, a
quoted string, or a specific value (version, URL, number with a unit). The same extractor serves
indexing (the exact handler), explicit search (is this query exact-looking?) and preflight query
extraction, so all three agree on what an anchor is.

Anchors are ranked by specificity (errors, paths, symbols, quoted values first) so that when a
document has more anchors than the exact handler publishes, the most specific survive.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

#: Kind -> matchType of an exact hit, and the kind's specificity rank (lower is more specific).
KINDS: dict[str, tuple[str, int]] = {
    "error": ("exact-error", 0),
    "path": ("exact-path", 1),
    "symbol": ("exact-symbol", 2),
    "quoted": ("exact-phrase", 3),
    "commit": ("exact-value", 4),
    "flag": ("exact-symbol", 5),
    "value": ("exact-value", 6),
}

MIN_ANCHOR = 3
MAX_ANCHOR = 200


@dataclass(frozen=True, order=True)
class Anchor:
    """A literal span: ``text[start:end] == value`` (character offsets)."""

    start: int
    end: int
    value: str
    kind: str

    @property
    def match_type(self) -> str:
        return KINDS[self.kind][0]

    @property
    def rank(self) -> int:
        return KINDS[self.kind][1]


_EXT = (
    r"py|pyi|ts|tsx|js|jsx|mjs|cjs|rs|go|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|m|scala|sh|bash|"
    r"zsh|fish|ps1|md|rst|txt|json|jsonl|toml|yaml|yml|ini|cfg|conf|lock|sql|html|css|scss|vue|"
    r"svelte|xml|csv|tsv|proto|graphql|tf|env|dockerfile|makefile|gradle|ipynb|log"
)
_URL = re.compile(r"\bhttps?://[^\s\"'<>()\[\]`]+")

# Gates: a cheap necessary condition of each pattern (a literal or a short regex every match of
# the pattern contains), so a text without it skips that pattern's scan. Most patterns start
# with ``\b`` or a lookbehind, which leaves the regex engine no first-character shortcut: each
# full scan tries every position of the text, while a gate is a substring test or a scan for a
# literal. A gate never changes what matches, only whether the scan runs.
_DIGIT = re.compile(r"\d")
_INNER_CAPITAL = re.compile(r"[a-z0-9][A-Z]")  # camelCase and PascalCase need one
_DOTTED_NUMBERS = re.compile(r"\d\.\d+\.\d")  # versions and IPv4 addresses need one
_ERROR_WORDS = ("error", "exception", "panic", "fatal", "traceback")
_ERROR_WORD = re.compile(r"(?i)error|exception|panic|fatal|traceback")


def _names_an_error(text: str) -> bool:
    """Whether ``text`` holds an error word in any case. ASCII text takes substring tests on its
    lower-case form (a case-insensitive regex alternation scans slowly); other text the regex,
    whose case matching (dotless i, Kelvin sign) ``str.lower`` does not reproduce."""
    if text.isascii():
        low = text.lower()
        return any(word in low for word in _ERROR_WORDS)
    return _ERROR_WORD.search(text) is not None


Gate = str | re.Pattern[str] | Callable[[str], bool]

_PATTERNS: list[tuple[str, re.Pattern[str], tuple[Gate, ...]]] = [
    # Error codes and exception names: ERR_BAD_HEADER, REAP_DRAIN, E0425, ENOENT, TypeError.
    (
        "error",
        re.compile(
            r"\b(?:[A-Z][A-Z0-9]*_[A-Z0-9_]*[A-Z0-9]|E[A-Z]{3,}|E\d{3,5}|[A-Z]\w*(?:Error|Exception|Warning))\b"
        ),
        (re.compile(r"_|E[A-Z]|E\d|Error|Exception|Warning"),),
    ),
    # Error messages: "error: ..." up to the end of the line or sentence.
    (
        "error",
        re.compile(
            r"(?i)\b(?:error|exception|panic|fatal|traceback)\b[:!] ?[^\n]{3,160}?(?=\.\s|\.$|\n|$)"
        ),
        (re.compile(r"[:!]"), _names_an_error),
    ),
    # URLs before paths, so a URL is one value, not a path.
    ("value", _URL, ("://",)),
    # Paths: with a directory part, or a bare file name with a known extension.
    (
        "path",
        re.compile(r"(?<![\w/.-])(?:~|\.{1,2})?/?(?:[\w@+-][\w.@+-]*/)+[\w.@+-]+(?![\w/])"),
        ("/",),
    ),
    (
        "path",
        re.compile(rf"(?<![\w/.-])[\w@+-][\w.@+-]*\.(?:{_EXT})\b", re.IGNORECASE),
        (re.compile(rf"\.(?:{_EXT})\b", re.IGNORECASE),),
    ),
    # Symbols: qualified (os.path.join), calls (run()), camelCase, PascalCase with an inner
    # capital, snake_case.
    (
        "symbol",
        re.compile(r"\b[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)+(?:\(\))?"),
        (re.compile(r"(?:\.|::|->)[A-Za-z_]"),),
    ),
    ("symbol", re.compile(r"\b[A-Za-z_]\w*\(\)"), ("()",)),
    ("symbol", re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b"), (_INNER_CAPITAL,)),
    ("symbol", re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b"), (_INNER_CAPITAL,)),
    ("symbol", re.compile(r"\b_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+\b"), ("_",)),
    # Commit hashes: 7-40 hex digits with at least one digit and one letter.
    (
        "commit",
        re.compile(r"\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b"),
        (_DIGIT, re.compile(r"[0-9a-f]{7}")),
    ),
    # Flags: --force, --no-cache, -rf.
    ("flag", re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*(?:=[^\s]+)?"), ("-",)),
    # Quoted strings: backticks, double and single quotes (single: not apostrophes).
    ("quoted", re.compile(r"`([^`\n]{2,200})`"), ("`",)),
    ("quoted", re.compile(r"\"([^\"\n]{3,200})\""), ('"',)),
    ("quoted", re.compile(r"(?<!\w)'([^'\n]{3,200})'(?!\w)"), ("'",)),
    # Specific values: versions, numbers with units, IPv4 addresses, ports.
    ("value", re.compile(r"\bv?\d+\.\d+(?:\.\d+)+(?:[-+][\w.]+)?\b"), (_DIGIT, _DOTTED_NUMBERS)),
    (
        "value",
        re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|min|h|KiB|MiB|GiB|KB|MB|GB|TB|%|px)\b"),
        (_DIGIT, re.compile(r"\d\s?[msh%KMGTp]")),
    ),
    ("value", re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b"), (_DIGIT, _DOTTED_NUMBERS)),
]


def _passes(text: str, gates: tuple[Gate, ...], memo: dict[Gate, bool]) -> bool:
    """True when ``text`` holds every gate (results shared by the patterns of one text)."""
    for gate in gates:
        hit = memo.get(gate)
        if hit is None:
            if isinstance(gate, str):
                hit = gate in text
            elif isinstance(gate, re.Pattern):
                hit = gate.search(text) is not None
            else:
                hit = gate(text)
            memo[gate] = hit
        if not hit:
            return False
    return True


def extract(text: str) -> list[Anchor]:
    """All anchors of ``text``, deduplicated by span, in order of position.

    Quoted strings yield the inner text (backticks, quotes stripped). A span claimed by a more
    URL is not reported again as a path; other anchors may nest (a value inside an error
    message, ``load_file`` inside ``loader.load_file()``) so each can be found on its own.
    """
    found: dict[tuple[int, int], Anchor] = {}
    claimed: list[tuple[int, int]] = []
    memo: dict[Gate, bool] = {}
    for kind, pattern, gates in _PATTERNS:
        if not _passes(text, gates, memo):
            continue
        for m in pattern.finditer(text):
            if m.lastindex:
                start, end = m.span(1)
            else:
                start, end = m.span()
            value = text[start:end].rstrip(".,;:")
            end = start + len(value)
            if not MIN_ANCHOR <= len(value) <= MAX_ANCHOR:
                continue
            if kind != "quoted" and any(s <= start and end <= e for s, e in claimed):
                continue
            if (start, end) in found:
                continue
            found[(start, end)] = Anchor(start, end, value, kind)
            if pattern is _URL:
                claimed.append((start, end))
    return sorted(found.values())


PATH_SUFFIXES = 4


def with_path_suffixes(anchors: list[Anchor]) -> list[Anchor]:
    """Add the last 1–4 components of each path as path anchors of their own, so a relative
    path (``cli/explain.go``) finds the absolute one a tool printed
    (``/Users/x/cli/explain.go``)."""
    out = list(anchors)
    seen = {(a.start, a.end) for a in anchors}
    for a in anchors:
        if a.kind != "path" or "/" not in a.value.strip("/"):
            continue
        cut = a.end
        for _ in range(PATH_SUFFIXES):
            slash = a.value.rfind("/", 0, cut - a.start - 1)
            if slash <= 0:
                break
            start = a.start + slash + 1
            cut = start
            if (start, a.end) not in seen and a.end - start >= MIN_ANCHOR:
                seen.add((start, a.end))
                out.append(Anchor(start, a.end, a.value[slash + 1 :], "path"))
    return sorted(out)


def ranked(anchors: list[Anchor]) -> list[Anchor]:
    """Most specific first (by kind rank, then longer values, then position): the exact
    handler keeps a prefix of this order under its publication cap."""
    return sorted(anchors, key=lambda a: (a.rank, -len(a.value), a.start))


def is_exact_looking(query: str) -> bool:
    """True when the whole query is one anchor (or a quoted phrase): exact lookup first, and
    the query is not broken into OR terms until that lookup failed."""
    stripped = query.strip()
    if not stripped:
        return False
    if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "\"'`":
        return True
    anchors = extract(stripped)
    return any(a.start == 0 and a.end == len(stripped) for a in anchors)

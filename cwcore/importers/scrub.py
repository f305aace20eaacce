"""Secret scrubbing at import: documented regex patterns, replaced by ``[REDACTED:<name>]``.

The import pipeline calls :func:`scrub_session` on every parsed session before building
documents (setting ``scrub_secrets``), so secrets never reach the store: not in message text,
tool inputs, thinking, titles, nor in the verbatim source events.

Patterns (:data:`PATTERNS`, applied in this order; docs/importers.md lists them too):

=================  ==============================================================================
name               what is replaced
=================  ==============================================================================
private-key        a PEM block ``-----BEGIN … PRIVATE KEY----- … -----END … PRIVATE KEY-----``
anthropic-key      ``sk-ant-`` + 20 or more of ``[A-Za-z0-9_-]``
openai-key         ``sk-`` (optionally ``proj-``/``svcacct-``/``admin-``) + 20 or more key
                   characters, at least one a digit
aws-access-key     ``AKIA``/``ASIA`` + 16 upper-case letters or digits
github-token       ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + 36 or more; ``github_pat_`` + 22+
slack-token        ``xoxa-``/``xoxb-``/``xoxp-``/``xoxo-``/``xoxs-``/``xoxr-`` + 10 or more
google-api-key     ``AIza`` + 35 key characters
bearer-token       the token after ``Bearer`` (16 or more token characters)
url-password       the password in ``scheme://user:password@host``
secret-assignment  the value after ``password``/``passwd``/``secret``/``token``/``api_key``/
                   ``access_key``/``auth_token``/``client_secret`` (alone or ending a longer name
                   such as ``OPENAI_API_KEY``) and ``=`` or ``:`` — a quoted value (4+ characters,
                   no space) or a bare one (8+ key characters with a digit, not a call), so code
                   such as ``apiKey = await load()`` or ``token: string`` is left alone
=================  ==============================================================================

:func:`scrub_bytes` works on raw JSON source lines without breaking them: it finds the string
literals of the line, decodes each, matches the patterns on the decoded text and replaces the raw
characters of each secret (whole escape sequences included) by the ASCII marker, which holds no
quote or backslash — so a valid JSON line stays valid, and its decoded strings read exactly as
:func:`scrub_text` makes them. The string value of a JSON object key named like a secret
(``"password"``, ``"api_key"``, ``"auth_token"``…) is redacted whole, as ``secret-assignment``.
A line that is not JSON is scrubbed as text. Every function is idempotent.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from cwcore.model import Message, ParsedSession

_KEYWORDS = (
    r"(?:password|passwd|secret|token|api[_-]?key|access[_-]?key|auth[_-]?token"
    r"|client[_-]?secret)"
)
_VALUE = (
    r"(?:\\?[\"'](?P<quoted>(?!\[REDACTED)[^\s\"'\\]{4,})\\?[\"']"
    r"|(?P<bare>(?!\[REDACTED)(?=[A-Za-z0-9+/_.~=-]*\d)[A-Za-z0-9+/_.~=-]{8,})"
    r"(?![A-Za-z0-9+/_.~=(\[-]))"
)

#: Secret patterns by name, applied in order (more specific prefixes first). Where a pattern
#: has named groups, the first group that took part in a match is the secret; else the match.
PATTERNS: dict[str, re.Pattern[str]] = {
    "private-key": re.compile(
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
        re.S,
    ),
    "anthropic-key": re.compile(r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{20,}"),
    "openai-key": re.compile(
        r"(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"
    ),
    "aws-access-key": re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
    "github-token": re.compile(
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})"
    ),
    "slack-token": re.compile(r"(?<![A-Za-z0-9-])xox[abposr]-[A-Za-z0-9-]{10,}"),
    "google-api-key": re.compile(r"(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
    "bearer-token": re.compile(r"(?i)(?<![A-Za-z0-9])bearer\s+(?P<secret>[A-Za-z0-9._~+/=-]{16,})"),
    "url-password": re.compile(
        r"(?i)(?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]*:(?:\\?/){2}[^\s:/@\"'\\\[\]]+:"
        r"(?P<secret>(?!\[REDACTED)[^\s/@\"'\\]+)@"
    ),
    "secret-assignment": re.compile(
        r"(?i)(?<![A-Za-z0-9])" + _KEYWORDS + r"\\?[\"']?\s*[=:]\s*" + _VALUE
    ),
}

# Every match of a pattern contains one of its anchors (compared in lower case), so a text
# without any anchor of a pattern is not scanned by it: substring tests are far cheaper than
# ten regex scans, and most texts hold no secret at all.
_ANCHORS: dict[str, tuple[str, ...]] = {
    "private-key": ("-----begin",),
    "anthropic-key": ("sk-",),
    "openai-key": ("sk-",),
    "aws-access-key": ("akia", "asia"),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack-token": ("xox",),
    "google-api-key": ("aiza",),
    "bearer-token": ("bearer",),
    "url-password": (":/", ":\\/"),
    "secret-assignment": (
        "password",
        "passwd",
        "secret",
        "token",
        "apikey",
        "api_key",
        "api-key",
        "accesskey",
        "access_key",
        "access-key",
    ),
}


def _candidates(text: str, patterns: dict[str, re.Pattern[str]]) -> list[str]:
    """The names of the patterns that may match ``text``, in pattern order."""
    if patterns is not PATTERNS:
        return list(patterns)
    lower = text.lower()
    return [name for name in PATTERNS if any(a in lower for a in _ANCHORS[name])]


#: A JSON object key whose string value is a secret: a keyword, alone or after ``_``/``-``.
SECRET_KEY = re.compile(r"(?i)(?:.*[_-])?" + _KEYWORDS)
# A string literal's content, and whether a ':' follows it (an object key), in valid JSON.
_LITERAL = re.compile(r'"([^"\\]*(?:\\.[^"\\]*)*)"(\s*:)?')


def marker(name: str) -> str:
    return f"[REDACTED:{name}]"


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """Where ``pattern`` finds secrets in ``text`` (see :data:`PATTERNS`)."""
    out = []
    for match in pattern.finditer(text):
        span = match.span()
        for name in pattern.groupindex:
            if match.start(name) >= 0:
                span = match.span(name)
                break
        out.append(span)
    return out


def _splice(text: str, spans: list[tuple[int, int]], repl: str) -> str:
    for start, end in reversed(spans):
        text = text[:start] + repl + text[end:]
    return text


def scrub_text(text: str, patterns: dict[str, re.Pattern[str]] = PATTERNS) -> str:
    """``text`` with every secret the patterns find replaced by ``[REDACTED:<name>]``."""
    for name in _candidates(text, patterns):
        spans = _spans(patterns[name], text)
        if spans:
            text = _splice(text, spans, marker(name))
    return text


# -- raw JSON lines ----------------------------------------------------------------------------

_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _decode(raw: str) -> tuple[str, list[int]]:
    """A JSON string literal's content decoded, and each decoded character's raw offset (plus
    the raw length at the end), so a decoded span maps to whole raw escape sequences."""
    out: list[str] = []
    starts: list[int] = []
    i = 0
    while i < len(raw):
        starts.append(i)
        if raw[i] != "\\":
            out.append(raw[i])
            i += 1
            continue
        if raw[i + 1] != "u":
            out.append(_SIMPLE[raw[i + 1]])
            i += 2
            continue
        code, width = int(raw[i + 2 : i + 6], 16), 6
        if 0xD800 <= code < 0xDC00 and raw[i + 6 : i + 8] == "\\u":
            low = int(raw[i + 8 : i + 12], 16)
            if 0xDC00 <= low < 0xE000:  # a surrogate pair is one character once decoded
                code, width = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00), 12
        out.append(chr(code))
        i += width
    starts.append(len(raw))
    return "".join(out), starts


def _secret_value(value: str) -> bool:
    return len(value) >= 4 and not value.startswith("[REDACTED")


def _scrub_literal(raw: str, patterns: dict[str, re.Pattern[str]], secret_value: bool) -> str:
    """One literal's raw content scrubbed pattern by pattern, as :func:`scrub_text` does to
    its decoded text; ``secret_value``: the literal is the value of a key named like a secret."""
    for name, pattern in patterns.items():
        text, starts = _decode(raw)
        spans = _spans(pattern, text)
        if spans:
            raw = _splice(raw, [(starts[a], starts[b]) for a, b in spans], marker(name))
    if secret_value and _secret_value(_decode(raw)[0]):
        raw = marker("secret-assignment")
    return raw


def scrub_json_text(line: str, patterns: dict[str, re.Pattern[str]] = PATTERNS) -> str:
    """Scrub a valid JSON text literal by literal (see the module doc); it stays valid JSON."""
    literals = [(m.start(1), m.end(1), m.group(2) is not None) for m in _LITERAL.finditer(line)]
    # Right to left, so the offsets of the literals still to do stay valid.
    for index in range(len(literals) - 1, -1, -1):
        start, end, is_key = literals[index]
        secret_value = False
        if index and not is_key:
            k_start, k_end, k_is_key = literals[index - 1]
            if k_is_key and line[k_end + 1 : start - 1].strip() == ":":
                secret_value = bool(SECRET_KEY.fullmatch(_decode(line[k_start:k_end])[0]))
        content = line[start:end]
        scrubbed = _scrub_literal(content, patterns, secret_value)
        if scrubbed != content:
            line = line[:start] + scrubbed + line[end:]
    return line


def _strings(value: Any) -> tuple[list[str], bool]:
    """Every string of a decoded JSON value (keys too), and whether a key named like a secret
    holds a string to redact."""
    out: list[str] = []
    keyed = False
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            for key, sub in item.items():
                out.append(key)
                if isinstance(sub, str) and _secret_value(sub) and SECRET_KEY.fullmatch(key):
                    keyed = True
                stack.append(sub)
    return out, keyed


#: Every anchor of every pattern, as bytes (see :func:`_plainly_clean`).
_RAW_ANCHORS = tuple(sorted({a.encode() for names in _ANCHORS.values() for a in names}))


def _plainly_clean(raw: bytes) -> bool:
    r"""True when no pattern can match ``raw`` nor any string JSON decodes from it, judged on
    the raw bytes without decoding. The line must be ASCII (lower-casing bytes is then
    lower-casing text, and no character folds into an anchor's letters), hold no ``\u`` escape
    (it may decode to anything) and no escaped backslash (raw ``:\\/`` decodes to ``:\/``, an
    anchor the raw line lacks), and hold no anchor. The other escapes decode to ``"``, ``/``
    (raw ``:\/``, an anchor itself) or control characters, which no anchor contains; a key named
    like a secret holds a keyword that is an anchor. Most source lines pass: no JSON decode."""
    if not raw.isascii() or b"\\u" in raw or b"\\\\" in raw:
        return False
    lower = raw.lower()
    return not any(a in lower for a in _RAW_ANCHORS)


def scrub_bytes(raw: bytes, patterns: dict[str, re.Pattern[str]] = PATTERNS) -> bytes:
    """A raw source line (or record) with its secrets replaced; valid JSON stays valid JSON."""
    if patterns is PATTERNS and _plainly_clean(raw):
        return raw
    try:
        text = raw.decode("utf-8")
        value = json.loads(text)
    except (ValueError, RecursionError):
        # Not JSON (or not UTF-8): scrub as text, keeping undecodable bytes as they were.
        text = raw.decode("utf-8", "surrogateescape")
        out = scrub_text(text, patterns)
        return raw if out == text else out.encode("utf-8", "surrogateescape")
    # Fast path: most lines hold no secret. A pattern matching inside one string also matches
    # the strings joined by newlines, so no match there means nothing to replace.
    strings, keyed = _strings(value)
    joined = "\n".join(strings)
    if not keyed and not any(
        patterns[name].search(joined) for name in _candidates(joined, patterns)
    ):
        return raw
    out = scrub_json_text(text, patterns)
    return raw if out == text else out.encode("utf-8", "surrogatepass")


# -- sessions ----------------------------------------------------------------------------------


def scrub_session(parsed: ParsedSession, enabled: bool = True) -> ParsedSession:
    """A copy of ``parsed`` with message texts (thinking included), tool inputs, event raws and
    the title scrubbed. Ids, lines and structure are unchanged. ``enabled=False``
    returns ``parsed`` itself."""
    if not enabled:
        return parsed
    messages = tuple(_scrub_message(m) for m in parsed.messages)
    # A clean record is kept as it is: ``replace`` copies a dataclass field by field.
    events = tuple(
        e if (raw := scrub_bytes(e.raw)) is e.raw else replace(e, raw=raw) for e in parsed.events
    )
    return replace(
        parsed,
        messages=messages,
        events=events,
        title=None if parsed.title is None else scrub_text(parsed.title),
    )


def _scrub_message(m: Message) -> Message:
    """``m`` with its text and tool input scrubbed; ``m`` itself when neither changed."""
    text = scrub_text(m.text)
    tool_input = None if m.tool_input is None else scrub_text(m.tool_input)
    if text is m.text and tool_input is m.tool_input:
        return m
    return replace(m, text=text, tool_input=tool_input)

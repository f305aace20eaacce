"""The one tokenizer every handler and every query uses.

Rules (deterministic; a change here changes persisted postings, so it needs a reindex):

* **Words** are runs of Unicode word characters (``\\w``: letters, digits, underscore), optionally
  followed by combining marks so a decomposed ``cafe\\u0301`` stays one word.
* **Compounds** join words with ``.`` ``/`` ``\\`` ``:`` ``::`` ``://`` ``:\\`` ``@`` or ``-``
  (``os.path.join``, ``src/cw/api.py``, ``std::vector``, ``no-rerank``, ``https://host/x``). A
  compound emits its whole folded form (the *anchor*), then each word; a path (``/`` or ``\\``)
  whose last component has a dot also emits that file name (``api.py``); its stem and extension
  are already words.
* **Identifiers** are split while the whole word is kept: ``parseHTTPResponse`` →
  ``parsehttpresponse``, ``parse``, ``http``, ``response``; ``snake_case_name`` → whole, ``snake``,
  ``case``, ``name``. Digits stay attached to the letters before them (``HTTP2Server`` →
  ``http2server``, ``http2``, ``server``); parts of one character are dropped (``getX`` →
  ``getx``, ``get``).
* **CJK** runs (Han, Hiragana, Katakana, Hangul) emit each character and each overlapping bigram,
  interleaved (``検索エ`` → ``検``, ``検索``, ``索``, ``索エ``, ``エ``): the bigrams supplement the
  single-character unicode tokens, so a CJK phrase matches without word segmentation.
* **Numbers** are words: ``42``, ``3.14`` (→ ``3.14``, ``3``, ``14``).
* **Folding** (:func:`fold`): case folding, compatibility decomposition (NFKD) and removal of the
  combining diacritics U+0300–U+036F and their supplements, then NFC so Hangul and kana voicing
  recompose. ``Café`` → ``cafe``; ``Straße`` → ``strasse``; half-width ``ｶﾞ`` → ``ガ``.
* Tokens longer than :data:`MAX_TOKEN_CHARS` characters are dropped (their parts are still kept):
  long blobs (base64, minified code) would otherwise flood the vocabulary with unique terms.

Scripts whose words need spacing marks (Devanagari, Thai, …) split at those marks; index and query
split the same way, so matching still works on the fragments.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

#: Longest token kept, in characters after folding (Lucene's StandardAnalyzer keeps 255).
MAX_TOKEN_CHARS = 128

# Han (+ extensions, compatibility, radicals), kana (+ half-width), Hangul (syllables and jamo),
# and the CJK iteration/closing marks 々〆〇. Kept as one class so runs never mix with Latin words.
_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3040-\u30ff\u3100-\u312f\u3130-\u318f"
    "\u31a0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0003134f"
)
# Combining marks that may follow a word character. Only common mark blocks: the point is keeping
# decomposed Latin/Greek/Cyrillic accents (and kana voicing marks) inside their word.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\u3099\u309a\ufe20-\ufe2f"
)
# The diacritics that folding removes (Latin accent folding; kana voicing is *not* removed).
_STRIP = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]+")

_WORD = rf"[^\W{_CJK}]+(?:[{_MARKS}]+[^\W{_CJK}]*)*"
_JOIN = r"(?:::|://|:\\|[./\\:@-])"
#: group 1: a compound of words; group 2: a CJK run.
_TOKEN = re.compile(rf"({_WORD}(?:{_JOIN}{_WORD})*)|([{_CJK}]+)")
_JOINER = re.compile(_JOIN)
# Identifier parts: capitalized or lower words with trailing digits, upper-case acronyms (not
# eating the capital that starts the next word), digit runs.
_CAMEL = re.compile(r"[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*(?![a-z])|[0-9]+")
_SNAKE = re.compile(r"[^_]+")
_HAS_ALNUM = re.compile(r"[^\W_]")
# ASCII text (most messages) takes a faster equivalent pattern: for ASCII, \w is [A-Za-z0-9_].
_ASCII_WORD = r"[A-Za-z0-9_]++"
_ASCII_TOKEN = re.compile(rf"{_ASCII_WORD}(?:{_JOIN}{_ASCII_WORD})*+")
# What makes an ASCII word non-plain, besides an underscore: a capital after a word character, or
# a joiner between word characters. One character class first keeps the scan fast.
_ASCII_SPECIAL = re.compile(r"[A-Z./\\:@-](?<=\w.)(?=[:/\\]{0,2}\w|(?<=[A-Z]))", re.ASCII)

Token = tuple[str, int, int]


def fold(text: str) -> str:
    """Return the matching form of ``text``: case folded, NFKD, diacritics removed, then NFC.

    Idempotent: ``fold(fold(s)) == fold(s)``. ASCII text only lowers (the fast path).
    """
    if text.isascii():
        return text.lower()
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = _STRIP.sub("", folded)
    # Case folding after decomposition catches the few characters whose decomposition is cased.
    folded = unicodedata.normalize("NFC", folded.casefold())
    return folded


def _fold_word(word: str) -> str:
    return word.lower() if word.isascii() else fold(word)


def _word_parts(word: str, start: int, out: list[Token]) -> None:
    """Emit ``word`` (folded, with its span), then its identifier parts."""
    if word.isascii():
        whole = word.lower()
        if whole.isalnum() and (len(word) < 2 or word[1:] == whole[1:]):
            # Plain: no underscore, no capital after the first letter - nothing to split.
            if len(whole) <= MAX_TOKEN_CHARS:
                out.append((whole, start, start + len(word)))
            return
    else:
        whole = fold(word)
    if len(whole) <= MAX_TOKEN_CHARS and whole.strip("_"):
        out.append((whole, start, start + len(word)))
    # Split on underscores, then each ASCII piece on case changes.
    pieces = [(m.group(), m.start()) for m in _SNAKE.finditer(word)] if "_" in word else [(word, 0)]
    parts: list[tuple[str, int]] = []
    for piece, offset in pieces:
        if piece.isascii() and not (piece.islower() or piece.isupper() or piece.isdigit()):
            parts.extend((c.group(), offset + c.start()) for c in _CAMEL.finditer(piece))
        else:
            parts.append((piece, offset))
    if len(parts) == 1 and parts[0][0] == word:
        return
    for part, offset in parts:
        if len(part) < 2:
            continue
        folded = _fold_word(part)
        if len(folded) <= MAX_TOKEN_CHARS:
            out.append((folded, start + offset, start + offset + len(part)))


def _compound(text: str, start: int, out: list[Token]) -> None:
    """Emit a compound match: its anchor, then each word (and a path's file name)."""
    if _JOINER.search(text) is None:
        _word_parts(text, start, out)
        return
    whole = _fold_word(text)
    if len(whole) <= MAX_TOKEN_CHARS and _HAS_ALNUM.search(text):
        out.append((whole, start, start + len(text)))
    pos = 0
    for m in _JOINER.finditer(text):
        _word_parts(text[pos : m.start()], start + pos, out)
        pos = m.end()
    _word_parts(text[pos:], start + pos, out)
    # A path's last component with an extension is a useful anchor of its own ("api.py").
    cut = max(text.rfind("/"), text.rfind("\\"))
    if cut >= 0 and "." in text[cut + 1 :]:
        name = text[cut + 1 :]
        folded = _fold_word(name)
        if len(folded) <= MAX_TOKEN_CHARS:
            out.append((folded, start + cut + 1, start + len(text)))


def _cjk(run: str, start: int, out: list[Token]) -> None:
    """Emit each character and each overlapping bigram of a CJK run, interleaved."""
    folded = _fold_word(run)
    last = len(run) - 1
    if len(folded) == len(run) and "\u3099" not in folded and "\u309a" not in folded:
        # The class holds no character that folds to several, so equal length means 1:1.
        for i in range(last):
            out.append((folded[i], start + i, start + i + 1))
            out.append((folded[i : i + 2], start + i, start + i + 2))
        out.append((folded[last], start + last, start + last + 1))
        return
    # Rare: voicing marks or jamo composed, so fold each span on its own; a lone voicing mark
    # is no term.
    for i in range(len(run)):
        uni = _fold_word(run[i])
        if not unicodedata.combining(uni[0]):
            out.append((uni, start + i, start + i + 1))
        if i < last:
            out.append((_fold_word(run[i : i + 2]), start + i, start + i + 2))


def tokens_with_offsets(text: str) -> list[Token]:
    """Return ``(term, start, end)`` in text order; ``text[start:end]`` is the source span.

    Offsets are Python ``str`` indices (code points) into ``text``, and
    ``fold(text[start:end]) == term`` for every token. A compound's anchor comes before its parts.
    """
    out: list[Token] = []
    append = out.append
    if text.isascii():
        # The ASCII pattern finds the same words (for ASCII, \w is [A-Za-z0-9_]); a plain word
        # (letters and digits, no capital after its first character) is its own only token.
        for m in _ASCII_TOKEN.finditer(text):
            word = m.group()
            low = word.lower()
            if low.isalnum() and (word == low or word[1:] == low[1:]):
                if len(low) <= MAX_TOKEN_CHARS:
                    append((low, *m.span()))
            else:
                _compound(word, m.start(), out)
        return out
    for m in _TOKEN.finditer(text):
        word, run = m.group(1), m.group(2)
        if word is not None:
            if word.isascii():
                low = word.lower()
                if low.isalnum() and (word == low or word[1:] == low[1:]):
                    if len(low) <= MAX_TOKEN_CHARS:
                        append((low, *m.span()))
                    continue
            _compound(word, m.start(), out)
        else:
            _cjk(run, m.start(), out)
    return out


def tokens(text: str) -> list[str]:
    """Return the search terms of ``text`` in order (duplicates kept: they are term frequency).

    Equal to ``[t for t, _, _ in tokens_with_offsets(text)]``, faster: ASCII text uses an ASCII
    pattern, and plain words (no joiner, underscore or inner capital) skip identifier splitting.
    """
    if not text.isascii():
        return [t for t, _, _ in tokens_with_offsets(text)]
    if "_" not in text and _ASCII_SPECIAL.search(text) is None:
        # Every word is plain: the words of the lowered text are the terms.
        return [w for w in _ASCII_TOKEN.findall(text.lower()) if len(w) <= MAX_TOKEN_CHARS]
    out: list[str] = []
    append = out.append
    slow: list[Token] = []
    for word in _ASCII_TOKEN.findall(text):
        low = word.lower()
        if low.isalnum() and (word == low or word[1:] == low[1:]):
            if len(low) <= MAX_TOKEN_CHARS:
                append(low)
            continue
        _compound(word, 0, slow)
        out.extend([t for t, _, _ in slow])
        slow.clear()
    return out


def term_counts(text: str) -> dict[str, int]:
    """How often each term of ``text`` occurs: equal to ``Counter(tokens(text))`` (in no
    particular order), cheaper for long ASCII text. A word's tokens depend on the word alone,
    so each distinct word is split once and its tokens counted as often as it occurs."""
    if not text.isascii():
        return dict(Counter(tokens(text)))
    out: dict[str, int] = {}
    slow: list[Token] = []
    for word, n in Counter(_ASCII_TOKEN.findall(text)).items():
        low = word.lower()
        if low.isalnum() and (word == low or word[1:] == low[1:]):
            if len(low) <= MAX_TOKEN_CHARS:
                out[low] = out.get(low, 0) + n
            continue
        _compound(word, 0, slow)
        for term, _, _ in slow:
            out[term] = out.get(term, 0) + n
        slow.clear()
    return out

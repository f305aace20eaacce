"""Word stems beside the surface forms: ``coaches``, ``coaching`` and ``coach`` share ``~coach``.

cw indexes the words as written, so a question asking who *coaches* someone misses the turn that
says *I've got a coach now*. A window's prose words are therefore indexed a second time under
their Snowball English stem (PyStemmer, the stemmer bm25s uses) in a key space of their own:
the stem term is the stem behind :data:`PREFIX`, a character the tokenizer never emits, so a
stem never meets a surface term and identifiers, paths and exact anchors keep their own terms.
A stem term's frequency is the sum of its forms' weighted frequencies in the window; the window's
length is unchanged (the stems are a second view of the same words, not more words).

Only prose words get a stem: plain ASCII letters, at least three, not a grammar word
(:data:`~cwcore.text.stopwords.GRAMMAR`). A search adds each prose query word's stem term at a
fraction of the word's weight (``RetrievalParams.stem_weight``), so the form the user wrote still
scores first; which searches do is decided in :mod:`cwcore.retrieve.search`.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from cwcore.text.stopwords import GRAMMAR

#: What a stem term starts with; the tokenizer splits on it, so no surface term holds it.
PREFIX = "~"
#: Minimum length of a prose word that gets a stem (shorter words are mostly grammar or names).
MIN_LENGTH = 3


_local = threading.local()


def _stemmer() -> Any:
    """This thread's stemmer: a PyStemmer instance is not safe to share between threads, and
    the indexer and searches stem at once."""
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        import Stemmer  # PyStemmer: imported on first use, not by every process loading text

        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer


def is_prose(term: str) -> bool:
    """Whether ``term`` (a folded token) is a prose word that has a stem term."""
    return len(term) >= MIN_LENGTH and term.isascii() and term.isalpha() and term not in GRAMMAR


def is_stem(term: str) -> bool:
    """Whether ``term`` is a stem term rather than a surface one."""
    return term.startswith(PREFIX)


#: Words whose stem term (or ``""``: not prose) is kept; the map is emptied when it is full, so
#: its memory stays bounded (a few MiB) however many distinct terms an archive holds.
CACHE_WORDS = 1 << 16
_known: dict[str, str] = {}


def _learn(words: list[str]) -> None:
    """Stem ``words`` (not yet known) in one call into the stemmer and remember them."""
    if len(_known) + len(words) > CACHE_WORDS:
        _known.clear()
    prose = [w for w in words if is_prose(w)]
    stemmed: list[str] = _stemmer().stemWords(prose) if prose else []
    _known.update(dict.fromkeys(words, ""))
    _known.update(zip(prose, (PREFIX + s for s in stemmed), strict=True))


def stem_term(word: str) -> str:
    """The stem term of a prose word (call :func:`is_prose` first)."""
    stem: str = _stemmer().stemWord(word)
    return PREFIX + stem


def with_stems(tfs: Mapping[str, float]) -> dict[str, float]:
    """``tfs`` (a window's ``{term: weighted frequency}``) plus each prose word's stem term,
    its frequency summed over the window's forms of that stem."""
    known = _known
    unknown = [t for t in tfs if t not in known]
    if unknown:
        _learn(unknown)
        known = _known
    out = dict(tfs)
    for term, tf in tfs.items():
        stem = known.get(term)
        if stem is None:  # emptied while learning a window of more new words than fit
            stem = stem_term(term) if is_prose(term) else ""
        if stem:
            out[stem] = out.get(stem, 0.0) + tf
    return out


def query_stems(terms: Iterable[str]) -> list[str]:
    """The distinct stem terms of the prose words among ``terms``, in order."""
    return list(dict.fromkeys(stem_term(t) for t in terms if is_prose(t)))

"""Default retrieval limits (spec 004: vector30, lexical30, candidates40, final6, result16000
characters, per-hit3000) and the tool-result caps.

Each default is a setting under its spec name (``vector``, ``lexical``, ``candidates``, ``final``,
``result``, ``perHit`` in :mod:`cwcore.config`); :class:`Limits` carries the effective values to
the two searches that apply them:

* explicit search (:mod:`cwcore.retrieve.search`): ``candidates`` fused candidates handed on
  (the reranker's head); ``result`` and ``perHit`` cap the page's snippets. Its depths follow
  the page, not ``vector`` / ``lexical`` (the spec's 30 / 30 ranked lower on two dev sets: see
  that module), and its default page stays ``cw search``'s documented ``--limit`` 10, not
  ``final``;
* Markdown evidence search (:func:`cwcore.markdown.evidence.search`): ``lexical`` units ranked,
  ``final`` hits returned by default, ``perHit`` characters an excerpt and ``result`` in all.
  Markdown evidence is lexical only, so ``vector`` does not apply there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cwcore.contract.markdown import RESULT_CHARS, TOOL_RESULT_CHARS, check_chars, check_hits

__all__ = [
    "CANDIDATES",
    "FINAL",
    "HIT_CHARS",
    "LEXICAL",
    "RESULT_CHARS",
    "TOOL_RESULT_CHARS",
    "VECTOR",
    "Limits",
    "clamp_chars",
    "clamp_hits",
]

VECTOR = 30  # vector candidates
LEXICAL = 30  # lexical candidates
CANDIDATES = 40  # fused candidate pool
FINAL = 6  # hits returned by default
HIT_CHARS = 3_000  # characters of one hit's excerpt
# RESULT_CHARS (one result's characters) and the tool-result caps are the Markdown methods'
# request bounds: cwcore.contract.markdown holds them.


@dataclass(frozen=True)
class Limits:
    """The effective retrieval limits of one engine (counts of candidates or hits; characters)."""

    vector: int = VECTOR  # semantic candidate windows per search round
    lexical: int = LEXICAL  # lexical candidate windows per round (Markdown: units ranked)
    candidates: int = CANDIDATES  # fused candidates handed on and reranked, after the collapse
    final: int = FINAL  # hits a Markdown evidence search returns when no limit is asked
    result_chars: int = RESULT_CHARS  # characters of all of a result's excerpts together
    hit_chars: int = HIT_CHARS  # characters of one hit's excerpt

    @classmethod
    def of(cls, settings: Any) -> Limits:
        """The limits a :class:`cwcore.config.Settings` names."""
        return cls(
            vector=settings.vector,
            lexical=settings.lexical,
            candidates=settings.candidates,
            final=settings.final,
            result_chars=settings.result,
            hit_chars=settings.per_hit,
        )


def clamp_chars(value: object, default: int = RESULT_CHARS) -> int:
    """A requested character budget, validated: 1 to :data:`TOOL_RESULT_CHARS`."""
    from cwcore.errors import InvalidInput

    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput("maxChars must be a positive integer")
    return check_chars(value)


def clamp_hits(value: object, default: int = FINAL) -> int:
    """A requested hit count, validated: 1 to
    :data:`~cwcore.contract.markdown.TOOL_RESULT_HITS`."""
    from cwcore.errors import InvalidInput

    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidInput("limit must be a positive integer")
    return check_hits(value)

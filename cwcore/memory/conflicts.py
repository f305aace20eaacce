"""Conflicting evidence between memory records: when a new record makes records contested.

A record is *contested* when two pieces of evidence point in different directions. Besides an
explicit ``contest``, two deterministic rules apply when a record is added:

1. **An explicit link** — the new record names records it contradicts (``contradicts``).
2. **Opposite polarity on the same pattern** — the new record is an ``avoid_pattern`` and an
   existing record a ``prefer_pattern`` (or the reverse) with the same scope, the same
   ``profile_id`` and the same *pattern*: the set of folded words of the statement, without the
   polarity cue words (:data:`CUE_WORDS`: ``avoid``, ``prefer``, ``never``, ``always``, …), the
   query stopwords and one-letter words. "Avoid mocking the database in tests" and "Prefer
   mocking the database in tests" share the pattern ``{mocking, database, tests}``; words must
   match exactly (no stemming), so the rule never fires on a loose resemblance.

Only ``active`` and ``contested`` records count as evidence (a deprecated, superseded or deleted
one does not), and a record the new one supersedes is being replaced, not contradicted. Both
sides become contested, each with a history entry naming the other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from cwcore.memory.processors import words
from cwcore.text.stopwords import STOPWORDS
from cwcore.text.tokenize import fold

OPPOSITE = {"avoid_pattern": "prefer_pattern", "prefer_pattern": "avoid_pattern"}
#: Words that state a rule's direction, not its subject.
CUE_WORDS = frozenset(
    fold(w)
    for w in [
        "avoid",
        "avoids",
        "avoided",
        "avoiding",
        "prefer",
        "prefers",
        "preferred",
        "preferring",
        "never",
        "always",
        "dont",
        "instead",
        "rather",
    ]
)
EVIDENCE_STATUSES = ("active", "contested")


def pattern(statement: str) -> frozenset[str]:
    """The subject words of a rule statement (see the module docstring)."""
    return frozenset(
        w for w in words(statement) if len(w) > 1 and w not in CUE_WORDS and w not in STOPWORDS
    )


def opposing(record: dict[str, Any], others: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records of ``others`` that ``record`` contradicts by opposite polarity (rule 2)."""
    opposite = OPPOSITE.get(str(record.get("ruleType")))
    if opposite is None:
        return []
    key = pattern(record["statement"])
    if not key:
        return []
    return [
        other
        for other in others
        if other["id"] != record["id"]
        and other.get("status") in EVIDENCE_STATUSES
        and other.get("ruleType") == opposite
        and other.get("scope") == record.get("scope")
        and other.get("profile_id") == record.get("profile_id")
        and pattern(other["statement"]) == key
    ]


def reason(other_id: str) -> str:
    return f"conflicting evidence: {other_id}"

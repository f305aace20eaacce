"""The privacy hook of automatic evidence: each evidence item is judged whole, and a prohibited
span anywhere in it withholds the complete source.

A *policy* is a callable ``policy(text, meta) -> Iterable[Finding]`` that classifies spans of an
evidence item's text; ``meta`` carries the item's ids (``documentId``, ``messageKey``,
``session``, ``kind``, ``role``) — never the query. Policies are registered at import time with
:func:`register_policy` (a module-level registry, no setting needed). When any finding is
``prohibited`` the **whole** evidence item is omitted (never a redacted part of it); the
preflight manifest then keeps only the item's id, the finding's classification and its reason.

:class:`RegexPolicy` is a ready-made policy for lists of patterns. A policy that raises makes the
preflight fail open: no hint (outcome ``failed``), never an error to the caller.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Finding:
    """A classified span of evidence text."""

    classification: str
    prohibited: bool
    reason: str
    start: int = 0
    end: int = 0


Policy = Callable[[str, dict[str, Any]], Iterable[Finding]]

_POLICIES: list[Policy] = []
_LOCK = threading.Lock()


def register_policy(policy: Policy) -> Policy:
    """Add ``policy`` to the registry (usable as a decorator); returns it."""
    with _LOCK:
        if policy not in _POLICIES:
            _POLICIES.append(policy)
    return policy


def unregister_policy(policy: Policy) -> None:
    with _LOCK:
        if policy in _POLICIES:
            _POLICIES.remove(policy)


def policies() -> list[Policy]:
    with _LOCK:
        return list(_POLICIES)


def classify(text: str, meta: dict[str, Any]) -> Finding | None:
    """The first prohibited finding of any registered policy, or None when the item may be
    shown. Exceptions of a policy propagate (the caller fails open)."""
    for policy in policies():
        for finding in policy(text, meta):
            if finding.prohibited:
                return finding
    return None


class RegexPolicy:
    """Prohibit evidence matching any of ``patterns`` (a list of regular expressions)."""

    def __init__(
        self, patterns: Iterable[str], classification: str = "restricted", reason: str = ""
    ) -> None:
        self.patterns = [re.compile(p) for p in patterns]
        self.classification = classification
        self.reason = reason or f"matches a {classification} pattern"

    def __call__(self, text: str, meta: dict[str, Any]) -> Iterable[Finding]:
        for pattern in self.patterns:
            m = pattern.search(text)
            if m:
                yield Finding(self.classification, True, self.reason, m.start(), m.end())

"""What a supersede and its undoing answer, as frozen dataclasses.

:class:`cwcore.store.admission.Admission` builds these; the ``supersede`` and
``supersede.undo`` method handlers serialize them once with ``to_json()`` (that JSON is
``cw supersede --json`` and the MCP ``supersede`` tool's result), and
:class:`cwcore.api.Archive` turns the JSON back into them with ``from_json()``.
``to_json()`` keeps the keys, order and values the engine has always answered, and
``from_json(x).to_json() == x``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Superseded:
    """A document retired from search: the retired ``version``, the replacement ``by`` (None
    when none was named), the reason (``superseded`` when none was given) and the instant."""

    document_id: str
    version: int
    by: str | None
    reason: str
    at: str
    state: str = "superseded"

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "version": self.version,
            "state": self.state,
            "by": self.by,
            "reason": self.reason,
            "at": self.at,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Superseded:
        return cls(
            document_id=body["documentId"],
            version=body["version"],
            by=body["by"],
            reason=body["reason"],
            at=body["at"],
            state=body["state"],
        )


@dataclass(frozen=True)
class Restored:
    """A supersession undone: the document is live again as the new ``version``; ``restored``
    is the version that had been superseded (it stays retired, for audit)."""

    document_id: str
    version: int
    restored: int
    reason: str
    at: str
    state: str = "live"

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "version": self.version,
            "state": self.state,
            "restored": self.restored,
            "reason": self.reason,
            "at": self.at,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Restored:
        return cls(
            document_id=body["documentId"],
            version=body["version"],
            restored=body["restored"],
            reason=body["reason"],
            at=body["at"],
            state=body["state"],
        )

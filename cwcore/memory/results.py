"""What ``memory.add``, ``memory.list``, ``memory.show``, ``memory.contest`` and
``memory.deprecate`` answer, as frozen dataclasses.

:mod:`cwcore.memory.records` validates and stores records as dictionaries (their field names are
the public memory format); the memory method handlers turn each answered record into a
:class:`MemoryRecord` and serialize it once with ``to_json()``, and :class:`cwcore.api.Archive`
rebuilds it with ``from_json()``. ``to_json()`` keeps exactly the keys, order and values the
engine has always answered, and ``from_json(x).to_json() == x``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class MemoryScope:
    """Where a record applies: ``global`` (``name`` None), ``domain`` or ``project`` NAME."""

    type: str
    name: str | None

    @property
    def label(self) -> str:
        """``global``, ``domain:NAME`` or ``project:NAME``."""
        return "global" if self.type == "global" else f"{self.type}:{self.name}"


@dataclass(frozen=True)
class MemoryEvent:
    """One history entry: when (ISO-8601 UTC), the operation (``add``, ``supersede``,
    ``contest``, ``deprecate``, ``delete``) and its reason, if one was given."""

    at: str
    op: str
    reason: str | None

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "op": self.op, "reason": self.reason}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MemoryEvent:
        return cls(body["at"], body["op"], body["reason"])


@dataclass(frozen=True)
class MemoryRecord:
    """A memory record: its statement, tags, status (``active``, ``contested``, ``deprecated``,
    ``superseded``, ``deleted``), scope and negative scope, layer (``L1``/``L2``), confidence
    (0..1), rule type, times (ISO-8601 UTC), supersession links and history, oldest first.

    ``as_stored`` says the answer was read back from the store, whose encoding sorts keys: such
    an answer keeps the sorted key order, a freshly added record the order it was built in, so
    every answer serializes byte for byte as before. It takes no part in equality."""

    id: str
    statement: str
    tags: tuple[str, ...]
    status: str
    profile_id: str | None
    scope: MemoryScope
    does_not_apply_when: tuple[str, ...]
    known_exceptions: tuple[str, ...]
    layer: str
    confidence: float
    rule_type: str | None
    created: str
    updated: str
    supersedes: str | None
    superseded_by: str | None
    history: tuple[MemoryEvent, ...]
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        scope: dict[str, Any] = {"type": self.scope.type, "name": self.scope.name}
        body: dict[str, Any] = {
            "id": self.id,
            "statement": self.statement,
            "tags": list(self.tags),
            "status": self.status,
            "profile_id": self.profile_id,
            "scope": scope,
            "does_not_apply_when": list(self.does_not_apply_when),
            "known_exceptions": list(self.known_exceptions),
            "layer": self.layer,
            "confidence": self.confidence,
            "ruleType": self.rule_type,
            "created": self.created,
            "updated": self.updated,
            "supersedes": self.supersedes,
            "superseded_by": self.superseded_by,
            "history": [event.to_json() for event in self.history],
        }
        if self.as_stored:
            body = dict(sorted(body.items()))
            body["scope"] = dict(sorted(scope.items()))
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MemoryRecord:
        scope = body["scope"]
        return cls(
            id=body["id"],
            statement=body["statement"],
            tags=tuple(body["tags"]),
            status=body["status"],
            profile_id=body["profile_id"],
            scope=MemoryScope(scope["type"], scope["name"]),
            does_not_apply_when=tuple(body["does_not_apply_when"]),
            known_exceptions=tuple(body["known_exceptions"]),
            layer=body["layer"],
            confidence=body["confidence"],
            rule_type=body["ruleType"],
            created=body["created"],
            updated=body["updated"],
            supersedes=body["supersedes"],
            superseded_by=body["superseded_by"],
            history=tuple(MemoryEvent.from_json(e) for e in body["history"]),
            as_stored=list(body) == sorted(body),
        )


@dataclass(frozen=True)
class MemoryListing:
    """``memory.list``: the matching records, most recently updated first."""

    records: tuple[MemoryRecord, ...]

    def to_json(self) -> dict[str, Any]:
        return {"records": [record.to_json() for record in self.records]}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MemoryListing:
        return cls(tuple(MemoryRecord.from_json(r) for r in body["records"]))

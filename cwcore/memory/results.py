"""What ``memory.add``, ``memory.list``, ``memory.show``, ``memory.contest`` and
``memory.deprecate`` answer, as frozen dataclasses.

:mod:`cwcore.memory.records` validates and stores records as dictionaries (their field names are
the public memory format); the memory method handlers turn each answered record into a
:class:`MemoryRecord` and serialize it once with ``to_json()``, and :class:`cwcore.api.Archive`
rebuilds it with ``from_json()``. The JSON is derived from the fields
(:mod:`cwcore.contract.codec`): the keys and values the engine has always answered (the stored
format's snake_case names kept), ``from_json(x).to_json() == x`` as parsed JSON; key order is the
codec's.
"""

from __future__ import annotations

from cwcore.contract.codec import Record, field


class MemoryScope(Record):
    """Where a record applies: ``global`` (``name`` None), ``domain`` or ``project`` NAME."""

    type: str
    name: str | None

    @property
    def label(self) -> str:
        """``global``, ``domain:NAME`` or ``project:NAME``."""
        return "global" if self.type == "global" else f"{self.type}:{self.name}"


class MemoryEvent(Record):
    """One history entry: when (ISO-8601 UTC), the operation (``add``, ``supersede``,
    ``contest``, ``deprecate``, ``delete``) and its reason, if one was given."""

    at: str
    op: str
    reason: str | None


class MemoryRecord(Record, keys="snake"):
    """A memory record: its statement, tags, status (``active``, ``contested``, ``deprecated``,
    ``superseded``, ``deleted``), scope and negative scope, layer (``L1``/``L2``), confidence
    (0..1), rule type, times (ISO-8601 UTC), supersession links and history, oldest first. The
    keys are the stored format's snake_case names (``ruleType`` excepted, as always answered)."""

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
    rule_type: str | None = field(name="ruleType")
    created: str
    updated: str
    supersedes: str | None
    superseded_by: str | None
    history: tuple[MemoryEvent, ...]


class MemoryListing(Record):
    """``memory.list``: the matching records, most recently updated first."""

    records: tuple[MemoryRecord, ...]

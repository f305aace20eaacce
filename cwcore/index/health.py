"""What ``doctor`` answers, as frozen dataclasses.

The ``doctor`` method handler builds a :class:`DoctorReport` from the store's checks (the
permissions under ``CW_HOME``, every canonical record, the session-order index and the derived
index) and serializes it once with ``to_json()`` (that JSON is ``cw doctor --json``);
:class:`cwcore.api.Archive` turns it back into these with ``from_json()``. ``to_json()`` keeps
exactly the keys, order and values the engine has always answered, and
``from_json(x).to_json() == x``.

The report lives in the index layer, not beside the store checks: it carries the index check,
and the index package sits above the store, so this is the lowest layer that can hold it all.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class PermissionsCheck:
    """Paths under ``CW_HOME`` that group or others can reach (``loose``, the first few as
    ``"path (mode)"`` in ``examples``), and how many paths an open last tightened, when."""

    ok: bool
    loose: int
    examples: tuple[str, ...]
    tightened: int
    tightened_at: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "loose": self.loose,
            "examples": list(self.examples),
            "tightened": self.tightened,
            "tightenedAt": self.tightened_at,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> PermissionsCheck:
        return cls(
            ok=body["ok"],
            loose=body["loose"],
            examples=tuple(body["examples"]),
            tightened=body["tightened"],
            tightened_at=body["tightenedAt"],
        )


@dataclass(frozen=True)
class RecordsCheck:
    """Every canonical record decoded: how many were read, how many are corrupt, the first few
    named (``family/key: reason``), and what to do about them (``advice``, only when any is
    corrupt)."""

    ok: bool
    checked: int
    corrupt: int
    examples: tuple[str, ...]
    advice: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "ok": self.ok,
            "checked": self.checked,
            "corrupt": self.corrupt,
            "examples": list(self.examples),
        }
        if self.advice is not None:
            body["advice"] = self.advice
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> RecordsCheck:
        return cls(
            ok=body["ok"],
            checked=body["checked"],
            corrupt=body["corrupt"],
            examples=tuple(body["examples"]),
            advice=body.get("advice"),
        )


@dataclass(frozen=True)
class SessionOrderCheck:
    """The session-order index against the sessions: problems found (the first few named) and
    whether ``--repair`` rebuilt it."""

    ok: bool
    problems: int
    examples: tuple[str, ...]
    repaired: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "problems": self.problems,
            "examples": list(self.examples),
            "repaired": self.repaired,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SessionOrderCheck:
        return cls(body["ok"], body["problems"], tuple(body["examples"]), body["repaired"])


@dataclass(frozen=True)
class IndexCheck:
    """The derived index against the canonical records (``cw index verify``'s check): ordinals
    checked, problems found (the first few named), overwritten ordinals ``--repair`` retired.

    ``halted`` is true when the check stopped at a corrupt record (its one example names it);
    such a report has always listed ``problems`` and ``examples`` before ``checked``, and
    ``to_json()`` keeps that order."""

    ok: bool
    checked: int
    problems: int
    examples: tuple[str, ...]
    retired: int
    halted: bool = False

    def to_json(self) -> dict[str, Any]:
        if self.halted:
            return {
                "ok": self.ok,
                "problems": self.problems,
                "examples": list(self.examples),
                "checked": self.checked,
                "retired": self.retired,
            }
        return {
            "ok": self.ok,
            "checked": self.checked,
            "problems": self.problems,
            "examples": list(self.examples),
            "retired": self.retired,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> IndexCheck:
        return cls(
            ok=body["ok"],
            checked=body["checked"],
            problems=body["problems"],
            examples=tuple(body["examples"]),
            retired=body["retired"],
            halted=list(body)[:2] == ["ok", "problems"],
        )


@dataclass(frozen=True)
class StoreCounts:
    """The store's record counts (as the store keeps them, never a scan)."""

    sessions: int
    documents: int
    messages: int
    chunks: int
    events: int

    def to_json(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "documents": self.documents,
            "messages": self.messages,
            "chunks": self.chunks,
            "events": self.events,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> StoreCounts:
        return cls(
            body["sessions"], body["documents"], body["messages"], body["chunks"], body["events"]
        )


@dataclass(frozen=True)
class DoctorChecks:
    """The four consistency checks ``doctor`` runs, each whatever the others found."""

    permissions: PermissionsCheck
    records: RecordsCheck
    session_order: SessionOrderCheck
    index: IndexCheck

    @property
    def ok(self) -> bool:
        """True when every check passed (``cw doctor`` exits 1 otherwise)."""
        return all(c.ok for c in (self.permissions, self.records, self.session_order, self.index))

    def to_json(self) -> dict[str, Any]:
        return {
            "permissions": self.permissions.to_json(),
            "records": self.records.to_json(),
            "sessionOrder": self.session_order.to_json(),
            "index": self.index.to_json(),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DoctorChecks:
        return cls(
            permissions=PermissionsCheck.from_json(body["permissions"]),
            records=RecordsCheck.from_json(body["records"]),
            session_order=SessionOrderCheck.from_json(body["sessionOrder"]),
            index=IndexCheck.from_json(body["index"]),
        )


@dataclass(frozen=True)
class DoctorReport:
    """The store's path, the engine version and store schema, the estimated live bytes of each
    column family and the size on disk (``sizes``, bytes, in family order then ``disk``), the
    record counts, the projects (sorted) and the consistency checks."""

    store: str
    version: str
    schema: int
    sizes: tuple[tuple[str, int], ...]
    counts: StoreCounts
    projects: tuple[str, ...]
    checks: DoctorChecks

    @property
    def disk_bytes(self) -> int:
        """The store's size on disk in bytes."""
        return dict(self.sizes)["disk"]

    @property
    def healthy(self) -> bool:
        return self.checks.ok

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "version": self.version,
            "schema": self.schema,
            "sizes": dict(self.sizes),
            "counts": self.counts.to_json(),
            "projects": list(self.projects),
            "checks": self.checks.to_json(),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DoctorReport:
        return cls(
            store=body["store"],
            version=body["version"],
            schema=body["schema"],
            sizes=tuple(body["sizes"].items()),
            counts=StoreCounts.from_json(body["counts"]),
            projects=tuple(body["projects"]),
            checks=DoctorChecks.from_json(body["checks"]),
        )

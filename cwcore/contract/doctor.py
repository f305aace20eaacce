"""What ``doctor`` and ``counts`` answer, and what they take.

The ``doctor`` method handler builds a :class:`DoctorReport` from the store's checks (the
permissions under ``CW_HOME``, every canonical record, the session-order index and the derived
index) and serializes it once with ``to_json()`` (that JSON is ``cw doctor --json``);
:class:`cwcore.api.Archive` turns it back into these with ``from_json()``. The JSON is derived
from the fields (:mod:`cwcore.contract.codec`): ``from_json(x).to_json() == x`` as parsed JSON.

The report lives in the contract, below every layer that builds a part of it (the store's
checks, the index check) and beside the faces that render it (``cw doctor``, the TUI's counts).
"""

from __future__ import annotations

from cwcore.contract.codec import Record, field, pairs


class PermissionsCheck(Record):
    """Paths under ``CW_HOME`` that group or others can reach (``loose``, the first few as
    ``"path (mode)"`` in ``examples``), and how many paths an open last tightened, when."""

    ok: bool
    loose: int
    examples: tuple[str, ...]
    tightened: int
    tightened_at: str | None


class RecordsCheck(Record):
    """Every canonical record decoded: how many were read, how many are corrupt, the first few
    named (``family/key: reason``), and what to do about them (``advice``, only when any is
    corrupt)."""

    ok: bool
    checked: int
    corrupt: int
    examples: tuple[str, ...]
    advice: str | None = field(default=None, omit_none=True)


class SessionOrderCheck(Record):
    """The session-order index against the sessions: problems found (the first few named) and
    whether ``--repair`` rebuilt it."""

    ok: bool
    problems: int
    examples: tuple[str, ...]
    repaired: bool


class IndexCheck(Record):
    """The derived index against the canonical records (``cw index verify``'s check): ordinals
    checked, problems found (the first few named), overwritten ordinals ``--repair`` retired. A
    check that stopped at a corrupt record checked nothing and names that record as its one
    example."""

    ok: bool
    checked: int
    problems: int
    examples: tuple[str, ...]
    retired: int


class StoreCounts(Record):
    """The store's record counts (as the store keeps them, never a scan)."""

    sessions: int
    documents: int
    messages: int
    chunks: int
    events: int


class DoctorChecks(Record):
    """The four consistency checks ``doctor`` runs, each whatever the others found."""

    permissions: PermissionsCheck
    records: RecordsCheck
    session_order: SessionOrderCheck
    index: IndexCheck

    @property
    def ok(self) -> bool:
        """True when every check passed (``cw doctor`` exits 1 otherwise)."""
        return all(c.ok for c in (self.permissions, self.records, self.session_order, self.index))


class DoctorReport(Record):
    """The store's path, the engine version and store schema, the estimated live bytes of each
    column family and the size on disk (``sizes``, bytes, in family order then ``disk``), the
    record counts, the projects (sorted) and the consistency checks."""

    store: str
    version: str
    schema: int
    sizes: tuple[tuple[str, int], ...] = pairs()
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


class DoctorRequest(Record):
    """``doctor``: ``repair`` rebuilds the session-order index and retires overwritten index
    ordinals when a check found them stale."""

    repair: bool = False


class CountsRequest(Record):
    """``counts`` takes no parameters."""

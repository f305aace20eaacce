"""Preflight's answer: the decision for one user message (:class:`PreflightDecision`) and the
diagnostics it carries (candidates, inclusions, privacy exclusions, counters, the gate and the
budget). :mod:`cwcore.hints.preflight` decides and freezes a decision as a dictionary (the stored
form); the hints listing and views (:mod:`cwcore.contract.hints`) carry the same
:class:`Diagnostics` and rows.

The JSON is derived from the fields (:mod:`cwcore.contract.codec`): the keys and values the
engine has always answered, and ``from_json(x).to_json() == x`` as parsed JSON. Fields that a
decision only sometimes has (a ``failed`` decision keeps only its reason and latency, ``gate``
and ``budget`` exist once retrieval ran, ``warnings`` only when a stage failed) are ``None`` when
absent and emitted only when present (``omit_none``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Self

from cwcore.contract.codec import Record, field
from cwcore.errors import CorruptRecord


class CandidateRow(Record):
    """A ranked or excluded preflight candidate: ids, numbers and reasons, never text.

    ``id`` is ``<documentId>#<messageKey>`` (or ``<documentId>@w<window>`` for a row that was
    never verified down to a message); ``score`` is the deterministic preflight score,
    ``normalized`` that score over the most the query could score, ``tier`` 0/1/2 (literal
    identifier, literal phrase, other), ``coverage`` the share of query units matched (0..1),
    ``max_idf`` the largest normalized IDF of a matched term (0..1). ``reason`` is set on a row
    left out before the planner (``duplicate``, ``stale``, ``suppressed:…``, …)."""

    id: str
    document_id: str
    session: str
    kind: str
    role: str | None
    timestamp: str
    score: float
    normalized: float
    tier: int
    match_type: str
    matched_units: int
    coverage: float
    max_idf: float
    strong: bool
    reason: str | None = field(default=None, omit_none=True)


class PrivacyExclusion(Record):
    """The best candidate withheld because its text looked private: the privacy check's
    ``classification`` and ``reason`` (``privacy:<why>``)."""

    id: str
    classification: str
    reason: str


#: A row a decision left out: a candidate (ranking, dedup, filters) or a privacy exclusion.
ExcludedRow = CandidateRow | PrivacyExclusion


def excluded_row(body: Mapping[str, Any]) -> ExcludedRow:
    """The row ``body`` is: only candidate rows carry a ``documentId``."""
    if "documentId" in body:
        return CandidateRow.from_json(body)
    return PrivacyExclusion.from_json(body)


def _excluded_rows(rows: list[Mapping[str, Any]]) -> tuple[ExcludedRow, ...]:
    return tuple(map(excluded_row, rows))


class IncludedItem(Record):
    """The manifest entry of the item a decision showed: kind ``retrieval``, its
    ``classification`` (``historical-evidence`` or ``continuity-marker``), score, match type,
    hint tokens, planner ``priority``, ``group`` (the user-message key) and ``reason``."""

    id: str
    kind: str
    classification: str
    score: float
    match_type: str
    tokens: int
    priority: int
    group: str
    reason: str


class QueryUnits(Record):
    """How many query units of each group the message gave."""

    identifier: int
    phrase: int
    keyword: int


#: The counters in the order a decision builds them (``suppressed`` only when one was).
COUNT_NAMES = (
    "lineageSessions",
    "branch",
    "allowed",
    "stale",
    "durable",
    "visible",
    "alternateBranch",
    "alternateBranchCandidates",
    "exact",
    "lexical",
    "candidates",
    "verified",
    "unverified",
    "dedup",
    "suppressed",
)


class Counts(Record):
    """A decision's row counts: lineage sessions, rows of the branch, allowed after the
    filters, dropped as stale / durable / already visible, exact and BM25 rows, candidates,
    verified and unverified rows, duplicates and suppressed rows. Every counter is None when no
    retrieval ran (no query, unknown session: the counts are empty).

    ``alternate_branch_candidates`` is spec 001's ``alternateBranchCandidates``: candidate rows
    of a session outside the verified lineage that the defensive check after the lookups
    rejected (normally zero: the lookups are restricted to the lineage). Decisions frozen
    before the spec's name was adopted keep theirs, ``alternateBranch`` (always 0), in
    ``alternate_branch``."""

    lineage_sessions: int | None = field(default=None, omit_none=True)
    branch: int | None = field(default=None, omit_none=True)
    allowed: int | None = field(default=None, omit_none=True)
    stale: int | None = field(default=None, omit_none=True)
    durable: int | None = field(default=None, omit_none=True)
    visible: int | None = field(default=None, omit_none=True)
    alternate_branch: int | None = field(default=None, omit_none=True)
    alternate_branch_candidates: int | None = field(default=None, omit_none=True)
    exact: int | None = field(default=None, omit_none=True)
    lexical: int | None = field(default=None, omit_none=True)
    candidates: int | None = field(default=None, omit_none=True)
    verified: int | None = field(default=None, omit_none=True)
    unverified: int | None = field(default=None, omit_none=True)
    dedup: int | None = field(default=None, omit_none=True)
    suppressed: int | None = field(default=None, omit_none=True)

    def items(self) -> Iterator[tuple[str, int]]:
        """``(name, value)`` of the counters present, in the order a decision builds them."""
        yield from self.to_json().items()

    def __bool__(self) -> bool:
        """False when no counter is present (no retrieval ran)."""
        return bool(self.to_json())

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        unknown = set(body) - set(COUNT_NAMES)
        if unknown:
            names = ", ".join(sorted(unknown))
            reason = f"unknown counters: {names}"
            raise CorruptRecord(
                f"hint diagnostics is corrupt ({reason}): see cw doctor", reason=reason
            )
        return super().from_json(body)


class GateThresholds(Record):
    """The gate's thresholds: matched units, coverage and normalized IDF of strong lexical
    evidence, and the normalized-score margin below which the best two are ambiguous."""

    min_matched_units: int
    coverage: float
    max_normalized_idf: float
    ambiguity_margin: float


class Gate(Record):
    """The gate's thresholds: matched units, coverage and normalized IDF of strong lexical
    evidence, and the normalized-score margin below which the best two are ambiguous."""

    strong: bool
    margin: float | None
    ambiguous: bool
    thresholds: GateThresholds


class Budget(Record):
    """The token budget at decision time: the per-message budget, the session's active budget,
    the tokens other active keys used, and what was available to this hint."""

    message: int
    active: int
    active_used: int
    available: int


#: Keys a preflight answer appends to the diagnostics of the decision it returns (never stored).
CALL_KEYS = ("frozen", "callMs")


class Diagnostics(Record):
    """What a decision keeps besides its bytes: query units and historical cue, counts, the
    ranked candidates (``retrieved``), the shown item (``included``), the rows left out
    (``excluded``), stage ``warnings`` (``lexical-failed:<error type>``), the gate, the token
    budget, the reason and the decision's latency (ms). A preflight answer adds whether it came
    frozen and the whole call's time (``call_ms``, ms). Absent keys are None (see the module
    docstring)."""

    units: QueryUnits | None = field(default=None, omit_none=True)
    historical_intent: bool | None = field(default=None, omit_none=True)
    counts: Counts | None = field(default=None, omit_none=True)
    retrieved: tuple[CandidateRow, ...] | None = field(default=None, omit_none=True)
    included: tuple[IncludedItem, ...] | None = field(default=None, omit_none=True)
    excluded: tuple[ExcludedRow, ...] | None = field(
        default=None, omit_none=True, decode=_excluded_rows
    )
    warnings: tuple[str, ...] | None = field(default=None, omit_none=True)
    gate: Gate | None = field(default=None, omit_none=True)
    budget: Budget | None = field(default=None, omit_none=True)
    reason: str | None = field(default=None, omit_none=True)
    latency_ms: float | None = field(default=None, omit_none=True)
    frozen: bool | None = field(default=None, omit_none=True)
    call_ms: float | None = field(default=None, omit_none=True)

    @property
    def candidates(self) -> tuple[CandidateRow, ...]:
        """The ranked candidates (none when retrieval never ran)."""
        return self.retrieved or ()

    @property
    def shown(self) -> tuple[IncludedItem, ...]:
        """The included items (at most one; none when retrieval never ran)."""
        return self.included or ()

    @property
    def left_out(self) -> tuple[ExcludedRow, ...]:
        """The excluded rows (none when retrieval never ran)."""
        return self.excluded or ()


class PreflightDecision(Record):
    """The public preflight answer: ``outcome`` (``no-query``, ``none``, ``excerpt``,
    ``marker``, ``failed``), the exact ``hint`` bytes (None when nothing is inserted), the
    user-message key, session, query hash (None without a query), index generation (None when
    it could not be read), the hint's estimated tokens, whether the decision was already frozen,
    and its diagnostics."""

    outcome: str
    hint: str | None
    message_key: str
    session: str
    query_hash: str | None
    generation: int | None
    tokens: int
    frozen: bool
    diagnostics: Diagnostics

"""What ``preflight`` answers, and the diagnostics rows every ``hints`` view reuses, as frozen
dataclasses.

:mod:`cwcore.hints.preflight` decides and freezes a decision as a dictionary (the stored form);
the answer it gives is a :class:`PreflightDecision`, which the method handler serializes once with
``to_json()`` and :class:`cwcore.api.Archive` rebuilds with ``from_json()``. The hints listing and
views (:mod:`cwcore.hints.listings`) carry the same :class:`Diagnostics` and rows.

Key order. ``to_json()`` keeps exactly the keys, order and values the engine has always
answered, and ``from_json(x).to_json() == x``. A decision made by this call answers its
diagnostics in the order they were built; one read back from the store answers them with sorted
keys (the store's encoding sorts keys at every depth). Each record keeps which in ``as_stored``
(outside equality), detected from the keys it was read from, as ``MemoryRecord`` does. Fields
that a decision only sometimes has (the keys vary with the outcome: a ``failed`` decision keeps
only its reason and latency, ``gate`` and ``budget`` exist once retrieval ran, ``warnings`` only
when a stage failed) are ``None`` when absent and emitted only when present.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from cwcore.store import codec
from cwcore.store.codec import is_sorted, ordered


def _put(body: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


@dataclass(frozen=True)
class CandidateRow:
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
    reason: str | None = None
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "documentId": self.document_id,
            "session": self.session,
            "kind": self.kind,
            "role": self.role,
            "timestamp": self.timestamp,
            "score": self.score,
            "normalized": self.normalized,
            "tier": self.tier,
            "matchType": self.match_type,
            "matchedUnits": self.matched_units,
            "coverage": self.coverage,
            "maxIdf": self.max_idf,
            "strong": self.strong,
        }
        _put(body, "reason", self.reason)
        return ordered(body, self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> CandidateRow:
        return cls(
            id=body["id"],
            document_id=body["documentId"],
            session=body["session"],
            kind=body["kind"],
            role=body["role"],
            timestamp=body["timestamp"],
            score=body["score"],
            normalized=body["normalized"],
            tier=body["tier"],
            match_type=body["matchType"],
            matched_units=body["matchedUnits"],
            coverage=body["coverage"],
            max_idf=body["maxIdf"],
            strong=body["strong"],
            reason=body.get("reason"),
            as_stored=is_sorted(body),
        )


@dataclass(frozen=True)
class PrivacyExclusion:
    """The best candidate withheld because its text looked private: the privacy check's
    ``classification`` and ``reason`` (``privacy:<why>``)."""

    id: str
    classification: str
    reason: str
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body = {"id": self.id, "classification": self.classification, "reason": self.reason}
        return ordered(body, self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> PrivacyExclusion:
        return cls(body["id"], body["classification"], body["reason"], is_sorted(body))


#: A row a decision left out: a candidate (ranking, dedup, filters) or a privacy exclusion.
ExcludedRow = CandidateRow | PrivacyExclusion


def excluded_row(body: Mapping[str, Any]) -> ExcludedRow:
    """The row ``body`` is: only candidate rows carry a ``documentId``."""
    if "documentId" in body:
        return CandidateRow.from_json(body)
    return PrivacyExclusion.from_json(body)


@dataclass(frozen=True)
class IncludedItem:
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
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body = {
            "id": self.id,
            "kind": self.kind,
            "classification": self.classification,
            "score": self.score,
            "matchType": self.match_type,
            "tokens": self.tokens,
            "priority": self.priority,
            "group": self.group,
            "reason": self.reason,
        }
        return ordered(body, self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> IncludedItem:
        return cls(
            id=body["id"],
            kind=body["kind"],
            classification=body["classification"],
            score=body["score"],
            match_type=body["matchType"],
            tokens=body["tokens"],
            priority=body["priority"],
            group=body["group"],
            reason=body["reason"],
            as_stored=is_sorted(body),
        )


@dataclass(frozen=True)
class QueryUnits:
    """How many query units of each group the message gave."""

    identifier: int
    phrase: int
    keyword: int
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body = {"identifier": self.identifier, "phrase": self.phrase, "keyword": self.keyword}
        return ordered(body, self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> QueryUnits:
        return cls(body["identifier"], body["phrase"], body["keyword"], is_sorted(body))


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


@dataclass(frozen=True)
class Counts:
    """A decision's row counts: lineage sessions, rows of the branch, allowed after the
    filters, dropped as stale / durable / already visible, exact and BM25 rows, candidates,
    verified and unverified rows, duplicates and suppressed rows. Every counter is None when no
    retrieval ran (no query, unknown session: the counts are empty).

    ``alternate_branch_candidates`` is spec 001's ``alternateBranchCandidates``: candidate rows
    of a session outside the verified lineage that the defensive check after the lookups
    rejected (normally zero: the lookups are restricted to the lineage). Decisions frozen
    before the spec's name was adopted keep theirs, ``alternateBranch`` (always 0), in
    ``alternate_branch``."""

    lineage_sessions: int | None = None
    branch: int | None = None
    allowed: int | None = None
    stale: int | None = None
    durable: int | None = None
    visible: int | None = None
    alternate_branch: int | None = None
    alternate_branch_candidates: int | None = None
    exact: int | None = None
    lexical: int | None = None
    candidates: int | None = None
    verified: int | None = None
    unverified: int | None = None
    dedup: int | None = None
    suppressed: int | None = None
    as_stored: bool = field(default=False, compare=False)

    def items(self) -> Iterator[tuple[str, int]]:
        """``(name, value)`` of the counters present, in the order a decision builds them."""
        for name, value in zip(COUNT_NAMES, self._values(), strict=True):
            if value is not None:
                yield name, value

    def _values(self) -> tuple[int | None, ...]:
        return (
            self.lineage_sessions,
            self.branch,
            self.allowed,
            self.stale,
            self.durable,
            self.visible,
            self.alternate_branch,
            self.alternate_branch_candidates,
            self.exact,
            self.lexical,
            self.candidates,
            self.verified,
            self.unverified,
            self.dedup,
            self.suppressed,
        )

    def __bool__(self) -> bool:
        """False when no counter is present (no retrieval ran)."""
        return any(v is not None for v in self._values())

    def to_json(self) -> dict[str, Any]:
        return ordered(dict(self.items()), self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Counts:
        unknown = set(body) - set(COUNT_NAMES)
        if unknown:
            names = ", ".join(sorted(unknown))
            raise codec.corrupt("hint diagnostics", f"unknown counters: {names}")
        g = body.get
        return cls(
            g("lineageSessions"),
            g("branch"),
            g("allowed"),
            g("stale"),
            g("durable"),
            g("visible"),
            g("alternateBranch"),
            g("alternateBranchCandidates"),
            g("exact"),
            g("lexical"),
            g("candidates"),
            g("verified"),
            g("unverified"),
            g("dedup"),
            g("suppressed"),
            as_stored=is_sorted(body),
        )


@dataclass(frozen=True)
class GateThresholds:
    """The gate's thresholds: matched units, coverage and normalized IDF of strong lexical
    evidence, and the normalized-score margin below which the best two are ambiguous."""

    min_matched_units: int
    coverage: float
    max_normalized_idf: float
    ambiguity_margin: float
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body = {
            "minMatchedUnits": self.min_matched_units,
            "coverage": self.coverage,
            "maxNormalizedIdf": self.max_normalized_idf,
            "ambiguityMargin": self.ambiguity_margin,
        }
        return ordered(body, self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> GateThresholds:
        return cls(
            body["minMatchedUnits"],
            body["coverage"],
            body["maxNormalizedIdf"],
            body["ambiguityMargin"],
            is_sorted(body),
        )


@dataclass(frozen=True)
class Gate:
    """What the gate saw: was the best candidate strong, the normalized margin to the second
    (None with one candidate), was it ambiguous, and the thresholds it applied."""

    strong: bool
    margin: float | None
    ambiguous: bool
    thresholds: GateThresholds
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body = {
            "strong": self.strong,
            "margin": self.margin,
            "ambiguous": self.ambiguous,
            "thresholds": self.thresholds.to_json(),
        }
        return ordered(body, self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Gate:
        thresholds = GateThresholds.from_json(body["thresholds"])
        return cls(body["strong"], body["margin"], body["ambiguous"], thresholds, is_sorted(body))


@dataclass(frozen=True)
class Budget:
    """The token budget at decision time: the per-message budget, the session's active budget,
    the tokens other active keys used, and what was available to this hint."""

    message: int
    active: int
    active_used: int
    available: int
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body = {
            "message": self.message,
            "active": self.active,
            "activeUsed": self.active_used,
            "available": self.available,
        }
        return ordered(body, self.as_stored)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Budget:
        return cls(
            body["message"], body["active"], body["activeUsed"], body["available"], is_sorted(body)
        )


#: Keys a preflight answer appends to the diagnostics of the decision it returns (never stored).
CALL_KEYS = ("frozen", "callMs")


@dataclass(frozen=True)
class Diagnostics:
    """What a decision keeps besides its bytes: query units and historical cue, counts, the
    ranked candidates (``retrieved``), the shown item (``included``), the rows left out
    (``excluded``), stage ``warnings`` (``lexical-failed:<error type>``), the gate, the token
    budget, the reason and the decision's latency (ms). A preflight answer adds whether it came
    frozen and the whole call's time (``call_ms``, ms). Absent keys are None (see the module
    docstring)."""

    units: QueryUnits | None = None
    historical_intent: bool | None = None
    counts: Counts | None = None
    retrieved: tuple[CandidateRow, ...] | None = None
    included: tuple[IncludedItem, ...] | None = None
    excluded: tuple[ExcludedRow, ...] | None = None
    warnings: tuple[str, ...] | None = None
    gate: Gate | None = None
    budget: Budget | None = None
    reason: str | None = None
    latency_ms: float | None = None
    frozen: bool | None = None
    call_ms: float | None = None
    as_stored: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {}
        _put(body, "units", None if self.units is None else self.units.to_json())
        _put(body, "historicalIntent", self.historical_intent)
        _put(body, "counts", None if self.counts is None else self.counts.to_json())
        _put(body, "retrieved", _rows(self.retrieved))
        _put(body, "included", _rows(self.included))
        _put(body, "excluded", _rows(self.excluded))
        _put(body, "warnings", None if self.warnings is None else list(self.warnings))
        _put(body, "gate", None if self.gate is None else self.gate.to_json())
        _put(body, "budget", None if self.budget is None else self.budget.to_json())
        _put(body, "reason", self.reason)
        _put(body, "latencyMs", self.latency_ms)
        body = ordered(body, self.as_stored)
        _put(body, "frozen", self.frozen)
        _put(body, "callMs", self.call_ms)
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Diagnostics:
        g = body.get
        units, counts, gate, budget = g("units"), g("counts"), g("gate"), g("budget")
        retrieved, included, excluded = g("retrieved"), g("included"), g("excluded")
        warnings = g("warnings")
        return cls(
            units=None if units is None else QueryUnits.from_json(units),
            historical_intent=g("historicalIntent"),
            counts=None if counts is None else Counts.from_json(counts),
            retrieved=None if retrieved is None else tuple(map(CandidateRow.from_json, retrieved)),
            included=None if included is None else tuple(map(IncludedItem.from_json, included)),
            excluded=None if excluded is None else tuple(map(excluded_row, excluded)),
            warnings=None if warnings is None else tuple(warnings),
            gate=None if gate is None else Gate.from_json(gate),
            budget=None if budget is None else Budget.from_json(budget),
            reason=g("reason"),
            latency_ms=g("latencyMs"),
            frozen=g("frozen"),
            call_ms=g("callMs"),
            as_stored=is_sorted(body, tail=CALL_KEYS),
        )

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


def _rows(
    rows: tuple[CandidateRow, ...] | tuple[IncludedItem, ...] | tuple[ExcludedRow, ...] | None,
) -> list[dict[str, Any]] | None:
    return None if rows is None else [row.to_json() for row in rows]


@dataclass(frozen=True)
class PreflightDecision:
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

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.outcome,
            "hint": self.hint,
            "messageKey": self.message_key,
            "session": self.session,
            "queryHash": self.query_hash,
            "generation": self.generation,
            "tokens": self.tokens,
            "frozen": self.frozen,
            "diagnostics": self.diagnostics.to_json(),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> PreflightDecision:
        return cls(
            outcome=body["outcome"],
            hint=body["hint"],
            message_key=body["messageKey"],
            session=body["session"],
            query_hash=body["queryHash"],
            generation=body["generation"],
            tokens=body["tokens"],
            frozen=body["frozen"],
            diagnostics=Diagnostics.from_json(body["diagnostics"]),
        )

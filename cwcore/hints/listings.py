"""What ``hints`` answers — the listing of frozen decisions and each diagnostic view — as frozen
dataclasses over the rows of :mod:`cwcore.hints.results` (the memory selection of a turn is in
:mod:`cwcore.hints.memory_turns`).

The ``hints`` handler serializes a :class:`HintsListing` (no ``view``) or a :class:`HintsView`
once with ``to_json()``; :class:`cwcore.api.Archive` rebuilds it with ``from_json()``. The
JSON is derived from the fields (:mod:`cwcore.contract.codec`): the keys and values the engine
has always answered, ``from_json(x).to_json() == x`` as parsed JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Self

from cwcore.contract.codec import Record, field, fields_from_json, fields_json
from cwcore.hints.memory_turns import MemoryDecision, MemoryTurn
from cwcore.hints.results import (
    Budget,
    CandidateRow,
    Counts,
    Diagnostics,
    ExcludedRow,
    IncludedItem,
    PrivacyExclusion,
)

# -- the listing ----------------------------------------------------------------------------------


class HintEntry(Record):
    """One frozen decision as listed: the head, the exact hint bytes and their size, tokens,
    query hash, index generation, when it was frozen (ISO-8601 UTC), its diagnostics (as
    stored) and the memory selection of the same turn (None when none was kept).

    ``said`` is the user's message as preflight received it (secrets scrubbed, at most
    :data:`cwcore.hints.preflight.SAID_MAX_CHARS` characters, ``…`` when cut); None for a
    decision frozen before messages were kept (the JSON then has no ``said`` key), or when a
    privacy policy withheld it — ``said_withheld`` (``saidWithheld``) then names why
    (``privacy:<reason>``)."""

    session: str
    message_key: str
    outcome: str
    reason: str | None
    hint: str | None
    bytes: int
    tokens: int
    query_hash: str | None
    generation: int | None
    created_at: str | None
    diagnostics: Diagnostics
    memory: MemoryTurn | None
    said: str | None = field(default=None, omit_none=True)
    said_withheld: str | None = field(default=None, omit_none=True)

    def to_json(self) -> dict[str, Any]:
        body = fields_json(self)
        # A withheld message says so beside an empty ``said``; decisions frozen before messages
        # were kept have neither key (their JSON is unchanged).
        if self.said_withheld is not None:
            body["said"] = self.said
        return body


class SessionBudget(Record):
    """A listed session's active hint budget: the user-message keys whose hints charge it,
    the tokens they charge, the budget (tokens) and the last hint activity (ISO-8601 UTC)."""

    session: str = field(skip=True)
    active_keys: tuple[str, ...]
    active_tokens: int
    active_budget: int
    last_activity: str | None


def _write_budgets(sessions: tuple[SessionBudget, ...]) -> dict[str, Any]:
    return {s.session: s.to_json() for s in sessions}


def _read_budgets(body: Mapping[str, Any]) -> tuple[SessionBudget, ...]:
    return tuple(SessionBudget(k, **fields_from_json(SessionBudget, v)) for k, v in body.items())


class HintsListing(Record):
    """``hints`` without a view: the frozen decisions (key order), the budget of each listed
    session (sorted by id) and whether the listing hit its limit."""

    hints: tuple[HintEntry, ...]
    sessions: tuple[SessionBudget, ...] = field(encode=_write_budgets, decode=_read_budgets)
    truncated: bool

    def budget(self, session: str) -> SessionBudget | None:
        """The listed budget of ``session``, if it is listed."""
        return next((s for s in self.sessions if s.session == session), None)


# -- the views ------------------------------------------------------------------------------------


class DecisionHead(Record):
    """What every hint view says of a decision first: session, user-message key, outcome, its
    reason and when it was frozen (ISO-8601 UTC)."""

    session: str
    message_key: str
    outcome: str
    reason: str | None
    created_at: str | None


@dataclass(frozen=True)
class Exclusion:
    """A row a decision left out, as the ``excluded`` and ``retrieved`` views list it: the row
    as the decision kept it, the view's ``reason`` (the row's own, or why the planner passed a
    ranked candidate over) and the ``stage`` (``filter``, ``rank`` or ``planner``)."""

    row: ExcludedRow
    reason: str
    stage: str

    def __post_init__(self) -> None:
        # The JSON merges the view's reason over the row's, so the row read back carries it:
        # a row without a reason of its own is given the view's, and the record round-trips.
        if isinstance(self.row, CandidateRow) and self.row.reason is None:
            object.__setattr__(self, "row", replace(self.row, reason=self.reason))

    @property
    def id(self) -> str:
        return self.row.id

    def to_json(self) -> dict[str, Any]:
        return {**self.row.to_json(), "reason": self.reason, "stage": self.stage}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Exclusion:
        # The view's reason is the row's own where the row kept one, so the row reads it back
        # either way (the JSON is the same).
        rest = {k: v for k, v in body.items() if k != "stage"}
        row: ExcludedRow
        if "documentId" not in rest:
            row = PrivacyExclusion.from_json(rest)
        else:
            row = CandidateRow.from_json(rest)
        return cls(row, body["reason"], body["stage"])


def _exclusions(rows: list[Mapping[str, Any]]) -> tuple[Exclusion, ...]:
    return tuple(Exclusion.from_json(row) for row in rows)


def _write_exclusions(rows: tuple[Exclusion, ...]) -> list[dict[str, Any]]:
    return [row.to_json() for row in rows]


class RetrievedDecision(Record):
    """The ``retrieved`` view of a decision: the archived text an excerpt quotes, or a marker's
    phrases (spans of the user's own message), the ranked candidates, the counts, the planner's
    exclusions, hint tokens, the budget, warnings and the latency (ms)."""

    head: DecisionHead = field(flatten=True)
    excerpt: str | None
    marker_phrases: tuple[str, ...] | None
    candidates: tuple[CandidateRow, ...]
    counts: Counts
    exclusions: tuple[Exclusion, ...] = field(encode=_write_exclusions, decode=_exclusions)
    tokens: int
    budget: Budget | None
    warnings: tuple[str, ...]
    latency_ms: float | None


class ManifestEntry(Record):
    """A context-manifest entry: kind ``retrieval``, the source entry id, whether it entered
    the context, classification, score (None for a privacy exclusion), tokens, group (the
    user-message key) and reason."""

    kind: str
    id: str
    included: bool
    classification: str | None
    score: float | None
    tokens: int | None
    group: str | None
    reason: str | None


class ManifestDecision(Record):
    """The ``manifest`` view of a decision: its entries; ``retrieved_event_ids`` are their ids."""

    head: DecisionHead = field(flatten=True)
    entries: tuple[ManifestEntry, ...]

    @property
    def retrieved_event_ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        return {**fields_json(self), "retrievedEventIds": list(self.retrieved_event_ids)}


class IncludedDecision(Record):
    """The ``included`` view of a decision: the items that entered the context (at most one)."""

    head: DecisionHead = field(flatten=True)
    included: tuple[IncludedItem, ...]


class ExcludedDecision(Record):
    """The ``excluded`` view of a decision: what it left out, with reasons and stages."""

    head: DecisionHead = field(flatten=True)
    excluded: tuple[Exclusion, ...] = field(encode=_write_exclusions, decode=_exclusions)


ViewDecision = (
    RetrievedDecision | ManifestDecision | IncludedDecision | ExcludedDecision | MemoryDecision
)

#: The record type of each view's decisions.
_VIEWS: dict[str, type[Record]] = {
    "retrieved": RetrievedDecision,
    "manifest": ManifestDecision,
    "included": IncludedDecision,
    "excluded": ExcludedDecision,
    "memory": MemoryDecision,
}


class HintsView(Record):
    """``hints`` with a view: the view's name, whether ``all`` widened ``excluded``, one record
    per decision (of the view's type) and whether the listing hit its limit."""

    view: str
    all: bool
    decisions: tuple[ViewDecision, ...]
    truncated: bool

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        kind = _VIEWS.get(body["view"], MemoryDecision)
        decisions = tuple(kind.from_json(d) for d in body["decisions"])
        return cls(body["view"], body["all"], decisions, body["truncated"])  # type: ignore[arg-type]

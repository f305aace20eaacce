"""What ``hints`` answers — the listing of frozen decisions and each diagnostic view — as frozen
dataclasses over the rows of :mod:`cwcore.hints.results` (the memory selection of a turn is in
:mod:`cwcore.hints.memory_turns`).

The ``hints`` handler serializes a :class:`HintsListing` (no ``view``) or a :class:`HintsView`
once with ``to_json()``; :class:`cwcore.api.Archive` rebuilds it with ``from_json()``.
``to_json()`` keeps exactly the keys, order and values the engine has always answered, and
``from_json(x).to_json() == x``. Records read back from the store (a decision's diagnostics, a
turn's memory selection) keep the store's sorted key order (``as_stored``, as in
:mod:`cwcore.hints.results`); what the views compute is in the order they build it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


@dataclass(frozen=True)
class HintEntry:
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
    said: str | None = None
    said_withheld: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "session": self.session,
            "messageKey": self.message_key,
            "outcome": self.outcome,
            "reason": self.reason,
        }
        # Decisions frozen before messages were kept have neither key (their JSON is unchanged).
        if self.said is not None or self.said_withheld is not None:
            body["said"] = self.said
        if self.said_withheld is not None:
            body["saidWithheld"] = self.said_withheld
        return body | {
            "hint": self.hint,
            "bytes": self.bytes,
            "tokens": self.tokens,
            "queryHash": self.query_hash,
            "generation": self.generation,
            "createdAt": self.created_at,
            "diagnostics": self.diagnostics.to_json(),
            "memory": None if self.memory is None else self.memory.to_json(),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> HintEntry:
        memory = body["memory"]
        return cls(
            session=body["session"],
            message_key=body["messageKey"],
            outcome=body["outcome"],
            reason=body["reason"],
            hint=body["hint"],
            bytes=body["bytes"],
            tokens=body["tokens"],
            query_hash=body["queryHash"],
            generation=body["generation"],
            created_at=body["createdAt"],
            diagnostics=Diagnostics.from_json(body["diagnostics"]),
            memory=None if memory is None else MemoryTurn.from_json(memory),
            said=body.get("said"),
            said_withheld=body.get("saidWithheld"),
        )


@dataclass(frozen=True)
class SessionBudget:
    """A listed session's active hint budget: the user-message keys whose hints charge it,
    the tokens they charge, the budget (tokens) and the last hint activity (ISO-8601 UTC)."""

    session: str
    active_keys: tuple[str, ...]
    active_tokens: int
    active_budget: int
    last_activity: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "activeKeys": list(self.active_keys),
            "activeTokens": self.active_tokens,
            "activeBudget": self.active_budget,
            "lastActivity": self.last_activity,
        }

    @classmethod
    def from_json(cls, session: str, body: Mapping[str, Any]) -> SessionBudget:
        return cls(
            session,
            tuple(body["activeKeys"]),
            body["activeTokens"],
            body["activeBudget"],
            body["lastActivity"],
        )


@dataclass(frozen=True)
class HintsListing:
    """``hints`` without a view: the frozen decisions (key order), the budget of each listed
    session (sorted by id) and whether the listing hit its limit."""

    hints: tuple[HintEntry, ...]
    sessions: tuple[SessionBudget, ...]
    truncated: bool

    def budget(self, session: str) -> SessionBudget | None:
        """The listed budget of ``session``, if it is listed."""
        return next((s for s in self.sessions if s.session == session), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "hints": [h.to_json() for h in self.hints],
            "sessions": {s.session: s.to_json() for s in self.sessions},
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> HintsListing:
        return cls(
            hints=tuple(HintEntry.from_json(h) for h in body["hints"]),
            sessions=tuple(SessionBudget.from_json(k, v) for k, v in body["sessions"].items()),
            truncated=body["truncated"],
        )


# -- the views ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DecisionHead:
    """What every hint view says of a decision first: session, user-message key, outcome, its
    reason and when it was frozen (ISO-8601 UTC)."""

    session: str
    message_key: str
    outcome: str
    reason: str | None
    created_at: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "messageKey": self.message_key,
            "outcome": self.outcome,
            "reason": self.reason,
            "createdAt": self.created_at,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DecisionHead:
        return cls(
            body["session"], body["messageKey"], body["outcome"], body["reason"], body["createdAt"]
        )


@dataclass(frozen=True)
class Exclusion:
    """A row a decision left out, as the ``excluded`` and ``retrieved`` views list it: the row
    as the decision kept it, the view's ``reason`` (the row's own, or why the planner passed a
    ranked candidate over) and the ``stage`` (``filter``, ``rank`` or ``planner``)."""

    row: ExcludedRow
    reason: str
    stage: str

    @property
    def id(self) -> str:
        return self.row.id

    def to_json(self) -> dict[str, Any]:
        return {**self.row.to_json(), "reason": self.reason, "stage": self.stage}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Exclusion:
        rest = {k: v for k, v in body.items() if k != "stage"}
        row: ExcludedRow
        if "documentId" not in rest:
            row = PrivacyExclusion.from_json(rest)
        else:
            # A reason the view appended is the last key; one the row kept sits in its place.
            if list(rest)[-1] == "reason":
                rest.pop("reason")
            row = CandidateRow.from_json(rest)
        return cls(row, body["reason"], body["stage"])


@dataclass(frozen=True)
class RetrievedDecision:
    """The ``retrieved`` view of a decision: the archived text an excerpt quotes, or a marker's
    phrases (spans of the user's own message), the ranked candidates, the counts, the planner's
    exclusions, hint tokens, the budget, warnings and the latency (ms)."""

    head: DecisionHead
    excerpt: str | None
    marker_phrases: tuple[str, ...] | None
    candidates: tuple[CandidateRow, ...]
    counts: Counts
    exclusions: tuple[Exclusion, ...]
    tokens: int
    budget: Budget | None
    warnings: tuple[str, ...]
    latency_ms: float | None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head.to_json(),
            "excerpt": self.excerpt,
            "markerPhrases": None if self.marker_phrases is None else list(self.marker_phrases),
            "candidates": [c.to_json() for c in self.candidates],
            "counts": self.counts.to_json(),
            "exclusions": [e.to_json() for e in self.exclusions],
            "tokens": self.tokens,
            "budget": None if self.budget is None else self.budget.to_json(),
            "warnings": list(self.warnings),
            "latencyMs": self.latency_ms,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> RetrievedDecision:
        phrases, budget = body["markerPhrases"], body["budget"]
        return cls(
            head=DecisionHead.from_json(body),
            excerpt=body["excerpt"],
            marker_phrases=None if phrases is None else tuple(phrases),
            candidates=tuple(CandidateRow.from_json(c) for c in body["candidates"]),
            counts=Counts.from_json(body["counts"]),
            exclusions=tuple(Exclusion.from_json(e) for e in body["exclusions"]),
            tokens=body["tokens"],
            budget=None if budget is None else Budget.from_json(budget),
            warnings=tuple(body["warnings"]),
            latency_ms=body["latencyMs"],
        )


@dataclass(frozen=True)
class ManifestEntry:
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

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "id": self.id,
            "included": self.included,
            "classification": self.classification,
            "score": self.score,
            "tokens": self.tokens,
            "group": self.group,
            "reason": self.reason,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ManifestEntry:
        return cls(
            body["kind"],
            body["id"],
            body["included"],
            body["classification"],
            body["score"],
            body["tokens"],
            body["group"],
            body["reason"],
        )


@dataclass(frozen=True)
class ManifestDecision:
    """The ``manifest`` view of a decision: its entries; ``retrieved_event_ids`` are their ids."""

    head: DecisionHead
    entries: tuple[ManifestEntry, ...]

    @property
    def retrieved_event_ids(self) -> tuple[str, ...]:
        return tuple(e.id for e in self.entries)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.head.to_json(),
            "entries": [e.to_json() for e in self.entries],
            "retrievedEventIds": list(self.retrieved_event_ids),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ManifestDecision:
        entries = tuple(ManifestEntry.from_json(e) for e in body["entries"])
        return cls(DecisionHead.from_json(body), entries)


@dataclass(frozen=True)
class IncludedDecision:
    """The ``included`` view of a decision: the items that entered the context (at most one)."""

    head: DecisionHead
    included: tuple[IncludedItem, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.head.to_json(), "included": [i.to_json() for i in self.included]}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> IncludedDecision:
        items = tuple(IncludedItem.from_json(i) for i in body["included"])
        return cls(DecisionHead.from_json(body), items)


@dataclass(frozen=True)
class ExcludedDecision:
    """The ``excluded`` view of a decision: what it left out, with reasons and stages."""

    head: DecisionHead
    excluded: tuple[Exclusion, ...]

    def to_json(self) -> dict[str, Any]:
        return {**self.head.to_json(), "excluded": [e.to_json() for e in self.excluded]}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ExcludedDecision:
        rows = tuple(Exclusion.from_json(e) for e in body["excluded"])
        return cls(DecisionHead.from_json(body), rows)


ViewDecision = (
    RetrievedDecision | ManifestDecision | IncludedDecision | ExcludedDecision | MemoryDecision
)


def _decision(view: str, body: Mapping[str, Any]) -> ViewDecision:
    """The record of one decision of view ``view``."""
    if view == "retrieved":
        return RetrievedDecision.from_json(body)
    if view == "manifest":
        return ManifestDecision.from_json(body)
    if view == "included":
        return IncludedDecision.from_json(body)
    if view == "excluded":
        return ExcludedDecision.from_json(body)
    return MemoryDecision.from_json(body)


@dataclass(frozen=True)
class HintsView:
    """``hints`` with a view: the view's name, whether ``all`` widened ``excluded``, one record
    per decision (of the view's type) and whether the listing hit its limit."""

    view: str
    all: bool
    decisions: tuple[ViewDecision, ...]
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "view": self.view,
            "all": self.all,
            "decisions": [d.to_json() for d in self.decisions],
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> HintsView:
        decisions = tuple(_decision(body["view"], d) for d in body["decisions"])
        return cls(body["view"], body["all"], decisions, body["truncated"])

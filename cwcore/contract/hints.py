"""The preflight hint methods' contract: ``preflight``, ``hook.turn``, ``hints`` (the listing
of frozen decisions and each diagnostic view, with the memory selection of a turn),
``hints.rotate``, ``hints.maintain`` and ``hints.locate``.

:mod:`cwcore.hints.preflight` decides and freezes a decision as a dictionary (the stored form);
the answer it gives is a :class:`~cwcore.contract.preflight.PreflightDecision`, declared with its
diagnostics in :mod:`cwcore.contract.preflight`. The hints listing and views carry the same
diagnostics and rows; a turn's memory selection (:class:`MemoryTurn`) is what
:func:`cwcore.hints.frozen.record_memory` keeps — ids, counts and reasons, never the block's text.

The JSON is derived from the fields (:mod:`cwcore.contract.codec`): the keys and values the
engine has always answered, and ``from_json(x).to_json() == x`` as parsed JSON. Fields that a
decision only sometimes has (the keys vary with the outcome: a ``failed`` decision keeps only its
reason and latency, ``gate`` and ``budget`` exist once retrieval ran, ``warnings`` only when a
stage failed) are ``None`` when absent and emitted only when present (``omit_none``).

``preflight`` and ``hook.turn`` are on the path of every user message (the hook client sends
their JSON as it is): their requests check types and the bounds that need no stored data, once,
through the codec's cached plan; identifiers are checked where they are used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Self

from cwcore.contract.codec import Record, field, fields_from_json, fields_json, pairs
from cwcore.contract.memory import LeftOut, MemoryRanking, ProcessorTrace
from cwcore.contract.preflight import (
    Budget,
    CandidateRow,
    Counts,
    Diagnostics,
    ExcludedRow,
    IncludedItem,
    PrivacyExclusion,
)
from cwcore.errors import InvalidInput, LimitExceeded

# -- a turn's memory selection, as kept -----------------------------------------------------------


class MemoryTurn(Record):
    """The memory selection kept for one turn (ids, counts and reasons, never the block's
    text): event, project, when (ISO-8601 UTC), how long it took (ms), skipped and why, block
    bytes and budget, record ids per section, sections cut by the budget, the processors'
    traces, the records left out (at most 100; ``unselected_more`` counts the rest) and the
    ranking."""

    session: str
    message_key: str
    event: str | None
    project: str | None
    created_at: str | None
    latency_ms: float | None
    skipped: bool
    reason: str | None
    bytes: int
    budget_bytes: int | None
    sections: tuple[tuple[str, tuple[str, ...]], ...] = pairs(tuple)
    truncated: tuple[str, ...]
    traces: tuple[ProcessorTrace, ...]
    unselected: tuple[LeftOut, ...]
    unselected_more: int | None = field(default=None, omit_none=True)
    ranking: MemoryRanking | None = field(default=None, omit_none=True)


# -- the memory view ------------------------------------------------------------------------------


class MemoryExclusion(Record):
    """A memory record a turn left out: its reason and stage (a pipeline processor's name, or
    ``selection``)."""

    id: str
    reason: str | None
    stage: str


class TraceCounts(Record):
    """A pipeline processor and how many records went in and came out (snake_case keys, as the
    pipeline writes them)."""

    processor: str
    input_count: int = field(name="input_count")
    output_count: int = field(name="output_count")


class MemoryDecision(Record):
    """The ``memory`` view of one turn: what entered the block (ids per section) and what was
    left out and why (``excluded_more`` counts ids cut from the kept lists), bytes and budget,
    the ranking, each processor's counts and the latency (ms)."""

    session: str
    message_key: str
    event: str | None
    project: str | None
    created_at: str | None
    skipped: bool
    reason: str | None
    bytes: int
    budget_bytes: int | None
    selected: tuple[tuple[str, tuple[str, ...]], ...] = pairs(tuple)
    truncated: tuple[str, ...]
    excluded: tuple[MemoryExclusion, ...]
    excluded_more: int
    ranking: MemoryRanking | None
    traces: tuple[TraceCounts, ...]
    latency_ms: float | None


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


# -- hints.rotate and hints.maintain ----------------------------------------------------------


class Rotated(Record):
    """What ``hints.rotate`` answers: the user-message keys whose hints were dropped (in key
    order), how many active keys kept a hint that charges the budget, the hint tokens those
    charge now and the session's active budget (tokens)."""

    session: str
    dropped: tuple[str, ...]
    kept: int
    active_tokens: int
    active_budget: int


class Maintained(Record):
    """What one bounded ``hints.maintain`` pass did: exposures past their cooldown deleted,
    abandoned sessions whose hint records were reclaimed, and the hint records removed with
    them."""

    exposures_tombstoned: int
    sessions_reclaimed: int
    hints_reclaimed: int


# -- hook.turn, hints.locate and the two shapes of hints ------------------------------------------


class HookTurn(Record):
    """``hook.turn``: the hook ``event`` (``prompt`` or ``session-start``), the session as sent,
    the preflight ``hint`` and ``outcome`` (None at session start), the user-message key (the
    session-start key at session start), the memory block (None when there is none;
    ``memoryReason`` says why: a trivial-prompt reason, ``nothing-to-inject``, ``failed``, or
    ``disabled``) and its UTF-8 size in bytes."""

    event: str
    session: str
    hint: str | None
    outcome: str | None
    message_key: str
    memory: str | None
    memory_reason: str | None
    memory_bytes: int


class Located(Record):
    """``hints.locate``: a signed recall ``locator`` for a decision's candidate, its document
    and the user-message key it reads (None when the document has no message)."""

    locator: str
    document_id: str
    message_key: str | None


class HintsAnswer(Record):
    """``hints``: a :class:`HintsListing`, or with a view a :class:`HintsView` (its JSON names
    the ``view``); written as the one it holds."""

    answer: HintsListing | HintsView

    def to_json(self) -> dict[str, Any]:
        return self.answer.to_json()

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        return cls(HintsView.from_json(body) if "view" in body else HintsListing.from_json(body))


# -- requests ---------------------------------------------------------------------------------

#: The largest user message preflight reads (bytes of UTF-8).
MAX_MESSAGE_BYTES = 1024 * 1024
#: Ranked candidates a preflight decision weighs: by default, and at most.
DEFAULT_MAX_RESULTS = 10
MAX_RESULTS = 100
#: ``hints``'s bound on ``limit`` (decisions listed).
MAX_LISTING = 10_000
#: ``hints.maintain``'s bound on ``limit`` (records one pass may touch).
MAX_MAINTAIN = 100_000
#: The longest candidate id ``hints.locate`` accepts (a document id, ``#`` and a message key).
MAX_CANDIDATE_CHARS = 4_096
#: The host events ``hook.turn`` answers.
EVENTS = ("prompt", "session-start")


def _check_preflight(message: str | None, max_results: int, hint_budget_tokens: int | None) -> None:
    if message is not None and len(message.encode("utf-8", "surrogatepass")) > MAX_MESSAGE_BYTES:
        raise LimitExceeded("message exceeds 1 MiB")
    if not 1 <= max_results <= MAX_RESULTS:
        raise InvalidInput(f"maxResults must be an integer from 1 to {MAX_RESULTS}")
    if hint_budget_tokens is not None and hint_budget_tokens < 0:
        raise InvalidInput("hintBudgetTokens must be a non-negative integer")


class PreflightRequest(Record):
    """``preflight``: one real user ``message`` (at most 1 MiB) of ``session`` (an id, or a
    unique prefix of 4+ characters), its ``messageKey`` (default: a hash of the message), the
    source keys already visible in the agent's context (``excludeVisibleSourceKeys``), at most
    ``maxResults`` (1..100) ranked candidates and the hint's token budget (None: the
    setting)."""

    message: str
    session: str | None = field(default=None, omit_none=True)
    message_key: str | None = field(default=None, omit_none=True)
    exclude_visible_source_keys: tuple[str, ...] | None = field(default=None, omit_none=True)
    max_results: int = DEFAULT_MAX_RESULTS
    hint_budget_tokens: int | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        _check_preflight(self.message, self.max_results, self.hint_budget_tokens)
        if not self.session:
            raise InvalidInput("session is required")


class HookTurnRequest(Record):
    """``hook.turn``: the host ``event`` (``prompt``, the default, or ``session-start``), the
    ``session`` (required), the host's working folder ``cwd`` and, for a prompt, the
    :class:`PreflightRequest` fields (``message`` required then)."""

    session: str | None = field(default=None, omit_none=True)
    event: str = "prompt"
    message: str | None = field(default=None, omit_none=True)
    message_key: str | None = field(default=None, omit_none=True)
    exclude_visible_source_keys: tuple[str, ...] | None = field(default=None, omit_none=True)
    max_results: int = DEFAULT_MAX_RESULTS
    hint_budget_tokens: int | None = field(default=None, omit_none=True)
    cwd: str | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if self.event not in EVENTS:
            raise InvalidInput(f"event must be one of {', '.join(EVENTS)}")
        if not self.session:
            raise InvalidInput("session is required")
        _check_preflight(self.message, self.max_results, self.hint_budget_tokens)

    def preflight(self) -> PreflightRequest:
        """The preflight request of a ``prompt`` event (``message is required`` without one)."""
        if self.message is None:
            raise InvalidInput("message is required")
        return PreflightRequest(
            self.message,
            self.session,
            self.message_key,
            self.exclude_visible_source_keys,
            self.max_results,
            self.hint_budget_tokens,
        )


class HintsRequest(Record):
    """``hints``: the decisions of ``session`` (all sessions when absent or empty), at most
    ``limit`` (1..10000), only ``messageKey``'s when given; with ``view`` (``retrieved``,
    ``manifest``, ``included``, ``excluded``, ``memory``) that view instead, ``all`` widening
    the excluded view to the filtered rows."""

    session: str | None = field(default=None, omit_none=True)
    limit: int = 1_000
    view: str | None = field(default=None, omit_none=True)
    everything: bool = field(name="all", default=False)
    message_key: str | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LISTING:
            raise InvalidInput(f"limit must be an integer from 1 to {MAX_LISTING}")
        if self.everything and self.view is None:
            raise InvalidInput("all applies to the excluded view only")


class RotateRequest(Record):
    """``hints.rotate``: the ``session`` and the user-message keys still in its ``active``
    context (their count and size are bounded where the rotation reads them)."""

    session: str | None = field(default=None, omit_none=True)
    active: tuple[str, ...] | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not self.session:
            raise InvalidInput("session is required")
        if self.active is None:
            raise InvalidInput("active must be a list of message keys")


class MaintainRequest(Record):
    """``hints.maintain``: touch at most ``limit`` records (1..100000; default the engine's
    batch)."""

    limit: int | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if self.limit is not None and not 1 <= self.limit <= MAX_MAINTAIN:
            raise InvalidInput(f"limit must be an integer from 1 to {MAX_MAINTAIN}")


class LocateRequest(Record):
    """``hints.locate``: a frozen decision's ``candidate`` id (``<documentId>#<messageKey>``)."""

    candidate: str | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not self.candidate or len(self.candidate) > MAX_CANDIDATE_CHARS:
            raise InvalidInput("candidate must be a candidate id (<documentId>#<messageKey>)")

"""The memory methods' contract: ``memory.add``, ``memory.list``, ``memory.show``,
``memory.contest``, ``memory.deprecate``, ``memory.delete`` and ``memory.context`` (and the
``bound.memory`` answer, which shares ``memory.context``'s shape).

:mod:`cwcore.memory.records` validates and stores records as dictionaries (their field names are
the public memory format); the handlers turn each answered record into a :class:`MemoryRecord`
and serialize it once. :func:`cwcore.memory.injection.build` assembles a turn's block as a
dictionary; the handlers answer it as a :class:`MemoryContext`. The JSON is derived from the
fields (:mod:`cwcore.contract.codec`; :class:`MemoryContext` writes its two shapes by hand): the
keys and values the engine has always answered, ``from_json(x).to_json() == x`` as parsed JSON.

The requests check what needs no stored data (types, the confidence range, the layer, the rule
type, an explicit id's prefix, the list limit) so a face is refused before it sends; the
statement's and phrases' cleaning and length limits stay with the records
(:func:`cwcore.memory.records.add`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from cwcore.contract.codec import Record, field, pairs
from cwcore.errors import InvalidInput

#: A record's statuses, layers and rule types (the public memory format).
STATUSES = ("active", "contested", "deprecated", "superseded", "deleted")
LAYERS = ("L1", "L2")
RULE_TYPES = ("avoid_pattern", "prefer_pattern", "convention", "correction")
DEFAULT_CONFIDENCE = 0.7
#: ``memory.list``'s bound on ``limit``.
MAX_LIST = 10_000

# -- records ------------------------------------------------------------------------------


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


# -- a turn's injection block ------------------------------------------------------------------


class ProcessorTrace(Record):
    """One pipeline processor's run: records in and out, the ids it excluded (in order) with
    each one's reason. ``excluded_more`` counts excluded ids a bounded answer left out (None
    when the list is whole). The pipeline's own keys are snake_case (the answer always was)."""

    processor: str
    input_count: int = field(name="input_count")
    output_count: int = field(name="output_count")
    excluded_ids: tuple[str, ...] = field(name="excluded_ids")
    exclusion_reasons: tuple[tuple[str, str], ...] = pairs(name="exclusion_reasons")
    excluded_more: int | None = field(default=None, omit_none=True)


class LeftOut(Record):
    """A record that passed the pipeline but is not in the block, and why (``not-relevant``,
    ``selected-limit``, ``hard-rule-limit``, ``scratchpad-limit``, ``contested:not-relevant``,
    ``contested-limit`` or ``budget``; None in a kept selection that recorded no reason)."""

    id: str
    reason: str | None = None


def _write_scores(scores: tuple[tuple[str, float], ...]) -> list[dict[str, Any]]:
    return [{"id": rid, "score": score} for rid, score in scores]


def _read_scores(body: list[Mapping[str, Any]]) -> tuple[tuple[str, float], ...]:
    return tuple((s["id"], s["score"]) for s in body)


class MemoryRanking(Record):
    """How the relevant records were ranked: ``mode`` (``hybrid``, ``fts`` or ``none``), the
    weights of full-text and semantic scores, and each ranked record's ``(id, score)``, best
    first (written as ``{"id", "score"}`` objects). ``scores_more`` counts scores a bounded
    answer left out (None when the list is whole). A kept selection may hold no mode or
    weights (None)."""

    mode: str | None
    weights: tuple[tuple[str, float], ...] | None = pairs()
    scores: tuple[tuple[str, float], ...] = field(encode=_write_scores, decode=_read_scores)
    scores_more: int | None = field(default=None, omit_none=True)


class MemoryContext(Record):
    """One turn's memory injection block and how it was chosen.

    ``skipped`` says the prompt was trivial (``reason`` then says why: too short, a slash
    command, an acknowledgement); otherwise ``reason`` is ``nothing-to-inject`` when no section
    had anything, else None. ``block`` is the Markdown to inject (None when there is none),
    ``bytes`` its UTF-8 size and ``budget_bytes`` the budget it was built within (None for a
    skipped turn). ``sections`` lists the ids shown per section in block order; ``truncated``
    the sections the budget cut or dropped; ``traces`` each processor's run; ``unselected`` the
    candidates left out; ``ranking`` None for a skipped turn.

    ``project`` is the bound project of a ``bound.memory`` answer, None for ``memory.context``;
    ``unselected_more`` counts left-out records a bounded answer did not list."""

    skipped: bool
    reason: str | None
    block: str | None
    bytes: int
    budget_bytes: int | None
    sections: tuple[tuple[str, tuple[str, ...]], ...]
    truncated: tuple[str, ...]
    traces: tuple[ProcessorTrace, ...]
    unselected: tuple[LeftOut, ...]
    ranking: MemoryRanking | None
    project: str | None = None
    unselected_more: int | None = None

    def to_json(self) -> dict[str, Any]:
        head: dict[str, Any] = {"skipped": self.skipped, "reason": self.reason}
        if self.project is not None:  # the bound answer names its project and block first
            out: dict[str, Any] = {"project": self.project, "block": self.block, **head}
        else:
            out = {**head, "block": self.block}
        out["bytes"] = self.bytes
        if self.project is None and self.skipped:
            # An unbound trivial prompt answers only that it was skipped, and why.
            out["traces"] = [t.to_json() for t in self.traces]
            return out
        out["budgetBytes"] = self.budget_bytes
        out["sections"] = {name: list(ids) for name, ids in self.sections}
        out["truncated"] = list(self.truncated)
        out["traces"] = [t.to_json() for t in self.traces]
        out["unselected"] = [u.to_json() for u in self.unselected]
        if self.unselected_more is not None:
            out["unselectedMore"] = self.unselected_more
        if self.ranking is not None:
            out["ranking"] = self.ranking.to_json()
        return out

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        ranking = body.get("ranking")
        return cls(
            skipped=body["skipped"],
            reason=body["reason"],
            block=body["block"],
            bytes=body["bytes"],
            budget_bytes=body.get("budgetBytes"),
            sections=tuple((name, tuple(ids)) for name, ids in body.get("sections", {}).items()),
            truncated=tuple(body.get("truncated", ())),
            traces=tuple(ProcessorTrace.from_json(t) for t in body["traces"]),
            unselected=tuple(LeftOut.from_json(u) for u in body.get("unselected", ())),
            ranking=MemoryRanking.from_json(ranking) if ranking is not None else None,
            project=body.get("project"),
            unselected_more=body.get("unselectedMore"),
        )


# -- requests ---------------------------------------------------------------------------------


def _phrases(value: Any) -> Any:
    """A list-of-strings request value as the engine has always read it: one string is a list
    of one, ``null`` none (the items' types are the annotation's to check)."""
    if value is None:
        return ()
    return [value] if isinstance(value, str) else value


def _scope_text(value: Any) -> Any:
    """A scope sent in its object form (``{"type", "name"}``) as its text form
    (``global``, ``domain:NAME``, ``project:NAME``); the text is checked where it is read."""
    if isinstance(value, Mapping):
        kind, name = value.get("type"), value.get("name")
        if not isinstance(kind, str) or not (name is None or isinstance(name, str)):
            raise InvalidInput("scope must be global, domain:NAME or project:NAME")
        return kind if not name else f"{kind}:{name}"
    return value


class MemoryAddRequest(Record):
    """``memory.add``: the statement, and optionally the record's ``id`` (``mem_…``), tags,
    scope (``global``, ``domain:NAME``, ``project:NAME``), negative scope
    (``doesNotApplyWhen``, ``knownExceptions``), ``layer`` (``L1``/``L2``; empty is ``L1``),
    ``confidence`` (0..1), ``ruleType``, ``profileId``, the record it ``supersedes`` and those
    whose evidence it ``contradicts``. A list may be sent as one string (a list of one) and the
    scope in its object form, as the engine has always read them."""

    statement: str
    confidence: float = DEFAULT_CONFIDENCE
    layer: str | None = field(default=None, omit_none=True)
    scope: str | None = field(default=None, omit_none=True)
    tags: tuple[str, ...] = ()
    does_not_apply_when: tuple[str, ...] = ()
    known_exceptions: tuple[str, ...] = ()
    rule_type: str | None = field(default=None, omit_none=True)
    profile_id: str | None = field(default=None, omit_none=True)
    supersedes: str | None = field(default=None, omit_none=True)
    contradicts: tuple[str, ...] = ()
    id: str | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not 0.0 <= float(self.confidence) <= 1.0:
            raise InvalidInput("confidence must be a number from 0 to 1")
        if self.layer not in (None, "", *LAYERS):
            raise InvalidInput("layer must be L1 or L2")
        if self.rule_type is not None and self.rule_type not in RULE_TYPES:
            raise InvalidInput(f"ruleType must be one of {', '.join(RULE_TYPES)}")
        if self.id is not None and not self.id.startswith("mem_"):
            raise InvalidInput("a memory record id starts with mem_")

    @classmethod
    def parse(cls, params: Any, *, where: str = "") -> Self:
        if isinstance(params, Mapping):
            params = dict(params)
            for key in ("tags", "doesNotApplyWhen", "knownExceptions", "contradicts"):
                if key in params:
                    params[key] = _phrases(params[key])
            if "scope" in params:
                params["scope"] = _scope_text(params["scope"])
        return super().parse(params, where=where)


class MemoryListRequest(Record):
    """``memory.list``: at most ``limit`` (1..10000) records, most recently updated first,
    filtered by ``status``, ``tag``, ``scope`` and ``layer`` (an empty filter is none)."""

    status: str | None = field(default=None, omit_none=True)
    tag: str | None = field(default=None, omit_none=True)
    scope: str | None = field(default=None, omit_none=True)
    layer: str | None = field(default=None, omit_none=True)
    limit: int = 100

    def __post_init__(self) -> None:
        if not 1 <= self.limit <= MAX_LIST:
            raise InvalidInput(f"limit must be an integer from 1 to {MAX_LIST}")
        if self.status and self.status not in STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(STATUSES)}")


class MemoryIdRequest(Record):
    """``memory.show``: the record ``id`` (an absent or empty id is refused by the read)."""

    id: str | None = field(default=None, omit_none=True)


class MemoryStatusRequest(Record):
    """``memory.contest``, ``memory.deprecate``, ``memory.delete``: the record ``id`` and why
    (``reason``, kept in its history; an empty reason is none)."""

    id: str | None = field(default=None, omit_none=True)
    reason: str | None = field(default=None, omit_none=True)


class MemoryContextRequest(Record):
    """``memory.context``: the turn's ``prompt`` and where it is asked from (``project``, or the
    ``session`` that gives it; ``profile``, ``cwd``; an empty value is none); ``dailyLog`` adds
    the day's sessions, ``projectOnly`` confines the turn to the project."""

    prompt: str
    project: str | None = field(default=None, omit_none=True)
    session: str | None = field(default=None, omit_none=True)
    profile: str | None = field(default=None, omit_none=True)
    cwd: str | None = field(default=None, omit_none=True)
    daily_log: bool = True
    project_only: bool = False

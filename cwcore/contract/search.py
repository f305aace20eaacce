"""The ``search`` method's records: its request (:class:`SearchRequest`, its public fields and
their bounds declared once in :data:`FIELDS`) and its answer (:class:`SearchResponse`, its hits
:class:`SearchHit`). ``gather``'s records, built on these, are in :mod:`cwcore.contract.gather`.

Request field names are the public JSON names of a search request: ``query``, ``relation``,
``scope``, ``limit``, ``excludeVisibleSourceKeys``, ``hintBudgetTokens``, ``sessions``,
``project``, ``agent``, ``since``, ``until``, ``role``, ``kind``, ``semanticPolicy``,
``expansionTerms``, ``rerank``, ``strict``, ``group`` and an optional ``id`` (echoed by
``--batch``).

The answer is built once by :func:`cwcore.retrieve.page.materialize` from the collapsed
candidates and serialized by ``to_json`` at the edge, by hand (the hot path of every search).
A hit's JSON is the contract of ``cw search --json`` (fields may be added, none renamed):
``documentId``, ``version``, ``kind``, ``score`` (the mode's calibrated score), ``band``,
``matchType``, ``margin``, ``snippet`` (+ ``highlights``), ``historical``, ``superseded``,
``locator``, ``reranked``, ``matchedTerms``, ``expandedTerms``, ``score_metadata`` and ``source``
``{sessionId, turnId, messageKey, messageKeys, project, agent, timestamp}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from cwcore.clock import parse_time
from cwcore.contract import bands
from cwcore.errors import InvalidInput, LimitExceeded, excerpt
from cwcore.model import DOCUMENT_KINDS, ROLES

RELATIONS = ("question", "request", "correction", "answer", "decision")
SCOPES = ("session", "project", "all")
POLICIES = ("auto", "always", "never")
GROUPS = ("document", "session")
#: The policy of a request that names none and of a caller without settings; the same as the
#: ``semanticPolicy`` setting's default (chosen by ``make eval``; a test keeps them equal).
DEFAULT_POLICY = "auto"
MAX_LIMIT = 100
MAX_EXCLUDED_KEYS = 1_000
MAX_EXCLUDED_BYTES = 1024 * 1024
MAX_QUERY_CHARS = 4_000
MAX_EXPANSION_TERMS = 32


@dataclass(frozen=True)
class RequestField:
    """One field of the search request as JSON: its name, JSON type (``string``, ``integer``,
    ``boolean``, ``strings`` — a list of strings — or ``any``), the values it may take
    (``choices``, an integer range, a longest string, a longest list), its default, and what
    it means to an agent. :func:`parse_request` checks these bounds, and the MCP search tools'
    JSON schemas are generated from them (:func:`json_schema`), so the two cannot drift."""

    name: str
    type: str
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    max_length: int | None = None
    max_items: int | None = None
    nullable: bool = False
    default: Any = None
    description: str = ""

    def json_schema(self) -> dict[str, Any]:
        """This field as a JSON Schema property (draft 2020-12)."""
        base = {"strings": "array", "any": None}.get(self.type, self.type)
        out: dict[str, Any] = {}
        if base is not None:
            out["type"] = [base, "null"] if self.nullable else base
        if self.type == "strings":
            out["items"] = {"type": "string"}
        if self.choices:
            out["enum"] = [*self.choices, None] if self.nullable else list(self.choices)
        for key, value in (
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("maxLength", self.max_length),
            ("maxItems", self.max_items),
            ("default", self.default),
        ):
            if value is not None:
                out[key] = value
        if self.description:
            out["description"] = self.description
        return out


#: The search request's fields, in the order the MCP schema lists them. The bounds here are the
#: ones :func:`parse_request` enforces.
FIELDS: tuple[RequestField, ...] = (
    RequestField(
        "query",
        "string",
        max_length=MAX_QUERY_CHARS,
        nullable=True,
        description=(
            "What to find. Exact identifiers, file paths, error codes, commit ids and "
            "quoted phrases are matched exactly first; other words by BM25."
        ),
    ),
    RequestField(
        "relation",
        "string",
        choices=RELATIONS,
        nullable=True,
        description=(
            "Find the latest question, request, correction, answer or decision; may be "
            "combined with query. A query, a relation or both is required."
        ),
    ),
    RequestField("scope", "string", choices=SCOPES, default="all"),
    RequestField("limit", "integer", minimum=1, maximum=MAX_LIMIT, default=10),
    RequestField(
        "excludeVisibleSourceKeys",
        "strings",
        max_items=MAX_EXCLUDED_KEYS,
        description=(
            "Source message keys (source.messageKeys of earlier hits) already visible in "
            "your context; windows made only of them are skipped."
        ),
    ),
    RequestField(
        "hintBudgetTokens",
        "integer",
        minimum=0,
        description="Token budget for the snippets of all results together.",
    ),
    RequestField(
        "expansionTerms",
        "strings",
        max_items=MAX_EXPANSION_TERMS,
        description="Extra terms to add to a weak lexical query (optional).",
    ),
    RequestField("sessions", "strings"),
    RequestField("project", "string"),
    RequestField("agent", "string"),
    RequestField("since", "string"),
    RequestField("until", "string"),
    RequestField("role", "string", choices=ROLES),
    RequestField("kind", "string", choices=DOCUMENT_KINDS),
    RequestField("semanticPolicy", "string", choices=POLICIES, default=DEFAULT_POLICY),
    RequestField("rerank", "boolean", default=True),
    RequestField("strict", "boolean", default=False),
    RequestField("group", "string", choices=GROUPS, default="document"),
    RequestField("id", "any"),  # echoed by ``--batch``
)
FIELD = {f.name: f for f in FIELDS}
_KNOWN = frozenset(FIELD)


def json_schema(
    names: tuple[str, ...], overrides: dict[str, dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A JSON Schema object of the request fields ``names`` (no others allowed), each property
    generated from its :class:`RequestField` and then updated with ``overrides[name]`` (a face's
    own default or wording, or a narrower type; a None value removes that key)."""
    overrides = overrides or {}
    properties = {}
    for name in names:
        prop = FIELD[name].json_schema()
        for key, value in overrides.get(name, {}).items():
            if value is None:
                prop.pop(key, None)
            else:
                prop[key] = value
        properties[name] = prop
    return {"type": "object", "properties": properties, "additionalProperties": False}


#: The JSON name of each :class:`SearchRequest` attribute whose name differs from it.
_JSON_NAMES = {
    "exclude_keys": "excludeVisibleSourceKeys",
    "hint_budget_tokens": "hintBudgetTokens",
    "semantic_policy": "semanticPolicy",
    "expansion_terms": "expansionTerms",
}


def _wire_time(moment: datetime) -> str:
    """An instant as ISO-8601 UTC with a ``Z``, at full precision (so it parses back equal)."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class SearchRequest:
    """A validated search request, built once at the edge by :meth:`parse` (or
    :func:`parse_request`) and sent to the engine as :meth:`to_json`. ``semantic_policy`` None
    means the request named none: the serving engine fills in its ``semanticPolicy`` setting
    (the faces cannot read the settings of a daemon's store, and an explicit policy must stay
    explicit on the wire)."""

    query: str | None = None
    relation: str | None = None
    scope: str = "all"
    limit: int = 10
    sessions: tuple[str, ...] = ()
    project: str | None = None
    agent: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    role: str | None = None
    kind: str | None = None
    exclude_keys: frozenset[str] = field(default_factory=frozenset)
    hint_budget_tokens: int | None = None
    semantic_policy: str | None = None
    expansion_terms: tuple[str, ...] = ()
    rerank: bool = True
    strict: bool = False
    group: str = "document"  # "session": one hit per session, sessions ranked by all their hits
    id: Any = None

    @classmethod
    def parse(cls, params: Any, *, where: str = "") -> SearchRequest:
        """The request of a call's JSON, checked by :func:`parse_request` (its errors, its
        bounds), an unnamed ``semanticPolicy`` left None for the serving engine to fill.
        ``where`` is not used: a search request is never nested in another record."""
        return parse_request(params)

    @classmethod
    def of(cls, request: SearchRequest | Mapping[str, Any]) -> SearchRequest:
        """``request`` as it is, or a mapping of the public request fields (``cw search
        --json``'s keys, as the benches and the eval pass them) parsed: refused here with the
        engine's own error, before it is sent."""
        return request if isinstance(request, SearchRequest) else parse_request(dict(request))

    def to_json(self) -> dict[str, Any]:
        """The public wire body: the fields that differ from their defaults under their JSON
        names (``id`` whenever set, so ``--batch`` can echo it). For a parsed request
        ``parse_request(r.to_json()) == r``; the visible keys are sorted, the dates are UTC."""
        body: dict[str, Any] = {}
        for spec in fields(self):
            value = getattr(self, spec.name)
            default = spec.default if spec.default_factory is MISSING else spec.default_factory()
            if value == default:
                continue
            if isinstance(value, datetime):
                value = _wire_time(value)
            elif isinstance(value, frozenset):
                value = sorted(value)
            elif isinstance(value, tuple):
                value = list(value)
            body[_JSON_NAMES.get(spec.name, spec.name)] = value
        return body


def _opt_str(body: dict[str, Any], name: str) -> str | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    return value


def _str_list(body: dict[str, Any], name: str) -> list[str]:
    value = body.get(name) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"{name} must be a list of strings")
    return value


def _choice(body: dict[str, Any], name: str) -> str | None:
    """A string field that must be one of its declared choices (None when absent)."""
    value = _opt_str(body, name)
    choices = FIELD[name].choices
    if value is not None and value not in choices:
        raise InvalidInput(f"{name} must be one of {', '.join(choices)}")
    return value


def _integer(body: dict[str, Any], name: str) -> Any:
    """An integer field within its declared range (its default, None or a number, when
    absent); the message names the range."""
    spec = FIELD[name]
    value = body.get(name, spec.default)
    if value is None and spec.default is None:
        return None
    lo, hi = spec.minimum, spec.maximum
    if (
        not isinstance(value, int)
        or isinstance(value, bool)
        or (lo is not None and value < lo)
        or (hi is not None and value > hi)
    ):
        if hi is None and lo == 0:
            raise InvalidInput(f"{name} must be a non-negative integer")
        raise InvalidInput(f"{name} must be an integer from {lo} to {hi}")
    return value


def parse_request(body: dict[str, Any], *, default_policy: str | None = None) -> SearchRequest:
    """Validate a JSON request object; raise :class:`InvalidInput` naming the bad field. A face
    parses with no ``default_policy`` (an unnamed policy stays None, for the engine to fill);
    the engine parses with its ``semanticPolicy`` setting."""
    if not isinstance(body, dict):
        raise InvalidInput("a search request must be a JSON object")
    unknown = sorted(set(body) - _KNOWN)
    if unknown:
        shown = ", ".join(excerpt(name, 64) for name in unknown[:8])
        more = f" and {len(unknown) - 8} more" if len(unknown) > 8 else ""
        raise InvalidInput(f"unknown request field(s): {shown}{more}")
    query = _opt_str(body, "query")
    if query is not None:
        query = query.strip() or None
    longest = FIELD["query"].max_length or MAX_QUERY_CHARS
    if query is not None and len(query) > longest:
        raise LimitExceeded(f"query is {len(query)} characters; the limit is {longest}")
    relation = _choice(body, "relation")
    if query is None and relation is None:
        raise InvalidInput("give a query, a relation, or both")
    scope = _choice(body, "scope") or "all"
    limit = _integer(body, "limit")
    sessions = tuple(_str_list(body, "sessions"))
    if scope == "session" and not sessions:
        raise InvalidInput("scope session needs at least one session (--session)")
    excluded = _str_list(body, "excludeVisibleSourceKeys")
    most = FIELD["excludeVisibleSourceKeys"].max_items or MAX_EXCLUDED_KEYS
    if len(excluded) > most:
        raise LimitExceeded(
            f"excludeVisibleSourceKeys has {len(excluded)} ids; the limit is {most}"
        )
    if sum(len(k.encode("utf-8", "surrogatepass")) for k in excluded) > MAX_EXCLUDED_BYTES:
        raise LimitExceeded("excludeVisibleSourceKeys exceeds 1 MiB of ids")
    role = _choice(body, "role")
    kind = _choice(body, "kind")
    policy = _opt_str(body, "semanticPolicy") or default_policy
    if policy is not None and policy not in FIELD["semanticPolicy"].choices:
        raise InvalidInput(f"semanticPolicy must be one of {', '.join(POLICIES)}")
    expansion = _str_list(body, "expansionTerms")
    most = FIELD["expansionTerms"].max_items or MAX_EXPANSION_TERMS
    if len(expansion) > most:
        raise LimitExceeded(f"expansionTerms has more than {most} terms")
    budget = _integer(body, "hintBudgetTokens")
    group = _choice(body, "group") or "document"
    since, until = _opt_str(body, "since"), _opt_str(body, "until")
    return SearchRequest(
        query=query,
        relation=relation,
        scope=scope,
        limit=limit,
        sessions=sessions,
        project=_opt_str(body, "project"),
        agent=_opt_str(body, "agent"),
        since=parse_time(since) if since else None,
        until=parse_time(until) if until else None,
        role=role,
        kind=kind,
        exclude_keys=frozenset(excluded),
        hint_budget_tokens=budget,
        semantic_policy=policy,
        expansion_terms=tuple(expansion),
        rerank=bool(body.get("rerank", True)),
        strict=bool(body.get("strict", False)),
        group=group,
        id=body.get("id"),
    )


# -- the answer -----------------------------------------------------------------------------

EMPTY_ADVICE = (
    "No archived evidence matched. Do not answer from memory as if it were found: check the "
    "current files and state, try other words or a wider scope, or ask the user."
)
#: ``score_metadata.mode`` of a Markdown evidence hit (see :mod:`cwcore.retrieve.evidence`).
EVIDENCE_MODE = "markdown-evidence"
#: The keys :meth:`SearchHit.to_json` writes from its own fields (the rest are ``extra``).
_HIT_FIELDS = frozenset(
    (
        "documentId",
        "version",
        "kind",
        "score",
        "band",
        "matchType",
        "margin",
        "snippet",
        "highlights",
        "historical",
        "superseded",
        "locator",
        "reranked",
        "matchedTerms",
        "expandedTerms",
        "score_metadata",
        "source",
    )
)
#: The keys :meth:`SearchResponse.to_json` writes from its own fields (the rest are ``extra``);
#: ``advice`` is written whenever the page is empty, so it is read back as a function of that.
_RESPONSE_FIELDS = frozenset(
    (
        "query",
        "relation",
        "results",
        "retrieval_status",
        "semantic_search_used",
        "generation",
        "timing_ms",
        "stages",
        "semantic_failure",
        "advice",
    )
)


@dataclass(frozen=True)
class Source:
    session_id: str
    turn_id: str
    message_key: str
    message_keys: tuple[str, ...]
    project: str
    agent: str
    timestamp: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "turnId": self.turn_id,
            "messageKey": self.message_key,
            "messageKeys": list(self.message_keys),
            "project": self.project,
            "agent": self.agent,
            "timestamp": self.timestamp,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Source:
        return cls(
            session_id=body["sessionId"],
            turn_id=body["turnId"],
            message_key=body["messageKey"],
            message_keys=tuple(body["messageKeys"]),
            project=body["project"],
            agent=body["agent"],
            timestamp=body["timestamp"],
        )


@dataclass(frozen=True)
class SearchHit:
    """One search result (see the module docstring for the JSON fields)."""

    document_id: str
    version: int
    kind: str
    score: float  # the mode's calibrated score in [0, 1]: what bands are computed from
    match_type: str
    margin: float  # the score's lead over the best other hit's score
    snippet: str
    highlights: tuple[tuple[int, int], ...]
    locator: str
    reranked: bool
    matched_terms: tuple[str, ...]
    expanded_terms: tuple[str, ...]
    score_metadata: dict[str, Any]
    source: Source
    extra: dict[str, Any] = field(default_factory=dict)  # kind-specific fields (Markdown)

    @property
    def band(self) -> str:
        return bands.band(self.score)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "documentId": self.document_id,
            "version": self.version,
            "kind": self.kind,
            "score": self.score,
            "band": self.band,
            "matchType": self.match_type,
            "margin": self.margin,
            "snippet": self.snippet,
            "highlights": [list(h) for h in self.highlights],
            "historical": True,
            "superseded": False,
            "locator": self.locator,
            "reranked": self.reranked,
            "matchedTerms": list(self.matched_terms),
            "expandedTerms": list(self.expanded_terms),
            "score_metadata": self.score_metadata,
            "source": self.source.to_json(),
        }
        body.update(self.extra)
        return body

    @staticmethod
    def is_evidence(body: Mapping[str, Any]) -> bool:
        """Whether hit JSON is a Markdown evidence unit's (built as JSON, not a SearchHit)."""
        return bool((body.get("score_metadata") or {}).get("mode") == EVIDENCE_MODE)

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SearchHit:
        """The hit of :meth:`to_json`'s JSON; fields it does not name are ``extra``. The band
        is not read: it is a function of the score."""
        return cls(
            document_id=body["documentId"],
            version=body["version"],
            kind=body["kind"],
            score=body["score"],
            match_type=body["matchType"],
            margin=body["margin"],
            snippet=body["snippet"],
            highlights=tuple((int(a), int(b)) for a, b in body["highlights"]),
            locator=body["locator"],
            reranked=body["reranked"],
            matched_terms=tuple(body["matchedTerms"]),
            expanded_terms=tuple(body["expandedTerms"]),
            score_metadata=dict(body["score_metadata"]),
            source=Source.from_json(body["source"]),
            extra={k: v for k, v in body.items() if k not in _HIT_FIELDS},
        )


@dataclass(frozen=True)
class SearchResponse:
    """A whole answer: ``retrieval_status`` is ``ok``, ``lexical_fallback`` (the semantic mode
    should have run and could not), ``empty`` or ``partial`` (the generation in use is).

    ``to_json`` is the contract of ``cw search --json``: for an answer the engine gave,
    ``SearchResponse.from_json(body).to_json()`` is ``body`` with its keys in the same order, so
    a face may rebuild the JSON from the record without changing a byte."""

    query: str | None
    relation: str | None
    results: tuple[SearchHit, ...]
    retrieval_status: str
    semantic_search_used: bool
    generation: int
    timing_ms: float
    stages: dict[str, Any]
    semantic_failure: str | None = None
    #: Markdown evidence hits that filled a short page (JSON already; see retrieve/evidence.py).
    #: They follow ``results`` on the page and keep their own key order, so they stay JSON.
    evidence: tuple[dict[str, Any], ...] = ()
    #: Top-level fields the record does not name, written last: ``id``, the request's echo
    #: under ``--batch``, and whatever a newer engine adds.
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def advice(self) -> str | None:
        """What to do about an empty page (``None`` when there are hits)."""
        return None if self.results or self.evidence else EMPTY_ADVICE

    def hits(self) -> tuple[SearchHit, ...]:
        """Every hit in page order, the evidence hits read as :class:`SearchHit` too (their
        Markdown fields in ``extra``): for faces that render hits, not for re-serializing —
        :meth:`to_json` keeps the evidence JSON as the engine wrote it."""
        return self.results + tuple(SearchHit.from_json(h) for h in self.evidence)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "query": self.query,
            "relation": self.relation,
            "results": [h.to_json() for h in self.results] + list(self.evidence),
            "retrieval_status": self.retrieval_status,
            "semantic_search_used": self.semantic_search_used,
            "generation": self.generation,
            "timing_ms": self.timing_ms,
            "stages": self.stages,
        }
        if self.semantic_failure:
            body["semantic_failure"] = self.semantic_failure
        if self.advice is not None:
            body["advice"] = self.advice
        body.update(self.extra)
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SearchResponse:
        """The response of :meth:`to_json`'s JSON (Markdown evidence hits stay JSON; fields it
        does not name are ``extra``)."""
        rows = list(body["results"])
        return cls(
            query=body["query"],
            relation=body["relation"],
            results=tuple(SearchHit.from_json(h) for h in rows if not SearchHit.is_evidence(h)),
            retrieval_status=body["retrieval_status"],
            semantic_search_used=body["semantic_search_used"],
            generation=body["generation"],
            timing_ms=body["timing_ms"],
            stages=dict(body["stages"]),
            semantic_failure=body.get("semantic_failure"),
            evidence=tuple(dict(h) for h in rows if SearchHit.is_evidence(h)),
            extra={k: v for k, v in body.items() if k not in _RESPONSE_FIELDS},
        )

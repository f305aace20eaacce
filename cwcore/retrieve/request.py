"""The search request: its public fields and filters, validated at the edge.

Field names are the public JSON names of a search request: ``query``, ``relation``,
``scope``, ``limit``, ``excludeVisibleSourceKeys``, ``hintBudgetTokens``, ``sessions``,
``project``, ``agent``, ``since``, ``until``, ``role``, ``kind``, ``semanticPolicy``,
``expansionTerms``, ``rerank``, ``strict`` and an optional ``id`` (echoed by ``--batch``).
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from datetime import UTC, datetime
from typing import Any

from cwcore.clock import parse_time
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
    """A validated search request, built once at the edge by :func:`parse_request` and sent to
    the engine as :meth:`to_json`. ``semantic_policy`` None means the request named none: the
    serving engine fills in its ``semanticPolicy`` setting (the faces cannot read the settings
    of a daemon's store, and an explicit policy must stay explicit on the wire)."""

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

"""The search request: its public fields and filters, validated at the edge.

Field names are the public JSON names of a search request: ``query``, ``relation``,
``scope``, ``limit``, ``excludeVisibleSourceKeys``, ``hintBudgetTokens``, ``sessions``,
``project``, ``agent``, ``since``, ``until``, ``role``, ``kind``, ``semanticPolicy``,
``expansionTerms``, ``rerank``, ``strict`` and an optional ``id`` (echoed by ``--batch``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
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

_KNOWN = {
    "id",
    "query",
    "relation",
    "scope",
    "limit",
    "excludeVisibleSourceKeys",
    "hintBudgetTokens",
    "sessions",
    "project",
    "agent",
    "since",
    "until",
    "role",
    "kind",
    "semanticPolicy",
    "expansionTerms",
    "rerank",
    "strict",
    "group",
}


@dataclass(frozen=True)
class SearchRequest:
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
    semantic_policy: str = DEFAULT_POLICY
    expansion_terms: tuple[str, ...] = ()
    rerank: bool = True
    strict: bool = False
    group: str = "document"  # "session": one hit per session, sessions ranked by all their hits
    id: Any = None


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


def parse_request(body: dict[str, Any], *, default_policy: str = DEFAULT_POLICY) -> SearchRequest:
    """Validate a JSON request object; raise :class:`InvalidInput` naming the bad field."""
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
    if query is not None and len(query) > MAX_QUERY_CHARS:
        raise LimitExceeded(f"query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    relation = _opt_str(body, "relation")
    if relation is not None and relation not in RELATIONS:
        raise InvalidInput(f"relation must be one of {', '.join(RELATIONS)}")
    if query is None and relation is None:
        raise InvalidInput("give a query, a relation, or both")
    scope = _opt_str(body, "scope") or "all"
    if scope not in SCOPES:
        raise InvalidInput(f"scope must be one of {', '.join(SCOPES)}")
    limit = body.get("limit", 10)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be an integer from 1 to {MAX_LIMIT}")
    sessions = tuple(_str_list(body, "sessions"))
    if scope == "session" and not sessions:
        raise InvalidInput("scope session needs at least one session (--session)")
    excluded = _str_list(body, "excludeVisibleSourceKeys")
    if len(excluded) > MAX_EXCLUDED_KEYS:
        raise LimitExceeded(
            f"excludeVisibleSourceKeys has {len(excluded)} ids; the limit is {MAX_EXCLUDED_KEYS}"
        )
    if sum(len(k.encode("utf-8", "surrogatepass")) for k in excluded) > MAX_EXCLUDED_BYTES:
        raise LimitExceeded("excludeVisibleSourceKeys exceeds 1 MiB of ids")
    role = _opt_str(body, "role")
    if role is not None and role not in ROLES:
        raise InvalidInput(f"role must be one of {', '.join(ROLES)}")
    kind = _opt_str(body, "kind")
    if kind is not None and kind not in DOCUMENT_KINDS:
        raise InvalidInput(f"kind must be one of {', '.join(DOCUMENT_KINDS)}")
    policy = _opt_str(body, "semanticPolicy") or default_policy
    if policy not in POLICIES:
        raise InvalidInput(f"semanticPolicy must be one of {', '.join(POLICIES)}")
    expansion = _str_list(body, "expansionTerms")
    if len(expansion) > MAX_EXPANSION_TERMS:
        raise LimitExceeded(f"expansionTerms has more than {MAX_EXPANSION_TERMS} terms")
    budget = body.get("hintBudgetTokens")
    if budget is not None and (
        not isinstance(budget, int) or isinstance(budget, bool) or budget < 0
    ):
        raise InvalidInput("hintBudgetTokens must be a non-negative integer")
    group = _opt_str(body, "group") or "document"
    if group not in GROUPS:
        raise InvalidInput(f"group must be one of {', '.join(GROUPS)}")
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

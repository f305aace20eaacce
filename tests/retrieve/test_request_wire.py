"""The search request's wire body: a face parses once at its edge and sends ``to_json()``; the
engine parses that body back to the same request (so the daemon, another process, validates
what the face already validated and gets the same answer)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.contract.search import (
    GROUPS,
    MAX_EXPANSION_TERMS,
    MAX_LIMIT,
    POLICIES,
    RELATIONS,
    SCOPES,
    SearchRequest,
    parse_request,
)
from cwcore.model import DOCUMENT_KINDS, ROLES

_words = st.text(min_size=0, max_size=40)
_ids = st.lists(st.text(min_size=1, max_size=24), max_size=6)
_moments = st.datetimes(
    min_value=datetime(1971, 1, 1),
    max_value=datetime(2200, 1, 1),
    timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))]),
)
#: Each optional field of a request body and the values it may validly take.
_OPTIONAL: dict[str, st.SearchStrategy[Any]] = {
    "scope": st.sampled_from([s for s in SCOPES if s != "session"]),
    "limit": st.integers(1, MAX_LIMIT),
    "excludeVisibleSourceKeys": _ids,
    "hintBudgetTokens": st.integers(0, 10**6),
    "expansionTerms": st.lists(_words, max_size=MAX_EXPANSION_TERMS),
    "project": _words,
    "agent": _words,
    "since": _moments.map(datetime.isoformat),
    "until": st.one_of(_moments.map(lambda d: d.isoformat()), st.just("2026-11-14")),
    "role": st.sampled_from(ROLES),
    "kind": st.sampled_from(DOCUMENT_KINDS),
    "semanticPolicy": st.sampled_from(POLICIES),
    "rerank": st.booleans(),
    "strict": st.booleans(),
    "group": st.sampled_from(GROUPS),
    "id": st.one_of(st.integers(), st.text(max_size=8), st.none()),
}


@st.composite
def bodies(draw: st.DrawFn) -> dict[str, Any]:
    """A valid request body: a query or a relation (or both), any subset of the other fields,
    and sometimes session scope with its sessions."""
    body: dict[str, Any] = {}
    query = draw(st.one_of(st.none(), _words.filter(str.strip)))
    relation = draw(st.one_of(st.none(), st.sampled_from(RELATIONS)))
    if query is None and relation is None:
        query = "x"
    if query is not None:
        body["query"] = query
    if relation is not None:
        body["relation"] = relation
    for name in draw(st.sets(st.sampled_from(sorted(_OPTIONAL)))):
        body[name] = draw(_OPTIONAL[name])
    if draw(st.booleans()):
        body["scope"], body["sessions"] = "session", draw(_ids.filter(bool))
    return body


@settings(max_examples=300, deadline=None)
@given(bodies())
def test_a_parsed_request_survives_its_wire_body(body: dict[str, Any]) -> None:
    request = parse_request(body)
    wire = request.to_json()
    assert json.loads(json.dumps(wire)) == wire  # plain JSON, as the transport sends it
    assert parse_request(wire) == request
    assert parse_request(parse_request(wire).to_json()).to_json() == wire


def test_the_wire_body_names_only_what_differs_from_the_defaults() -> None:
    assert parse_request({"query": "  x  "}).to_json() == {"query": "x"}
    assert parse_request({"query": "x", "limit": 10, "rerank": True}).to_json() == {"query": "x"}
    assert SearchRequest().to_json() == {}
    wire = parse_request(
        {
            "relation": "decision",
            "rerank": False,
            "since": "2026-11-14",
            "until": "2026-11-16T23:59:59.5+01:00",
            "excludeVisibleSourceKeys": ["b", "a"],
            "semanticPolicy": "auto",
            "id": 0,
        }
    ).to_json()
    assert wire == {
        "relation": "decision",
        "since": "2026-11-14T00:00:00Z",
        "until": "2026-11-16T22:59:59.500000Z",
        "excludeVisibleSourceKeys": ["a", "b"],
        "semanticPolicy": "auto",  # named, so kept: it is not the store's setting
        "rerank": False,
        "id": 0,  # an id is echoed by --batch whatever its value
    }


def test_an_unnamed_policy_stays_unnamed_for_the_engine_to_fill() -> None:
    assert parse_request({"query": "x"}).semantic_policy is None
    assert parse_request({"query": "x"}, default_policy="never").semantic_policy == "never"
    named = parse_request({"query": "x", "semanticPolicy": "always"}, default_policy="never")
    assert named.semantic_policy == "always"

"""``search`` and ``gather`` declared in the catalogue (issue 37): their records and limits, a
bad request refused by the same error wherever it is checked (the engine's table, the record's
parse, ``Archive.check`` and a face's ``Archive.search``/``gather`` before anything is sent),
and ``cw search --json``'s path (``Archive.search_json``) sending and returning the JSON as it
is."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive, OnEvent
from cwcore.contract.gather import GatherRequest, GatherResponse
from cwcore.contract.methods import DECLARED, GATHER, SEARCH
from cwcore.contract.search import SearchRequest, SearchResponse
from cwcore.errors import CwError, InvalidInput, LimitExceeded
from cwcore.methods import TABLE

MiB = 1024 * 1024


class Recording:
    """A transport that records what it is sent and answers ``answer`` (no store, no daemon)."""

    def __init__(self, answer: dict[str, Any]) -> None:
        self.answer = answer
        self.sent: list[tuple[str, dict[str, Any]]] = []

    def call(
        self, method: str, params: dict[str, Any], on_event: OnEvent | None = None
    ) -> dict[str, Any]:
        self.sent.append((method, params))
        return self.answer

    def close(self) -> None:
        pass

    @property
    def notices(self) -> list[str]:
        return []


def test_search_and_gather_are_declared_with_todays_limits() -> None:
    assert SEARCH in DECLARED and GATHER in DECLARED
    assert (SEARCH.name, SEARCH.request, SEARCH.answer) == ("search", SearchRequest, SearchResponse)
    assert (GATHER.name, GATHER.request, GATHER.answer) == ("gather", GatherRequest, GatherResponse)
    for spec in (SEARCH, GATHER):
        method = TABLE.get(spec.name)
        assert method is not None and not method.passive
        assert spec.output_bytes == method.output_bytes == 4 * MiB


#: A bad search request and the error every check raises for it (the engine's messages).
BAD: list[tuple[dict[str, Any], type[CwError], str]] = [
    ({}, InvalidInput, "give a query, a relation, or both"),
    ({"query": 3}, InvalidInput, "query must be a string"),
    ({"query": "x", "limit": 0}, InvalidInput, "limit must be an integer from 1 to 100"),
    ({"query": "x", "scope": "galaxy"}, InvalidInput, "scope must be one of session, project, all"),
    ({"query": "x", "nonsense": 1}, InvalidInput, "unknown request field(s): 'nonsense'"),
    ({"query": "x" * 4001}, LimitExceeded, "query is 4001 characters; the limit is 4000"),
    ({"query": "x", "hintBudgetTokens": -1}, InvalidInput, "hintBudgetTokens must be a non-"),
]


def _refusals(archive: Archive, body: dict[str, Any]) -> list[Callable[[], object]]:
    unsent = Archive(Recording({}), Path("/nonexistent"))
    return [
        lambda: archive.call("search", body),  # the engine's table parses it
        lambda: archive.call("gather", body),
        lambda: SearchRequest.parse(body),
        lambda: GatherRequest.parse(body),
        lambda: Archive.check("search", body),
        lambda: Archive.check("gather", body),
        lambda: unsent.search(body),
        lambda: unsent.gather(body),
    ]


@pytest.mark.parametrize(("body", "error", "message"), BAD)
def test_a_bad_request_is_refused_by_the_same_error_everywhere(
    archive: Archive, body: dict[str, Any], error: type[CwError], message: str
) -> None:
    for refuse in _refusals(archive, body):
        with pytest.raises(error) as raised:
            refuse()
        assert type(raised.value) is error and str(raised.value).startswith(message)


def test_a_faces_bad_mapping_is_refused_before_it_is_sent() -> None:
    transport = Recording({})
    unsent = Archive(transport, Path("/nonexistent"))
    with pytest.raises(InvalidInput, match=r"^limit must be"):
        unsent.search({"query": "x", "limit": 101})
    with pytest.raises(InvalidInput, match=r"^neighbors must be from 0 to 8$"):
        unsent.gather(SearchRequest(query="x"), neighbors=9)
    with pytest.raises(InvalidInput, match=r"^neighbors must be from 0 to 8$"):
        GatherRequest(SearchRequest(query="x"), neighbors=-1)
    assert transport.sent == []


def test_gathers_neighbors_are_checked_after_the_search_fields(archive: Archive) -> None:
    for body in ({"query": "x", "neighbors": 9}, {"query": "x", "neighbors": "2"}):
        with pytest.raises(InvalidInput, match=r"^neighbors must be from 0 to 8$"):
            archive.call("gather", body)
        with pytest.raises(InvalidInput, match=r"^neighbors must be from 0 to 8$"):
            GatherRequest.parse(body)
    with pytest.raises(InvalidInput, match=r"^limit must be"):
        GatherRequest.parse({"query": "x", "limit": 0, "neighbors": 9})


def test_a_gather_always_runs_the_semantic_mode_whatever_it_names() -> None:
    for policy in ("never", "auto", "bogus", None):
        request = GatherRequest.parse({"query": "x", "semanticPolicy": policy, "neighbors": 2})
        assert request.search.semantic_policy == "always" and request.neighbors == 2
    sent = GatherRequest.of({"query": "x", "semanticPolicy": "never", "neighbors": 5}, 3)
    assert sent.to_json() == {"query": "x", "semanticPolicy": "always", "neighbors": 3}
    assert GatherRequest.parse(sent.to_json()) == sent


def test_search_json_sends_and_returns_the_json_as_it_is() -> None:
    answer = {"query": "x", "results": [], "new": {"field": 1}}
    transport = Recording(answer)
    arch = Archive(transport, Path("/nonexistent"))
    body = {"query": "  x  ", "limit": 3}
    assert arch.search_json(body) is answer  # not decoded and encoded again
    assert transport.sent == [("search", body)]
    typed = SearchRequest.parse({"query": "x", "limit": 3, "id": 7})
    arch.search_json(typed)
    assert transport.sent[-1] == ("search", {"query": "x", "limit": 3, "id": 7})


def test_the_engine_echoes_the_id_and_fills_the_policy(archive: Archive) -> None:
    answer = archive.call("search", {"query": "nothing archived yet", "id": [1, "a"]})
    assert answer["id"] == [1, "a"] and answer["retrieval_status"] == "empty"
    assert "id" not in archive.call("search", {"query": "nothing archived yet"})
    typed = archive.search({"query": "nothing archived yet", "id": "q1"})
    assert typed.extra == {"id": "q1"} and typed.to_json()["id"] == "q1"
    assert archive.gather({"query": "nothing archived yet"}).anchors == ()

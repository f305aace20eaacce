"""The memory methods' requests (cwcore.contract.memory): a wrong type names its key, bounds are
refused by the record before anything is sent, and the loose forms the engine has always read (a
list sent as one string, a scope in its object form) still are."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.contract.memory import (
    MemoryAddRequest,
    MemoryContextRequest,
    MemoryListRequest,
    MemoryStatusRequest,
)
from cwcore.errors import InvalidInput
from tests.unsent import unsent_archive


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("memory.add", {"statement": 3}, r"^statement must be a string$"),
        ("memory.add", {"statement": "s", "confidence": True}, r"^confidence must be a number$"),
        ("memory.add", {"statement": "s", "tags": ["a", 2]}, r"^tags must be a string$"),
        ("memory.list", {"limit": "5"}, r"^limit must be an integer$"),
        ("memory.show", {"id": 7}, r"^id must be a string$"),
        ("memory.contest", {"id": "mem_x", "reason": 1}, r"^reason must be a string$"),
        ("memory.context", {"prompt": "p", "projectOnly": "yes"}, r"^projectOnly must be true"),
        ("memory.context", {}, r"^prompt is required$"),
    ],
)
def test_a_wrong_type_is_refused_naming_its_key(
    archive: Archive, method: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        archive.call(method, params)


@pytest.mark.parametrize(
    ("ask", "message"),
    [
        (lambda a: a.memory_add("s", confidence=1.5), "confidence must be a number from 0 to 1"),
        (lambda a: a.memory_add("s", layer="L3"), "layer must be L1 or L2"),
        (lambda a: a.memory_add("s", ruleType="vibe"), "ruleType must be one of"),
        (lambda a: a.memory_add("s", id="rec_1"), "a memory record id starts with mem_"),
        (lambda a: a.memory_list(limit=0), "limit must be an integer from 1 to 10000"),
        (lambda a: a.memory_list(status="gone"), "status must be one of"),
        (lambda a: a.memory_context("p", dailyLog="no"), "dailyLog must be true or false"),
    ],
)
def test_a_bound_is_refused_before_the_request_is_sent(
    tmp_path: Path, ask: Any, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        ask(unsent_archive(tmp_path))


def test_loose_forms_keep_working(archive: Archive) -> None:
    body = {
        "statement": "Prefer bounded queues",
        "tags": "queues",
        "doesNotApplyWhen": "prototyping",
        "scope": {"type": "project", "name": "alpha"},
        "layer": "",
    }
    record = archive.call("memory.add", body)
    assert record["tags"] == ["queues"]
    assert record["does_not_apply_when"] == ["prototyping"]
    assert record["scope"] == {"type": "project", "name": "alpha"}
    assert record["layer"] == "L1"
    listed = archive.call("memory.list", {"status": "", "tag": "queues", "scope": "project:alpha"})
    assert [r["id"] for r in listed["records"]] == [record["id"]]
    with pytest.raises(InvalidInput, match="scope must be global, domain:NAME or project:NAME"):
        archive.call("memory.add", {"statement": "s", "scope": {"type": 3}})


def test_requests_round_trip_through_their_wire_keys() -> None:
    add = MemoryAddRequest(
        "s", rule_type="convention", does_not_apply_when=("x",), profile_id="p", id="mem_1"
    )
    wire = add.to_json()
    assert {"ruleType", "doesNotApplyWhen", "profileId", "id"} <= wire.keys()
    assert MemoryAddRequest.parse(wire) == add
    context = MemoryContextRequest("p", project="alpha", daily_log=False, project_only=True)
    assert context.to_json() == {
        "prompt": "p",
        "project": "alpha",
        "dailyLog": False,
        "projectOnly": True,
    }
    assert MemoryListRequest.parse({}).to_json() == {"limit": 100}
    assert MemoryStatusRequest("mem_1").to_json() == {"id": "mem_1"}

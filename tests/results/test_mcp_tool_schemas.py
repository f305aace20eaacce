"""The MCP tools' ``inputSchema``, generated from the method requests' declarations
(:mod:`cwcore.contract`), pinned to the schemas the tools offered when they were written by hand
(``golden/mcp_tool_schemas.json``, compared as parsed JSON); and the requests of the methods
behind the tools, checked by the engine as the schemas say.

Regenerate after a deliberate change of a tool's arguments: ``CW_UPDATE_GOLDEN=1 pytest
tests/results/test_mcp_tool_schemas.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from cwcore.api import Archive
from cwcore.contract.bound import (
    MAX_SESSION_CHARS,
    BoundMemoryRequest,
    BoundMessagesRequest,
    BoundSessionsRequest,
)
from cwcore.contract.codec import Record
from cwcore.contract.recall import RecallRequest
from cwcore.contract.supersession import SupersedeRequest, UnsupersedeRequest
from cwcore.errors import InvalidInput
from cwcore.hosts import mcp_server
from cwcore.store.keys import MAX_ID_BYTES

GOLDEN = Path(__file__).parent / "golden" / "mcp_tool_schemas.json"

#: Each tool's method request (search and gather have theirs in cwcore.contract.search).
REQUESTS: dict[str, type[Record]] = {
    mcp_server.RECALL: RecallRequest,
    mcp_server.SUPERSEDE: SupersedeRequest,
    mcp_server.SESSIONS: BoundSessionsRequest,
    mcp_server.MESSAGES: BoundMessagesRequest,
    mcp_server.MEMORY: BoundMemoryRequest,
}


def test_the_tool_schemas_are_the_pinned_ones() -> None:
    offered = {
        tool.name: json.loads(json.dumps(tool.input_schema))
        for tool in mcp_server.tool_definitions()
    }
    if os.environ.get("CW_UPDATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(offered, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    assert offered == json.loads(GOLDEN.read_text(encoding="utf-8"))
    for schema in offered.values():
        jsonschema.Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("tool", sorted(REQUESTS))
def test_a_tool_schema_is_its_request_schema_without_the_bound_keys(tool: str) -> None:
    schema = REQUESTS[tool].json_schema(without=("project", "boundSession"))
    if tool == mcp_server.RECALL:  # the tool's own additions (see mcp_server)
        prop = schema["properties"]["sessionIds"]
        prop["description"] += " When this server is bound to a session, that session's lineage"
        prop["description"] += " is used instead."
        schema["properties"]["locator"]["maxLength"] = mcp_server.MAX_LOCATOR_CHARS
    assert mcp_server.SCHEMAS[tool] == schema
    assert not {"project", "boundSession"} & set(mcp_server.SCHEMAS[tool]["properties"])


#: Per tool, arguments its schema refuses for a bound or a type, with the key the engine's
#: parse of the method's request names (the binding's keys added as the server adds them).
REFUSED: list[tuple[str, dict[str, Any], str]] = [
    (mcp_server.RECALL, {"locator": "x", "neighbors": 33}, "neighbors must be from 0 to 32"),
    (mcp_server.RECALL, {"locator": "x", "maxTokens": 0}, "maxTokens must be from 1 to 100000"),
    (mcp_server.RECALL, {"locator": ""}, "locator must not be empty"),
    (mcp_server.RECALL, {"locator": "x", "sessionIds": [3]}, "sessionIds must be a string"),
    (mcp_server.SUPERSEDE, {"documentId": ""}, "documentId must not be empty"),
    (mcp_server.SUPERSEDE, {"documentId": "d", "by": ""}, "by must not be empty"),
    (mcp_server.SUPERSEDE, {"documentId": "d", "reason": 5}, "reason must be a string"),
    (mcp_server.SESSIONS, {"limit": 51}, "limit must be from 1 to 50"),
    (mcp_server.SESSIONS, {"agent": "a" * 65}, "agent is 65 characters long; at most 64"),
    (mcp_server.SESSIONS, {"cursor": ""}, "cursor must not be empty"),
    (mcp_server.MESSAGES, {"session": "s", "from": 0}, "from must be at least 1"),
    (mcp_server.MESSAGES, {"session": "s", "to": "9"}, "to must be an integer"),
    (mcp_server.MESSAGES, {"session": "s" * 513}, "session is 513 characters long"),
    (mcp_server.MEMORY, {"prompt": "p" * 16_385}, "prompt is 16385 characters long"),
    (mcp_server.MEMORY, {"prompt": None}, "prompt must be a string"),
]


@pytest.mark.parametrize(("tool", "arguments", "message"), REFUSED)
def test_what_a_tool_schema_refuses_the_engine_refuses_too(
    tool: str, arguments: dict[str, Any], message: str
) -> None:
    assert not jsonschema.Draft202012Validator(mcp_server.SCHEMAS[tool]).is_valid(arguments)
    with pytest.raises(InvalidInput) as refused:
        REQUESTS[tool].parse({**arguments, "project": "alpha"})
    assert refused.value.message.startswith(message)


def test_a_session_id_bound_is_the_store_s() -> None:
    assert MAX_SESSION_CHARS == MAX_ID_BYTES


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"session": "s1", "from": 5, "to": 4}, "to must not be before from"),
        ({"session": "s1", "from": 1, "to": 101}, r"at most 100 messages per call \(from..to\)"),
    ],
)
def test_a_message_range_is_checked_by_its_request(params: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        BoundMessagesRequest.parse({**params, "project": "alpha"})
    assert BoundMessagesRequest.parse({"session": "s1", "from": 1, "to": 100, "project": "a"})
    assert BoundMessagesRequest.parse({"session": "s1", "from": 7, "project": "a"}).last == 26


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("recall", {"locator": 7}, "locator must be a string"),
        ("recall", {"locator": "x", "sessionIds": "s1"}, "sessionIds must be a list"),
        ("recall", {"locator": "x", "neighbors": True}, "neighbors must be an integer"),
        ("supersede", {"documentId": ["d"]}, "documentId must be a string"),
        ("supersede", {"documentId": "d", "subjectKey": ""}, "subjectKey must not be empty"),
        ("supersede.undo", {}, "documentId is required"),
        ("supersede.undo", {"documentId": "d", "project": 1}, "project must be a string"),
        ("bound.sessions", {}, "project is required"),
        ("bound.sessions", {"project": "alpha", "since": 2026}, "since must be a string"),
        ("bound.messages", {"project": "alpha"}, "session is required"),
        ("bound.memory", {"project": "alpha", "prompt": "p", "boundSession": 3}, "boundSession"),
    ],
)
def test_the_engine_refuses_a_wrong_request_naming_the_key(
    archive: Archive, method: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        archive.call(method, params)
    assert refused.value.message.startswith(message)


def test_a_recall_budget_out_of_range_is_refused_before_a_store_is_opened(
    cw_home: Path,
) -> None:
    with pytest.raises(InvalidInput, match=r"^maxTokens must be an integer$"):
        Archive.check("recall", {"neighbors": 2, "maxTokens": "many"})
    with pytest.raises(InvalidInput, match=r"^neighbors must be from 0 to 32$"):
        Archive.check("recall", {"neighbors": -1})
    Archive.check("recall", {"neighbors": 32, "maxTokens": 100_000})  # no locator yet: fine
    assert not cw_home.exists()


def test_a_declared_request_parses_back_from_its_json() -> None:
    """What a face sends (``to_json``) the engine parses back to the same request."""
    sent = [
        RecallRequest("loc", 2, 10, ("s1",), "alpha"),
        SupersedeRequest("d1", by="d2", subject_key="k", project="alpha"),
        UnsupersedeRequest("d1", reason="oops"),
        BoundSessionsRequest("alpha", agent="codex", limit=3),
        BoundMessagesRequest("s1", "alpha", "s0", 3, 9),
        BoundMemoryRequest("the prompt", "alpha"),
    ]
    for request in sent:
        assert type(request).parse(request.to_json()) == request
    assert "sessionIds" not in RecallRequest("loc").to_json()  # absence: no sessions
    assert RecallRequest.parse({"locator": "loc", "sessionIds": None}).session_ids is None

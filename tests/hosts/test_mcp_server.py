"""The MCP server through a real MCP client session (in-memory streams): the four tools, their
results, and the project/session binding that no call can get around."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from cwcore.api import Archive
from cwcore.errors import InvalidInput
from cwcore.hosts.mcp_server import (
    GATHER,
    MEMORY,
    MESSAGES,
    RECALL,
    SEARCH,
    SESSIONS,
    SUPERSEDE,
    Binding,
    build_server,
    resolve_binding,
)
from tests.helpers import write_jsonl

READ_TOOLS = (SESSIONS, MESSAGES, MEMORY)


def msg(session: str, mid: str, role: str, text: str, minute: int, project: str, **extra: Any):
    return {
        "session": session,
        "id": mid,
        "role": role,
        "text": text,
        "project": project,
        "timestamp": f"2026-11-10T10:{minute:02d}:00Z",
        **extra,
    }


ROWS = [
    msg(
        "a1",
        "u1",
        "user",
        "Why does the reaper crash with REAP_DRAIN in src/reaper/drain.py?",
        0,
        "alpha",
    ),
    msg("a1", "a1", "assistant", "REAP_DRAIN stops new work while the pool drains.", 1, "alpha"),
    msg("a1", "u2", "user", "Please switch the worker pool to bounded queues.", 2, "alpha"),
    msg(
        "a1",
        "a2",
        "assistant",
        "We will use bounded queues with a capacity of 64 jobs.",
        3,
        "alpha",
    ),
    msg(
        "a2",
        "u1",
        "user",
        "Do the bounded queues hold under load?",
        10,
        "alpha",
        parent_session="a1",
    ),
    msg(
        "a2",
        "a1",
        "assistant",
        "Yes, the bounded queues held at 64 jobs.",
        11,
        "alpha",
        parent_session="a1",
    ),
    msg("a3", "u1", "user", "Unrelated: rotate the webhook signing keys.", 20, "alpha"),
    msg("a3", "a1", "assistant", "Rotated the webhook signing keys.", 21, "alpha"),
    msg(
        "b1",
        "u1",
        "user",
        "In beta, REAP_DRAIN and bounded queues mean something else.",
        30,
        "beta",
    ),
    msg("b1", "a1", "assistant", "We will use unbounded queues for the beta importer.", 31, "beta"),
]


@pytest.fixture
def store(tmp_path: Path, cw_home: Path) -> Path:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "rows.jsonl", ROWS)])
    return cw_home


def session_of(store: Path, binding: Binding) -> Callable[..., Any]:
    """Run ``body(client)`` against a fresh server for ``binding`` (real JSON-RPC framing)."""

    def run(body: Callable[[Client], Awaitable[Any]]) -> Any:
        server = build_server(binding, lambda: Archive.open(store, embedded=True))

        async def main() -> Any:
            async with Client(server, mode="legacy") as client:
                return await body(client)

        return anyio.run(main)

    return run


async def call(client: Client, name: str, **arguments: Any) -> tuple[bool, dict[str, Any]]:
    result = await client.call_tool(name, arguments)
    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
    if not result.is_error:
        assert result.structured_content == body
    return bool(result.is_error), body


def test_lists_the_tools_with_spec_schemas(store: Path) -> None:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in session_of(store, Binding("alpha"))(body)}
    assert set(tools) == {SEARCH, GATHER, RECALL, SUPERSEDE, *READ_TOOLS}
    props = {name: set(t.input_schema["properties"]) for name, t in tools.items()}
    assert props[SEARCH] == {
        "query",
        "relation",
        "scope",
        "limit",
        "excludeVisibleSourceKeys",
        "hintBudgetTokens",
        "expansionTerms",
    }
    assert "semanticPolicy" not in props[SEARCH]  # internal, never on the tool (spec 000)
    assert props[RECALL] == {"locator", "neighbors", "maxTokens", "sessionIds"}
    assert props[GATHER] == {"query", "limit", "neighbors", "scope"}
    assert props[SUPERSEDE] == {"documentId", "by", "reason", "subjectKey"}
    assert "low" in tools[SEARCH].description and "locator" in tools[SEARCH].description
    assert "reversed" in tools[SUPERSEDE].description
    assert tools[SEARCH].annotations.read_only_hint is True
    assert tools[SUPERSEDE].annotations.read_only_hint is False


def test_search_gather_recall_supersede_round_trip(store: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _, out["search"] = await call(client, SEARCH, query="REAP_DRAIN", limit=5)
        hit = out["search"]["results"][0]
        _, out["recall"] = await call(client, RECALL, locator=hit["locator"], maxTokens=500)
        _, out["gather"] = await call(client, GATHER, query="bounded queues", neighbors=1)
        _, out["decision"] = await call(client, SEARCH, relation="decision")
        target = out["decision"]["results"][0]["documentId"]
        locator = out["decision"]["results"][0]["locator"]
        err, out["supersede"] = await call(
            client, SUPERSEDE, documentId=target, reason="reversed in review"
        )
        assert not err, out["supersede"]
        _, out["after"] = await call(client, SEARCH, relation="decision")
        _, out["old"] = await call(client, RECALL, locator=locator)
        out["target"] = target
        return out

    out = session_of(store, Binding("alpha"))(body)
    search = out["search"]
    assert search["historical"] is True and "historical evidence" in search["label"]
    top = search["results"][0]
    assert top["matchType"].startswith("exact-") and top["band"] in ("high", "moderate")
    assert {h["source"]["project"] for h in search["results"]} == {"alpha"}
    recall = out["recall"]
    assert recall["status"] == "resolved" and "REAP_DRAIN" in recall["text"]
    assert recall["historical"] is True and recall["label"]
    gather = out["gather"]
    assert gather["results"] and all("before" in h and "after" in h for h in gather["results"])
    assert {h["source"]["project"] for h in gather["results"]} == {"alpha"}
    assert out["supersede"]["documentId"] == out["target"]
    assert out["target"] not in [h["documentId"] for h in out["after"]["results"]]
    assert out["old"]["status"] == "superseded"


def test_other_project_is_unreachable(store: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for scope in ("project", "all"):
            _, out[scope] = await call(
                client, SEARCH, query="bounded queues REAP_DRAIN", scope=scope, limit=50
            )
        _, out["gather"] = await call(
            client, GATHER, query="unbounded queues beta importer", scope="all"
        )
        return out

    # Locators and ids of project beta, obtained by a server bound to beta.
    async def beta(client: Client) -> dict[str, Any]:
        _, found = await call(client, SEARCH, query="unbounded queues beta importer")
        return found["results"][0]

    foreign = session_of(store, Binding("beta"))(beta)
    assert foreign["source"]["project"] == "beta"

    out = session_of(store, Binding("alpha"))(body)
    for body_ in (out["project"], out["all"], out["gather"]):
        assert body_["results"] == [] or {h["source"]["project"] for h in body_["results"]} == {
            "alpha"
        }
    assert foreign["documentId"] not in [h["documentId"] for h in out["all"]["results"]]

    async def reach(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _, out["recall"] = await call(client, RECALL, locator=foreign["locator"])
        out["supersede"] = await call(client, SUPERSEDE, documentId=foreign["documentId"])
        _, mine = await call(client, SEARCH, relation="decision")
        out["by"] = await call(
            client,
            SUPERSEDE,
            documentId=mine["results"][0]["documentId"],
            by=foreign["documentId"],
        )
        return out

    out = session_of(store, Binding("alpha"))(reach)
    assert out["recall"]["status"] == "locator-invalid"
    is_error, body_ = out["supersede"]
    assert is_error and body_["error"]["code"] == "not-found"
    is_error, body_ = out["by"]
    assert is_error and body_["error"]["code"] == "not-found"

    # ... and the beta document is still live: nothing was superseded across the boundary.
    async def still(client: Client) -> dict[str, Any]:
        _, again = await call(client, RECALL, locator=foreign["locator"])
        return again

    assert session_of(store, Binding("beta"))(still)["status"] == "resolved"


def test_session_binding_limits_session_scope_to_lineage(store: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _, out["session"] = await call(client, SEARCH, query="bounded queues", scope="session")
        _, out["keys"] = await call(client, SEARCH, query="webhook signing keys", scope="session")
        _, out["project"] = await call(client, SEARCH, query="webhook signing keys")
        hit = out["session"]["results"][0]
        # A caller-supplied sessionIds cannot widen the bound lineage.
        _, out["recall"] = await call(client, RECALL, locator=hit["locator"], sessionIds=["a3"])
        return out

    out = session_of(store, Binding("alpha", "a2"))(body)
    sessions = {h["source"]["sessionId"] for h in out["session"]["results"]}
    assert sessions and sessions <= {"a1", "a2"}  # a2 and its verified parent a1
    assert out["keys"]["results"] == []  # a3 is outside the lineage
    assert {h["source"]["sessionId"] for h in out["project"]["results"]} == {"a3"}
    assert out["recall"]["status"] == "resolved"

    async def foreign_session(client: Client) -> dict[str, Any]:
        _, found = await call(client, SEARCH, query="webhook signing keys", scope="session")
        return found["results"][0]

    a3_hit = session_of(store, Binding("alpha", "a3"))(foreign_session)

    async def recall_a3(client: Client) -> dict[str, Any]:
        _, body_ = await call(client, RECALL, locator=a3_hit["locator"], sessionIds=["a3"])
        return body_

    assert session_of(store, Binding("alpha", "a2"))(recall_a3)["status"] == "locator-invalid"


def test_errors_are_tool_errors_not_crashes(store: Path) -> None:
    async def body(client: Client) -> list[tuple[bool, dict[str, Any]]]:
        results = [
            await call(client, SEARCH, query="x", scope="session"),  # no bound session
            await call(client, SEARCH, query="x", semanticPolicy="always"),  # internal field
            await call(client, SEARCH, query="x", limit=0),
            await call(client, SEARCH),  # neither query nor relation
            await call(client, RECALL, locator="cwl1.bogus.bogus"),
            await call(client, SUPERSEDE, documentId="no-such-document"),
        ]
        results.append(await call(client, SEARCH, query="REAP_DRAIN"))  # still serving
        return results

    results = session_of(store, Binding("alpha"))(body)
    for is_error, body_ in results[:4]:
        assert is_error and body_["error"]["code"] == "invalid-input", body_
    assert results[4] == (False, {"status": "locator-invalid", "message": results[4][1]["message"]})
    assert results[5][0] and results[5][1]["error"]["code"] == "not-found"
    assert results[6][0] is False and results[6][1]["results"]


def test_binding_needs_a_project() -> None:
    with pytest.raises(InvalidInput, match="--project"):
        resolve_binding(None, None, env={})
    assert resolve_binding(None, None, env={"CW_PROJECT": "alpha", "CW_SESSION": "s"}) == Binding(
        "alpha", "s"
    )
    assert resolve_binding("beta", None, env={"CW_PROJECT": "alpha"}) == Binding("beta")

"""Cross-project MCP calls: a server bound to project A reaches nothing of project B.

Project B holds a document in every state recall distinguishes — live, superseded, forgotten
(expired) and a locator of a version that no longer exists (missing) — plus session-scoped
locators. A server bound to A calls every tool with every id and locator of B; no byte of B
(text, session ids, project name) may appear in any answer, and every answer must equal the
answer for a target that never existed (no existence oracle). Oversized arguments get short
errors.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from cwcore.api import Archive
from cwcore.contract.search import SearchHit
from cwcore.errors import NotFound
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
)
from tests.helpers import write_jsonl

MAX_MESSAGE_CHARS = 4096  # cwcore.errors.MAX_MESSAGE_CHARS (absent before the fix)

A, B = "alpha", "beta project"
#: Everything of B that must never reach a client bound to A (texts, session ids, project).
B_SECRETS = (
    "quokka-live",
    "quokka-superseded",
    "quokka-forgotten",
    "quokka-missing",
    "quokka-extended",
    "beta live session",
    "beta superseded session",
    "beta forgotten session",
    "beta missing session",
    B,
)
NEVER_EXISTED_LOCATOR = "cwl2.eyJkIjoiZmFrZSJ9.AAAAAAAAAAAAAAAAAAAAAA"
NEVER_EXISTED_ID = "t-0000000000000000"


def _row(session: str, mid: str, role: str, text: str, minute: int, project: str) -> dict[str, Any]:
    return {
        "session": session,
        "id": mid,
        "role": role,
        "text": text,
        "project": project,
        "timestamp": f"2026-11-10T10:{minute:02d}:00Z",
    }


def _turn(session: str, word: str, minute: int, project: str) -> list[dict[str, Any]]:
    return [
        _row(
            session,
            "u1",
            "user",
            f"Where is the {word} configured for the archive?",
            minute,
            project,
        ),
        _row(
            session, "a1", "assistant", f"The {word} lives in settings.toml.", minute + 1, project
        ),
    ]


def _search(archive: Archive, project: str, query: str, **extra: Any) -> SearchHit:
    found = archive.search({"query": query, "project": project, "scope": "project", **extra})
    assert found.results, query
    return found.results[0]


@pytest.fixture
def world(tmp_path: Path, cw_home: Path) -> dict[str, Any]:
    """A's sessions and B's targets in each state; returns B's ids and locators by state."""
    rows = [
        *_turn("a1", "pelican", 0, A),
        *_turn("a2", "heron", 10, A),
        *_turn("beta live session", "quokka-live", 20, B),
        *_turn("beta superseded session", "quokka-superseded", 30, B),
        *_turn("beta forgotten session", "quokka-forgotten", 40, B),
    ]
    # The missing version: v1 of a turn, then the same turn extended to v2; v2's locator is
    # taken, the session forgotten and v1 alone imported again, so v2 no longer exists.
    first = [_row("beta missing session", "u1", "user", "quokka-missing question", 50, B)]
    extended = [
        *first,
        _row("beta missing session", "a1", "assistant", "quokka-extended answer", 51, B),
    ]
    out: dict[str, Any] = {}
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "all.jsonl", rows)])
        archive.import_paths([write_jsonl(tmp_path / "miss1.jsonl", first)])
        archive.import_paths([write_jsonl(tmp_path / "miss2.jsonl", extended)])
        for state, word in (
            ("live", "quokka-live"),
            ("superseded", "quokka-superseded"),
            ("expired", "quokka-forgotten"),
            ("missing", "quokka-extended"),
        ):
            hit = _search(archive, B, word)
            assert hit.version == (2 if state == "missing" else 1)
            out[state] = {"id": hit.document_id, "locator": hit.locator}
        session_hit = _search(
            archive, B, "quokka-live", scope="session", sessions=["beta live session"]
        )
        out["session-scoped"] = {"id": session_hit.document_id, "locator": session_hit.locator}
        a2_hit = _search(archive, A, "heron", scope="session", sessions=["a2"])
        out["a2-session-scoped"] = a2_hit.locator
        out["a1-doc"] = _search(archive, A, "pelican").document_id
        archive.supersede(out["superseded"]["id"], reason="reversed")
        archive.forget("beta forgotten session")
        archive.forget("beta missing session")
        archive.import_paths([write_jsonl(tmp_path / "miss3.jsonl", first)])
        # The fixture is what it claims: unscoped, each B locator answers its own status.
        for state in ("live", "superseded", "expired", "missing"):
            status = archive.recall(out[state]["locator"]).status
            assert status == ("resolved" if state == "live" else state), (state, status)
        assert archive.recall(out["superseded"]["id"]).status == "superseded"
    out["home"] = cw_home
    return out


def run_bound(home: Path, binding: Binding, body: Callable[[Client], Awaitable[Any]]) -> Any:
    server = build_server(binding, lambda: Archive.open(home, embedded=True))

    async def main() -> Any:
        async with Client(server, mode="legacy") as client:
            return await body(client)

    return anyio.run(main)


async def call(client: Client, name: str, **arguments: Any) -> tuple[bool, dict[str, Any], str]:
    """(is error, body, the whole answer as text: every content block and structured content)."""
    result = await client.call_tool(name, arguments)
    text = result.content[0].text  # type: ignore[union-attr]
    whole = json.dumps(
        {
            "content": [b.model_dump() for b in result.content],
            "structured": result.structured_content,
        },
        ensure_ascii=False,
    )
    return bool(result.is_error), json.loads(text), whole


def assert_no_b(whole: str) -> None:
    leaked = [s for s in B_SECRETS if s in whole]
    assert not leaked, f"project B leaked {leaked}: {whole[:500]}"


def test_every_tool_with_every_b_target_answers_as_if_it_did_not_exist(
    world: dict[str, Any],
) -> None:
    states = ("live", "superseded", "expired", "missing", "session-scoped")

    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"recall": {}, "read": {}, "supersede": {}, "by": {}}
        out["recall"]["never"] = await call(client, RECALL, locator=NEVER_EXISTED_LOCATOR)
        out["read"]["never"] = await call(client, RECALL, locator=NEVER_EXISTED_ID)
        out["supersede"]["never"] = await call(client, SUPERSEDE, documentId=NEVER_EXISTED_ID)
        for state in states:
            target = world[state]
            out["recall"][state] = await call(
                client, RECALL, locator=target["locator"], sessionIds=["beta live session"]
            )
            out["read"][state] = await call(client, RECALL, locator=target["id"])
            out["supersede"][state] = await call(client, SUPERSEDE, documentId=target["id"])
            out["by"][state] = await call(
                client, SUPERSEDE, documentId=world["a1-doc"], by=target["id"], reason="x"
            )
        searches = []
        for scope in ("project", "all"):
            # Queries that match B's text (quoted back in the answer, so no secret themselves).
            for query in ("quokka", "quokka configured settings", "beta session"):
                searches.append(await call(client, SEARCH, query=query, scope=scope, limit=50))
                searches.append(await call(client, GATHER, query=query, scope=scope, limit=50))
        searches.append(await call(client, SEARCH, relation="question", limit=100))
        out["searches"] = searches
        return out

    out = run_bound(world["home"], Binding(A), body)

    for kind in ("recall", "read", "supersede", "by"):
        for _, _, whole in out[kind].values():
            assert_no_b(whole)
    for is_error, found, whole in out["searches"]:
        assert not is_error, found
        assert_no_b(whole)
        assert {h["source"]["project"] for h in found["results"]} <= {A}

    # Locators of B, whatever their target's state, answer as a locator that never existed.
    never = out["recall"]["never"][1]
    assert never["status"] == "locator-invalid"
    for state in states:
        assert out["recall"][state][1] == never, state

    # Document ids of B answer as an id that never existed (the message quotes the caller's id).
    def normalized(answer: tuple[bool, dict[str, Any], str], document_id: str) -> Any:
        return json.loads(answer[2].replace(document_id, "ID"))

    read_never = normalized(out["read"]["never"], NEVER_EXISTED_ID)
    sup_never = normalized(out["supersede"]["never"], NEVER_EXISTED_ID)
    assert out["read"]["never"][1]["status"] == "locator-invalid"
    assert out["supersede"]["never"][1]["error"]["code"] == "not-found"
    for state in states:
        document_id = world[state]["id"]
        assert normalized(out["read"][state], document_id) == read_never, state
        assert normalized(out["supersede"][state], document_id) == sup_never, state
        is_error, answer, _ = out["by"][state]
        assert is_error and answer["error"]["code"] == "not-found", (state, answer)

    # Nothing was superseded across the boundary.
    with Archive.open(world["home"], embedded=True) as archive:
        assert archive.recall(world["live"]["locator"]).status == "resolved"
        assert archive.recall(world["a1-doc"]).status == "resolved"


def test_the_core_enforces_the_project_not_only_the_adapter(world: dict[str, Any]) -> None:
    """The engine's recall and supersede take the caller's project: the MCP adapter is not
    the only lock."""
    with Archive.open(world["home"], embedded=True) as archive:
        for state in ("live", "superseded", "expired", "missing"):
            for target in (world[state]["id"], world[state]["locator"]):
                answer = archive.recall(target, project=A)
                assert answer.status == "locator-invalid", (state, answer)
                assert_no_b(json.dumps(answer.to_json(), ensure_ascii=False))
        own = archive.recall(world["superseded"]["id"], project=B)
        assert own.status == "superseded" and own.document is not None
        assert "quokka-superseded" in (own.document.text or "")


def test_session_scoped_locators_need_the_bound_sessions_lineage(world: dict[str, Any]) -> None:
    async def body(client: Client) -> dict[str, Any]:
        _, answer, _ = await call(client, RECALL, locator=world["a2-session-scoped"])
        _, never, _ = await call(client, RECALL, locator=NEVER_EXISTED_LOCATOR)
        return {"answer": answer, "never": never}

    outside = run_bound(world["home"], Binding(A, "a1"), body)
    assert outside["answer"] == outside["never"]
    inside = run_bound(world["home"], Binding(A, "a2"), body)
    assert inside["answer"]["status"] == "resolved" and "heron" in inside["answer"]["text"]


def test_a_superseded_documents_replacement_in_another_project_is_not_named(
    world: dict[str, Any],
) -> None:
    with Archive.open(world["home"], embedded=True) as archive:
        hit = _search(archive, A, "pelican")
        archive.supersede(hit.document_id, by=world["live"]["id"], reason="moved to beta")

    async def body(client: Client) -> dict[str, Any]:
        _, answer, whole = await call(client, RECALL, locator=hit.locator)
        return {"answer": answer, "whole": whole}

    out = run_bound(world["home"], Binding(A), body)
    assert out["answer"]["status"] == "superseded"
    assert out["answer"]["supersededBy"] is None
    assert world["live"]["id"] not in out["whole"]


def test_oversized_arguments_get_short_errors(world: dict[str, Any]) -> None:
    huge = "q" * (20 * 1024 * 1024)

    async def body(client: Client) -> list[tuple[bool, dict[str, Any], str]]:
        return [
            await call(client, SEARCH, query=huge),
            await call(client, GATHER, query=huge),
            await call(client, RECALL, locator=huge),
            await call(client, SUPERSEDE, documentId=huge),
            await call(client, SEARCH, query="x", **{huge[:5000]: 1}),
        ]

    for is_error, answer, whole in run_bound(world["home"], Binding(A), body):
        assert is_error, answer
        assert len(whole) < 2048, (len(whole), whole[:300])

    # The engine's own validators too (the CLI and the daemon share them).
    with Archive.open(world["home"], embedded=True) as archive:
        for request in ({"query": huge}, {"query": "x", "since": huge}, {"query": "x", huge: 1}):
            with pytest.raises(Exception) as caught:
                archive.search(request)
            assert len(str(caught.value)) <= MAX_MESSAGE_CHARS + 100
            assert len(str(caught.value)) < 1024, str(caught.value)[:200]


B_SESSIONS = ("beta live session", "beta superseded session", "beta missing session")
NEVER_EXISTED_SESSION = "zz-session-that-never-existed"


def test_read_tools_reach_nothing_of_another_project(world: dict[str, Any]) -> None:
    """Sessions, messages and memory of B: never listed, never read, never selected — a B
    session id or prefix answers exactly as a session that never existed."""
    with Archive.open(world["home"], embedded=True) as archive:
        secret = archive.memory_add(
            "quokka-memory: beta deploys on Fridays",
            ruleType="convention",
            confidence=0.95,
            layer="L2",
            scope=f"project:{B}",
        )
        archive.memory_add("Pelicans are configured in settings.toml", scope=f"project:{A}")
        b_page = archive.bound_sessions(B, limit=1)
        assert b_page.sessions and b_page.next_cursor
        # The engine refuses B's session to a caller bound to A, as if it did not exist.
        for sid in B_SESSIONS:
            with pytest.raises(NotFound) as caught:
                archive.bound_messages(sid, project=A)
            assert str(caught.value).replace(sid, "S") == "no session 'S'"

    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"messages": {}}
        out["never"] = await call(client, MESSAGES, session=NEVER_EXISTED_SESSION)
        for sid in (*B_SESSIONS, "beta live", "beta"):
            out["messages"][sid] = await call(client, MESSAGES, session=sid)
        out["lists"] = [
            await call(client, SESSIONS, limit=50),
            await call(client, SESSIONS, cursor=b_page.next_cursor),
            await call(client, SESSIONS, agent="cw-jsonl"),
        ]
        out["memory"] = [
            await call(client, MEMORY, prompt=prompt)
            for prompt in ("when does beta deploy on Fridays?", "quokka memory settings")
        ]
        return out

    out = run_bound(world["home"], Binding(A), body)

    def normalized(answer: tuple[bool, dict[str, Any], str], sid: str) -> Any:
        return json.loads(answer[2].replace(sid, "S"))

    never = normalized(out["never"], NEVER_EXISTED_SESSION)
    assert out["never"][1]["error"]["code"] == "not-found"
    for sid, answer in out["messages"].items():
        assert normalized(answer, sid) == never, sid
        assert_no_b(answer[2].replace(sid, "S"))
    for is_error, page, whole in out["lists"]:
        assert not is_error, page
        assert_no_b(whole)
        assert {row["project"] for row in page["sessions"]} <= {A}
    assert {row["sessionId"] for row in out["lists"][0][1]["sessions"]} == {"a1", "a2"}
    for is_error, answer, whole in out["memory"]:
        assert not is_error, answer
        assert_no_b(whole)
        assert "quokka-memory" not in whole and secret.id not in whole

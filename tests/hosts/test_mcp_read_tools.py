"""The MCP read tools through a real MCP client: sessions, messages by range, memory context —
bound to the project (and the session's lineage) like the other tools, and bounded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from cwcore import reads
from cwcore.api import Archive
from cwcore.contract import bound
from cwcore.hosts.mcp_server import MEMORY, MESSAGES, SESSIONS, Binding
from tests.helpers import write_jsonl
from tests.hosts.test_mcp_server import ROWS, call, msg, session_of

LONG_ID = "alpha-session-1234"
#: A beta session whose id shares the alpha session's prefix: never part of alpha's answers.
TWIN_ID = "alpha-session-9999"
BIG = "x" * (reads.MAX_CHARS + 5_000)
EXTRA = [
    msg(LONG_ID, "u1", "user", "Where do the retries live?", 40, "alpha", agent="codex"),
    msg(LONG_ID, "a1", "assistant", BIG, 41, "alpha", agent="codex"),
    msg(LONG_ID, "u2", "user", "And the timeouts?", 42, "alpha", agent="codex"),
    msg(TWIN_ID, "u1", "user", "beta twin secret question", 50, "beta"),
    # Continued from a beta session: the listing must not name that parent.
    msg("a4", "u1", "user", "Continuing the importer work here.", 35, "alpha", parent_session="b1"),
]


@pytest.fixture
def store(tmp_path: Path, cw_home: Path) -> Path:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "rows.jsonl", ROWS + EXTRA)])
        archive.memory_add(
            "Never force-push to main",
            ruleType="avoid_pattern",
            confidence=0.92,
            layer="L2",
            scope="project:alpha",
        )
        archive.memory_add(
            "Beta releases go out on Fridays",
            ruleType="convention",
            confidence=0.95,
            layer="L2",
            scope="project:beta",
        )
    return cw_home


def test_the_tools_are_listed_read_only(store: Path) -> None:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {t.name: t for t in session_of(store, Binding("alpha"))(body)}
    assert set(tools[SESSIONS].input_schema["properties"]) == {"agent", "since", "limit", "cursor"}
    assert set(tools[MESSAGES].input_schema["properties"]) == {"session", "from", "to"}
    assert tools[MESSAGES].input_schema["required"] == ["session"]
    assert set(tools[MEMORY].input_schema["properties"]) == {"prompt"}
    for name in (SESSIONS, MESSAGES, MEMORY):
        assert tools[name].annotations.read_only_hint is True
        assert tools[name].input_schema["additionalProperties"] is False


def test_sessions_lists_the_bound_project_with_filters_and_pages(store: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _, out["all"] = await call(client, SESSIONS)
        _, out["codex"] = await call(client, SESSIONS, agent="codex")
        _, out["since"] = await call(client, SESSIONS, since="2026-11-10T10:38:00Z")
        pages, cursor = [], None
        while True:
            args: dict[str, Any] = {"limit": 1, **({"cursor": cursor} if cursor else {})}
            _, page = await call(client, SESSIONS, **args)
            pages.append([s["sessionId"] for s in page["sessions"]])
            cursor = page["nextCursor"]
            if cursor is None:
                break
        out["pages"] = pages
        out["bad"] = await call(client, SESSIONS, cursor="not-a-cursor")
        out["big"] = await call(client, SESSIONS, limit=bound.MAX_PAGE + 1)
        return out

    out = session_of(store, Binding("alpha"))(body)
    ids = [s["sessionId"] for s in out["all"]["sessions"]]
    assert set(ids) == {"a1", "a2", "a3", "a4", LONG_ID} and out["all"]["project"] == "alpha"
    rows = {s["sessionId"]: s for s in out["all"]["sessions"]}
    assert rows["a2"]["parent"] == "a1" and rows["a4"]["parent"] is None
    assert {s["project"] for s in out["all"]["sessions"]} == {"alpha"}
    assert ids[0] == LONG_ID  # newest first
    assert [s["sessionId"] for s in out["codex"]["sessions"]] == [LONG_ID]
    assert [s["sessionId"] for s in out["since"]["sessions"]] == [LONG_ID]
    assert [p[0] for p in out["pages"]] == ids and all(len(p) == 1 for p in out["pages"])
    for is_error, answer in (out["bad"], out["big"]):
        assert is_error and answer["error"]["code"] == "invalid-input"


def test_messages_by_range_with_prefixes_and_bounds(store: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {}
        _, out["head"] = await call(client, MESSAGES, session="a1", to=2)
        _, out["rest"] = await call(client, MESSAGES, session="a1", **{"from": 3})
        _, out["past"] = await call(client, MESSAGES, session="a1", **{"from": 9})
        _, out["prefix"] = await call(client, MESSAGES, session="alpha-sess")
        _, out["big"] = await call(client, MESSAGES, session=LONG_ID, **{"from": 2})
        out["wide"] = await call(client, MESSAGES, session="a1", to=bound.MAX_RANGE + 1)
        out["backwards"] = await call(client, MESSAGES, session="a1", to=1, **{"from": 2})
        out["short"] = await call(client, MESSAGES, session="a")
        return out

    out = session_of(store, Binding("alpha"))(body)
    head = out["head"]
    assert head["historical"] is True and head["label"]
    assert [m["n"] for m in head["messages"]] == [1, 2] and head["total"] == 4
    assert head["messages"][0]["text"].startswith("Why does the reaper crash")
    assert head["messages"][0]["role"] == "user" and head["next"] == 3
    assert head["session"]["sessionId"] == "a1" and head["to"] == 2
    assert [m["n"] for m in out["rest"]["messages"]] == [3, 4] and out["rest"]["next"] is None
    assert out["past"]["messages"] == [] and out["past"]["to"] is None
    # The prefix is unique within alpha (the beta twin does not make it ambiguous).
    assert out["prefix"]["session"]["sessionId"] == LONG_ID
    # A text longer than the answer's room is cut and says so; the next message follows.
    big = out["big"]["messages"]
    assert [m["n"] for m in big] == [2] and big[0]["textCut"]["chars"] == len(BIG)
    assert len(big[0]["text"]) == reads.MAX_CHARS and out["big"]["next"] == 3
    for name in ("wide", "backwards"):
        is_error, answer = out[name]
        assert is_error and answer["error"]["code"] == "invalid-input", answer
    is_error, answer = out["short"]
    assert is_error and answer["error"]["code"] == "not-found"


def test_messages_of_a_session_bound_server_stay_in_its_lineage(store: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        return {
            "own": await call(client, MESSAGES, session="a2"),
            "parent": await call(client, MESSAGES, session="a1"),
            "sibling": await call(client, MESSAGES, session="a3"),
            "never": await call(client, MESSAGES, session="zz-never-existed"),
        }

    out = session_of(store, Binding("alpha", "a2"))(body)
    assert not out["own"][0] and not out["parent"][0]
    assert out["parent"][1]["session"]["sessionId"] == "a1"

    def normalized(answer: tuple[bool, dict[str, Any]], sid: str) -> Any:
        return (
            answer[0],
            answer[1]["error"]["code"],
            answer[1]["error"]["message"].replace(sid, "S"),
        )

    assert normalized(out["sibling"], "a3") == normalized(out["never"], "zz-never-existed")


def test_memory_context_is_the_projects_block(store: Path) -> None:
    async def body(client: Client) -> dict[str, Any]:
        return {
            "prompt": await call(client, MEMORY, prompt="Can I force-push the release to main?"),
            "ack": await call(client, MEMORY, prompt="ok thanks"),
            "huge": await call(client, MEMORY, prompt="q" * 100_000),
        }

    out = session_of(store, Binding("alpha"))(body)
    is_error, answer = out["prompt"]
    assert not is_error and answer["project"] == "alpha"
    assert "⚠️ AVOID: [conf 0.92] Never force-push to main" in answer["block"]
    assert "Fridays" not in answer["block"] and len(answer["block"].encode()) <= 14 * 1024
    assert answer["sections"]["Hard Rules"] and answer["skipped"] is False
    _, ack = out["ack"]
    assert ack["skipped"] is True and ack["block"] is None and ack["reason"] == "acknowledgement"
    is_error, huge = out["huge"]
    assert is_error and huge["error"]["code"] == "invalid-input"
    assert len(huge["error"]["message"]) < 300

"""Every tool the MCP server lists, called with another project's ids (issue 32).

The tools come from the server itself (``tools/list``), and each argument of each tool must be
classified in :data:`ARGUMENT_KINDS`: a new tool, or a new argument of an old one, fails
:func:`test_every_listed_argument_is_classified` until it says what of another project it could
name, and is then called with exactly that.

A server bound to project A is called with project B's document ids and locators (live,
superseded, forgotten, of a version that no longer exists, session-scoped), B's session ids and
prefixes, B's listing cursor, B's held subject key and B's texts. An argument that names
something must answer exactly as the same call naming something that never existed (no
existence oracle); every answer is searched for every secret of B (texts, session ids, document
ids, the project's name, B's memory record); and nothing of B changes (a write tool runs each
call on its own copy of the store, and B's documents are checked after).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from cwcore.api import Archive
from cwcore.errors import excerpt
from cwcore.hosts.mcp_server import Binding, build_server
from tests.faults import test_mcp_scope
from tests.faults.test_mcp_scope import (
    B_SECRETS,
    NEVER_EXISTED_ID,
    NEVER_EXISTED_LOCATOR,
    A,
    B,
    _search,
)
from tests.helpers import write_jsonl

#: B's documents in every state recall tells apart, and A's sessions: the fixture of
#: test_mcp_scope.py, which this file extends.
world = test_mcp_scope.world

NEVER_SESSION = "zz-session-that-never-existed"
NEVER_SUBJECT = "zz-subject-never-held"
B_SUBJECT = "beta-deploy-policy"
B_MEMORY = "quokka-memory: beta deploys on Fridays"

#: What each argument of a tool could name of another project. ``target``: a document id or
#: locator; ``session(s)``: session ids; ``cursor``: a listing cursor; ``subject``: a subject
#: key; ``keys``: source keys to leave out; ``text(s)``: words that match another project's
#: text; ``scope``: a scope that could widen the search; ``plain``: nothing of a project
#: (numbers, enums, filters that only narrow, a free-text reason).
ARGUMENT_KINDS: dict[str, str] = {
    "locator": "target",
    "documentId": "target",
    "by": "target",
    "session": "session",
    "sessionIds": "sessions",
    "cursor": "cursor",
    "subjectKey": "subject",
    "excludeVisibleSourceKeys": "keys",
    "query": "text",
    "prompt": "text",
    "expansionTerms": "texts",
    "scope": "scope",
    "relation": "plain",
    "agent": "plain",
    "since": "plain",
    "limit": "plain",
    "neighbors": "plain",
    "maxTokens": "plain",
    "hintBudgetTokens": "plain",
    "from": "plain",
    "to": "plain",
    "reason": "plain",
}


def _listed_tools(home: Path) -> list[Any]:
    async def body(client: Client) -> Any:
        return (await client.list_tools()).tools

    return run_bound(home, Binding(A), body)


def run_bound(home: Path, binding: Binding, body: Callable[[Client], Awaitable[Any]]) -> Any:
    server = build_server(binding, lambda: Archive.open(home, embedded=True))

    async def main() -> Any:
        async with Client(server, mode="legacy") as client:
            return await body(client)

    return anyio.run(main)


async def _call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    """(is error, the whole answer as text: every content block and the structured content)."""
    result = await client.call_tool(name, arguments)
    whole = json.dumps(
        {
            "error": bool(result.is_error),
            "content": [b.model_dump() for b in result.content],
            "structured": result.structured_content,
        },
        ensure_ascii=False,
    )
    return bool(result.is_error), whole


@pytest.fixture
def full_world(world: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """``world`` plus B's memory record, a subject key held in B, a B listing cursor, and an A
    document to name as the subject of a write."""
    with Archive.open(world["home"], embedded=True) as archive:
        extra = [
            {
                "session": "beta keyed session",
                "id": mid,
                "role": role,
                "text": f"quokka-keyed {role} text about the deploy policy",
                "project": B,
                "timestamp": f"2026-11-10T11:0{n}:00Z",
            }
            for n, (mid, role) in enumerate((("u1", "user"), ("a1", "assistant")))
        ]
        archive.import_paths([write_jsonl(tmp_path / "keyed.jsonl", extra)])
        old = _search(archive, B, "quokka-live").document_id
        holder = _search(archive, B, "quokka-keyed").document_id
        archive.supersede(old, by=holder, reason="policy", subject_key=B_SUBJECT)
        memory = archive.memory_add(
            B_MEMORY, ruleType="convention", confidence=0.95, layer="L2", scope=f"project:{B}"
        )
        archive.memory_add("Pelicans are configured in settings.toml", scope=f"project:{A}")
        world["b-cursor"] = archive.bound_sessions(B, limit=1).next_cursor
        world["a2-doc"] = _search(archive, A, "heron").document_id
        world["a1-locator"] = _search(archive, A, "pelican").locator
        world["b-holder"] = holder
        world["b-memory-id"] = memory.id
        world["before"] = _b_state(archive)
    world["secrets"] = (
        *B_SECRETS,
        "quokka-keyed",
        B_MEMORY,
        memory.id,
        B_SUBJECT,
        holder,
        *(world[s]["id"] for s in ("live", "superseded", "expired", "missing")),
    )
    return world


def _b_state(archive: Archive) -> list[Any]:
    """What B holds, as the engine answers it to B itself (for a before/after comparison)."""
    page = archive.bound_sessions(B, limit=50)
    return [(s.sessionId, s.messages) for s in page.sessions] + [
        archive.recall(doc, project=B).status
        for doc in [
            h.document_id
            for h in archive.search(
                {"query": "quokka", "project": B, "scope": "project", "limit": 50}
            ).results
        ]
    ]


def _foreign(world: dict[str, Any], kind: str) -> list[tuple[Any, Any]]:
    """(B's value, the never-existing value it must answer like) for an argument kind."""
    if kind == "target":
        states = ("live", "superseded", "expired", "missing", "session-scoped")
        return [(world[s]["id"], NEVER_EXISTED_ID) for s in states] + [
            (world[s]["locator"], NEVER_EXISTED_LOCATOR) for s in states
        ]
    if kind == "session":
        named = ("beta live session", "beta superseded session", "beta keyed session", "beta")
        return [(s, NEVER_SESSION) for s in named]
    if kind == "sessions":
        return [(["beta live session"], [NEVER_SESSION]), ([B], [NEVER_SESSION])]
    if kind == "subject":
        return [(B_SUBJECT, NEVER_SUBJECT)]
    return []


#: Values of B that are not ids (no "never existed" twin): the answer must hold nothing of B.
B_WORDS = ("quokka", "quokka-live beta session", "beta deploys on Fridays", "deploy policy")


def _base(world: dict[str, Any], tool: Any) -> dict[str, Any]:
    """The tool's required arguments with values of A (an id of A, a word of A)."""
    own = {
        "target": world["a1-doc"],
        "session": "a1",
        "text": "pelican",
    }
    args: dict[str, Any] = {}
    for name in tool.input_schema.get("required", []):
        kind = ARGUMENT_KINDS[name]
        args[name] = world["a1-locator"] if name == "locator" else own[kind]
    if "subjectKey" in tool.input_schema.get("properties", {}):
        args["by"] = world["a2-doc"]  # a subject key needs its new holder
    return args


def _normalized(whole: str, value: Any) -> str:
    """``whole`` with the caller's own ``value`` (quoted whole, or as an error's excerpt of it)
    replaced by ``VALUE``: an answer may echo what it was asked, and only that."""
    for item in value if isinstance(value, list) else [value]:
        for shown in (excerpt(item), excerpt(item, 64), item):
            whole = whole.replace(
                json.dumps(json.dumps(shown, ensure_ascii=False)[1:-1], ensure_ascii=False)[1:-1],
                "VALUE",
            )
            whole = whole.replace(json.dumps(shown, ensure_ascii=False)[1:-1], "VALUE")
    return whole


def _fresh(home: Path, tmp: Path, n: int) -> Path:
    copy = tmp / f"copy-{n}"
    shutil.copytree(home, copy)
    return copy


def test_every_listed_argument_is_classified(full_world: dict[str, Any]) -> None:
    tools = _listed_tools(full_world["home"])
    assert len(tools) >= 7
    for tool in tools:
        unknown = set(tool.input_schema.get("properties", {})) - set(ARGUMENT_KINDS)
        assert not unknown, f"{tool.name}: classify {sorted(unknown)} in ARGUMENT_KINDS"


def test_every_tool_with_another_projects_ids_answers_as_for_a_missing_one(
    full_world: dict[str, Any], tmp_path: Path
) -> None:
    world = full_world
    home: Path = world["home"]
    tools = _listed_tools(home)
    secrets = world["secrets"]
    calls: list[tuple[str, str, dict[str, Any], Any, dict[str, Any] | None]] = []
    for tool in tools:
        properties = tool.input_schema.get("properties", {})
        base = _base(world, tool)
        for name in properties:
            kind = ARGUMENT_KINDS[name]
            for foreign, never in _foreign(world, kind):
                calls.append(
                    (tool.name, name, {**base, name: foreign}, foreign, {**base, name: never})
                )
            if kind in ("text", "texts"):
                for words in B_WORDS:
                    calls.append(
                        (
                            tool.name,
                            name,
                            {**base, name: words if kind == "text" else [words]},
                            words,
                            None,
                        )
                    )
            if kind == "cursor":
                calls.append((tool.name, name, {**base, name: world["b-cursor"]}, None, None))
            if kind == "keys":
                keys = ["user:u1", "assistant:a1", "beta live session"]
                calls.append((tool.name, name, {**base, "query": "quokka", name: keys}, keys, None))
            if kind == "scope":
                for scope in ("all", "project"):
                    args = {**base, name: scope, "query": "quokka beta session"}
                    calls.append((tool.name, name, args, None, None))
    assert len(calls) >= 55, len(calls)  # every id-bearing argument, several states each
    exercised = {c[0] for c in calls}
    assert exercised == {t.name for t in tools}, {t.name for t in tools} - exercised
    writes = {t.name for t in tools if t.annotations is None or not t.annotations.read_only_hint}

    answers: list[tuple[bool, str, bool | None, str | None]] = []

    def ask(where: Path, name: str, args: dict[str, Any]) -> tuple[bool, str]:
        async def body(client: Client) -> tuple[bool, str]:
            return await _call(client, name, args)

        return run_bound(where, Binding(A), body)

    read_calls = [c for c in calls if c[0] not in writes]

    async def batch(client: Client) -> list[tuple[tuple[bool, str], tuple[bool, str] | None]]:
        out = []
        for name, _, args, _, never in read_calls:
            got = await _call(client, name, args)
            twin = await _call(client, name, never) if never is not None else None
            out.append((got, twin))
        return out

    for (name, arg, _, value, never), (got, twin) in zip(
        read_calls, run_bound(home, Binding(A), batch), strict=True
    ):
        answers.append((got[0], got[1], twin[0] if twin else None, twin[1] if twin else None))
        _check(name, arg, value, got, twin, secrets, never[arg] if never else None)
    n = 0
    for name, arg, args, value, never in calls:
        if name not in writes:
            continue
        n += 1
        got = ask(_fresh(home, tmp_path, n), name, args)
        twin = ask(_fresh(home, tmp_path, -n), name, never) if never is not None else None
        _check(name, arg, value, got, twin, secrets, never[arg] if never else None)
    assert n > 0 or not writes

    # Nothing of B changed (the read tools ran on the store itself).
    with Archive.open(home, embedded=True) as archive:
        assert _b_state(archive) == world["before"]


def _check(
    name: str,
    arg: str,
    value: Any,
    got: tuple[bool, str],
    twin: tuple[bool, str] | None,
    secrets: tuple[str, ...],
    never: Any = None,
) -> None:
    where = f"{name}({arg}={value!r})"
    shown = _normalized(got[1], value) if value is not None else got[1]
    leaked = [s for s in secrets if s in shown]
    assert not leaked, f"{where} leaked {leaked}: {shown[:600]}"
    assert "internal" not in shown, f"{where}: {shown[:600]}"
    if twin is not None:
        expected = _normalized(twin[1], never)
        assert got[0] == twin[0], (where, shown[:400], expected[:400])
        assert shown == expected, f"{where}\n  B:     {shown[:600]}\n  never: {expected[:600]}"

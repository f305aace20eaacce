"""Structure: branches, sidechains, rewinds, lineage, ids and counts across the importers."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from cwcore.errors import NotFound
from cwcore.importers import base
from cwcore.importers.documents import build_documents, group_turns, session_counts
from cwcore.importers.pi import branch_path, latest_leaf
from cwcore.model import Message, ParsedSession, Usage
from tests.importers.golden_support import FIXTURES

PI3 = FIXTURES / "pi/2026-02-01T09-00-00-000Z_5e55a1b2-0000-4000-8000-0000000000a3.jsonl"
PI1 = FIXTURES / "pi/2025-11-20T10-00-00-000Z_5e55a1b2-0000-4000-8000-0000000000a1.jsonl"
GEMINI = FIXTURES / "gemini/tiny-proj/chats/session-2026-03-02T10-00-9f3c2a1b.jsonl"
CLAUDE = FIXTURES / "claude_code/c1a0de00-0000-4000-8000-000000000001.jsonl"
CODEX = FIXTURES / "codex/rollout-2026-03-01T10-00-00-0194a0b0-0000-7000-8000-00000000c0de.jsonl"


def parse(path: Path, fmt: str | None = None) -> ParsedSession:
    importer = base.get(fmt) if fmt else base.detect(path)
    assert importer is not None
    result = importer.parse(path)
    assert len(result.sessions) == 1
    return result.sessions[0]


def write(path: Path, rows: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def ids(messages: list[Message] | tuple[Message, ...]) -> list[str]:
    return [m.message_id for m in messages]


# -- counts ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (CLAUDE, {"messages": 26, "turns": 5, "toolCalls": 4}),
        (CODEX, {"messages": 14, "turns": 3, "toolCalls": 3}),
        (PI3, {"messages": 19, "turns": 4, "toolCalls": 2}),
        (PI1, {"messages": 6, "turns": 2, "toolCalls": 1}),
        (GEMINI, {"messages": 10, "turns": 4, "toolCalls": 1}),
    ],
)
def test_counts_follow_the_definitions(path: Path, expected: dict[str, int]) -> None:
    assert session_counts(parse(path)) == expected


def test_ids_are_unique_and_keys_normalized() -> None:
    for path in (CLAUDE, CODEX, PI3, PI1, GEMINI):
        session = parse(path)
        assert len(set(ids(session.messages))) == len(session.messages)
        assert all(
            m.key.split(":", 1)[0] in ("user", "assistant", "tool", "system")
            for m in session.messages
        )


# -- pi branches -------------------------------------------------------------------------------


def test_pi_latest_leaf_and_branch_paths() -> None:
    session = parse(PI3)
    assert latest_leaf(session) == "e22"
    assert ids(branch_path(session, "e22")) == [
        "e3",
        "e4",
        "tc1",
        "e5",
        "e6",
        "e11",
        "e12",
        "e14",
        "e16",
        "e18",
        "e19",
        "e20",
        "e21",
        "e22",
    ]
    assert ids(branch_path(session, "e10")) == [
        "e3",
        "e4",
        "tc1",
        "e5",
        "e6",
        "e7",
        "tc2",
        "e9",
        "e10",
    ]
    assert ids(branch_path(session, "e13")) == ["e3", "e4", "tc1", "e5", "e6", "e11", "e12", "e13"]
    # entries that are not messages resolve to the message they follow
    assert ids(branch_path(session, "e15"))[-1] == "e14"  # a label
    assert ids(branch_path(session, "e8"))[-1] == "tc2"  # an assistant entry of tool calls only
    with pytest.raises(NotFound):
        branch_path(session, "nope")


def test_pi_turns_never_mix_branches() -> None:
    session = parse(PI3)
    for turn in group_turns(session.messages):
        for before, after in itertools.pairwise(turn):
            assert after.parent_id == before.message_id
    docs = [d for d in build_documents(session) if d.kind == "turn"]
    regenerated = next(d for d in docs if d.parts[0].message_key == "assistant:e14")
    first_try = next(d for d in docs if d.parts[0].message_key == "user:e12")
    assert regenerated.metadata == {"branchOf": first_try.document_id, "layout": 2}
    assert regenerated.parent_document == first_try.document_id


def test_pi_v1_is_one_linear_branch() -> None:
    session = parse(PI1)
    assert latest_leaf(session) == "L9"
    talk = [m for m in session.messages if m.kind != "thinking"]
    assert ids(branch_path(session, "L9")) == ids(talk)


def test_pi_parent_session_from_path_or_id(tmp_path: Path) -> None:
    header = {
        "type": "session",
        "version": 3,
        "id": "child-1",
        "timestamp": "2026-01-01T00:00:00Z",
        "cwd": "/x/proj",
        "parentSession": "parent-9",
    }
    session = parse(write(tmp_path / "s.jsonl", [header]), "pi")
    assert (session.parent_session, session.lineage, session.project) == (
        "parent-9",
        ("parent-9",),
        "proj",
    )


# -- gemini rewinds ----------------------------------------------------------------------------


def test_gemini_rewind_moves_messages_off_the_active_branch() -> None:
    session = parse(GEMINI)
    assert session.metadata["off_branch"] == ["g5", "g6"]
    assert latest_leaf(session) == "g9"
    assert ids(branch_path(session, "g9")) == [
        "g1",
        "g2",
        "call-g-1",
        "call-g-1#result",
        "g4",
        "g7",
        "g8",
        "g9",
    ]
    docs = [d for d in build_documents(session) if d.kind == "turn"]
    off = [d for d in docs if d.metadata.get("offBranch")]
    assert [[p.message_key for p in d.parts] for d in off] == [["user:g5", "assistant:g6"]]


def test_gemini_rewind_as_last_line_and_revived_ids(tmp_path: Path) -> None:
    meta = {"sessionId": "s-rw", "projectHash": "h"}
    rows = [
        meta,
        {"id": "a", "type": "user", "content": "one"},
        {"id": "b", "type": "gemini", "content": "two"},
        {"$rewindTo": "b"},
    ]
    session = parse(write(tmp_path / "chats" / "session-x.jsonl", rows), "gemini")
    assert session.metadata["off_branch"] == ["b"]
    assert latest_leaf(session) == "a"
    # the same id written again after its rewind is a new message with a distinct id
    rows += [{"id": "b", "type": "gemini", "content": "two, again"}, {"$rewindTo": "unknown"}]
    session = parse(write(tmp_path / "chats" / "session-x.jsonl", rows), "gemini")
    assert ids(session.messages) == ["a", "b", "b#r1"]
    # an unknown rewind target clears the active branch, as gemini-cli does
    assert session.metadata["off_branch"] == ["a", "b", "b#r1"]


def test_gemini_upsert_replaces_the_message(tmp_path: Path) -> None:
    rows = [
        {"sessionId": "s-up", "projectHash": "h"},
        {"id": "m1", "type": "gemini", "content": "draft"},
        {"id": "m1", "type": "gemini", "content": "final answer"},
    ]
    session = parse(write(tmp_path / "session-up.jsonl", rows), "gemini")
    assert [(m.message_id, m.text, m.lines) for m in session.messages] == [
        ("m1", "final answer", (2, 3))
    ]


def test_gemini_subagent_lineage(tmp_path: Path) -> None:
    rows = [
        {"sessionId": "sub-1", "projectHash": "h", "kind": "subagent"},
        {"id": "m1", "type": "user", "content": "do the sub task"},
    ]
    session = parse(write(tmp_path / "proj" / "chats" / "parent-7" / "sub-1.jsonl", rows))
    assert session.lineage == ("parent-7",)


# -- claude -----------------------------------------------------------------------------------


def _claude(uuid: str, parent: str | None, kind: str, content: Any, **kw: Any) -> dict[str, Any]:
    row = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": kw.pop("sid", "S1"),
        "cwd": "/w/app",
        "timestamp": "2026-01-01T00:00:00Z",
        "message": {"role": kind, "content": content},
    }
    if kind == "assistant":
        row["message"]["id"] = kw.pop("mid", f"m-{uuid}")
    row.update(kw)
    return row


def test_claude_structure() -> None:
    session = parse(CLAUDE)
    by_id = {m.message_id: m for m in session.messages}
    # one assistant message for the lines sharing message.id msg_A; its thinking is a message
    # of kind thinking before it, following the prompt without joining the chain
    assert by_id["a-0001"].text == "Let me look at the test and run it."
    assert by_id["a-0001"].lines == (8, 9)
    assert "a-0002" not in by_id
    thought = by_id["a-0001#thinking1"]
    assert (thought.kind, thought.text, thought.parent_id) == (
        "thinking",
        "Probably timezone dependent.",
        "u-0004",
    )
    assert by_id["a-0001"].parent_id == "u-0004"
    assert ids(session.messages).index("a-0001#thinking1") < ids(session.messages).index("a-0001")
    [holder] = [d for d in build_documents(session) if d.asides]
    assert [(a.after, a.part.message_key) for a in holder.asides] == [
        (
            holder.parts.index(next(p for p in holder.parts if p.message_key == "user:u-0004")),
            "assistant:a-0001#thinking1",
        )
    ]
    assert "Probably timezone" not in "".join(
        p.text for d in build_documents(session) for p in d.parts
    )
    # several results on one line: uuid#n, tool names from their calls
    assert [(by_id[i].tool_name, by_id[i].is_error) for i in ("r-0001#1", "r-0001#2")] == [
        ("Read", False),
        ("Bash", True),
    ]
    real = [m.message_id for m in session.messages if m.real_user]
    # line 25 has no uuid: its id is L25 (the fallback of formats without ids)
    assert real == ["u-0004", "L25", "u-0006", "u-0008"]
    assert by_id["u-0007"].kind == "summary"
    assert by_id["L1"].kind == "summary" and session.title == "Fix the flaky date parser test"
    assert all(by_id[i].sidechain for i in ("s-0001", "s-0002", "toolu_04", "s-0003", "s-0004"))
    # the rewound prompt keeps the parent its parentUuid proves
    assert by_id["u-0008"].parent_id == "a-0006"
    assert session.resume_command == f"claude --resume {session.session_id}"


def test_claude_text_and_result_on_one_line(tmp_path: Path) -> None:
    rows = [
        _claude("u1", None, "user", "run it"),
        _claude(
            "a1",
            "u1",
            "assistant",
            [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls"}}],
        ),
        _claude(
            "u2",
            "a1",
            "user",
            [
                {"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                {"type": "text", "text": "[Request interrupted by user for tool use]"},
            ],
        ),
    ]
    session = parse(write(tmp_path / "S1.jsonl", rows))
    assert [(m.message_id, m.role, m.real_user) for m in session.messages] == [
        ("u1", "user", True),
        ("t1", "assistant", False),
        ("u2#1", "tool", False),
        ("u2", "user", False),
    ]


def test_claude_lineage_only_from_what_the_file_shows(tmp_path: Path) -> None:
    rows = [
        _claude("u0", None, "user", "old question", sid="ANCESTOR"),
        _claude("a0", "u0", "assistant", [{"type": "text", "text": "old answer"}], sid="ANCESTOR"),
        _claude("u1", "a0", "user", "new question", sid="S2"),
    ]
    session = parse(write(tmp_path / "S2.jsonl", rows))
    assert (session.session_id, session.lineage, session.parent_session) == (
        "S2",
        ("ANCESTOR",),
        "ANCESTOR",
    )
    # a first parentUuid pointing outside the file proves nothing
    lone = parse(write(tmp_path / "S3.jsonl", [_claude("u1", "elsewhere", "user", "hi", sid="S3")]))
    assert lone.lineage == () and lone.messages[0].parent_id is None


def test_claude_subagent_transcript(tmp_path: Path) -> None:
    rows = [
        _claude("s1", None, "user", "Find the bug", sid="MAIN", isSidechain=True),
        _claude(
            "s2",
            "s1",
            "assistant",
            [{"type": "text", "text": "Found it"}],
            sid="MAIN",
            isSidechain=True,
        ),
    ]
    session = parse(write(tmp_path / "MAIN" / "subagents" / "agent-a1b2.jsonl", rows))
    # the sub-agent's session, named after its parent; its own lines are its main thread
    assert (session.session_id, session.lineage) == ("MAIN/agent-a1b2", ("MAIN",))
    assert session.parent_session == "MAIN"
    assert not any(m.real_user or m.sidechain for m in session.messages)
    docs = build_documents(session)
    assert [(d.metadata, d.starts_turn) for d in docs] == [({"layout": 2}, True)]
    assert session_counts(session) == {"messages": 2, "turns": 1, "toolCalls": 0}


def test_project_names(tmp_path: Path) -> None:
    rows = [_claude("u1", None, "user", "hi", cwd="/Users/me/work/app/.worktrees/feature-x")]
    assert parse(write(tmp_path / "S1.jsonl", rows)).project == "app"
    rows = [_claude("u1", None, "user", "hi", cwd="C:\\Users\\me\\src\\tool")]
    assert parse(write(tmp_path / "S1.jsonl", rows)).project == "tool"
    assert (
        base.get("claude-code").parse(tmp_path / "S1.jsonl", project="forced").sessions[0].project
        == "forced"
    )


# -- group_turns rules ------------------------------------------------------------------------


def msg(mid: str, parent: str | None = None, real: bool = False, **kw: Any) -> Message:
    role = "user" if real else kw.pop("role", "assistant")
    return Message(mid, role, "text", mid, real_user=real, parent_id=parent, **kw)


def test_group_turns_rules() -> None:
    linear = (msg("p"), msg("u1", real=True), msg("a1"), msg("u2", real=True), msg("a2"))
    assert [ids(t) for t in group_turns(linear)] == [["p"], ["u1", "a1"], ["u2", "a2"]]
    tree = (
        msg("u1", real=True),
        msg("a1", "u1"),
        msg("a1b", "u1"),
        msg("x", "a1"),
        msg("y", "missing-parent"),
    )
    # a1b branches from u1 (not a turn's tail); x extends a1's turn; y, whose parent is not in
    # the session, continues the turn of the latest main-thread message
    assert [ids(t) for t in group_turns(tree)] == [["u1", "a1", "x", "y"], ["a1b"]]
    side = (
        msg("u1", real=True),
        msg("a1", "u1"),
        msg("s1", sidechain=True),
        msg("s2", "s1", sidechain=True),
        msg("a2", "a1"),
    )
    assert [ids(t) for t in group_turns(side)] == [["u1", "a1", "a2"], ["s1", "s2"]]
    off = (msg("u1", real=True), msg("a1", "u1"), msg("a2", "a1"))
    assert [ids(t) for t in group_turns(off, off_branch={"a2"})] == [["u1", "a1"], ["a2"]]


def _codex(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2026-03-01T10:00:00Z", "type": kind, "payload": payload}


def _tokens(total_in: int, cached: int, out: int) -> dict[str, Any]:
    usage = {"input_tokens": total_in, "cached_input_tokens": cached, "output_tokens": out}
    return _codex("event_msg", {"type": "token_count", "info": {"total_token_usage": usage}})


def test_codex_usage_is_the_growth_of_the_total_on_the_response_before_it(
    tmp_path: Path,
) -> None:
    sid = "0194a0b0-0000-7000-8000-00000000abcd"
    say = {"type": "message", "role": "assistant", "content": [{"type": "output_text"}]}
    rows = [
        _codex("session_meta", {"id": sid, "cwd": "/w/app"}),
        _codex("turn_context", {"cwd": "/w/app", "model": "gpt-5-codex"}),
        _codex(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "fix it"}],
            },
        ),
        _codex(
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Look at the parser first."}],
            },
        ),
        _codex("response_item", {**say, "content": [{"type": "output_text", "text": "one"}]}),
        _tokens(1000, 600, 50),
        _tokens(1000, 600, 50),  # Codex repeats an event: it adds nothing
        _codex("response_item", {**say, "content": [{"type": "output_text", "text": "two"}]}),
        _tokens(2500, 1800, 80),
        _codex("event_msg", {"type": "thread_name_updated", "thread_name": "Parser fix"}),
    ]
    session = parse(write(tmp_path / f"rollout-2026-03-01T10-00-00-{sid}.jsonl", rows), "codex")
    by_id = {m.message_id: m for m in session.messages}
    assert (by_id["L4"].kind, by_id["L4"].text) == ("thinking", "Look at the parser first.")
    assert by_id["L5"].usage == Usage(input=400, output=50, cache_read=600)
    assert by_id["L5"].model == "gpt-5-codex"
    assert by_id["L8"].usage == Usage(input=300, output=30, cache_read=1200)
    assert session.title == "Parser fix"
    assert session_counts(session)["messages"] == 3  # thinking is not counted


def test_gemini_tokens_count_cached_apart_and_thoughts_as_output(tmp_path: Path) -> None:
    rows = [
        {"sessionId": "g-s", "projectHash": "ab" * 32, "startTime": "2026-03-02T10:00:00Z"},
        {"id": "g1", "timestamp": "2026-03-02T10:00:01Z", "type": "user", "content": "hi"},
        {
            "id": "g2",
            "timestamp": "2026-03-02T10:00:02Z",
            "type": "gemini",
            "content": [{"text": "Weighing it", "thought": True}, {"text": "Hello"}],
            "thoughts": [{"subject": "Greeting", "description": "Say hello back"}],
            "tokens": {"input": 900, "output": 12, "cached": 700, "thoughts": 30, "total": 942},
            "model": "gemini-2.5-pro",
        },
    ]
    session = parse(write(tmp_path / "chats" / "session-2026-03-02T10-00-g.jsonl", rows))
    assert [(m.message_id, m.kind, m.text) for m in session.messages] == [
        ("g1", "text", "hi"),
        ("g2#thinking1", "thinking", "Greeting: Say hello back"),
        ("g2#thinking2", "thinking", "Weighing it"),
        ("g2", "text", "Hello"),
    ]
    reply = session.messages[-1]
    assert (reply.model, reply.usage) == (
        "gemini-2.5-pro",
        Usage(input=200, output=42, cache_read=700),
    )


def test_pi_thinking_and_usage(tmp_path: Path) -> None:
    rows = [
        {"type": "session", "version": 3, "id": "pi-s", "timestamp": "2026-02-01T09:00:00Z"},
        {
            "type": "message",
            "id": "e1",
            "parentId": None,
            "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        },
        {
            "type": "message",
            "id": "e2",
            "parentId": "e1",
            "message": {
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "usage": {"input": 3, "output": 191, "cacheRead": 0, "cacheWrite": 1684},
                "content": [
                    {"type": "thinking", "thinking": "A greeting."},
                    {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}},
                ],
            },
        },
    ]
    session = parse(write(tmp_path / "2026-02-01T09-00-00-000Z_pi-s.jsonl", rows), "pi")
    by_id = {m.message_id: m for m in session.messages}
    assert (by_id["e2#thinking1"].kind, by_id["e2#thinking1"].parent_id) == ("thinking", "e1")
    assert by_id["c1"].parent_id == "e1"  # thinking joins no chain
    assert (by_id["c1"].model, by_id["c1"].usage) == (
        "claude-sonnet-4-5",
        Usage(input=3, output=191, cache_write=1684),
    )

"""Peer-written session files of the OpenCode, Kilo, Goose, OpenClaw and pi formats, read by cw
(issue 31): each file (tests/fixtures/peers/<format>/, origins in each SOURCE.md) is parsed
through auto-detection and through the forced format, and cw must find what the peer's own test
expects — message counts, roles, tool calls with their results, titles, times, lineage.

Where cw deliberately differs from a peer, a comment says so. cw's definitions
(docs/importers.md): thinking is a message of kind ``thinking`` (not counted); a tool call and
its result are messages of their own (the peers fold calls into the assistant message and map
results to a ``user`` message); compaction summaries are ``system`` summary messages (the peers
skip them); tool output is never dropped (an orphan tool result is kept); a message without
text is not a message. SQLite seeds are committed as the SQL the peer's test runs and built
here. No peer file of Crush exists (neither peer reads Crush).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from cwcore.importers import base
from cwcore.importers.documents import session_counts, session_title
from cwcore.model import Message, ParsedSession

PEERS = Path(__file__).resolve().parent.parent / "fixtures" / "peers"


def parse(path: Path, fmt: str) -> list[ParsedSession]:
    """The sessions of ``path`` read through detection and through ``--format fmt``, which
    must agree."""
    detected = base.detect(path)
    assert detected is not None and detected.name == fmt, f"{path}: detected {detected}"
    forced = base.get(fmt)
    assert forced.accepts(path, base.read_head(path))
    auto, manual = detected.parse(path), forced.parse(path)
    assert auto.sessions == manual.sessions
    return list(auto.sessions)


def one(path: Path, fmt: str) -> ParsedSession:
    sessions = parse(path, fmt)
    assert len(sessions) == 1
    return sessions[0]


def counted(session: ParsedSession) -> list[Message]:
    return [m for m in session.messages if m.kind != "thinking"]


def roles(session: ParsedSession) -> list[tuple[str, str]]:
    return [(m.role, m.kind) for m in counted(session)]


def build(tmp_path: Path, sql: str, name: str) -> Path:
    """The database the peer's SQL makes, as ``<tmp>/<sql stem>/<name>``."""
    folder = tmp_path / Path(sql).stem
    folder.mkdir()
    db = folder / name
    conn = sqlite3.connect(db)
    conn.executescript((PEERS / sql).read_text(encoding="utf-8"))
    conn.close()
    return db


# ---------------------------------------------------------------- pi


def test_pi_agentsview_session_fixture() -> None:
    # agentsview TestPiProviderParses*: header, 2 real users, thinking, tool call + result,
    # compaction, redacted thinking, model and usage on both answers, branchedFrom lineage.
    s = one(PEERS / "pi/agentsview-session.jsonl", "pi")
    assert s.session_id == "pi-test-session-uuid"
    assert s.cwd == "/Users/alice/code/my-project"
    assert s.project == "my-project"  # cw keeps the folder name (the peer: "my_project")
    # branchedFrom names the parent's file <ts>_<uuid>.jsonl; cw's pi session id is the uuid
    # (the peer keeps the file's base name)
    assert s.lineage == ("parent-uuid",) and s.parent_session == "parent-uuid"
    assert s.started == "2025-01-01T10:00:00.000Z"
    assert [m.text for m in s.messages if m.real_user] == ["Fix the login bug", "Look good to you?"]
    call = next(m for m in s.messages if m.kind == "tool-call")
    assert (call.tool_name, call.message_id) == ("read", "toolu_01") and "auth.go" in call.text
    result = next(m for m in s.messages if m.kind == "tool-result")
    assert result.tool_call_id == "toolu_01" and "package auth" in result.text
    answers = [m for m in s.messages if m.role == "assistant" and m.kind == "text"]
    assert [m.model for m in answers] == ["claude-opus-4-5", "claude-opus-4-5"]
    assert [(m.usage.input, m.usage.output) for m in answers if m.usage] == [(100, 50), (200, 10)]
    thinking = [m.text for m in s.messages if m.kind == "thinking"]
    assert thinking == ["Let me analyze this carefully."]  # the redacted block has no text
    # the compaction is a system summary (the peer skips it)
    assert ("system", "summary") in roles(s)
    assert session_counts(s)["messages"] == 7
    assert session_title(s) == "Fix the login bug"


@pytest.mark.parametrize(
    ("name", "title"),
    [
        ("agentsview-session_info_name.jsonl", "Renamed session"),
        ("agentsview-omp_title_slot.jsonl", "Build Bloom filter research artifact"),
        ("agentsview-omp_header_title.jsonl", "Header auto title"),
        ("agentsview-omp_title_slot_wins.jsonl", "Slot title"),
    ],
)
def test_pi_titles(name: str, title: str) -> None:
    s = one(PEERS / "pi" / name, "pi")
    assert s.title == title and session_title(s) == title
    assert counted(s)[0].text == "hello" and counted(s)[0].real_user


def test_pi_omp_title_slot_counts_and_model() -> None:
    s = one(PEERS / "pi/agentsview-omp_title_slot.jsonl", "pi")
    assert s.session_id == "omp-sess" and len(counted(s)) == 2  # the slot is no message
    assert counted(s)[1].model == "claude-opus-4-8"


def test_pi_string_contents() -> None:
    s = one(PEERS / "pi/agentsview-string_content_assistant.jsonl", "pi")
    assert [(m.role, m.text) for m in s.messages] == [("assistant", "plain string response")]
    s = one(PEERS / "pi/agentsview-string_content_tool_result.jsonl", "pi")
    [result] = s.messages
    assert (result.kind, result.tool_call_id, result.text) == (
        "tool-result",
        "toolu_99",
        "file contents here",
    )


def test_pi_user_messages_without_text() -> None:
    # The peer counts 3 user messages; cw has no empty message: the image-only prompt is a
    # message ("[image]"), the empty one is not.
    s = one(PEERS / "pi/agentsview-empty_content.jsonl", "pi")
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "hello"),
        ("user", "[image]"),
        ("assistant", "response"),
    ]


def test_pi_v1_session_id_from_file_name() -> None:
    s = one(PEERS / "pi/v1-session.jsonl", "pi")
    assert s.session_id == "v1-session" and [m.text for m in s.messages] == ["hello"]


def test_pi_branched_from() -> None:
    s = one(PEERS / "pi/agentsview-branched_from.jsonl", "pi")
    assert s.lineage == ("parent-file",)  # the uuid part of <ts>_<uuid>.jsonl (see above)


def test_pi_message_lineage() -> None:
    # The peer's 6 messages: u1, the compaction, u2, a2, t1 (tool result), a3.
    s = one(PEERS / "pi/agentsview-message_lineage.jsonl", "pi")
    assert s.title == "Checkpoint"
    assert [m.message_id for m in s.messages] == ["u1", "cmp-1", "u2", "a2", "t1", "a3"]
    by_id = {m.message_id: m for m in s.messages}
    assert by_id["cmp-1"].parent_id == "u1" and by_id["u2"].parent_id == "cmp-1"
    assert by_id["a2"].parent_id == "u2" and by_id["t1"].parent_id == "a2"
    assert by_id["t1"].tool_call_id == "toolu_42" and by_id["t1"].text == "tool output"
    # a3's entry names t1 as its parent; cw keeps that (the peer skips to a2)
    assert by_id["a3"].parent_id == "t1"


def test_pi_leading_blank_lines_model_change_and_block_order() -> None:
    s = one(PEERS / "pi/agentsview-leading_whitespace.jsonl", "pi")
    assert s.session_id == "ws-sess" and len(s.messages) == 1
    s = one(PEERS / "pi/agentsview-model_from_model_change.jsonl", "pi")
    assert counted(s)[1].model == "gpt-5.4" and counted(s)[1].usage is not None
    s = one(PEERS / "pi/agentsview-block_order.jsonl", "pi")
    # cw: thinking, ONE assistant text (both text blocks), then the call
    assert [(m.kind, m.text) for m in s.messages] == [
        ("thinking", "step one"),
        ("text", "first text\n\nsecond text"),
        ("tool-call", '{"command": "ls"}'),
    ]


def test_pi_franken_files() -> None:
    folder = PEERS / "pi"
    name = "2025-12-01T10-00-00_uuid1.jsonl"
    s = one(folder / "franken-session_header" / name, "pi")
    assert s.cwd == "/home/user/project" and s.messages[0].text == "Hello Pi!"
    s = one(folder / "franken-skips_empty_content" / name, "pi")
    assert [m.text for m in s.messages] == ["Valid"]
    s = one(folder / "franken-tracks_model_changes" / name, "pi")
    assert s.messages[1].model == "claude-3-opus"
    s = one(folder / "franken-fallback_model_from_session" / name, "pi")
    assert s.messages[0].model == "gpt-4-turbo"
    path = folder / "franken-skips_invalid_json_lines" / name
    s = one(path, "pi")
    assert [m.text for m in s.messages] == ["Valid", "Also valid"]
    assert [line for line, _ in base.get("pi").parse(path).problems] == [2]


# ---------------------------------------------------------------- OpenClaw

CLAW = PEERS / "openclaw/agents"


def test_openclaw_basic_and_thinking() -> None:
    s = one(CLAW / "main/sessions/agentsview-basic.jsonl", "openclaw")
    assert (s.session_id, s.agent, s.project) == ("abc-123", "openclaw", "project")
    assert s.metadata["openclawAgent"] == "main"
    assert roles(s) == [("user", "text"), ("assistant", "text")]
    assert session_title(s) == "Hello, how are you?"
    assert counted(s)[1].model == "claude-sonnet-4-6"  # from the model_change
    s = one(CLAW / "main/sessions/agentsview-thinking.jsonl", "openclaw")
    assert [m.kind for m in s.messages] == ["text", "thinking", "text"]


def test_openclaw_anthropic_tool_use_block() -> None:
    s = one(CLAW / "main/sessions/agentsview-tool_result.jsonl", "openclaw")
    assert roles(s) == [
        ("user", "text"),
        ("assistant", "tool-call"),
        ("tool", "tool-result"),
        ("assistant", "text"),
    ]
    call, result = counted(s)[1], counted(s)[2]
    assert (call.message_id, call.tool_name, call.tool_input) == (
        "tu1",
        "read",
        '{"path": "/etc/hosts"}',
    )
    assert (result.tool_call_id, result.text) == ("tu1", "127.0.0.1 localhost")
    assert [m for m in s.messages if m.real_user] == [counted(s)[0]]


def test_openclaw_tool_result_blocks() -> None:
    s = one(CLAW / "main/sessions/agentsview-real_tool_call_format.jsonl", "openclaw")
    assert len(counted(s)) == 4
    calls = [m for m in s.messages if m.kind == "tool-call"]
    assert [(c.message_id, c.tool_name) for c in calls] == [("call_1", "bash"), ("call_2", "read")]
    assert "ls" in calls[0].text and "/etc/hosts" in calls[1].text
    [result] = [m for m in s.messages if m.kind == "tool-result"]
    assert (result.tool_call_id, result.text) == ("call_1", "file1\nfile2")


def test_openclaw_orphan_result_usage_compaction() -> None:
    # The peer drops a toolResult with an empty toolCallId; cw keeps the output.
    s = one(CLAW / "main/sessions/agentsview-orphan_tool_result.jsonl", "openclaw")
    assert [m.text for m in s.messages if m.kind == "tool-result"] == ["orphan result"]
    assert [m.real_user for m in s.messages].count(True) == 1
    s = one(CLAW / "main/sessions/agentsview-assistant_usage.jsonl", "openclaw")
    usage = counted(s)[1].usage
    assert usage is not None and (usage.input, usage.output, usage.cache_write) == (3, 91, 9612)
    s = one(CLAW / "main/sessions/agentsview-compaction.jsonl", "openclaw")
    # the peer skips the compaction; cw keeps it as a system summary
    assert roles(s) == [("system", "summary"), ("user", "text"), ("assistant", "text")]


def test_openclaw_same_id_under_two_agents() -> None:
    alpha = one(CLAW / "alpha/sessions/agentsview-same_id.jsonl", "openclaw")
    beta = one(CLAW / "beta/sessions/agentsview-same_id.jsonl", "openclaw")
    # The same session id under two OpenClaw agents: told apart by metadata.openclawAgent;
    # one store row per (agent, id) is the lead's work (issue 31).
    assert alpha.session_id == beta.session_id == "same-id"
    assert (alpha.metadata["openclawAgent"], beta.metadata["openclawAgent"]) == ("alpha", "beta")


def test_openclaw_franken_files() -> None:
    s = one(CLAW / "openclaw/sessions/franken-wrapped_messages.jsonl", "openclaw")
    assert roles(s) == [("user", "text"), ("assistant", "text"), ("assistant", "tool-call")]
    assert session_title(s) == "Hello OpenClaw" and counted(s)[1].model == "claude-opus-4-5"
    assert s.messages[2].tool_name == "exec" and s.started == "2026-02-01T16:00:00.000Z"
    s = one(CLAW / "openclaw/sessions/franken-skips_non_message_types.jsonl", "openclaw")
    assert [m.text for m in s.messages] == ["Only message"]
    path = CLAW / "openclaw/sessions/franken-empty_and_invalid_lines.jsonl"
    s = one(path, "openclaw")
    assert [m.text for m in s.messages] == ["Valid"]
    assert [line for line, _ in base.get("openclaw").parse(path).problems] == [2]


def test_clawdbot_bare_role_lines_are_not_claimed() -> None:
    # franken's Clawdbot connector reads bare {role, content, timestamp} lines under
    # ~/.clawdbot/sessions; that is not pi's/OpenClaw's session format (no entry types), and
    # cw claims no such format: neither importer takes it, even forced.
    path = PEERS / "openclaw/clawdbot/.clawdbot/sessions/session.jsonl"
    detected = base.detect(path)
    assert detected is None or detected.name not in ("openclaw", "pi")
    head = base.read_head(path)
    assert not base.get("openclaw").accepts(path, head) and not base.get("pi").accepts(path, head)


# ---------------------------------------------------------------- Goose


def test_goose_transcript(tmp_path: Path) -> None:
    db = build(tmp_path, "goose/agentsview-transcript.sql", "sessions.db")
    s = one(db, "goose")
    assert (s.session_id, s.title, s.cwd) == ("child", "Auth review", "/work/acme-app")
    assert s.lineage == ("parent",) and s.parent_session == "parent"
    assert [m.text for m in s.messages if m.real_user] == ["Inspect the authentication flow."]
    assert [m.text for m in s.messages if m.kind == "thinking"] == [
        "I should inspect auth.go first."
    ]
    answer = next(m for m in s.messages if m.role == "assistant" and m.kind == "text")
    assert (answer.text, answer.model) == ("I will inspect the file.", "claude-sonnet-4-6")
    call = next(m for m in s.messages if m.kind == "tool-call")
    assert (call.message_id, call.tool_name, call.tool_input) == (
        "call-read",
        "Read",
        '{"file_path": "auth.go"}',
    )
    # toolResult.value is an MCP CallToolResult ({"content": [...]})
    result = next(m for m in s.messages if m.kind == "tool-result")
    assert (result.tool_call_id, result.text, result.tool_name) == (
        "call-read",
        "package auth",
        "Read",
    )
    texts = [(m.role, m.text) for m in counted(s)]
    assert ("system", "Approve the proposed edit.") in texts  # actionRequired: a host notice
    assert ("system", "Finished review.") in texts  # systemNotification
    assert ("assistant", "[image]") in texts
    # userVisible:false: text only the model saw; the peer hides it, cw keeps it as a system
    # message (never the assistant's answer)
    assert ("system", "internal context") in texts
    assert all("do-not-display" not in m.text and "ignored" not in m.text for m in s.messages)
    assert s.started == "2023-11-14T22:13:00.000Z"
    assert answer.timestamp == "2023-11-14T22:13:21.000Z"


def test_goose_old_schema_and_unknown_status(tmp_path: Path) -> None:
    db = build(tmp_path, "goose/agentsview-optional_columns.sql", "sessions.db")
    s = one(db, "goose")
    assert s.session_id == "bare" and s.lineage == ()
    assert [(m.role, m.text) for m in s.messages] == [("user", "Old schema prompt.")]
    assert session_title(s) == "Old schema prompt."
    s = one(build(tmp_path, "goose/agentsview-unknown_status.sql", "sessions.db"), "goose")
    # a tool response that is not yet a result: one real user message, and the response kept
    assert [m.real_user for m in s.messages] == [True, False]
    result = s.messages[1]
    assert result.kind == "tool-result" and result.tool_call_id == "call-1" and result.text


# ---------------------------------------------------------------- OpenCode / Kilo


def test_opencode_db_standard_session(tmp_path: Path) -> None:
    s = one(build(tmp_path, "opencode/agentsview-standard_session.sql", "opencode.db"), "opencode")
    assert (s.session_id, s.title, s.cwd, s.project) == (
        "ses_abc",
        "Test Session",
        "/home/user/code/myapp",
        "myapp",
    )
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "Hello, help me with Go"),
        ("assistant", "Sure, I can help with Go."),
    ]
    assert s.started == "2023-11-14T22:13:20.000Z"


def test_opencode_db_tool_parts_and_titles(tmp_path: Path) -> None:
    s = one(build(tmp_path, "opencode/agentsview-tool_parts.sql", "opencode.db"), "opencode")
    assert [m.kind for m in s.messages] == ["text", "thinking", "text", "tool-call"]
    call = s.messages[3]
    assert (call.message_id, call.tool_name, call.tool_input) == (
        "call_1",
        "read",
        '{"file_path": "main.go"}',
    )  # no status yet: a call without a result (the source has none)
    sessions = parse(
        build(tmp_path, "opencode/agentsview-title_fallback.sql", "opencode.db"), "opencode"
    )
    titles = {s.session_id: (s.title, session_title(s)) for s in sessions}
    assert titles == {
        "ses_empty": (None, "Help me debug this crash"),
        "ses_default": (None, "Refactor the auth module"),  # the placeholder title is not one
    }


def test_opencode_db_franken(tmp_path: Path) -> None:
    def db(name: str) -> Path:
        return build(tmp_path, f"opencode/franken-{name}.sql", "opencode.db")

    s = one(db("sqlite_simple_session"), "opencode")
    assert (s.session_id, s.title, s.cwd) == ("sess-1", "Test Session", "/home/user/project")
    assert [(m.role, m.text, m.model) for m in s.messages] == [
        ("user", "Hello world", None),
        ("assistant", "Hi there!", "claude-3"),
    ]
    s = one(db("sqlite_with_tool_parts"), "opencode")
    # a tool part with an output and no status: the output is kept as the result
    assert [m.text for m in s.messages if m.kind == "tool-result"] == ["file.rs: 42 lines"]
    assert "Let me check that." in s.messages[0].text
    s = one(db("sqlite_integer_timestamps"), "opencode")
    assert s.started == "2023-11-14T22:13:20.000Z"  # epoch seconds
    assert s.messages[0].text == "Integer timestamps!"


def tree(case: str) -> Path:
    [path] = (PEERS / case).glob("**/storage/session/*/*.json")
    return path


def test_opencode_tree_without_project_id() -> None:
    s = one(tree("opencode/agentsview-storage_session"), "opencode")
    assert (s.session_id, s.title, s.project) == ("ses_storage", "Storage Session", "myapp")
    assert [(m.role, m.kind) for m in s.messages] == [
        ("user", "text"),
        ("assistant", "text"),
        ("assistant", "tool-call"),
    ]
    answer = s.messages[1]
    assert (answer.text, answer.model) == ("Here is the file.", "gpt-5.2-codex")
    assert answer.usage is not None and answer.usage.output == 7
    assert s.messages[2].message_id == "call_storage"


@pytest.mark.parametrize(
    "case", ["agentsview-part_order_start", "agentsview-part_order_start_over_created"]
)
def test_opencode_tree_parts_in_time_order(case: str) -> None:
    s = one(tree(f"opencode/{case}"), "opencode")
    assert [m.text for m in s.messages] == ["first\n\nsecond"]


def test_opencode_tree_step_finish_tokens() -> None:
    s = one(tree("opencode/agentsview-step_finish_tokens"), "opencode")
    [answer] = s.messages
    assert answer.model == "gpt-5.2-codex" and answer.usage is not None
    assert (answer.usage.input, answer.usage.output, answer.usage.cache_read) == (11, 7, 3)


def test_opencode_tree_franken() -> None:
    s = one(tree("opencode/franken-simple_conversation"), "opencode")
    assert (s.title, s.cwd) == ("Test Session", "/home/user/project")
    assert [(m.role, m.text) for m in s.messages] == [("user", "Hello, OpenCode!")]
    assert s.started == "2024-11-30T20:53:20.000Z"  # epoch seconds
    s = one(tree("opencode/franken-sorts_messages_by_timestamp"), "opencode")
    assert [m.text for m in s.messages] == ["Earlier", "Later"]  # time order, not id order


def test_opencode_tree_companions() -> None:
    importer = base.get("opencode")
    storage = tree("opencode/agentsview-storage_session").parent.parent.parent
    for part in (storage / "message").glob("**/*.json"):
        assert importer.is_companion(part)  # type: ignore[attr-defined]
    for part in (storage / "part").glob("**/*.json"):
        assert importer.is_companion(part)  # type: ignore[attr-defined]
    assert not importer.is_companion(tree("opencode/agentsview-storage_session"))  # type: ignore[attr-defined]


def test_kilo_tree() -> None:
    s = one(tree("kilo/agentsview-relabel"), "kilo")
    assert (s.session_id, s.agent, s.project) == ("ses_kilo", "kilo", "kiloapp")
    assert s.lineage == ("ses_parent",)
    assert [m.text for m in s.messages] == ["Hello from Kilo"]


# ---------------------------------------------------------------- regressions (issue 31)


def test_opencode_db_messages_in_time_order(tmp_path: Path) -> None:
    """Ids are not always in time order: a message whose id sorts first but was created last
    comes last, with its id kept."""
    db = build(tmp_path, "opencode/agentsview-standard_session.sql", "opencode.db")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute(
            "INSERT INTO message VALUES ('msg_0', 'ses_abc', 1700000020000, 1700000020000, "
            '\'{"role":"user"}\')'
        )
        conn.execute(
            "INSERT INTO part VALUES ('prt_0', 'msg_0', 'ses_abc', 1700000020000, "
            '1700000020000, \'{"type":"text","text":"later"}\')'
        )
    conn.close()
    s = one(db, "opencode")
    assert [m.message_id for m in s.messages] == ["msg_1", "msg_2", "msg_0"]


def test_openclaw_tool_result_blocks_in_user_messages(tmp_path: Path) -> None:
    folder = tmp_path / ".openclaw/agents/main/sessions"
    folder.mkdir(parents=True)
    path = folder / "s.jsonl"
    lines = [
        '{"type":"session","version":3,"id":"tr","timestamp":"2026-02-25T10:00:00Z","cwd":"/tmp"}',
        '{"type":"message","id":"m1","timestamp":"2026-02-25T10:00:01Z","message":{"role":'
        '"assistant","content":[{"type":"tool_use","id":"tu1","name":"read","input":{"p":1}}]}}',
        '{"type":"message","id":"m2","timestamp":"2026-02-25T10:00:02Z","message":{"role":"user",'
        '"content":[{"type":"tool_result","tool_use_id":"tu1","content":[{"type":"text",'
        '"text":"out"}],"is_error":true}]}}',
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    s = one(path, "openclaw")
    [result] = [m for m in s.messages if m.kind == "tool-result"]
    assert (result.message_id, result.tool_call_id, result.tool_name, result.text) == (
        "m2#result1",
        "tu1",
        "read",
        "out",
    )
    assert result.is_error and not any(m.real_user for m in s.messages)
    # pi's own files keep pi's rules: an Anthropic block is not one of pi's
    pi = base.get("pi").parse(path).sessions[0]
    assert [m.kind for m in pi.messages] == []
    assert base.get("openclaw").is_companion(folder / "sessions.json")  # type: ignore[attr-defined]
    assert not base.get("openclaw").is_companion(path)  # type: ignore[attr-defined]


def test_sqlite_side_files_are_companions(tmp_path: Path) -> None:
    for fmt, db in (("goose", "sessions.db"), ("crush", "crush.db"), ("opencode", "opencode.db")):
        importer = base.get(fmt)
        for suffix in ("-wal", "-shm"):
            assert importer.is_companion(tmp_path / f"{db}{suffix}")  # type: ignore[attr-defined]
        assert not importer.is_companion(tmp_path / db)  # type: ignore[attr-defined]

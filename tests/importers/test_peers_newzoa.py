"""Peer-written Zed, OpenHands and Amp files (tests/fixtures/peers/{zed,openhands,amp}, origins in
each SOURCE.md) read by cw as the peers' own tests expect, through auto-detection and the forced
format. Where cw deliberately differs from a peer, the comment says why.

Differences that hold throughout: session ids carry no ``zed:``/``openhands:``/``amp:`` prefix
(cw keys sessions by agent and id); thinking is a message of kind ``thinking``, not counted; a
tool call and its result are messages of their own, so an assistant entry with text and a call is
two messages; a project is the last component of the working folder as written (``my-app``, not
``my_app``), else ``default``.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
import zstandard

from cwcore.importers import base
from cwcore.importers.documents import session_title
from cwcore.model import FileParse, Message, ParsedSession

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peers"
ZED = PEERS / "zed"
OPENHANDS = PEERS / "openhands"
AMP = PEERS / "amp"


def _both(path: Path, fmt: str) -> FileParse:
    """The parse through auto-detection, checked equal to the forced format's."""
    detected = base.detect(path)
    assert detected is not None and detected.name == fmt
    forced = base.get(fmt)
    assert forced.accepts(path, base.read_head(path))
    parsed = detected.parse(path)
    assert parsed == forced.parse(path)
    return parsed


def _counted(session: ParsedSession) -> list[Message]:
    return [m for m in session.messages if m.kind != "thinking"]


# --- Zed ------------------------------------------------------------------------------------


def _zed_db(tmp_path: Path, schema: str, rows: Sequence[tuple[object, ...]], cols: str) -> Path:
    db = tmp_path / "threads.db"
    conn = sqlite3.connect(db)
    with conn:
        conn.executescript((ZED / schema).read_text(encoding="utf-8"))
        marks = ", ".join("?" for _ in cols.split(","))
        conn.executemany(f"INSERT INTO threads ({cols}) VALUES ({marks})", rows)
    conn.close()
    return db


def _zstd(name: str) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress((ZED / name).read_bytes())


def test_zed_json_thread(tmp_path: Path) -> None:
    # agentsview TestParseZedSessions_JSON
    data = (ZED / "agentsview-TestParseZedSessions_JSON.data.json").read_bytes()
    row = (
        "10431c84-c47b-4e6c-b2df-f9f3b9ad025b",
        "WP Record Scaffold Generation",
        "2026-06-08T09:14:10.475149Z",
        "json",
        data,
        None,
        "/Users/alice/code/my-app",
        "2026-06-08T09:12:41.962819Z",
    )
    cols = "id, summary, updated_at, data_type, data, parent_id, folder_paths, created_at"
    db = _zed_db(tmp_path, "agentsview-createZedThreadsDB.sql", [row], cols)
    parsed = _both(db, "zed")
    assert parsed.problems == ()
    (s,) = parsed.sessions
    assert s.session_id == "10431c84-c47b-4e6c-b2df-f9f3b9ad025b"
    assert (s.cwd, s.project) == ("/Users/alice/code/my-app", "my-app")
    assert s.title == "WP Record Scaffold Generation"
    assert s.started == "2026-06-08T09:12:41.962Z"
    # peer: 2 messages (user; assistant "Done" with thinking and one tool call + result);
    # cw: user, assistant text, tool call, tool result (+ thinking, not counted)
    msgs = _counted(s)
    assert [(m.role, m.kind) for m in msgs] == [
        ("user", "text"),
        ("assistant", "text"),
        ("assistant", "tool-call"),
        ("tool", "tool-result"),
    ]
    assert msgs[0].text == "Generate code" and msgs[0].real_user
    assert msgs[1].text == "Done" and msgs[1].model == "claude-opus-4"
    assert [m.text for m in s.messages if m.kind == "thinking"] == ["Plan"]
    assert (msgs[2].tool_name, msgs[2].tool_call_id) == ("terminal", "call_1")
    assert (msgs[3].tool_call_id, msgs[3].text) == ("call_1", "ok")
    # the peer sums request_token_usage (2500 in, 500 out) into one usage for the session; its
    # keys name no user message of this thread, so cw puts the sum on the last response
    usage = [m.usage for m in s.messages if m.usage]
    assert [(u.input, u.output) for u in usage] == [(2500, 500)]


def test_zed_zstd_parent_and_child(tmp_path: Path) -> None:
    # agentsview TestParseZedSessions_ZstdAndFiltersChildren
    rows = [
        ("parent", "Parent", "2026-06-08T09:14:10Z", "zstd",
         _zstd("agentsview-ZstdAndFiltersChildren-parent.data.json"), None),
        ("child", "Child", "2026-06-08T09:14:11Z", "json",
         (ZED / "agentsview-ZstdAndFiltersChildren-child.data.json").read_bytes(), "parent"),
    ]  # fmt: skip
    cols = "id, summary, updated_at, data_type, data, parent_id"
    db = _zed_db(tmp_path, "agentsview-createZedThreadsDB.sql", rows, cols)
    parsed = _both(db, "zed")
    by_id = {s.session_id: s for s in parsed.sessions}
    assert [m.text for m in by_id["parent"].messages] == ["Hello"]
    # the peer leaves sub-agent threads out; cw keeps them as sessions of their own, with the
    # parent as lineage, and their prompts (written by the parent agent) are not real user text
    child = by_id["child"]
    assert child.parent_session == "parent" and child.lineage == ("parent",)
    assert [(m.text, m.real_user) for m in child.messages] == [("skip", False)]


def test_zed_legacy_five_column_schema(tmp_path: Path) -> None:
    # agentsview TestParseZedSessions_LegacyFiveColumnSchema
    data = (ZED / "agentsview-LegacyFiveColumnSchema.data.json").read_bytes()
    row = ("legacy", "Legacy thread", "2026-06-08T09:14:10Z", "json", data)
    cols = "id, summary, updated_at, data_type, data"
    db = _zed_db(tmp_path, "agentsview-zed-legacy-threads.sql", [row], cols)
    (s,) = _both(db, "zed").sessions
    assert (s.session_id, s.title, s.parent_session, s.cwd) == (
        "legacy",
        "Legacy thread",
        None,
        None,
    )
    assert s.project == "default"  # peer: "unknown"
    assert s.started == "2026-06-08T09:14:10.000Z"
    assert [m.text for m in s.messages] == ["hello"]


def test_zed_unknown_data_type_is_a_problem(tmp_path: Path) -> None:
    # agentsview TestParseZedSessions_SkipsUnsupportedDataType: the peer yields nothing; cw
    # names the row in a problem (the thread yields a session without messages, which the
    # pipeline reports instead of listing)
    cols = "id, summary, updated_at, data_type, data"
    row = ("bad", "", "2026-06-08T09:14:10Z", "brotli", b"x")
    db = _zed_db(tmp_path, "agentsview-createZedThreadsDB.sql", [row], cols)
    parsed = base.get("zed").parse(db)
    assert [s.messages for s in parsed.sessions] == [()]
    assert parsed.problems == ((1, "thread bad: unknown `data_type` 'brotli'"),)


def test_zed_database_is_read_not_written(tmp_path: Path) -> None:
    data = (ZED / "agentsview-LegacyFiveColumnSchema.data.json").read_bytes()
    row = ("legacy", "Legacy thread", "2026-06-08T09:14:10Z", "json", data)
    db = _zed_db(tmp_path, "agentsview-zed-legacy-threads.sql", [row], "id, summary, "
                 "updated_at, data_type, data")  # fmt: skip
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    base.get("zed").parse(db)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["threads.db"]


# --- OpenHands ------------------------------------------------------------------------------

OH_SESSION = OPENHANDS / "agentsview-TestParseOpenHandsSession" / "086c7ecf6cb746b69fbcb900358d1247"


def test_openhands_session_folder() -> None:
    # agentsview TestParseOpenHandsSession
    parsed = _both(OH_SESSION / "base_state.json", "openhands")
    assert parsed.problems == ()
    (s,) = parsed.sessions
    assert s.session_id == "086c7ecf-6cb7-46b6-9fbc-b900358d1247"
    assert s.cwd == "/tmp/agentsview/demo-repo" and s.project == "demo-repo"  # peer: demo_repo
    assert session_title(s) == "Help me debug the server"
    # peer: 4 messages (user, assistant+tool call, tool result, assistant); cw splits the
    # action's thought from its call
    msgs = _counted(s)
    assert [(m.role, m.kind) for m in msgs] == [
        ("user", "text"),
        ("assistant", "text"),
        ("assistant", "tool-call"),
        ("tool", "tool-result"),
        ("assistant", "text"),
    ]
    assert [m.real_user for m in msgs] == [True, False, False, False, False]
    assert msgs[0].text == "Help me debug the server"
    assert msgs[1].text == "I'll inspect the logs first."
    assert msgs[1].model == msgs[4].model == "litellm_proxy/claude-sonnet-4-6"
    assert (msgs[2].tool_name, msgs[2].tool_call_id) == ("terminal", "toolu_123")
    assert (msgs[3].tool_call_id, msgs[3].text) == ("toolu_123", "panic: boom")
    assert msgs[4].text == "The panic happens during startup."
    thinking = [m.text for m in s.messages if m.kind == "thinking"]
    assert len(thinking) == 2  # the peer's HasThinking on both assistant entries
    assert msgs[0].timestamp == "2026-04-02T15:25:40.706Z"


def test_openhands_event_files_are_companions_of_the_state_file() -> None:
    importer = base.get("openhands")
    events = sorted((OH_SESSION / "events").glob("*.json"))
    assert len(events) == 4
    for event in events:
        assert base.detect(event) is None
        assert importer.is_companion(event)  # type: ignore[attr-defined]
        # forced on one event file, the whole session is read
        assert importer.accepts(event, base.read_head(event))
        assert importer.parse(event) == importer.parse(OH_SESSION / "base_state.json")
    state = OH_SESSION / "base_state.json"
    assert not importer.is_companion(state)  # type: ignore[attr-defined]
    assert set(events) <= set(importer.companions(state))  # type: ignore[attr-defined]


# --- Amp ------------------------------------------------------------------------------------


def _amp(name: str) -> ParsedSession:
    parsed = _both(AMP / name, "amp")
    assert parsed.problems == ()
    (s,) = parsed.sessions
    return s


def test_amp_basic() -> None:
    # agentsview TestAmpProviderParsesBasic
    s = _amp("T-019ca26f-aaaa-bbbb-cccc-dddddddddddd.json")
    assert s.session_id == "T-019ca26f-aaaa-bbbb-cccc-dddddddddddd"
    assert s.project == "myproject" and s.title == "Migrate database schema"
    assert s.started == "2024-01-01T00:00:00.000Z"
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "Migrate the DB schema."),
        ("assistant", "Sure, I will help."),
    ]
    assert [m.real_user for m in s.messages] == [True, False]


def test_amp_tool_use_and_thinking() -> None:
    # agentsview TestAmpProviderParsesToolUseAndThinking: peer 3 messages (user, assistant with
    # thinking and a Read call, the result); cw: user, text, call, result (+ thinking)
    s = _amp("T-tooluse.json")
    msgs = _counted(s)
    assert [(m.role, m.kind) for m in msgs] == [
        ("user", "text"),
        ("assistant", "text"),
        ("assistant", "tool-call"),
        ("tool", "tool-result"),
    ]
    assert sum(m.real_user for m in msgs) == 1
    assert [m.text for m in s.messages if m.kind == "thinking"] == ["Let me plan this."]
    assert (msgs[2].tool_name, msgs[2].tool_call_id) == ("Read", "tu1")
    assert (msgs[3].tool_call_id, msgs[3].text, msgs[3].tool_name) == (
        "tu1",
        "package main",
        "Read",
    )
    assert s.project == "myrepo"


@pytest.mark.parametrize(
    ("name", "call", "output"),
    [
        ("T-amp-tool-result-schema.json", "librarian", "Here is a complete breakdown"),
        ("T-amp-tool-result-dict.json", "Bash", "cmd output"),
    ],
)
def test_amp_tool_result_run_shape(name: str, call: str, output: str) -> None:
    # agentsview TestAmpProviderParsesAmpToolResultSchema / ...ToolResultDict
    s = _amp(name)
    results = [m for m in s.messages if m.kind == "tool-result"]
    assert [(m.tool_call_id, m.text, m.tool_name) for m in results] == [("toolu1", output, call)]


def test_amp_title_from_first_prompt() -> None:
    # agentsview TestAmpProviderParsesNoTitle
    s = _amp("T-notitle.json")
    assert s.title is None
    assert session_title(s) == "Fix the bug in main.go please."


@pytest.mark.parametrize(
    ("name", "model", "usage"),
    [
        # Anthropic-family buckets as they are
        ("T-usage-anthropic.json", "claude-sonnet-4-20250514", (7, 87, 15863, 180)),
        # OpenAI-family threads file the uncached prompt under cache creation: it is input
        ("T-usage-openai.json", "gpt-5.6-sol", (18621, 15, 0, 0)),
    ],
)
def test_amp_usage(name: str, model: str, usage: tuple[int, int, int, int]) -> None:
    # agentsview TestAmpProviderParsesAnthropicFamilyUsage / ...OpenAIFamilyUsage
    s = _amp(name)
    answer = s.messages[-1]
    assert answer.text == "hello" and answer.model == model
    assert answer.usage is not None
    got = (
        answer.usage.input,
        answer.usage.output,
        answer.usage.cache_read,
        answer.usage.cache_write,
    )
    assert got == usage


@pytest.mark.parametrize(
    ("name", "texts", "title"),
    [
        ("thread.json", ["Hello Amp!", "Hello! How can I help?"], "Test Thread"),
        ("thread-nested.json", ["Nested message"], None),
    ],
)
def test_amp_franken_generic_threads_when_forced(
    name: str, texts: list[str], title: str | None
) -> None:
    # franken_agent_detection scan_parses_simple_conversation / scan_handles_thread_nested_messages.
    # These are a generic {messages: [{role, content}]} shape without Amp's `v` and `T-` id: cw
    # does not auto-detect them (any JSON file with a messages list would be taken for Amp),
    # but reads them with --format amp.
    path = AMP / "franken" / name
    assert base.detect(path) is None
    importer = base.get("amp")
    assert importer.accepts(path, base.read_head(path))
    (s,) = importer.parse(path).sessions
    assert [m.text for m in s.messages] == texts
    assert s.title == title
    if name == "thread.json":
        assert (s.cwd, s.project) == ("/home/user/project", "project")
        assert [m.role for m in s.messages] == ["user", "assistant"]

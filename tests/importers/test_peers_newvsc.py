"""Peer-written files of the Cline, Roo Code and VS Code Copilot Chat formats (see
``tests/fixtures/peers/<format>/SOURCE.md``): each is detected, parses the same when its format is
forced, and gives what the peer's own test expects. Where cw deliberately differs, a comment
says so: cw counts each tool call and each tool result as a message of its own (the peers fold
them into the assistant message), keeps thinking as a message of kind ``thinking`` that is not
counted, and keeps a session's own order."""

from __future__ import annotations

from pathlib import Path

import pytest

from cwcore.importers import base
from cwcore.importers.documents import session_title
from cwcore.model import Message, ParsedSession

PEERS = Path(__file__).resolve().parent.parent / "fixtures" / "peers"
VSC = PEERS / "vscode-copilot" / "chatSessions"


def _parse(path: Path, fmt: str) -> ParsedSession:
    detected = base.detect(path)
    assert detected is not None and detected.name == fmt, f"{path} detected as {detected}"
    importer = base.get(fmt)
    assert importer.accepts(path, base.read_head(path))
    parsed = importer.parse(path)
    assert parsed.problems == ()
    assert parsed.sessions == detected.parse(path).sessions
    (session,) = parsed.sessions
    return session


def _counted(session: ParsedSession) -> list[Message]:
    return [m for m in session.messages if m.kind != "thinking"]


def _first_prompt(session: ParsedSession) -> str:
    return next(m.text for m in session.messages if m.real_user)


# -- VS Code Copilot Chat: agentsview internal/parser/vscode_copilot_test.go -----------------------

# file -> (session id, messages cw counts, first prompt (the peer's FirstMessage))
# agentsview counts one assistant message per request (tool calls folded into it); cw counts the
# text runs, each tool call and each recorded result (marked in the comments).
VSCODE: dict[str, tuple[str, int, str | None]] = {
    "agentsview-single_turn.json": ("test-123", 2, "Hello world"),
    # peer: 2 (user, assistant with tool use); cw: user, text, call, text (no output recorded)
    "agentsview-with_tool_invocations.json": ("tools-456", 4, "Read the file"),
    "agentsview-multiple_requests.json": ("multi-789", 4, "First question"),
    # peer: 1 message, title from customTitle; cw: the same
    "agentsview-no_user_text.json": ("notitle-000", 1, None),
    "agentsview-jsonl_simple_session_with_mutations.jsonl": ("jsonl-001", 2, "Hello JSONL"),
    # peer: 2; cw: user, call, text
    "agentsview-jsonl_session_with_tool_calls.jsonl": ("jsonl-tools", 3, "Read file"),
    "agentsview-jsonl_multiple_requests_via_push.jsonl": ("jsonl-multi", 4, "First"),
    "agentsview-jsonl_set_mutation_on_response.jsonl": ("jsonl-set", 2, "Q"),
    # peer: 2 (user, assistant with 3 tool calls); cw: user, 3 text runs, 3 calls, 3 results
    "agentsview-vscode_132_response_items.jsonl": ("vscode-132", 10, None),
    # peer: the assistant has 1 tool call; cw: user, call, its result, text
    "agentsview-mixed_text_and_tools.json": ("mixed-001", 4, "Read the file"),
    # peer: the assistant has 1 tool call with the command; cw: user, call (no output recorded)
    "agentsview-terminal_tool_data.json": ("term-001", 2, "Run tests"),
    "agentsview-token_usage.json": ("usage-1", 6, "First"),
    "agentsview-token_usage_model_fallback.json": ("usage-2", 2, "Hi"),
    "agentsview-no_token_usage.json": ("no-usage", 2, "Hi"),
}


@pytest.mark.parametrize("name", sorted(VSCODE))
def test_vscode_copilot_peer_files(name: str) -> None:
    session = _parse(VSC / name, "vscode-copilot")
    sid, count, prompt = VSCODE[name]
    assert session.session_id == sid and session.agent == "vscode-copilot"
    assert len(_counted(session)) == count
    if prompt is not None:
        assert _first_prompt(session) == prompt
    calls = {m.tool_call_id for m in session.messages if m.kind == "tool-call"}
    for result in (m for m in session.messages if m.kind == "tool-result"):
        assert result.tool_call_id in calls and result.text.strip()
    assert all(m.timestamp for m in session.messages)


@pytest.mark.parametrize(
    "name", ["agentsview-empty_requests.json", "agentsview-jsonl_empty_session_no_requests.jsonl"]
)
def test_vscode_copilot_empty_sessions_have_no_messages(name: str) -> None:
    # the peer returns no session; cw reads one without messages (the pipeline reports it)
    assert _parse(VSC / name, "vscode-copilot").messages == ()


def test_vscode_copilot_titles_and_text() -> None:
    assert session_title(_parse(VSC / "agentsview-no_user_text.json", "vscode-copilot")) == (
        "Fallback Title"
    )
    session = _parse(VSC / "agentsview-vscode_132_response_items.jsonl", "vscode-copilot")
    texts = [m.text for m in session.messages if m.kind == "text" and m.role == "assistant"]
    assert "I'll read `/workspace/test.txt` first." in texts
    assert "`/workspace/test.txt` contains the command." in texts
    tools = [m.tool_name for m in session.messages if m.kind == "tool-call"]
    assert tools == ["copilot_readFile", "copilot_readFile", "run_in_terminal"]
    terminal = next(m for m in session.messages if m.tool_call_id == "call-terminal")
    assert terminal.tool_input == '{"command": "uname -a", "message": "Running uname"}'
    session = _parse(VSC / "agentsview-terminal_tool_data.json", "vscode-copilot")
    assert "npm test" in next(m.text for m in session.messages if m.kind == "tool-call")


def test_vscode_copilot_usage() -> None:
    session = _parse(VSC / "agentsview-token_usage.json", "vscode-copilot")
    usages = [(m.model, m.usage) for m in session.messages if m.usage]
    assert [(model, u.input, u.output) for model, u in usages if u] == [
        ("claude-opus-4-8", 35875, 221),
        ("claude-opus-4-8", 41055, 69),
    ]
    # the peer normalizes the model id for its price list; cw keeps the id Copilot wrote
    session = _parse(VSC / "agentsview-token_usage_model_fallback.json", "vscode-copilot")
    assert [m.model for m in session.messages if m.usage] == ["copilot/claude-sonnet-4.6"]
    session = _parse(VSC / "agentsview-no_token_usage.json", "vscode-copilot")
    assert not any(m.usage for m in session.messages)


# -- Cline: franken_agent_detection src/connectors/cline.rs ----------------------------------------

CLINE = PEERS / "cline"


def _task(test: str, task: str, name: str) -> Path:
    return CLINE / f"franken-{test}" / "claude-dev" / task / name


def test_cline_ui_messages_simple() -> None:
    session = _parse(
        _task("scan_parses_ui_messages_simple", "task-001", "ui_messages.json"), "cline"
    )
    assert session.session_id == "task-001"
    assert [(m.role, m.text) for m in session.messages] == [
        ("user", "Hello Cline!"),
        ("assistant", "Hello! How can I help?"),
    ]
    assert session_title(session) == "Hello Cline!"


def test_cline_api_history_is_the_entry_file() -> None:
    # the peer prefers ui_messages.json when both exist; cw reads the API history (what the model
    # saw, with the tools' output) and takes ui_messages.json as its companion
    folder = _task("scan_prefers_ui_messages_over_api_history", "task-prefer", "")
    assert base.detect(folder / "ui_messages.json") is None
    assert base.get("cline").is_companion(folder / "ui_messages.json")  # type: ignore[attr-defined]
    session = _parse(folder / "api_conversation_history.json", "cline")
    assert [m.text for m in session.messages] == ["From API"]
    path = _task("scan_falls_back_to_api_history", "task-api", "api_conversation_history.json")
    assert [m.text for m in _parse(path, "cline").messages] == ["From API history"]


def test_cline_ts_and_content() -> None:
    # the peer reads a `ts` that small as seconds; so does cw (Cline writes milliseconds)
    session = _parse(_task("scan_parses_ts", "task-ts-field", "ui_messages.json"), "cline")
    assert session.messages[0].timestamp == "2024-11-30T20:53:22.000Z"
    session = _parse(_task("scan_skips_empty_content", "task-empty", "ui_messages.json"), "cline")
    assert [m.text for m in session.messages] == ["Valid"]
    # the peer sorts by its `timestamp` key; cw keeps the array's order (the conversation's) and
    # reads no `timestamp` key (Cline writes `ts`)
    path = _task("scan_sorts_messages_by_timestamp", "task-sort", "ui_messages.json")
    session = _parse(path, "cline")
    assert [(m.role, m.text) for m in session.messages] == [
        ("assistant", "Later"),
        ("user", "Earlier"),
    ]


# -- Roo Code: agentsview internal/parser/roocode_test.go -----------------------------------------

ROO = PEERS / "roo-code"


def _roo(test: str, task: str) -> ParsedSession:
    return _parse(ROO / f"agentsview-{test}" / "tasks" / task / "ui_messages.json", "roo-code")


def test_roo_code_session() -> None:
    session = _roo("TestParseRooCodeSession", "test-task-123")
    assert session.session_id == "test-task-123" and session.agent == "roo-code"
    assert session.cwd == "/Users/test/project" and session.project == "project"
    assert session.started == "2023-07-08T17:20:51.000Z"
    assert [(m.role, m.kind) for m in session.messages] == [
        ("user", "text"),
        ("assistant", "text"),
        ("assistant", "tool-call"),
        ("assistant", "text"),
    ]
    assert sum(m.real_user for m in session.messages) == 1
    assert session.messages[2].tool_name == "readFile"
    assert session_title(session) == "Test task description"


def test_roo_code_partial_and_reasoning() -> None:
    session = _roo("TestParseRooCodeSessionWithPartialMessages", "test-task-456")
    assert [m.text for m in session.messages] == ["Task with partial messages", "Complete message."]
    # the peer counts the thinking message (3); cw keeps it as kind thinking, not counted (2)
    session = _roo("TestParseRooCodeSessionWithReasoning", "test-task-789")
    assert [(m.role, m.kind) for m in session.messages] == [
        ("user", "text"),
        ("assistant", "thinking"),
        ("assistant", "text"),
    ]
    assert "I need to think about this..." in session.messages[1].text
    assert len(_counted(session)) == 2

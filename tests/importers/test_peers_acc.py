"""Peer-written session files for claude-code, codex and copilot (tests/fixtures/peers/).

Each file is parsed through auto-detection and through the forced format, and checked against
what the peer's own test expects (SOURCE.md names the test). Where cw deliberately differs
from the peer, the case says so. cw's definitions that differ everywhere: a tool call is a
message of its own (agentsview counts an assistant message with its tool calls as one), thinking
is a message of kind ``thinking`` that is never counted, host-injected user text is kept as a
user message that is not real (agentsview drops some of it or marks it system), and a Claude
``summary`` line is a ``system`` summary message and the title.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cwcore.importers import base
from cwcore.importers.documents import session_counts, session_title
from cwcore.model import ParsedSession, Usage

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peers"


def read(fmt: str, name: str) -> tuple[ParsedSession, tuple[tuple[int, str], ...]]:
    """The file's one session, parsed after auto-detection picked ``fmt``; the forced parse
    gives the same."""
    path = PEERS / fmt / name
    detected = base.detect(path)
    assert detected is not None and detected.name == fmt, f"{name} detected as {detected}"
    forced = base.get(fmt)
    assert forced.accepts(path, base.read_head(path))
    parsed = forced.parse(path)
    assert detected.parse(path) == parsed
    assert len(parsed.sessions) == 1
    return parsed.sessions[0], parsed.problems


def shape(session: ParsedSession) -> list[tuple[str, str, bool]]:
    """``(role, kind, real)`` of each counted message."""
    return [(m.role, m.kind, m.real_user) for m in session.messages if m.kind != "thinking"]


def real_texts(session: ParsedSession) -> list[str]:
    return [m.text for m in session.messages if m.real_user]


USER, ASSISTANT, HOST = (
    ("user", "text", True),
    ("assistant", "text", False),
    ("user", "text", False),
)
CALL, RESULT = ("assistant", "tool-call", False), ("tool", "tool-result", False)


def test_every_peer_file_is_tested() -> None:
    covered = {name for name in globals() if name.startswith("test_")}
    assert covered  # the cases below name their files; each folder's SOURCE.md lists them
    for fmt in ("claude-code", "codex", "copilot"):
        listed = (PEERS / fmt / "SOURCE.md").read_text(encoding="utf-8")
        for path in (PEERS / fmt).rglob("*"):
            if path.is_file() and path.name != "SOURCE.md":
                assert path.name in listed, f"{path} is not in {fmt}/SOURCE.md"


# -- Claude Code ---------------------------------------------------------------------------


def test_claude_lines_without_uuid_or_session_id() -> None:
    # agentsview TestParseClaudeSession_Basic: 4 messages (cw: the tool call is its own, so 5),
    # first message "Fix the login bug", the Read call with its input, session id = file stem.
    s, problems = read("claude-code", "agentsview-valid_session.jsonl")
    assert problems == ()
    assert s.session_id == "agentsview-valid_session"
    assert shape(s) == [USER, ASSISTANT, CALL, USER, ASSISTANT]
    assert [m.message_id for m in s.messages] == ["L1", "L2", "toolu_1", "L3", "L4"]
    call = s.messages[2]
    assert (call.tool_name, call.tool_input) == ("Read", '{"file_path": "src/auth.ts"}')
    assert session_title(s) == "Fix the login bug"
    assert s.project == "my-app" and s.started == "2024-01-01T10:00:00.000Z"
    assert s.messages[1].model == "claude-sonnet-4-20250514"
    assert s.messages[1].usage == Usage(input=100, output=50, cache_read=300, cache_write=200)


def test_claude_pending_call_and_truncated_file() -> None:
    s, _ = read("claude-code", "agentsview-tool_call_pending.jsonl")
    assert shape(s) == [USER, ASSISTANT, CALL]  # the call has no result: pending
    s, problems = read("claude-code", "agentsview-truncated.jsonl")
    assert shape(s) == [USER, ASSISTANT] and [n for n, _ in problems] == [3]
    s, problems = read("claude-code", "franken-truncated.jsonl")
    assert [m.text for m in s.messages] == ["Hello"] and [n for n, _ in problems] == [2]


def test_claude_host_text_is_kept_not_real_not_title() -> None:
    # agentsview: 8 messages, 1 user message, first message "real user message"; the
    # <local-command-result> line it drops is a host message in cw (kept, not real).
    s, _ = read("claude-code", "agentsview-system_injected.jsonl")
    assert shape(s) == [HOST] * 8 + [USER]
    assert real_texts(s) == ["real user message"]
    assert session_title(s) == "real user message"
    assert session_counts(s)["turns"] == 2  # the host preamble, then the user's turn
    # queued task notifications: one real user message, two host ones
    s, _ = read("claude-code", "agentsview-queued_system_messages.jsonl")
    assert shape(s) == [USER, HOST, HOST]
    assert session_title(s) == "Your final response is captured verbatim into ..."
    # caveat then /usage: nothing the user typed
    s, _ = read("claude-code", "agentsview-usage_probe.jsonl")
    assert shape(s) == [HOST, HOST]


def test_claude_host_only_session_has_no_host_title() -> None:
    s, _ = read("claude-code", "agentsview-usage_probe.jsonl")
    assert session_title(s) is None


def test_claude_wrappers_before_a_prompt_leave_it_the_users() -> None:
    # agentsview splits the IDE envelope into its own hidden message; cw keeps one message
    # (its key stays the line's), real, and titles the session past the wrapper.
    s, _ = read("claude-code", "agentsview-ide_envelope_prompt.jsonl")
    assert shape(s) == [USER, USER]
    assert session_title(s) == "Explain this file."
    s, _ = read("claude-code", "agentsview-system_reminder_prompt.jsonl")
    assert shape(s) == [USER, ASSISTANT] and session_title(s) == "real prompt"


def test_claude_queued_prompts_are_user_messages() -> None:
    s, _ = read("claude-code", "agentsview-queued_opener.jsonl")
    assert shape(s) == [USER, ASSISTANT] and session_title(s) == "queued opener"
    s, _ = read("claude-code", "agentsview-queued_in_dag.jsonl")
    assert [m.text for m in s.messages] == ["hi", "work", "also do X", "done"]
    assert len(real_texts(s)) == 2


def test_claude_compact_summary() -> None:
    s, _ = read("claude-code", "agentsview-compact_summary.jsonl")
    assert [(m.role, m.kind, m.real_user) for m in s.messages] == [("user", "summary", False), USER]
    assert session_title(s) == "actual prompt"


@pytest.mark.parametrize(
    ("name", "texts", "title"),
    [
        # franken counts 2 (it skips the summary line); cw keeps it as a system summary + title
        (
            "franken-session_basic.jsonl",
            ["Hello Claude", "Hello! How can I help?", "Test summary"],
            "Test summary",
        ),
        ("franken-model_author.jsonl", ["Response"], None),
        ("franken-array_content.jsonl", ["First part\n\nSecond part"], None),
        ("franken-skip_empty_content.jsonl", ["Valid message"], "Valid message"),
        ("franken-non_user_types.jsonl", ["User message"], "User message"),
        (
            "franken-title_first_user.jsonl",
            ["I can help", "Help me build a web app"],
            "Help me build a web app",
        ),
        ("franken-title_first_line.jsonl", ["First line\nSecond line\nThird line"], "First line"),
        ("franken-timestamps.jsonl", ["First", "Last"], "First"),
    ],
)
def test_claude_franken_shapes(name: str, texts: list[str], title: str | None) -> None:
    # franken's title falls back to the workspace name; cw has no title without a user prompt
    s, problems = read("claude-code", name)
    assert problems == ()
    assert [m.text for m in s.messages] == texts
    assert session_title(s) == title


def test_claude_franken_metadata_and_model() -> None:
    s, _ = read("claude-code", "franken-session_metadata.jsonl")
    assert (s.session_id, s.cwd, s.project) == ("sess-123", "/projects/myapp", "myapp")
    s, _ = read("claude-code", "franken-model_author.jsonl")
    assert s.messages[0].model == "claude-3-opus"
    s, _ = read("claude-code", "franken-timestamps.jsonl")
    assert [m.timestamp for m in s.messages] == [
        "2025-12-01T10:00:00.000Z",
        "2025-12-01T10:05:00.000Z",
    ]


# -- Codex ---------------------------------------------------------------------------------


def test_codex_messages_without_item_type() -> None:
    # agentsview TestParseCodexSession_Basic: codex:abc-123, cwd, 2 messages
    s, _ = read("codex", "agentsview-standard_session.jsonl")
    assert (s.session_id, s.cwd) == ("abc-123", "/Users/alice/code/my-api")
    assert shape(s) == [USER, ASSISTANT] and session_title(s) == "Add rate limiting"
    s, _ = read("codex", "rollout-franken-response_item_messages.jsonl")
    assert [m.text for m in s.messages] == ["Hello Codex", "Hello! How can I help?"]


def test_codex_function_calls() -> None:
    # agentsview: user + two tool-call messages (shell_command, apply_patch); no outputs
    s, _ = read("codex", "agentsview-function_calls.jsonl")
    assert s.session_id == "fc-1"
    assert shape(s) == [USER, CALL, CALL]
    assert [m.tool_name for m in s.messages[1:]] == ["shell_command", "apply_patch"]
    s, _ = read("codex", "agentsview-fc_args_1.jsonl")
    assert s.messages[1].tool_input == '{"cmd": "rg --files", "workdir": "/tmp"}'
    s, _ = read("codex", "agentsview-fc_args_2.jsonl")
    assert s.messages[1].tool_name == "apply_patch" and "*** Begin Patch" in s.messages[1].text
    s, _ = read("codex", "agentsview-fc_stdin.jsonl")
    assert s.messages[1].tool_input == '{"chars": "yes\\n", "session_id": "sess-42"}'
    s, _ = read("codex", "agentsview-blockquotes_session.jsonl")
    assert shape(s) == [USER, ASSISTANT]  # the event_msg copy of the answer is dropped
    assert s.messages[1].text.count("> blabla") == 2


def test_codex_host_context_is_not_the_user() -> None:
    s, _ = read("codex", "agentsview-recommended_plugins_context.jsonl")
    assert shape(s) == [HOST, USER]
    assert real_texts(s) == ["Review the changes"] and session_title(s) == "Review the changes"
    for name in (
        "agentsview-prompt_bundled_with_context.jsonl",
        "agentsview-prompt_sharing_context_block.jsonl",
    ):
        s, _ = read("codex", name)
        # agentsview strips the context from the text; cw keeps the text whole, real
        assert shape(s) == [USER] and session_title(s) == "Review the changes"
    s, _ = read("codex", "agentsview-prompt_after_plugins.jsonl")
    # agentsview keeps "<recommended_plugins>later user text</recommended_plugins>" as a user
    # message; to cw a message that is only a host wrapper is host text
    assert shape(s) == [USER, HOST] and session_title(s) == "Fix the parser"
    s, _ = read("codex", "agentsview-system_messages.jsonl")
    assert shape(s) == [HOST, HOST, HOST, USER] and session_title(s) == "Actual user message"


def test_codex_franken_shapes() -> None:
    s, _ = read("codex", "rollout-franken-session_meta_workspace.jsonl")
    assert s.cwd == "/home/user/project" and [m.text for m in s.messages] == ["Test"]
    s, _ = read("codex", "rollout-franken-empty_content.jsonl")
    assert [m.text for m in s.messages] == ["Has content"]
    s, _ = read("codex", "rollout-franken-unknown_event_types.jsonl")
    assert [m.text for m in s.messages] == ["Real message"]
    s, _ = read("codex", "rollout-franken-title_first_user.jsonl")
    assert session_title(s) == "This should be the title"
    s, _ = read("codex", "rollout-franken-assistant_only.jsonl")
    # franken titles it with the assistant's text; cw titles sessions from user prompts only
    assert [m.text for m in s.messages] == ["Assistant speaks first"] and session_title(s) is None
    s, _ = read("codex", "rollout-franken-array_content.jsonl")
    assert "Part one." in s.messages[0].text and "Part two." in s.messages[0].text
    s, problems = read("codex", "rollout-franken-missing_payload.jsonl")
    assert [m.text for m in s.messages] == ["Has payload"] and [n for n, _ in problems] == [1, 3]
    s, problems = read("codex", "rollout-franken-type_mismatch.jsonl")
    assert [m.text for m in s.messages] == ["Correct"] and len(problems) == 2
    s, problems = read("codex", "rollout-franken-truncated.jsonl")
    assert [m.text for m in s.messages] == ["Valid"] and [n for n, _ in problems] == [2]
    s, _ = read("codex", "rollout-franken-timestamps.jsonl")
    assert len(s.messages) == 5
    assert [m.timestamp is not None for m in s.messages] == [True, True, True, False, False]


def test_codex_flat_token_counts() -> None:
    s, _ = read("codex", "rollout-franken-token_count_flat.jsonl")
    assert [(m.text, m.usage) for m in s.messages[1:]] == [
        ("First answer", Usage(input=10, output=20)),
        ("Second answer", Usage(input=30, output=40)),
    ]


def test_codex_event_messages_alone_are_not_messages() -> None:
    # franken reads event_msg user_message as a message; cw drops every event_msg copy (a
    # rollout writes each message twice), so this file has no conversation: 0 messages
    s, _ = read("codex", "rollout-franken-event_msg_user_message.jsonl")
    assert s.messages == ()


# -- Copilot CLI ---------------------------------------------------------------------------


def test_copilot_events_without_id() -> None:
    s, problems = read("copilot", "agentsview-basic.jsonl")
    assert problems == ()
    assert (s.session_id, s.project) == ("abc-123", "myproject")
    assert shape(s) == [USER, ASSISTANT] and session_title(s) == "Fix the login bug"
    assert [m.message_id for m in s.messages] == ["L2", "L3"]


def test_copilot_tool_calls_and_results() -> None:
    s, _ = read("copilot", "agentsview-tool_calls.jsonl")
    assert shape(s) == [USER, CALL, RESULT, ASSISTANT]
    call, result = s.messages[1], s.messages[2]
    assert (call.tool_name, call.tool_call_id, call.tool_input) == (
        "view",
        "tc-1",
        '{"path": "config.json"}',
    )
    assert result.tool_call_id == "tc-1" and len(result.text) == 15
    assert result.timestamp == "2025-01-15T10:00:03.000Z"
    s, _ = read("copilot", "agentsview-tool_result_object.jsonl")
    assert s.messages[2].text == '{"files":["a.go","b.go"]}'  # 25 characters, as the peer counts
    s, _ = read("copilot", "agentsview-object_arguments.jsonl")
    assert s.messages[1].tool_input == '{"pattern": "*.go"}'
    s, _ = read("copilot", "agentsview-user_message_count.jsonl")
    assert len(real_texts(s)) == 2 and session_counts(s)["messages"] == 6


def test_copilot_reasoning_is_thinking() -> None:
    s, _ = read("copilot", "agentsview-reasoning.jsonl")
    kinds = [m.kind for m in s.messages]
    assert kinds == ["text", "thinking", "text"]  # thinking before the answer, not counted
    assert s.messages[1].text == "Let me think about this carefully..."


def test_copilot_folder_sessions_and_titles() -> None:
    s, _ = read("copilot", "abc-456/events.jsonl")
    assert s.session_id == "abc-456" and session_title(s) == "hello"
    s, _ = read("copilot", "def-789/events.jsonl")
    assert s.session_id == "def-789"  # no session.start: the folder names it
    s, _ = read("copilot", "ws-name/events.jsonl")
    assert session_title(s) == "Fix Login Authentication Bug"  # workspace.yaml name


@pytest.mark.parametrize(
    "name",
    [
        "agentsview-skill_source_and_content.jsonl",
        "agentsview-skill_source_only.jsonl",
        "agentsview-skill_content_only.jsonl",
    ],
)
def test_copilot_skill_context_is_host(name: str) -> None:
    # agentsview drops the skill message; cw keeps it as host text
    s, _ = read("copilot", name)
    assert shape(s) == [HOST, USER, ASSISTANT]
    assert real_texts(s) == ["Fix the parser"] and session_title(s) == "Fix the parser"


def test_copilot_models() -> None:
    s, _ = read("copilot", "agentsview-model_change.jsonl")
    # agentsview normalizes claude-sonnet-4.6 to claude-sonnet-4-6; cw keeps the name as written
    assert [m.model for m in s.messages] == [None, "claude-sonnet-4.6", None, "claude-haiku-4.5"]


def test_copilot_shutdown_usage() -> None:
    s, _ = read("copilot", "agentsview-shutdown_usage.jsonl")
    answer = s.messages[1]
    assert answer.model == "claude-sonnet-4.6"
    # fresh input = 931647 - 873267 - 51438, as the peer computes it
    assert answer.usage == Usage(input=6942, output=7150, cache_read=873267, cache_write=51438)
    s, _ = read("copilot", "agentsview-multi_shutdown.jsonl")
    assert [m.usage for m in s.messages if m.role == "assistant"] == [
        Usage(input=30, output=50, cache_read=60, cache_write=10),
        Usage(input=30, output=80, cache_read=250, cache_write=20),
    ]
    s, _ = read("copilot", "agentsview-shutdown_multi_model.jsonl")
    # two models' totals, one assistant message: the session's sums stay whole (the second
    # model's name is not kept: a message has one model)
    assert s.messages[1].usage == Usage(input=90, output=130, cache_read=180, cache_write=30)


def test_copilot_empty_session() -> None:
    s, _ = read("copilot", "agentsview-empty_session.jsonl")
    assert s.messages == () and s.session_id == "empty"


def test_copilot_workspace_yaml_is_a_companion(tmp_path: Path) -> None:
    folder = tmp_path / "session"
    shutil.copytree(PEERS / "copilot" / "ws-name", folder)
    copilot = base.get("copilot")
    assert copilot.is_companion(folder / "workspace.yaml")  # type: ignore[attr-defined]
    assert not copilot.is_companion(tmp_path / "workspace.yaml")  # type: ignore[attr-defined]
    listed = copilot.companions(folder / "events.jsonl")  # type: ignore[attr-defined]
    assert listed == [folder / "workspace.yaml"]

"""Peer-written files of the Gemini, Qwen, Aider, Cursor, Droid and Kiro formats, read by cw.

Each file in ``tests/fixtures/peers/<format>/`` comes from another project's tests (SOURCE.md
names the test); every case parses it through auto-detection (``base.detect``) and the forced
format (``accepts`` + ``parse``) and checks what that peer's own test expects: message counts,
roles, texts, tool calls and their results, titles and times. Where cw deliberately differs from
the peer (its definitions in docs/importers.md), the comment says so. The peers count a turn's
assistant text, thinking and tool calls as one message; cw counts each as its own message and
keeps thinking out of the counts, so counts below are cw's, with the peer's given beside them.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from cwcore.importers import base
from cwcore.model import FileParse, Message, ParsedSession

PEERS = Path(__file__).resolve().parents[1] / "fixtures" / "peers"


def read(fmt: str, path: Path, *, detect: bool = True) -> FileParse:
    """Parse ``path`` as ``fmt`` after checking that detection and the forced format agree."""
    importer = base.get(fmt)
    if detect:
        found = base.detect(path)
        assert found is not None and found.name == fmt, f"{path.name} detected as {found}"
    assert importer.accepts(path, base.read_head(path)), f"--format {fmt} refuses {path.name}"
    return importer.parse(path)


def one(fmt: str, path: Path, *, detect: bool = True) -> ParsedSession:
    parsed = read(fmt, path, detect=detect)
    assert len(parsed.sessions) == 1, parsed
    return parsed.sessions[0]


def counted(session: ParsedSession) -> list[Message]:
    """The messages cw counts (thinking is kept but never counted)."""
    return [m for m in session.messages if m.kind != "thinking"]


def shape(session: ParsedSession) -> list[tuple[str, str]]:
    return [(m.role, m.kind) for m in counted(session)]


def results_paired(session: ParsedSession) -> None:
    """Every tool result answers a call of the session and has text."""
    calls = {m.tool_call_id for m in session.messages if m.kind == "tool-call"}
    for m in session.messages:
        if m.kind == "tool-result":
            assert m.tool_call_id in calls and m.text.strip(), m


# --- Gemini ------------------------------------------------------------------------------------

GEMINI = PEERS / "gemini"


def test_gemini_sorted_keys_standard_session() -> None:
    # `jq -S` order: lastUpdated, messages…, projectHash, sessionId last (issue 31).
    s = one("gemini", GEMINI / "agentsview-standard_session.json")
    assert s.session_id == "sess-uuid-1"
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "Fix the login bug"),
        ("assistant", "Looking at the auth module..."),
        ("user", "That looks right"),
        ("assistant", "Applied the fix."),
    ]
    assert s.messages[0].real_user
    # The peer: input 1500 with 100 cached, output 200 + 50 thoughts.
    usage = s.messages[1].usage
    assert usage is not None
    assert (usage.input, usage.output, usage.cache_read) == (1400, 250, 100)
    assert s.started == "2024-01-01T10:00:00.000Z"


def test_gemini_system_messages() -> None:
    # The peer shows no message for info/error/warning records; cw keeps them as system
    # messages (never real user messages, never a title).
    s = one("gemini", GEMINI / "agentsview-system_messages.json")
    assert [(m.role, m.text) for m in s.messages] == [
        ("system", "Starting session"),
        ("system", "Some error"),
        ("system", "Some warning"),
    ]
    assert not any(m.real_user for m in s.messages)


def test_gemini_thinking_before_text() -> None:
    s = one("gemini", GEMINI / "agentsview-thinking_only.json")
    kinds = [(m.kind, m.message_id) for m in s.messages]
    assert kinds == [
        ("text", "u1"),
        ("thinking", "a1#thinking1"),
        ("thinking", "a1#thinking2"),
        ("text", "a1"),
    ]
    assert "Understanding request" in s.messages[1].text
    assert s.messages[3].model == "gemini-2.5-pro"
    # The peer: 2 messages (thinking inside the answer); cw: 2 counted, thinking apart.
    assert len(counted(s)) == 2


def test_gemini_tool_call_without_id_or_result() -> None:
    s = one("gemini", GEMINI / "agentsview-tool_calls.json")
    assert shape(s) == [("user", "text"), ("assistant", "text"), ("assistant", "tool-call")]
    call = counted(s)[2]
    assert call.tool_name == "read_file"
    assert json.loads(call.tool_input or "") == {"file_path": "main.go"}


def test_gemini_tool_results() -> None:
    s = one("gemini", GEMINI / "agentsview-tool_calls_with_results.json")
    calls = [m for m in s.messages if m.kind == "tool-call"]
    results = [m for m in s.messages if m.kind == "tool-result"]
    assert [c.tool_call_id for c in calls] == [
        "read_file_1772747340739_0",
        "run_command_1772747340739_1",
    ]
    assert json.loads(calls[0].tool_input or "") == {"file_path": ".planning/ONE-PAGER.md"}
    assert [r.text for r in results] == [
        "# Agentstrove -- One-Pager\n\nDraft: 2026-03-04",
        "total 42\ndrwxr-xr-x  5 user user 160 Mar  4 10:00 .",
    ]
    results_paired(s)


def test_gemini_jsonl_stream() -> None:
    s = one("gemini", GEMINI / "agentsview-jsonl_stream.jsonl")
    assert s.session_id == "sess-jsonl-1"
    texts = [(m.role, m.kind, m.text) for m in counted(s)]
    assert texts[:2] == [
        ("user", "text", "Fix the import path"),
        ("assistant", "text", "I found the issue."),
    ]
    assert any(m.kind == "thinking" for m in s.messages)
    results = [m for m in s.messages if m.kind == "tool-result"]
    assert [(r.tool_call_id, r.text) for r in results] == [("read_file_1", "package main")]
    results_paired(s)
    assert max(m.timestamp or "" for m in s.messages) == "2026-04-23T16:12:50.158Z"


def test_gemini_records_without_ids() -> None:
    # Records without `id` are messages at their lines (L<n>), not problems.
    parsed = read("gemini", GEMINI / "agentsview-context_tokens_delta.json")
    assert not parsed.problems
    s = parsed.sessions[0]
    assert [m.role for m in s.messages] == ["user", "assistant", "user", "assistant", "assistant"]
    assert [m.message_id for m in s.messages] == ["L2", "L3", "L4", "L5", "L6"]
    assert s.messages[2].text == "second question"


FRANKEN_GEMINI = {
    "scan_parses_gemini_session": [
        ("user", "Hello Gemini!"),
        ("assistant", "Hello! How can I help?"),
    ],
    "scan_normalizes_model_role_to_assistant": [("assistant", "I am the model")],
    "multi_turn_conversation_threading": [
        ("user", "First question"),
        ("assistant", "First answer"),
        ("user", "Follow up"),
        ("assistant", "More info"),
        ("user", "Third turn"),
        ("assistant", "Final answer"),
    ],
    # Empty and blank answers (a safety filter's) make no message.
    "safety_filter_blocked_content_handled": [
        ("user", "Some question"),
        ("assistant", "Safe response after filter"),
    ],
    "grounding_metadata_in_extra_preserved": [("assistant", "According to the documentation...")],
    "multipart_content_with_image_refs": [
        ("user", "What's in this image?"),
        ("assistant", "I see a diagram showing..."),
    ],
    "timestamp_edge_cases": [
        ("user", "Epoch millis start"),
        ("user", "ISO with offset"),
        ("user", "ISO with ms"),
        ("user", "No timestamp"),
        ("user", "Null ts"),
    ],
}


@pytest.mark.parametrize("case", sorted(FRANKEN_GEMINI))
def test_gemini_franken(case: str) -> None:
    # franken writes `type: "model"` for answers and leaves out ids: cw reads both.
    (path,) = (GEMINI / f"franken-{case}").rglob("*.json")
    s = one("gemini", path)
    assert [(m.role, m.text) for m in s.messages] == FRANKEN_GEMINI[case]
    if case == "scan_parses_gemini_session":
        assert s.session_id == "test-session-123"
    if case == "timestamp_edge_cases":
        stamps = [m.timestamp for m in s.messages]
        assert all(stamps[:3]) and stamps[3:] == [None, None]
        assert stamps[1] == "2025-12-01T04:30:00.000Z"
        assert s.started == "2023-11-14T22:13:20.000Z"


def _sorted_legacy(messages: int, text: str) -> bytes:
    """A legacy file as `jq -S .` writes it: keys sorted, two-space indent."""
    doc = {
        "sessionId": "sorted-1",
        "projectHash": "f" * 64,
        "startTime": "2025-01-01T00:00:00Z",
        "lastUpdated": "2025-01-01T00:10:00Z",
        "messages": [
            {
                "id": f"m{i}",
                "type": "user" if i % 2 == 0 else "gemini",
                "timestamp": "2025-01-01T00:00:00Z",
                "content": [{"text": f"{text} {i}"}],
            }
            for i in range(messages)
        ],
    }
    return json.dumps(doc, indent=2, sort_keys=True).encode()


@pytest.mark.parametrize(("messages", "text"), [(1, "hi"), (40, "hi"), (3, "x" * 200_000)])
def test_gemini_sorted_pretty_legacy_beyond_the_head(
    tmp_path: Path, messages: int, text: str
) -> None:
    # `messages` first and `sessionId` far past the 20-line head: detection and --format
    # still take it (the shape scan reads on, within the head's byte bound).
    path = tmp_path / "session-2025-01-01T00-00-sorted.json"
    path.write_bytes(_sorted_legacy(messages, text))
    assert base.read_head(path)[1].strip().startswith(b'"lastUpdated"')
    s = one("gemini", path)
    assert s.session_id == "sorted-1"
    assert len(s.messages) == messages


def test_gemini_legacy_compact_sorted(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    doc = json.loads(_sorted_legacy(2, "hello"))
    path.write_text(json.dumps(doc, sort_keys=True, separators=(",", ":")))
    assert [m.text for m in one("gemini", path).messages] == ["hello 0", "hello 1"]


def test_gemini_rejects_other_json(tmp_path: Path) -> None:
    other = tmp_path / "package.json"
    other.write_text(json.dumps({"name": "x", "messages": ["a"], "version": "1"}, indent=2))
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}, indent=2))
    for path in (other, chat):
        assert not base.get("gemini").sniff(path, base.read_head(path))
        assert not base.get("gemini").accepts(path, base.read_head(path))


# --- Qwen --------------------------------------------------------------------------------------

QWEN = PEERS / "qwen"


def test_qwen_session() -> None:
    s = one("qwen", QWEN / "agentsview-qwen-session.jsonl")
    assert s.session_id == "adc026b4-c620-43e4-8cc4-295593889d18"
    assert s.cwd == "/Users/alice/code/sample-project"
    assert shape(s) == [("user", "text"), ("assistant", "text")]
    answer = counted(s)[1]
    assert answer.text == "0.089 × 7.85788 = **0.69935132**"
    assert answer.model == "cleanunicorn/qwen3-coder-30b-a3b-instruct"
    assert answer.usage is not None
    # The peer: input 17997 uncached, 12 cached, 47 output (cw adds the 36 thoughts).
    assert (answer.usage.input, answer.usage.cache_read) == (17997, 12)
    assert answer.usage.output == 47 + 36
    thinking = [m for m in s.messages if m.kind == "thinking"]
    assert "simple multiplication" in thinking[0].text


@pytest.mark.parametrize("name", ["agentsview-tools.jsonl", "agentsview-interleaved.jsonl"])
def test_qwen_function_response_in_user_record_is_a_tool_result(name: str) -> None:
    # Issue 31: the `functionResponse` part of a `type: "user"` record is the result of call
    # c1, not a user prompt. The peer folds it into its assistant turn (1 user message).
    s = one("qwen", QWEN / name)
    users = [m for m in s.messages if m.role == "user"]
    assert [(m.text, m.real_user) for m in users] == [("Read a.go", True)]
    (result,) = [m for m in s.messages if m.kind == "tool-result"]
    assert (result.role, result.tool_call_id, result.text) == ("tool", "c1", "package main\n")
    assert result.tool_name == "read_file" and result.message_id == "u3"
    results_paired(s)
    texts = [m.text for m in s.messages if m.role == "assistant" and m.kind == "text"]
    if name == "agentsview-interleaved.jsonl":
        assert texts == ["Looking at the file.", "Done."]
    else:
        assert texts == ["That's the file."]


def test_qwen_function_response_beside_user_text(tmp_path: Path) -> None:
    record = {
        "uuid": "u9",
        "sessionId": "s",
        "type": "user",
        "message": {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "c1", "name": "ls", "response": {"output": "a"}}},
                {"text": "and also this"},
            ],
        },
    }
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(record) + "\n")
    s = one("qwen", path, detect=False)
    assert [(m.message_id, m.role, m.text) for m in s.messages] == [
        ("u9", "user", "and also this"),
        ("u9#2", "tool", "a"),
    ]


@pytest.mark.parametrize(
    ("name", "calls"),
    [("agentsview-coalesce.jsonl", ["c1", "c2"]), ("agentsview-trail.jsonl", ["c1", "c2"])],
)
def test_qwen_tool_call_only_turns(name: str, calls: list[str]) -> None:
    # The peer coalesces the turn into one assistant message; cw keeps each call and each
    # thinking block (not counted) as its own message.
    s = one("qwen", QWEN / name)
    assert [m.tool_call_id for m in s.messages if m.kind == "tool-call"] == calls
    assert [m.real_user for m in s.messages if m.role == "user"] == [True]
    assert len([m for m in s.messages if m.kind == "thinking"]) >= 2


def test_qwen_aborted_and_short() -> None:
    s = one("qwen", QWEN / "agentsview-abort.jsonl")
    assert [(m.role, m.text) for m in s.messages] == [("user", "Hello")]
    s = one("qwen", QWEN / "agentsview-short.jsonl")
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "."),
        ("assistant", "Ready when you are."),
    ]


# --- Aider -------------------------------------------------------------------------------------

AIDER = PEERS / "aider"
HISTORY = ".aider.chat.history.md"


def test_aider_runs() -> None:
    # Three runs; the trailing header-only run yields no session (as the peer's).
    parsed = read("aider", AIDER / "myrepo" / HISTORY)
    assert len(parsed.sessions) == 2
    r0, r1 = parsed.sessions
    assert r0.session_id != r1.session_id
    assert (r0.project, r1.project) == ("myrepo", "myrepo")
    assert r0.started == "2026-06-09T14:01:00.000Z"
    assert r1.started == "2026-06-09T15:30:00.000Z"
    # The peer surfaces `> ` tool output as assistant text; cw as a tool result (Aider's
    # io.py writes tool output that way).
    assert shape(r0) == [
        ("user", "text"),
        ("assistant", "text"),
        ("user", "text"),
        ("assistant", "text"),
        ("tool", "tool-result"),
    ]
    assert [m.text for m in r0.messages if m.real_user] == ["add a retry to the webhook", "Step 1"]
    assert "exponential backoff" in r0.messages[1].text
    assert "Here is the plan:" in r0.messages[1].text
    assert "Applied edit to src/webhook.py" in r0.messages[4].text
    assert [m.text for m in r1.messages if m.real_user] == ["make the timeout configurable"]
    assert not any("add a retry" in m.text for m in r1.messages)
    assert all(m.timestamp is None for s in parsed.sessions for m in s.messages)


def test_aider_header_only_run_makes_no_session() -> None:
    # Issue 31: a header with no prompt was an empty session; it is none now.
    parsed = read("aider", AIDER / "header-only" / HISTORY)
    assert parsed.sessions == ()


def test_aider_banner_only_run_makes_no_session(tmp_path: Path) -> None:
    path = tmp_path / HISTORY
    path.write_text(
        "# aider chat started at 2026-06-09 14:01:00\n\n> Aider v0.80.0\n> Main model: x\n\n"
        "# aider chat started at 2026-06-09 14:05:00\n\n#### hi\nhello\n"
    )
    parsed = read("aider", path)
    assert [s.started for s in parsed.sessions] == ["2026-06-09T14:05:00.000Z"]


@pytest.mark.parametrize(
    ("folder", "expected"),
    [
        ("garbage-header", [("user", "hello"), ("assistant", "hi")]),
        ("crlf", [("user", "crlf prompt"), ("assistant", "answer")]),
        ("blank-lines", [("user", "q"), ("assistant", "para one\n\npara two")]),
    ],
)
def test_aider_odd_runs(folder: str, expected: list[tuple[str, str]]) -> None:
    parsed = read("aider", AIDER / folder / HISTORY)
    assert len(parsed.sessions) == 1
    assert [(m.role, m.text) for m in parsed.sessions[0].messages] == expected
    # A header whose time is unreadable still opens the run; it is no message.
    assert not any("aider chat started" in m.text for m in parsed.sessions[0].messages)


def test_aider_franken_code_blocks() -> None:
    # franken reads `> ` lines as the user's; Aider writes prompts as `#### ` and tool output
    # as `> `, so cw reads the leading `> ` block (before any prompt) as the startup banner
    # (system text). The answer with its code block is one assistant message, as the peer's.
    s = one("aider", AIDER / "franken-code-blocks" / HISTORY)
    assert [m.role for m in s.messages] == ["system", "assistant"]
    assert "```python" in s.messages[1].text and "def hello" in s.messages[1].text


# --- Cursor ------------------------------------------------------------------------------------

CURSOR = PEERS / "cursor" / "agent-transcripts"

CURSOR_TEXT = {
    "plain-text": [("text", "Hello, how can I help?")],
    "thinking-then-text": [("thinking", "internal reasoning..."), ("text", "Here is my answer.")],
    "tool-call-then-prose": [("tool-call", None), ("text", "I edited the file for you.")],
    # Issue 31: a bare `[Tool result]` owns its indented lines, not the prose after them.
    "tool-result-then-prose": [
        ("tool-result", "success: true"),
        ("text", "The operation completed."),
    ],
    "thinking-tool-prose-sequence": [
        ("thinking", "let me think..."),
        ("tool-call", None),
        ("tool-result", "file1.go"),
        ("text", "Here are the files I found."),
    ],
    "prose-between-markers": [
        ("text", "First I'll check the file."),
        ("tool-call", None),
        ("tool-result", "package main"),
        ("text", "The file looks good."),
        ("tool-call", None),
        ("text", "Build succeeded."),
    ],
    "only-markers-no-prose": [("thinking", "reasoning"), ("tool-call", None)],
    "apply-patch-json": [("tool-call", None)],
    "apply-patch-raw": [("tool-call", None)],
}

CURSOR_INPUTS: dict[str, list[object]] = {
    # Issue 31: `key=value` lines are the call's input, as `key: value` lines are.
    "tool-call-then-prose": [{"path": "/tmp/foo.go", "content": "bar"}],
    "thinking-tool-prose-sequence": [{"command": "ls"}],
    "prose-between-markers": [{"path": "main.go"}, {"command": "go build"}],
    "only-markers-no-prose": [{"command": "echo hi"}],
    "apply-patch-json": [{"patch": "@@ -1,1 +1,1 @@\n-old\n+new", "path": "src/app.ts"}],
    # A raw patch is the input itself (the peer wraps it as {"patch": …}).
    "apply-patch-raw": ["@@ -1,1 +1,1 @@\n-old\n+new"],
}


@pytest.mark.parametrize("case", sorted(CURSOR_TEXT))
def test_cursor_text_transcripts(case: str) -> None:
    s = one("cursor", CURSOR / f"agentsview-extract-{case}.txt")
    got = [(m.kind, None if m.kind == "tool-call" else m.text) for m in s.messages]
    assert got == CURSOR_TEXT[case]
    calls = [m for m in s.messages if m.kind == "tool-call"]
    for call, expected in zip(calls, CURSOR_INPUTS.get(case, []), strict=True):
        if isinstance(expected, str):
            assert call.text == expected
        else:
            assert json.loads(call.tool_input or "") == expected
    for result in (m for m in s.messages if m.kind == "tool-result"):
        if calls:  # a result answers the earliest unanswered call (bare or named)
            assert result.tool_call_id == calls[0].tool_call_id
            calls.pop(0)


CURSOR_JSONL = {
    "simple-exchange": ([("user", "Hello"), ("assistant", "Hi there")], 0),
    "user-with-user_query-tags": (
        [("user", "What is Go?"), ("assistant", "A programming language.")],
        0,
    ),
    "content-array-with-text-blocks": ([("user", "Hello"), ("assistant", "World")], 0),
    "assistant-with-tool_use": ([("user", "Fix it"), ("assistant", "Let me fix that.")], 1),
    "assistant-with-Cursor-ApplyPatch": ([("user", "Patch it")], 1),
    "assistant-with-thinking": ([("user", "Explain"), ("assistant", "Here is my answer.")], 0),
    "mixed-thinking-tool_use-text": ([("user", "Do something"), ("assistant", "Done.")], 1),
    "skip-empty-and-invalid-lines": ([("user", "Valid"), ("assistant", "Also valid")], 0),
    "skip-unknown-role": ([("user", "Question")], 0),
    "skip-message-with-no-content": ([("user", "Real")], 0),
}


@pytest.mark.parametrize("case", sorted(CURSOR_JSONL))
def test_cursor_jsonl_transcripts(case: str) -> None:
    parsed = read("cursor", CURSOR / f"agentsview-jsonl-{case}.jsonl")
    (s,) = parsed.sessions
    texts, calls = CURSOR_JSONL[case]
    assert [(m.role, m.text) for m in s.messages if m.kind == "text"] == texts
    assert len([m for m in s.messages if m.kind == "tool-call"]) == calls
    if "thinking" in case:
        assert any(m.kind == "thinking" for m in s.messages)
    # A skipped line (not JSON, a role cw does not read) is a problem, in words.
    if case in ("skip-empty-and-invalid-lines", "skip-unknown-role"):
        assert len(parsed.problems) == 1


# --- Droid -------------------------------------------------------------------------------------

DROID = PEERS / "droid" / ".factory" / "sessions"


def test_droid_session_start_and_messages() -> None:
    s = one("droid", DROID / "-home-user-project" / "sess-001.jsonl")
    assert (s.session_id, s.title, s.cwd) == ("sess-001", "Test Session", "/home/user/project")
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "Hello Factory"),
        ("assistant", "Hello! How can I help?"),
    ]
    assert s.messages[0].timestamp == "2025-12-01T10:00:00.000Z"
    s = one("droid", DROID / "-projects-app" / "sess-meta.jsonl")
    assert (s.session_id, s.title) == ("sess-meta", "Metadata Test")


def test_droid_sidecar_model() -> None:
    # Issue 31: the sidecar's model is the session's; it goes on the answers when there are
    # any, and on the session (metadata) even when there are none yet.
    path = DROID / "-test" / "sess-model.jsonl"
    s = one("droid", path)
    assert s.metadata.get("model") == "claude-opus-4-5-20251101"
    bad = one("droid", DROID / "-test" / "sess-bad-settings.jsonl")
    assert "model" not in bad.metadata
    assert [m.text for m in bad.messages] == ["Hello"]


def test_droid_sidecar_model_on_answers(tmp_path: Path) -> None:
    folder = tmp_path / ".factory" / "sessions" / "-w"
    folder.mkdir(parents=True)
    src = DROID / "-test" / "sess-model.jsonl"
    line = '{"type":"message","id":"a1","message":{"role":"assistant","content":"Hi"}}'
    (folder / "s.jsonl").write_text(src.read_text() + "\n" + line + "\n")
    (folder / "s.settings.json").write_text('{"model":"claude-opus-4-5-20251101"}')
    s = one("droid", folder / "s.jsonl")
    assert [m.model for m in s.messages if m.role == "assistant"] == ["claude-opus-4-5-20251101"]


def test_droid_settings_is_a_companion() -> None:
    importer = base.get("droid")
    side = DROID / "-test" / "sess-model.settings.json"
    assert importer.is_companion(side)  # type: ignore[attr-defined]
    assert base.detect(side) is None
    assert not importer.is_companion(DROID / "-test" / "sess-model.jsonl")  # type: ignore[attr-defined]


DROID_TEXTS = {
    "sess-arr.jsonl": [
        ("assistant", "text", "First part\n\nSecond part"),
        ("assistant", "tool-call", ""),
    ],
    "sess-empty.jsonl": [],
    "truncated.jsonl": [("user", "text", "Valid")],
    "types.jsonl": [("user", "text", "Correct")],
    "null.jsonl": [("user", "text", "before\x00after"), ("user", "text", "Clean")],
    "bom.jsonl": [("user", "text", "BOM line"), ("user", "text", "Second")],
    "nomsg.jsonl": [("user", "text", "Has message")],
    "empty-content.jsonl": [("user", "text", "Has content")],
    "unknown.jsonl": [("user", "text", "Real message")],
    "out-of-order.jsonl": [
        ("assistant", "text", "Later event first"),
        ("user", "text", "Earlier event second"),
    ],
    "special.jsonl": [("user", "text", "Spaces path")],
    "model.jsonl": [("assistant", "text", "Response")],
}


@pytest.mark.parametrize("name", sorted(DROID_TEXTS))
def test_droid_edge_files(name: str) -> None:
    parsed = read("droid", DROID / "-test" / name)
    (s,) = parsed.sessions  # sess-empty: a session of 0 messages, which the pipeline reports
    assert [(m.role, m.kind, m.text) for m in s.messages] == DROID_TEXTS[name]
    if name == "sess-arr.jsonl":
        assert s.messages[1].tool_name == "Read"
    if name == "model.jsonl":
        assert s.messages[0].model == "claude-opus-4-5"
    if name == "special.jsonl":
        assert s.cwd == "/home/user/my project/src"
    if name == "out-of-order.jsonl":
        assert s.started == "2025-12-01T10:00:00.000Z"
    if name in ("truncated.jsonl", "nomsg.jsonl", "types.jsonl"):
        assert parsed.problems  # the unreadable lines are named, not dropped in silence


def test_droid_timestamps() -> None:
    s = one("droid", DROID / "-test" / "timestamps.jsonl")
    assert [m.timestamp for m in s.messages] == [
        "2025-12-01T10:00:00.123Z",
        "2025-12-01T04:30:00.000Z",
        "2023-11-14T22:13:20.000Z",
        None,
        None,
    ]


def test_droid_workspace_slug() -> None:
    # franken decodes the folder slug `-Users-test-myproject` into a working directory; the
    # slug loses dashes, so cw does not guess one from it (project `default`).
    s = one("droid", DROID / "-Users-test-myproject" / "sess-no-cwd.jsonl")
    assert [m.text for m in s.messages] == ["Test"] and s.cwd is None


# --- Kiro --------------------------------------------------------------------------------------

KIRO = PEERS / "kiro"


def _kiro_db(tmp_path: Path, rows: list[tuple[str, str, str, int, int]]) -> Path:
    path = tmp_path / "data.sqlite3"
    conn = sqlite3.connect(path)
    conn.executescript((KIRO / "agentsview-schema.sql").read_text())
    conn.executemany("INSERT INTO conversations_v2 VALUES (?, ?, ?, ?, ?)", rows)
    conn.commit()
    conn.close()
    return path


def test_kiro_sqlite_standard(tmp_path: Path) -> None:
    payload = (KIRO / "agentsview-standard_payload.json").read_text()
    db = _kiro_db(
        tmp_path,
        [("/home/user/code/kiro-app", "sqlite-session", payload, 1779012000000, 1779012030000)],
    )
    s = one("kiro", db)
    assert (s.session_id, s.cwd, s.project) == (
        "sqlite-session",
        "/home/user/code/kiro-app",
        "kiro-app",
    )
    assert [(m.role, m.kind, m.text) for m in s.messages] == [
        ("user", "text", "Build the Kiro parser"),
        ("assistant", "text", "I can do that."),
        ("user", "text", "Read the source first"),
        (
            "assistant",
            "tool-call",
            json.dumps({"command": "sed -n '1,120p' internal/parser/kiro.go"}),
        ),
    ]
    assert s.messages[3].tool_name == "execute_bash"
    assert [m.real_user for m in s.messages if m.role == "user"] == [True, True]
    # Issue 31: the answers' times (the stream's end, in milliseconds) are read.
    assert [m.timestamp for m in s.messages] == [
        "2026-05-17T10:00:00.000Z",
        "2026-05-17T10:00:10.000Z",
        "2026-05-17T10:00:20.000Z",
        "2026-05-17T10:00:30.000Z",
    ]
    assert s.started == "2026-05-17T10:00:00.000Z"


def test_kiro_sqlite_overlap_and_malformed(tmp_path: Path) -> None:
    db = _kiro_db(
        tmp_path,
        [
            (
                "/home/user/code/current-kiro",
                "overlap-session",
                (KIRO / "agentsview-overlap_payload.json").read_text(),
                1779015600000,
                1779015610000,
            ),
            (
                "/tmp/project",
                "broken-session",
                (KIRO / "agentsview-malformed_payload.txt").read_text(),
                1,
                2,
            ),
        ],
    )
    parsed = read("kiro", db)
    # The peer refuses the malformed payload; cw names it as a problem and reads the rest.
    assert [s.session_id for s in parsed.sessions] == ["overlap-session"]
    assert len(parsed.problems) == 1 and "broken-session" in parsed.problems[0][1]
    (s,) = parsed.sessions
    assert [(m.role, m.text, m.timestamp) for m in s.messages] == [
        ("user", "Current store should win", "2026-05-17T11:00:00.000Z"),
        ("assistant", "Using the SQLite version.", "2026-05-17T11:00:10.000Z"),
    ]


def test_kiro_jsonl_with_sidecar() -> None:
    path = KIRO / "sessions" / "legacy-session.jsonl"
    s = one("kiro", path)
    assert (s.session_id, s.title, s.cwd) == (
        "legacy-session",
        "legacy-session",
        "/home/user/code/legacy",
    )
    assert [(m.role, m.text) for m in s.messages] == [
        ("user", "Legacy question"),
        ("assistant", "Kiro answer"),
    ]
    assert s.started == "2026-06-01T10:00:00.000Z"


def test_kiro_sidecar_is_a_companion(tmp_path: Path) -> None:
    importer = base.get("kiro")
    side = KIRO / "sessions" / "legacy-session.json"
    assert importer.is_companion(side)  # type: ignore[attr-defined]
    assert not importer.is_companion(KIRO / "sessions" / "legacy-session.jsonl")  # type: ignore[attr-defined]
    # A .json without its session beside it is not Kiro's.
    alone = tmp_path / "legacy-session.json"
    alone.write_bytes(side.read_bytes())
    assert not importer.is_companion(alone)  # type: ignore[attr-defined]

"""What the importers keep, through the store and the CLI: sub-agent sessions (from progress
lines and from their own transcripts, one session either way), thinking (shown, never searched
or counted), model and token usage per message and per session, titles, host markers in
cw-jsonl, and the counts of tool outputs kept in their own documents."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.contract.views import SubagentLink
from cwcore.importers.documents import SEGMENT_BYTES
from cwtui.cli import app
from tests.helpers import write_jsonl
from tests.importers.golden_support import FIXTURES

runner = CliRunner()
CLAUDE = FIXTURES / "claude_code"
PROGRESS = CLAUDE / "c1a0de00-0000-4000-8000-0000000000a9.jsonl"  # sub-agent in progress lines
PARENT = "c1a0de00-0000-4000-8000-0000000000a9"
CHILD = f"{PARENT}/agent-f00d1"
OWN = "c1a0de00-0000-4000-8000-0000000000b7"  # sub-agent with its own transcript


def cw(*args: str) -> Any:
    """The command's JSON output (its last line: an import streams acks before its summary)."""
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def sessions(archive: Archive) -> dict[str, dict[str, Any]]:
    rows, _ = archive.sessions(limit=100)
    return {r.sessionId: r.to_json() for r in rows}


def claude(uuid: str, kind: str, content: Any, **extra: Any) -> dict[str, Any]:
    row = {
        "type": kind,
        "uuid": uuid,
        "sessionId": "S-THINK",
        "cwd": "/home/dev/src/app",
        "timestamp": "2026-02-10T09:00:00.000Z",
        "message": {"role": kind, "content": content},
    }
    row["message"].update(extra)
    return row


# -- sub-agents -------------------------------------------------------------------------------


def test_progress_lines_are_the_sub_agents_session(archive: Archive) -> None:
    archive.import_paths([PROGRESS])
    rows = sessions(archive)
    assert set(rows) == {PARENT, CHILD}
    child = rows[CHILD]
    assert (child["parent"], child["parentToolCall"]) == (PARENT, "assistant:toolu_T1")
    # the prompt, two tool calls and two results; a message repeated on two lines is one
    assert (child["messages"], child["turns"], child["toolCalls"]) == (5, 1, 2)
    assert (rows[PARENT]["messages"], rows[PARENT]["turns"]) == (4, 1)  # its own only
    assert child["title"] == "Find retry budget"
    shown = archive.show(CHILD).messages
    assert [m.message_key for m in shown] == [
        "user:n-1",
        "assistant:toolu_S1",
        "assistant:toolu_S2",
        "tool:n-4",
        "tool:n-5",
    ]
    assert next(m for m in shown if m.message_key == "tool:n-4").lines == (8, 9)
    parent = archive.show(PARENT).messages
    task = next(m for m in parent if m.message_key == "assistant:toolu_T1")
    assert task.subagent == SubagentLink(CHILD, 5)
    # a prefix names the parent, not the sub-agents that share it
    assert archive.show(PARENT[:12]).session.sessionId == PARENT


def test_a_sub_agent_is_searched_scoped_and_recalled_like_any_session(archive: Archive) -> None:
    archive.import_paths([PROGRESS])
    hits = archive.search({"query": "RETRY_BUDGET_SENTINEL"}).results
    assert hits and hits[0].source.session_id == CHILD
    assert "tool:n-4" in hits[0].source.message_keys
    scoped = archive.search(
        {"query": "RETRY_BUDGET_SENTINEL", "scope": "session", "sessions": [CHILD]}
    )
    assert {h.source.session_id for h in scoped.results} == {CHILD}
    parent_only = archive.search(
        {"query": "RETRY_BUDGET_SENTINEL", "scope": "session", "sessions": [PARENT]}
    )
    assert {h.source.session_id for h in parent_only.results} <= {PARENT}
    assert all("SENTINEL" not in h.snippet for h in parent_only.results)
    recalled = archive.recall(hits[0].locator).source
    assert recalled is not None and "RETRY_BUDGET_SENTINEL" in recalled.text


def test_a_sub_agents_own_transcript_and_its_progress_lines_are_one_session(
    tmp_path: Path, archive: Archive
) -> None:
    project = tmp_path / "projects" / "-home-dev-src-api"
    project.mkdir(parents=True)
    shutil.copy(CLAUDE / f"{OWN}.jsonl", project)
    # without its transcript, the progress lines give the sub-agent's session
    archive.import_paths([project / f"{OWN}.jsonl"])
    child = f"{OWN}/agent-b7f00d1"
    early = [m.message_key for m in archive.show(child).messages]
    assert early == ["user:s-1", "assistant:toolu_X1"]
    # its transcript, once there, is the same session (same ids: nothing twice), now whole
    shutil.copytree(CLAUDE / OWN, project / OWN)
    archive.import_paths([project])
    rows = sessions(archive)
    assert set(rows) == {OWN, child}
    full = archive.show(child).messages
    assert [m.message_key for m in full] == [
        "user:s-1",
        "assistant:toolu_X1",
        "tool:s-3",
        "assistant:s-4",
    ]
    assert rows[child]["messages"] == 4
    assert (rows[child]["parentToolCall"], rows[child]["title"]) == (
        "assistant:toolu_R1",
        "Read checklist",
    )
    # the parent, read again, leaves the transcript's messages to it
    again = archive.import_paths([project / f"{OWN}.jsonl"])
    assert (again.imported, sessions(archive)[child]["messages"]) == (0, 4)
    agent = next(m for m in archive.show(OWN).messages if m.tool == "Agent")
    assert agent.subagent == SubagentLink(child, 4)


def test_cw_show_points_at_the_sub_agent_and_cw_sessions_lists_it(archive: Archive) -> None:
    archive.close()
    cw("import", str(PROGRESS))
    listed = {s["sessionId"]: s for s in cw("sessions")["sessions"]}
    assert listed[CHILD]["parent"] == PARENT
    shown = runner.invoke(app, ["show", PARENT])
    assert shown.exit_code == 0, shown.stderr
    assert f"↳ sub-agent {CHILD}: 5 messages" in " ".join(shown.stdout.split())
    child = runner.invoke(app, ["show", CHILD])
    assert f"sub-agent of {PARENT}, started by assistant:toolu_T1" in " ".join(child.stdout.split())


# -- thinking ---------------------------------------------------------------------------------

THINKING_ROWS = [
    claude("u1", "user", "How do I rotate the signing keys?"),
    claude(
        "a1",
        "assistant",
        [
            {
                "type": "thinking",
                "thinking": "ZORBLAX_THINK_ANCHOR is in src/secret_thoughts.py; maybe mention it",
            }
        ],
        id="msg_1",
        model="claude-opus-4-6",
    ),
    claude(
        "a2",
        "assistant",
        [{"type": "text", "text": "Run the rotate command."}],
        id="msg_1",
        model="claude-opus-4-6",
        usage={"input_tokens": 4, "output_tokens": 50, "cache_read_input_tokens": 10},
    ),
]


def test_thinking_is_kept_shown_on_request_and_never_searched_or_counted(
    tmp_path: Path, archive: Archive
) -> None:
    summary = archive.import_paths([write_jsonl(tmp_path / "S-THINK.jsonl", THINKING_ROWS)])
    assert summary.messages == 2
    body = archive.show("S-THINK")
    assert [(m.message_key, m.kind) for m in body.messages] == [
        ("user:u1", "text"),
        ("assistant:a1#thinking1", "thinking"),
        ("assistant:a1", "text"),
    ]
    assert body.session.messages == 2  # thinking is not a message of the counts
    for query in ("ZORBLAX_THINK_ANCHOR", "src/secret_thoughts.py", "maybe mention it"):
        for policy in ("never", "always"):
            found = archive.search({"query": query, "semanticPolicy": policy}).results
            assert all("ZORBLAX" not in h.snippet for h in found), (query, policy)
            assert not any("thinking" in k for h in found for k in h.source.message_keys), (
                query,
                policy,
            )
    assert archive.search({"query": "ZORBLAX_THINK_ANCHOR"}).results == ()
    archive.close()
    plain = runner.invoke(app, ["show", "S-THINK"])
    assert "ZORBLAX" not in plain.stdout
    shown = runner.invoke(app, ["show", "S-THINK", "--thinking"])
    assert "ZORBLAX_THINK_ANCHOR" in shown.stdout
    assert "claude-opus-4-6 · in 4 out 50 cache r10/w0" in shown.stdout


# -- usage and titles -------------------------------------------------------------------------


def test_sessions_sum_token_usage_and_list_models(tmp_path: Path, archive: Archive) -> None:
    # first the file without its last response (a live session), then whole
    lines = PROGRESS.read_text(encoding="utf-8").splitlines(keepends=True)
    live = tmp_path / PROGRESS.name
    live.write_text("".join(lines[:-1]), encoding="utf-8")
    archive.import_paths([live])
    partial = sessions(archive)[PARENT]["tokens"]
    assert partial == {"input": 3, "output": 42, "cacheRead": 900, "cacheWrite": 100}
    live.write_text("".join(lines), encoding="utf-8")
    archive.import_paths([live])
    rows = sessions(archive)
    assert rows[PARENT]["tokens"] == {
        "input": 5,
        "output": 60,
        "cacheRead": 2100,
        "cacheWrite": 150,
    }
    assert rows[PARENT]["models"] == ["claude-opus-4-6"]
    assert rows[CHILD]["tokens"] == {"input": 5, "output": 31, "cacheRead": 4000, "cacheWrite": 300}
    assert rows[CHILD]["models"] == ["claude-haiku-4-5-20251001"]
    task = next(m for m in archive.show(PARENT).messages if m.tool == "Task")
    assert (task.model, dict(task.usage or ())["output"]) == ("claude-opus-4-6", 42)


def test_titles_come_from_the_format_else_the_first_prompt(
    tmp_path: Path, archive: Archive
) -> None:
    rows = [
        claude("u0", "user", "<command-name>/clear</command-name>"),
        claude("u1", "user", "  Fix the   flaky\ndate parser test, it fails on Mondays  "),
    ]
    path = write_jsonl(tmp_path / "S-THINK.jsonl", rows)
    archive.import_paths([path])
    assert sessions(archive)["S-THINK"]["title"] == "Fix the flaky"
    # a title the session later gets from the agent replaces the derived one
    rows.append(
        {"type": "custom-title", "customTitle": "Monday parser bug", "sessionId": "S-THINK"}
    )
    write_jsonl(path, rows)
    archive.import_paths([path])
    assert sessions(archive)["S-THINK"]["title"] == "Monday parser bug"


def test_a_long_first_prompt_is_cut_for_the_title(tmp_path: Path, archive: Archive) -> None:
    prompt = "word " * 40
    archive.import_paths([write_jsonl(tmp_path / "S-THINK.jsonl", [claude("u1", "user", prompt)])])
    title = sessions(archive)["S-THINK"]["title"]
    assert len(title) == 80 and title.endswith("…") and title.startswith("word word")


# -- cw-jsonl markers and counts --------------------------------------------------------------


def test_cw_jsonl_meta_lines_are_not_real_user_messages(tmp_path: Path, archive: Archive) -> None:
    rows = [
        {"session": "s", "id": "m1", "role": "user", "text": "<command-name>/clear", "meta": True},
        {"session": "s", "id": "m2", "role": "user", "text": "real question"},
        {"session": "s", "id": "m3", "role": "assistant", "text": "answer"},
        {"session": "s", "id": "m4", "role": "system", "text": "compacted", "kind": "summary"},
    ]
    archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
    row = sessions(archive)["s"]
    assert (row["messages"], row["turns"]) == (4, 2)  # a preamble turn, then the question
    kinds = [m.kind for m in archive.show("s").messages]
    assert kinds == ["text", "text", "text", "summary"]
    exported = [json.loads(x) for x in archive.export("s", "jsonl").splitlines()]
    assert exported[0]["meta"] is True and "meta" not in exported[1]
    assert exported[3]["kind"] == "summary"


def test_a_tool_output_in_its_own_document_is_counted(tmp_path: Path, archive: Archive) -> None:
    big = "line of build output\n" * (SEGMENT_BYTES // 10)
    rows = [
        {"session": "s", "id": "u1", "role": "user", "text": "run the build"},
        {"session": "s", "id": "c1", "role": "assistant", "text": "{}", "tool_name": "Bash"},
        {"session": "s", "id": "r1", "role": "tool", "text": big, "tool_name": "Bash"},
        {"session": "s", "id": "a1", "role": "assistant", "text": "it passed"},
    ]
    archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
    kinds = {d.kind for d in archive.show("s").documents}
    assert "tool-result" in kinds  # the output is a document of its own
    row = sessions(archive)["s"]
    assert (row["messages"], row["turns"], row["toolCalls"]) == (4, 1, 1)


def test_sync_finds_sub_agent_transcripts_and_a_second_sync_adds_nothing(
    tmp_path: Path, archive: Archive
) -> None:
    home = tmp_path / "user"
    project = home / ".claude" / "projects" / "-home-dev-src-api"
    project.mkdir(parents=True)
    shutil.copy(CLAUDE / f"{OWN}.jsonl", project)
    shutil.copytree(CLAUDE / OWN, project / OWN)
    first = archive.sync(home=str(home))
    assert first.errors == [] and first.files == 2  # the parent and its sub-agent's transcript
    assert {s: r["messages"] for s, r in sessions(archive).items()} == {
        OWN: 4,
        f"{OWN}/agent-b7f00d1": 4,
    }
    again = archive.sync(home=str(home))
    assert (again.files, again.imported) == (0, 0)


def test_thinking_of_a_live_turn_stays_in_place_as_the_turn_grows(
    tmp_path: Path, archive: Archive
) -> None:
    path = write_jsonl(tmp_path / "S-THINK.jsonl", THINKING_ROWS[:2])  # the answer not yet written
    archive.import_paths([path])
    early = archive.show("S-THINK").messages
    assert [m.message_key for m in early] == ["user:u1", "assistant:a1#thinking1"]
    write_jsonl(path, THINKING_ROWS)
    grown = archive.import_paths([path])
    assert grown.imported == 1
    body = archive.show("S-THINK")
    assert [m.message_key for m in body.messages] == [
        "user:u1",
        "assistant:a1#thinking1",
        "assistant:a1",
    ]
    assert [(d.version, d.state) for d in body.documents] == [(2, "live")]

"""End to end, as Claude Code would run it: ``cw hooks install claude-code``, then the configured
commands with simulated hook payloads, against a real daemon (the lean hook client speaks only to
the daemon)."""

from __future__ import annotations

import json
import shlex
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.contract.hints import MemoryDecision, MemoryExclusion
from cwcore.hosts import hooks
from tests.helpers import real_daemon_env, write_jsonl


def row(session: str, mid: str, role: str, text: str, minute: int, **extra: Any) -> dict:
    return {
        "session": session,
        "id": mid,
        "role": role,
        "text": text,
        "project": "alpha",
        "timestamp": f"2026-11-{10 if session == 'old' else 20}T10:{minute:02d}:00Z",
        **extra,
    }


OLD = [
    row(
        "old", "u1", "user", "Why does the reaper crash with REAP_DRAIN in src/reaper/drain.py?", 0
    ),
    row("old", "a1", "assistant", "REAP_DRAIN stops new work while the pool drains.", 1),
]
LIVE = [
    row("live", "u1", "user", "Let's look at the worker pool again.", 0, parent_session="old"),
    row("live", "a1", "assistant", "Sure, opening the pool module.", 1, parent_session="old"),
]


@pytest.fixture
def daemon_env(cw_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The environment a host gives its hooks: the daemon the hooks start is stopped after."""
    with real_daemon_env(
        cw_home, monkeypatch, CW_DAEMON_GRACE_SECONDS="5", CW_HOOK_TIMEOUT_S="30"
    ) as env:
        yield env


def run_hook(command: str, payload: dict[str, Any], env: dict[str, str]) -> str:
    done = subprocess.run(
        shlex.split(command),
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_installed_hooks_give_a_hint_and_import(
    tmp_path: Path, cw_home: Path, daemon_env: dict[str, str]
) -> None:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "old.jsonl", OLD)])
    transcript = write_jsonl(tmp_path / "live.jsonl", LIVE)
    settings = tmp_path / "settings.json"
    hooks.apply(hooks.plan_install("claude-code", settings))
    configured = json.loads(settings.read_text())["hooks"]
    prompt_cmd = configured["UserPromptSubmit"][0]["hooks"][0]["command"]
    stop_cmd = configured["Stop"][0]["hooks"][0]["command"]
    base = {"session_id": "live", "transcript_path": str(transcript), "cwd": "/home/me/alpha"}

    # After the first answer, the Stop hook imports the live session (through the daemon).
    assert run_hook(stop_cmd, {**base, "hook_event_name": "Stop"}, daemon_env) == ""
    # The next prompt asks about earlier work: the hook prints the historical excerpt.
    prompt = {
        **base,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "What did we decide last time about REAP_DRAIN?",
    }
    hint = run_hook(prompt_cmd, prompt, daemon_env)
    assert "REAP_DRAIN" in hint and "HISTORICAL EVIDENCE" in hint.upper()
    # Frozen: the same message gets the same bytes again.
    assert run_hook(prompt_cmd, prompt, daemon_env) == hint


def test_installed_hooks_deliver_the_memory_block_beside_the_hint(
    tmp_path: Path, cw_home: Path, daemon_env: dict[str, str]
) -> None:
    """Session start: the session-start block; a real prompt: the frozen hint, then the memory
    block with the hard rule; an acknowledgement: nothing. The selections are in ``cw hints``."""
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "old.jsonl", OLD)])
        rule = archive.memory_add(
            "Never force-push to main",
            ruleType="avoid_pattern",
            confidence=0.92,
            layer="L2",
            scope="project:alpha",
        )
        queues = archive.memory_add(
            "The worker pool uses bounded queues of 64", scope="project:alpha"
        )
        other = archive.memory_add("Deploy beta with helm", scope="project:beta")
    transcript = write_jsonl(tmp_path / "live.jsonl", LIVE)
    settings = tmp_path / "settings.json"
    hooks.apply(hooks.plan_install("claude-code", settings))
    configured = json.loads(settings.read_text())["hooks"]
    start_cmd = configured["SessionStart"][0]["hooks"][0]["command"]
    prompt_cmd = configured["UserPromptSubmit"][0]["hooks"][0]["command"]
    stop_cmd = configured["Stop"][0]["hooks"][0]["command"]
    assert start_cmd == prompt_cmd
    base = {"session_id": "live", "transcript_path": str(transcript), "cwd": "/home/me/alpha"}

    # A new session: not archived yet, its project comes from the working directory.
    start = run_hook(start_cmd, {**base, "hook_event_name": "SessionStart"}, daemon_env)
    assert start.startswith("# Persistent Intelligence Context\n")
    assert "⚠️ AVOID: [conf 0.92] Never force-push to main" in start
    assert "HISTORICAL EVIDENCE" not in start.upper() and "Deploy beta" not in start

    assert run_hook(stop_cmd, {**base, "hook_event_name": "Stop"}, daemon_env) == ""
    prompt = {
        **base,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "What did we decide last time about REAP_DRAIN? I want to force-push the "
        "worker pool queues fix to main.",
    }
    out = run_hook(prompt_cmd, prompt, daemon_env)
    with Archive.open(cw_home, embedded=False) as archive:
        hint = archive.hints(session="live").hints[0].hint
        assert hint and "REAP_DRAIN" in hint
        # The frozen hint first, byte for byte, then the memory block of this turn.
        assert out.startswith(hint)
        block = out[len(hint) :].lstrip("\n")
        assert block.startswith("# Persistent Intelligence Context\n\n## Hard Rules\n")
        assert "⚠️ AVOID: [conf 0.92] Never force-push to main" in block
        assert f"- {queues.id} [L1, conf" in block
        assert "Deploy beta" not in block
        assert len(block.encode()) <= 14 * 1024
        assert run_hook(prompt_cmd, prompt, daemon_env) == out
        # Trivial prompts get neither a hint nor memory.
        ack = {**base, "hook_event_name": "UserPromptSubmit", "prompt": "ok thanks"}
        assert run_hook(prompt_cmd, ack, daemon_env) == ""

        view = [
            d
            for d in archive.hints(session="live", view="memory").decisions
            if isinstance(d, MemoryDecision)
        ]
    by_key = {d.message_key: d for d in view}
    assert by_key["session-start"].event == "session-start"
    assert by_key["session-start"].project == "alpha"
    assert dict(by_key["session-start"].selected)["Hard Rules"] == (rule.id,)
    turn = next(d for d in view if d.event == "prompt" and not d.skipped)
    assert dict(turn.selected)["Hard Rules"] == (rule.id,)
    assert queues.id in dict(turn.selected)["Selected Memory"]
    other_out = MemoryExclusion(other.id, "project_mismatch:beta", "BasicScopeProcessor")
    assert other_out in turn.excluded
    assert [t.processor for t in turn.traces][:1] == ["StatusFilterProcessor"]
    skipped = next(d for d in view if d.skipped)
    assert skipped.reason is not None and skipped.selected == ()

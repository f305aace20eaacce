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

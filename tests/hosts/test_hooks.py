"""Hook installers: install → show → uninstall round-trips each host's file byte for byte,
installing twice changes nothing, dry runs write nothing, unsafe merges are refused."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.errors import Conflict, InvalidInput
from cwcore.hosts import hooks
from cwtui.cli import app
from tests.helpers import write_jsonl

runner = CliRunner()

CLAUDE_FILES = {
    "indent2": json.dumps(
        {
            "model": "opus",
            "permissions": {"allow": ["Bash(git status)"]},
            "hooks": {
                "UserPromptSubmit": [
                    {"hooks": [{"type": "command", "command": "~/bin/remind.sh"}]}
                ],
                "Stop": [{"hooks": [{"type": "command", "command": "say done"}]}],
            },
            "env": {"ÆGIS": "naïve ✓"},
        },
        indent=2,
        ensure_ascii=False,
    )
    + "\n",
    "indent4_no_eol": '{\n    "model": "sonnet",\n    "cleanupPeriodDays": 30\n}',
    "tabs": '{\n\t"statusLine": {\n\t\t"type": "command",\n\t\t"command": "x"\n\t}\n}\n',
    "compact": '{"model":"opus","hooks":{}}',
    "empty_object": "{}\n",
    "empty_file": "",
    "hand_formatted": '{ "model" : "opus",\n  "hooks": { "Stop": [] },\n  "n": [1,2,3] }\n',
}

CODEX_FILES = {
    "plain": 'model = "gpt-5"\napproval_policy = "on-request"\n\n[mcp_servers.docs]\n'
    'command = "docs-server"\nargs = ["--stdio"]\n',
    "no_eol": 'model = "o3"\n[projects."/home/me/repo"]\ntrust_level = "trusted"',
    "own_hooks": "[features]\nhooks = true\n\n[[hooks.UserPromptSubmit]]\n\n"
    '[[hooks.UserPromptSubmit.hooks]]\ntype = "command"\ncommand = "lint-prompt"\n',
    "blank_lines": "\n\n# just a comment\n\n",
}


def cli(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def round_trip(host: str, path: Path, original: bytes | None) -> None:
    """install (twice), show, uninstall — through the CLI — and compare bytes."""
    code, out, err = cli("hooks", "install", host, "--settings", str(path), "--project", "alpha")
    assert code == 0, err
    installed = path.read_bytes()
    assert installed != original
    code, out, _ = cli("hooks", "install", host, "--settings", str(path), "--project", "alpha")
    assert code == 0 and "already installed" in out
    assert path.read_bytes() == installed  # idempotent
    code, out, _ = cli("hooks", "show", host, "--settings", str(path), "--json")
    shown = json.loads(out)
    assert code == 0 and shown["installed"] and shown["current"], shown
    commands = " ".join(e["command"] for e in shown["entries"])
    assert f"-m {hooks.HINT_MODULE}" in commands and "session-end" in commands
    code, _, err = cli("hooks", "uninstall", host, "--settings", str(path))
    assert code == 0, err
    if original is None:
        assert not path.exists()
    else:
        assert path.read_bytes() == original
    code, out, _ = cli("hooks", "show", host, "--settings", str(path), "--json")
    assert json.loads(out)["installed"] is False
    code, out, _ = cli("hooks", "uninstall", host, "--settings", str(path))
    assert code == 0 and "no cw entries" in out


@pytest.mark.parametrize("name", sorted(CLAUDE_FILES))
def test_claude_code_round_trip(tmp_path: Path, name: str) -> None:
    path = tmp_path / "settings.json"
    path.write_text(CLAUDE_FILES[name], encoding="utf-8")
    before = json.loads(CLAUDE_FILES[name] or "{}")
    change = hooks.plan_install("claude-code", path)
    after = json.loads(change.after or "")
    # Everything else kept, in order; cw's groups appended after the user's own.
    assert [k for k in after if k != "hooks"] == [k for k in before if k != "hooks"]
    for event, groups in (before.get("hooks") or {}).items():
        assert after["hooks"][event][: len(groups)] == groups
    cw = after["hooks"]["UserPromptSubmit"][-1]["hooks"][0]
    assert cw["type"] == "command" and shlex.split(cw["command"]) == [
        sys.executable,
        "-m",
        "cwcore.hosts.hook_client",
    ]
    assert (
        "cwcore.hosts.hooks session-end" in after["hooks"]["SessionEnd"][-1]["hooks"][0]["command"]
    )
    # A session start runs the same client: it prints the session-start memory block.
    assert after["hooks"]["SessionStart"][-1]["hooks"][0] == cw
    round_trip("claude-code", path, CLAUDE_FILES[name].encode())


@pytest.mark.parametrize("name", sorted(CODEX_FILES))
def test_codex_round_trip(tmp_path: Path, name: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CODEX_FILES[name], encoding="utf-8")
    change = hooks.plan_install("codex", path, project="alpha")
    data = tomllib.loads(change.after or "")
    original = tomllib.loads(CODEX_FILES[name])
    assert data["mcp_servers"]["cw"]["args"] == ["-m", "cwtui.cli", "mcp", "--project", "alpha"]
    assert data["mcp_servers"]["cw"]["command"] == sys.executable
    for key, value in original.items():
        if key not in ("mcp_servers", "hooks"):
            assert data[key] == value
    own = original.get("hooks", {}).get("UserPromptSubmit", [])
    prompt = data["hooks"]["UserPromptSubmit"]
    assert prompt[: len(own)] == own and len(prompt) == len(own) + 1
    assert prompt[-1]["hooks"][0]["command"].endswith("-m cwcore.hosts.hook_client")
    assert data["hooks"]["Stop"][-1]["hooks"][0]["timeout"] == hooks.IMPORT_TIMEOUT_S
    assert data["hooks"]["SessionStart"][-1]["hooks"][0] == prompt[-1]["hooks"][0]
    round_trip("codex", path, CODEX_FILES[name].encode())


def test_pi_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "extensions" / "cw.ts"
    round_trip("pi", path, None)
    assert path.parent.exists()


@pytest.mark.parametrize("host", hooks.HOSTS)
def test_missing_file_is_created_then_deleted(tmp_path: Path, host: str) -> None:
    path = tmp_path / "deep" / "settings-file"
    round_trip(host, path, None)


@pytest.mark.parametrize("host", hooks.HOSTS)
def test_dry_run_writes_nothing_and_prints_the_file(tmp_path: Path, host: str) -> None:
    path = tmp_path / "settings"
    absent = tmp_path / "absent"
    path.write_text("{}\n" if host == "claude-code" else "", encoding="utf-8")
    if host == "pi":
        path.unlink()
    snapshot = sorted(p.name for p in tmp_path.iterdir())
    for target in (path, absent):
        code, out, err = cli(
            "hooks", "install", host, "--settings", str(target), "--project", "p", "--dry-run"
        )
        assert code == 0, err
        assert out == hooks.plan_install(host, target, project="p").after
        assert "would write" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == snapshot
    # Uninstall's dry run, after a real install, prints the restored file and changes nothing.
    cli("hooks", "install", host, "--settings", str(path), "--project", "p")
    installed = path.read_bytes()
    code, out, err = cli("hooks", "uninstall", host, "--settings", str(path), "--dry-run")
    assert code == 0 and path.read_bytes() == installed
    if host == "pi":
        assert "would delete" in err
    else:
        assert out == hooks.plan_uninstall(host, path).after


def test_reinstall_with_another_python_replaces_in_place(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(CLAUDE_FILES["indent2"], encoding="utf-8")
    hooks.apply(hooks.plan_install("claude-code", path, python="/old/venv/bin/python"))
    assert hooks.show("claude-code", path)["current"] is False
    hooks.apply(hooks.plan_install("claude-code", path))
    text = path.read_text(encoding="utf-8")
    assert "/old/venv" not in text and hooks.show("claude-code", path)["current"]
    hooks.apply(hooks.plan_uninstall("claude-code", path))
    assert path.read_text(encoding="utf-8") == CLAUDE_FILES["indent2"]


def test_uninstall_keeps_edits_made_after_install(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(CLAUDE_FILES["indent2"], encoding="utf-8")
    hooks.apply(hooks.plan_install("claude-code", path))
    edited = json.loads(path.read_text(encoding="utf-8"))
    edited["theme"] = "dark"
    path.write_text(json.dumps(edited, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    hooks.apply(hooks.plan_uninstall("claude-code", path))
    expected = {**json.loads(CLAUDE_FILES["indent2"]), "theme": "dark"}
    assert (
        path.read_text(encoding="utf-8")
        == json.dumps(expected, indent=2, ensure_ascii=False) + "\n"
    )


def test_codex_keeps_its_project_and_replaces_its_block(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CODEX_FILES["plain"], encoding="utf-8")
    hooks.apply(hooks.plan_install("codex", path, project="alpha", python="/old/python"))
    path.write_text(path.read_text() + '\n[profiles.fast]\nmodel = "mini"\n', encoding="utf-8")
    change = hooks.plan_install("codex", path)  # no --project: keep the bound one
    assert tomllib.loads(change.after or "")["mcp_servers"]["cw"]["args"][-1] == "alpha"
    hooks.apply(change)
    assert "/old/python" not in path.read_text()
    hooks.apply(hooks.plan_uninstall("codex", path))
    assert path.read_text() == CODEX_FILES["plain"] + '\n[profiles.fast]\nmodel = "mini"\n'


def test_unsafe_merges_are_refused_and_leave_the_file(tmp_path: Path) -> None:
    cases = [
        ("codex", "config.toml", "[hooks]\nUserPromptSubmit = []\n", Conflict),
        ("codex", "config.toml", '[mcp_servers.cw]\ncommand = "other"\n', Conflict),
        ("codex", "config.toml", "model = \n", InvalidInput),
        ("claude-code", "settings.json", '{"hooks": [1, 2]}', Conflict),
        ("claude-code", "settings.json", "{not json", InvalidInput),
        ("claude-code", "settings.json", "[]", InvalidInput),
        ("pi", "cw.ts", "export default function () {}\n", Conflict),
    ]
    for host, name, text, error in cases:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        with pytest.raises(error):
            hooks.plan_install(host, path, project="p")
        code, out, _ = cli("hooks", "install", host, "--settings", str(path), "--json")
        assert code != 0 and json.loads(out)["error"]["code"] in ("conflict", "invalid-input")
        assert path.read_text(encoding="utf-8") == text
    with pytest.raises(InvalidInput, match="unknown host"):
        hooks.plan_install("emacs")


def test_mixed_group_keeps_the_users_hook(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    cmds = hooks.Commands.for_python()
    mixed = {
        "hooks": {
            "UserPromptSubmit": [
                {
                    "hooks": [
                        {"type": "command", "command": "mine"},
                        {"type": "command", "command": cmds.hint, "timeout": 15},
                    ]
                }
            ]
        }
    }
    path.write_text(json.dumps(mixed, indent=2) + "\n", encoding="utf-8")
    after = json.loads(hooks.plan_uninstall("claude-code", path).after or "")
    assert after == {
        "hooks": {
            "UserPromptSubmit": [{"hooks": [mixed["hooks"]["UserPromptSubmit"][0]["hooks"][0]]}]
        }
    }


def test_session_end_command_imports_the_transcript(tmp_path: Path, cw_home: Path) -> None:
    """Install for Claude Code, then run the configured SessionEnd command exactly as the host
    would, with a simulated SessionEnd payload on stdin."""
    settings = tmp_path / "settings.json"
    hooks.apply(hooks.plan_install("claude-code", settings))
    command = json.loads(settings.read_text())["hooks"]["SessionEnd"][0]["hooks"][0]["command"]
    transcript = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {"session": "s9", "id": "u1", "role": "user", "text": "hello archive", "project": "p"},
            {"session": "s9", "id": "a1", "role": "assistant", "text": "hi", "project": "p"},
        ],
    )
    payload = {
        "session_id": "s9",
        "transcript_path": str(transcript),
        "cwd": str(tmp_path),
        "hook_event_name": "SessionEnd",
        "reason": "prompt_input_exit",
    }
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(
        shlex.split(command),
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stdout == "", done.stderr
    with Archive.open(cw_home, embedded=True) as archive:
        sessions, _ = archive.sessions()
    assert [s.sessionId for s in sessions] == ["s9"]
    # A broken payload or store never fails the host: exit 0, a line on stderr.
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    bad = subprocess.run(
        shlex.split(command),
        input="{",
        capture_output=True,
        text=True,
        env={**env, "CW_HOME": str(blocker / "home")},
        timeout=60,
        check=False,
    )
    assert bad.returncode == 0 and "cw session-end:" in bad.stderr
    assert hooks.main(["nonsense"]) == 2


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_pi_extension_injects_the_hint_and_imports_on_shutdown(tmp_path: Path) -> None:
    """Run the generated pi extension under node with a fake ``pi`` and a fake python that
    records its arguments and stdin and answers with a hint."""
    fake = tmp_path / "fake-python"
    log = tmp_path / "calls.jsonl"
    fake.write_text(
        "#!/bin/sh\n"
        f'input=$(cat); printf \'{{"args": "%s", "stdin": %s}}\\n\' "$*" "$input" >> {log}\n'
        'case "$*" in *hook_client*) printf "HINT: archived evidence\\n\\n# Memory";; esac\n'
    )
    fake.chmod(0o755)
    ext = tmp_path / "cw.mjs"
    ext.write_text(hooks.plan_install("pi", tmp_path / "cw.ts", python=str(fake)).after or "")
    harness = tmp_path / "harness.mjs"
    harness.write_text(
        f"import ext from {json.dumps(str(ext))};\n"
        "const handlers = {};\n"
        "ext({ on: (name, fn) => (handlers[name] = fn) });\n"
        "const ctx = { cwd: '/work/alpha', sessionManager: {\n"
        "  getSessionId: () => 'pi-1', getSessionFile: () => '/tmp/pi-1.jsonl' } };\n"
        "const result = await handlers.before_agent_start({ prompt: 'why REAP_DRAIN?' }, ctx);\n"
        "await handlers.session_shutdown({ reason: 'quit' }, ctx);\n"
        "handlers.agent_end({ messages: [] }, ctx);  // fire and forget\n"
        "console.log(JSON.stringify(result));\n"
    )
    done = subprocess.run(
        ["node", str(harness)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result == {
        "message": {
            "customType": "cw-hint",
            "content": "HINT: archived evidence\n\n# Memory",
            "display": True,
        }
    }
    deadline = time.monotonic() + 10
    while len(log.read_text().splitlines()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls[0]["args"] == "-m cwcore.hosts.hook_client"
    assert calls[0]["stdin"]["prompt"] == "why REAP_DRAIN?"
    assert calls[0]["stdin"]["session_id"] == "pi-1"
    assert calls[0]["stdin"]["hook_event_name"] == "UserPromptSubmit"
    assert calls[1]["args"] == "-m cwcore.hosts.hooks session-end"
    assert calls[1]["stdin"]["transcript_path"] == "/tmp/pi-1.jsonl"
    assert calls[2]["args"] == calls[1]["args"] and calls[2]["stdin"]["hook_event_name"] == "Stop"

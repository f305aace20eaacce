"""``cw`` as a newcomer and a script meet it: forget, recall, usage errors, a CW_HOME that is a
file. The cases run in-process through the root command (:func:`tests.faults.helpers.run_cw`);
the usage errors and the recall exit codes also run the real ``cw`` in a subprocess, so the
exit status and the streams a shell sees are checked once end to end, and asking on a terminal
needs a real process behind a pty.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from cwtui.cli import app
from tests.faults.helpers import cw_env, json_lines, run_cw, run_cw_process
from tests.helpers import conversation, real_daemon_env, write_jsonl

BOX = ("╭", "╰", "│")


def _import(tmp_path: Path, *sessions: str) -> None:
    rows = []
    for session in sessions:
        rows += conversation(session, 2)
    done = run_cw("import", write_jsonl(tmp_path / "sessions.jsonl", rows))
    assert done.returncode == 0, done.stderr


def _session_ids() -> list[str]:
    listed = run_cw("sessions", "--json")
    return sorted(s["sessionId"] for s in json_lines(listed.stdout)[0]["sessions"])


def _first_document(session: str) -> str:
    body = json_lines(run_cw("show", session, "--json").stdout)[0]
    return str(body["documents"][0]["documentId"])


# -- forget ------------------------------------------------------------------------------------


def test_a_second_forget_of_an_id_is_not_found_and_spares_the_longer_id(tmp_path: Path) -> None:
    _import(tmp_path, "sess-1", "sess-12")
    first = run_cw("forget", "sess-1", "--yes")
    assert first.returncode == 0, first.stderr
    assert first.stderr.startswith("forgetting session sess-1 (project proj, 2 document(s)")
    second = run_cw("forget", "sess-1", "--yes")
    assert second.returncode == 3
    assert second.stderr.splitlines() == [
        "cw: no session or document 'sess-1' ('sess-12' starts with it: give the full id to "
        "forget that one)"
    ]
    as_json = run_cw("forget", "sess-1", "--yes", "--json")
    assert as_json.returncode == 3
    assert json_lines(as_json.stdout)[0]["error"]["code"] == "not-found"
    assert _session_ids() == ["sess-12"]


def test_forget_without_a_terminal_needs_yes(tmp_path: Path) -> None:
    _import(tmp_path, "sess-12")
    refused = run_cw("forget", "sess-12")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        "cw: forget asks for confirmation on a terminal: pass --yes to skip it"
    ]
    as_json = run_cw("forget", "sess-12", "--json")
    assert as_json.returncode == 2
    assert json_lines(as_json.stdout) == [
        {
            "error": {
                "code": "invalid-input",
                "message": "forget asks for confirmation on a terminal: pass --yes to skip it",
            }
        }
    ]
    assert _session_ids() == ["sess-12"]


def test_forget_of_a_document_id_follows_the_same_rules(tmp_path: Path) -> None:
    _import(tmp_path, "sess-1")
    doc = _first_document("sess-1")
    assert run_cw("forget", doc).returncode == 2
    done = run_cw("forget", doc, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    report = json_lines(done.stdout)[0]
    assert report["target"]["kind"] == "document" and report["target"]["id"] == doc
    assert report["documents"] == 1 and report["sessions"] == 0
    again = run_cw("forget", doc, "--yes")
    assert again.returncode == 3
    assert again.stderr.splitlines() == [f"cw: no session or document {doc!r}"]


def _forget_on_a_terminal(target: str, answer: str) -> subprocess.CompletedProcess[str]:
    """``cw forget TARGET`` with a pseudo-terminal as stdin, ``answer`` already typed."""
    main, side = os.openpty()
    try:
        os.write(main, f"{answer}\n".encode())  # the terminal buffers it until cw asks
        return subprocess.run(
            [sys.executable, "-m", "cwtui.cli", "forget", target],
            stdin=side,
            capture_output=True,
            text=True,
            env=cw_env(),
            timeout=300,
            check=False,
        )
    finally:
        os.close(side)
        os.close(main)


def test_forget_on_a_terminal_names_the_full_id_before_asking(tmp_path: Path) -> None:
    _import(tmp_path, "alpha-session", "beta-session")
    declined = _forget_on_a_terminal("alph", "n")
    assert declined.returncode == 0, declined.stderr
    assert declined.stderr.startswith(
        "Forget session alpha-session (project proj, 2 document(s), 4 message(s)) permanently?"
    )
    assert "nothing forgotten" in declined.stderr
    assert _session_ids() == ["alpha-session", "beta-session"]
    accepted = _forget_on_a_terminal("alph", "y")
    assert accepted.returncode == 0, accepted.stderr
    assert accepted.stdout.startswith("forgot 1 session(s), 2 document(s)")
    assert _session_ids() == ["beta-session"]


# -- recall ------------------------------------------------------------------------------------


def test_recall_of_a_document_id_renders_without_json(tmp_path: Path) -> None:
    _import(tmp_path, "sess-1")
    doc = _first_document("sess-1")
    shown = run_cw("recall", doc)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"{doc} v1 · turn · session sess-1")
    assert "question 0 about parseConfig" in shown.stdout


def test_recall_exit_codes_are_the_same_with_and_without_json(tmp_path: Path) -> None:
    _import(tmp_path, "sess-1")
    hits = json_lines(run_cw("search", "parseConfig", "--json").stdout)[0]["results"]
    locator = hits[0]["locator"]
    assert run_cw("forget", "sess-1", "--yes").returncode == 0
    for target, status, code in (("not-a-locator", "locator-invalid", 2), (locator, "expired", 3)):
        human = run_cw_process("recall", target)
        machine = run_cw_process("recall", target, "--json")
        assert json_lines(machine.stdout)[0]["status"] == status
        assert human.stdout.startswith(f"{status}: ")
        assert (human.returncode, machine.returncode) == (code, code)


# -- usage errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sessions", "--bogus"), "No such option: --bogus (see 'cw sessions --help')"),
        (("show",), "Missing argument 'session' (see 'cw show --help')"),
        (("index", "--bogus"), "No such option: --bogus (see 'cw index --help')"),
        (("no-such-command",), "No such command 'no-such-command' (see 'cw --help')"),
    ],
)
def test_usage_errors_are_one_line_or_one_json_error(args: tuple[str, ...], message: str) -> None:
    human = run_cw_process(*args)
    assert (human.returncode, human.stdout) == (2, "")
    assert human.stderr == f"cw: {message}\n"
    machine = run_cw_process(*args, "--json")
    assert (machine.returncode, machine.stderr) == (2, "")
    assert json_lines(machine.stdout) == [{"error": {"code": "invalid-input", "message": message}}]


def _commands() -> list[list[str]]:
    def walk(command: object, path: list[str]) -> list[list[str]]:
        subs = getattr(command, "commands", None)
        if not subs:
            return [path]
        return [p for name, sub in sorted(subs.items()) for p in walk(sub, [*path, name])]

    return walk(typer.main.get_command(app), [])


def test_every_command_rejects_a_bad_option_in_one_line() -> None:
    runner = CliRunner()
    commands = _commands()
    assert len(commands) > 30 and ["forget"] in commands and ["memory", "add"] in commands
    for command in commands:
        where = " ".join(["cw", *command])
        human = runner.invoke(app, [*command, "--no-such-option"])
        assert human.exit_code == 2, (command, human.output)
        assert human.stderr == (f"cw: No such option: --no-such-option (see '{where} --help')\n"), (
            command
        )
        assert not any(mark in human.output for mark in BOX), command
        machine = runner.invoke(app, [*command, "--no-such-option", "--json"])
        assert machine.exit_code == 2, command
        assert json_lines(machine.stdout)[0]["error"]["code"] == "invalid-input", command


# -- CW_HOME -----------------------------------------------------------------------------------


def test_cw_home_that_is_a_file_is_said_plainly(
    tmp_path: Path, cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    not_a_dir = tmp_path / "home-file"
    not_a_dir.write_text("not a directory\n")
    expected = f"cw: CW_HOME {not_a_dir} is not a directory\n"
    embedded = run_cw("sessions", env=cw_env(CW_HOME=str(not_a_dir)))
    assert (embedded.returncode, embedded.stderr) == (5, expected)
    below = run_cw("sessions", "--json", env=cw_env(CW_HOME=str(not_a_dir / "store")))
    assert below.returncode == 5
    assert json_lines(below.stdout)[0]["error"]["message"] == (
        f"CW_HOME {not_a_dir / 'store'} cannot be created: {not_a_dir} is not a directory"
    )
    with real_daemon_env(cw_home, monkeypatch) as daemon_env:
        env = cw_env(daemon_env, CW_HOME=str(not_a_dir))
        for args in (("sessions",), ("daemon", "start")):
            through_daemon = run_cw(*args, env=env)
            assert (through_daemon.returncode, through_daemon.stderr) == (5, expected), args


def test_a_config_broken_while_the_daemon_runs_is_reported_by_every_command(
    cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: the daemon reads config.toml when it starts, so a file broken after that was
    ignored by every command that reached it (``cw sessions`` answered as if nothing were
    wrong). Each command reads it too: one line, exit 2 (invalid input)."""
    with real_daemon_env(cw_home, monkeypatch) as daemon_env:
        env = cw_env(daemon_env, CW_HOME=str(cw_home))
        assert run_cw("sessions", env=env).returncode == 0  # the daemon is up
        (cw_home / "config.toml").write_text("[broken\n", encoding="utf-8")
        for args in (("sessions",), ("search", "anything"), ("sessions", "--json")):
            done = run_cw(*args, env=env)
            assert done.returncode == 2, (args, done.stdout, done.stderr)
            where = done.stdout if "--json" in args else done.stderr
            assert where.count("\n") == 1 and "config.toml" in where, (args, where)
        (cw_home / "config.toml").unlink()
        assert run_cw("sessions", env=env).returncode == 0

"""``cw search|recall|preflight … --json`` through the lean path (``cwtui.lean``): the same answer
and exit status as the full CLI, without Typer, and the full CLI whenever the lean path does not
apply."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwtui import lean
from tests.helpers import REPO, real_daemon_env

DEMO = REPO / "cwcore" / "demo"


@pytest.mark.parametrize(
    ("argv", "fields"),
    [
        (["lease", "--json"], {"limit": 10, "scope": "all", "query": "lease"}),
        (
            ["--json", "--limit=3", "x y", "--session", "a", "--session=b", "--strict"],
            {"limit": 3, "scope": "all", "query": "x y", "sessions": ["a", "b"], "strict": True},
        ),
        (
            ["q", "--semantic", "never", "--no-rerank", "--json", "--project", "p"],
            {
                "limit": 10,
                "scope": "all",
                "semanticPolicy": "never",
                "query": "q",
                "project": "p",
                "rerank": False,
            },
        ),
        (["q", "--json", "--limit", "0"], {"limit": 0, "scope": "all", "query": "q"}),
    ],
)
def test_parse_builds_the_fields_the_full_cli_builds(argv: list[str], fields: Any) -> None:
    assert lean.parse(argv) == fields
    assert list(lean.parse(argv) or {}) == list(fields)  # the same order as the full CLI


def test_parse_recall_and_preflight() -> None:
    recall, preflight = lean.COMMANDS["recall"], lean.COMMANDS["preflight"]
    assert lean.parse(["cwl2.x", "--json", "--max-tokens=500"], recall) == {
        "locator": "cwl2.x",
        "neighbors": 1,
        "maxTokens": 500,
        "sessionIds": [],
    }
    assert lean.parse(["-", "--json", "--session", "s"], recall) == {
        "locator": "-",  # read from stdin once the daemon answered
        "neighbors": 1,
        "maxTokens": 3000,
        "sessionIds": ["s"],
    }
    assert lean.parse(["hi", "--session", "s", "--visible", "a", "--visible", "b", "--json"],
                      preflight) == {"message": "hi", "session": "s",
                                     "excludeVisibleSourceKeys": ["a", "b"]}  # fmt: skip
    assert lean.parse(["hi", "--json"], preflight) is None  # --session is required
    assert lean.parse(["--json", "--session", "s"], preflight) is None  # no message
    assert lean.parse(["--json"], recall) is None


def test_parse_sessions_as_the_full_cli_builds_its_request() -> None:
    """As cwcore.api.Archive.sessions: the limit always, the sort only when not the default,
    ``ascending`` only when asked; no positional argument."""
    sessions = lean.COMMANDS["sessions"]
    assert lean.parse(["--json"], sessions) == {"limit": 50}
    assert lean.parse(
        ["--json", "--sort", "started", "--match=lease", "--project", "p", "--limit", "5"],
        sessions,
    ) == {"limit": 5, "project": "p", "match": "lease"}
    fields = lean.parse(
        ["--asc", "--json", "--sort=messages", "--cursor", "c", "--since", "2026-01-01",
         "--agent", "codex"],
        sessions,
    )  # fmt: skip
    assert fields == {
        "limit": 50,
        "agent": "codex",
        "since": "2026-01-01",
        "cursor": "c",
        "sort": "messages",
        "ascending": True,
    }
    assert list(fields or {}) == ["limit", "agent", "since", "cursor", "sort", "ascending"]
    for declined in (
        ["lease", "--json"],  # sessions takes no argument
        ["--json", "--asc", "--asc"],
        ["--json", "--asc=true"],
        ["--json", "--limit", "-1"],
        ["--json", "--limit", "many"],
        ["--json", "--sort", "a", "--sort", "b"],
        ["--json", "--help"],
        ["--json", "-h"],
        ["--json", "--query", "x"],
        ["--limit", "3"],  # no --json: the table is the full CLI's
        ["--json", "--since", "30d"],
    ):
        assert lean.parse(declined, sessions) is None, declined


@pytest.mark.parametrize(
    "argv",
    [
        ["q"],  # no --json: the table is the full CLI's
        ["q", "--json", "--help"],
        ["--json", "--batch", "f.jsonl"],
        ["q", "--json", "--limit", "ten"],
        ["q", "--json", "--limit"],
        ["q", "--json", "--scope", "--strict"],
        ["a", "b", "--json"],
        ["q", "--json", "--json"],
        ["q", "--json", "--limit", "3", "--limit", "4"],
        ["q", "--json", "-h"],
        ["--", "-q", "--json"],
        ["q", "--json", "--strict=1"],
        ["q", "--json", "--unknown", "x"],
        ["q", "--json", "--since", "7d"],  # a span: the full CLI's clock makes it an instant
        ["q", "--json", "--until=24h"],
    ],
)
def test_parse_declines_what_the_full_cli_must_explain(argv: list[str]) -> None:
    assert lean.parse(argv) is None


@given(st.lists(st.text(max_size=12), max_size=8))
def test_parse_never_raises(argv: list[str]) -> None:
    fields = lean.parse(argv)
    assert fields is None or (fields["scope"] and isinstance(fields["limit"], int))


def test_without_a_running_daemon_the_full_cli_runs(
    cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """CW_EMBEDDED, or no daemon listening: the lean path declines, and reads no stdin."""
    assert lean.run("search", ["q", "--json"]) is None
    monkeypatch.delenv("CW_EMBEDDED")
    monkeypatch.setattr("sys.stdin", None)  # reading it would raise
    assert lean.run("search", ["q", "--json"]) is None
    cw_home.mkdir(parents=True)
    runtime = tempfile.mkdtemp(prefix="cwl", dir="/tmp")  # short: a socket path has a limit
    monkeypatch.setenv("XDG_RUNTIME_DIR", runtime)
    try:
        assert lean.run("recall", ["-", "--json"]) is None
        assert lean.run("export", ["--json"]) is None
        assert lean.run("sessions", ["--json"]) is None
    finally:
        shutil.rmtree(runtime, ignore_errors=True)


def _run(env: dict[str, str], module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", module, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


#: What differs between two calls of the same request: timings, and signed locators (each
#: carries its own signature).
VOLATILE = {"timing_ms", "ms", "latencyMs", "callMs", "locator", "frozen"}


def _comparable(text: str) -> Any:
    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    return strip(json.loads(text))


@pytest.mark.slow
def test_the_lean_path_answers_as_the_full_cli(
    cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No semantic stage: the daemon embeds the demo in the background, and a search before and
    # a search after a window's vector lands would differ for that reason alone.
    with real_daemon_env(cw_home, monkeypatch, CW_SEMANTIC_RETRIEVAL="false") as env:
        started = subprocess.run(
            [sys.executable, "-m", "cwtui.cli", "import", str(DEMO)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert started.returncode == 0, started.stderr
        found = json.loads(_run(env, "cwtui.cli", "search", "lease", "--json").stdout)
        locator = found["results"][0]["locator"]
        session = found["results"][0]["source"]["sessionId"]
        for args in (
            ["recall", locator, "--json"],
            ["recall", locator, "--json", "--neighbors", "0", "--max-tokens=200"],
            ["recall", "cwl2.not-a-locator", "--json"],  # exit 2, an answer not an error
            ["recall", locator, "--json", "--max-tokens", "0"],
            [
                "preflight",
                "what did we decide about lease renewals?",
                "--json",
                "--session",
                session,
                "--message-key",
                "user:lean",
            ],
            [
                "preflight",
                "what did we decide about lease renewals?",
                "--json",
                "--session",
                session,
                "--message-key",
                "user:lean",
            ],  # the frozen repeat
            ["search", "lease", "--json", "--limit", "3"],
            ["search", "ERR_LEASE_EXPIRED", "--json", "--semantic", "never"],
            ["search", "lease", "--json", "--limit", "0"],  # refused by the engine's check
            ["search", "lease", "--json", "--scope", "nowhere"],
            ["search", "lease", "--json", "--session", "no-such-session"],
            ["sessions", "--json"],
            ["sessions", "--json", "--limit", "2"],
            ["sessions", "--json", "--sort", "messages", "--asc", "--limit=3"],
            ["sessions", "--json", "--match", "lease", "--sort", "started"],
            ["sessions", "--json", "--project", "no-such-project"],
            ["sessions", "--json", "--since", "2020-01-01", "--agent", "claude-code"],
            ["sessions", "--json", "--limit", "0"],  # refused: the same error, exit status
            ["sessions", "--json", "--sort", "nowhere"],
            ["sessions", "--json", "--since", "not-a-date"],
            ["sessions", "--json", "--cursor", "not-a-cursor"],
        ):
            lean_run = _run(env, "cwtui.launch", *args)
            full_run = _run(env, "cwtui.cli", *args)
            assert lean_run.returncode == full_run.returncode, (args, lean_run.stdout)
            assert _comparable(lean_run.stdout) == _comparable(full_run.stdout), args
            if args[0] == "sessions":  # nothing volatile in a listing: the same bytes
                assert lean_run.stdout == full_run.stdout, args
            # The lean path imported neither Typer nor Rich; the full CLI did.
            lean_modules = {
                line.rsplit("|", 1)[-1].strip() for line in lean_run.stderr.splitlines()
            }
            assert not {"typer", "rich", "cwtui.cli"} & lean_modules, args
            assert "typer" in full_run.stderr
        # The next page, from the cursor a first page gave.
        first = json.loads(_run(env, "cwtui.launch", "sessions", "--json", "--limit", "1").stdout)
        assert first["next_cursor"]
        args = ["sessions", "--json", "--limit", "1", "--cursor", first["next_cursor"]]
        lean_run, full_run = _run(env, "cwtui.launch", *args), _run(env, "cwtui.cli", *args)
        assert lean_run.returncode == full_run.returncode == 0
        assert lean_run.stdout == full_run.stdout
        assert json.loads(lean_run.stdout)["sessions"] != first["sessions"]


def test_the_lean_span_pattern_is_the_filters_one() -> None:
    from cwcore.retrieve import filters

    assert lean._SPAN.pattern == filters._SPAN.pattern


def test_the_lean_json_escapes_are_the_full_clis() -> None:
    """Both write the same bytes for the same answer: U+2028 / U+2029 escaped by one and raw
    from the other would split the line for a reader using ``str.splitlines()``."""
    from cwtui import output

    assert lean._JSON_UNSAFE.pattern == output._JSON_UNSAFE.pattern
    assert output.json_safe('"a\u2028b\u2029c"') == '"a\\u2028b\\u2029c"'
    assert len(output.json_safe('{"p": "a\u2028b"}').splitlines()) == 1

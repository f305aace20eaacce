"""A small, fixed archive for the TUI tests, imported through the Archive like a user would.

The top-level conftest gives every test its own ``CW_HOME``, an embedded store and a fixed clock
(``CW_NOW`` = 2026-11-20T12:00Z), so sessions, timestamps and sparklines render the same every run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.keys import _character_to_key
from textual.widgets import Input
from textual.worker import WorkerCancelled, WorkerState

from cwcore.api import Archive
from cwtui.app import CwApp, make_app
from tests.helpers import HomeCache


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME: the index view's source coverage (and anything else that looks at the
    agents' standard locations) sees no files of the machine running the tests."""
    home = tmp_path / "user-home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "APPDATA"):
        monkeypatch.delenv(name, raising=False)
    return home


SIZE = (120, 36)

LONG_OUTPUT = "\n".join(f"tests/test_case_{n:02}.py::test_{n:02} PASSED" for n in range(1, 31))


def _line(session: str, id: str, role: str, text: str, ts: str, **extra: Any) -> dict[str, Any]:
    return {"session": session, "id": id, "role": role, "text": text, "timestamp": ts, **extra}


def archive_lines() -> list[dict[str, Any]]:
    """Four sessions, three projects; the first has Markdown, code, a tool call, long output."""
    a1 = {"project": "alpha", "agent": "claude-code"}
    lines = [
        _line(
            "s-alpha-1",
            "u1",
            "user",
            "How do I parse `--since` dates?",
            "2026-11-18T09:30:00Z",
            **a1,
        ),
        _line(
            "s-alpha-1",
            "a1",
            "assistant",
            "Use **parse_time**:\n\n```python\nfrom cwcore.clock import parse_time\n"
            "print(parse_time('2026-11-01'))\n```",
            "2026-11-18T09:30:05Z",
            **a1,
        ),
        _line(
            "s-alpha-1",
            "a2",
            "assistant",
            "",
            "2026-11-18T09:30:10Z",
            tool_name="Bash",
            tool_call_id="call-1",
            tool_input={"command": "pytest -q tests"},
            **a1,
        ),
        _line(
            "s-alpha-1",
            "t1",
            "tool",
            LONG_OUTPUT,
            "2026-11-18T09:30:40Z",
            tool_name="Bash",
            tool_call_id="call-1",
            **a1,
        ),
        _line("s-alpha-1", "a3", "assistant", "All 30 tests pass.", "2026-11-18T09:31:00Z", **a1),
        _line(
            "s-alpha-1",
            "u2",
            "user",
            "Thanks! Now export the session.",
            "2026-11-18T09:32:00Z",
            **a1,
        ),
        _line(
            "s-alpha-1",
            "a4",
            "assistant",
            "Use `cw export s-alpha-1`.",
            "2026-11-18T09:32:30Z",
            **a1,
        ),
    ]
    b = {"project": "beta", "agent": "codex"}
    lines += [
        _line("s-beta-1", "u1", "user", "Rename the config loader.", "2026-11-15T14:00:00Z", **b),
        _line(
            "s-beta-1",
            "a1",
            "assistant",
            "Renamed `load` to `load_settings`.",
            "2026-11-15T14:01:00Z",
            **b,
        ),
    ]
    a2 = {"project": "alpha", "agent": "codex"}
    lines += [
        _line(
            "s-alpha-2",
            "u1",
            "user",
            "Why is the daemon socket path so short?",
            "2026-11-05T08:00:00Z",
            **a2,
        ),
        _line(
            "s-alpha-2",
            "a1",
            "assistant",
            "Unix socket paths are limited to about 108 bytes.",
            "2026-11-05T08:00:30Z",
            **a2,
        ),
    ]
    g = {"project": "gamma", "agent": "pi"}
    lines += [_line("s-gamma-1", "u1", "user", "An old question.", "2026-10-01T10:00:00Z", **g)]
    return lines


def topic_lines() -> list[dict[str, Any]]:
    """Four sessions of project delta on four days, all about the job queue backend: a topic
    for the search tests (several hits, several bands, a timeline)."""
    d = {"project": "delta", "agent": "claude-code"}
    talk = [
        (
            "s-delta-1",
            "2026-11-10T09:00:00Z",
            "The job queue on SQLite is slow under load; evaluate a RocksDB queue backend.",
            "Measured 1.2k enqueues/s on the SQLite queue backend with 8 workers.",
        ),
        (
            "s-delta-2",
            "2026-11-12T10:00:00Z",
            "Decision: move the queue backend to RocksDB and make it the default.",
            "Wrote ADR 0007: the job queue backend is RocksDB (rocksdict).",
        ),
        (
            "s-delta-3",
            "2026-11-15T11:00:00Z",
            "Revert the RocksDB queue backend: a second worker process fails on the LOCK file.",
            "Reverted. The queue is back on SQLite in WAL mode (ADR 0008).",
        ),
        (
            "s-delta-4",
            "2026-11-18T12:00:00Z",
            "Why is the queue backend SQLite again?",
            "Because a RocksDB database admits one process; our workers are processes.",
        ),
    ]
    lines = []
    for session, stamp, question, answer in talk:
        lines.append(_line(session, "u1", "user", question, stamp, **d))
        lines.append(_line(session, "a1", "assistant", answer, stamp[:-3] + "30Z", **d))
    return lines


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _import_into(home: Path, rows: list[dict[str, Any]]) -> None:
    source = write_jsonl(home.parent / "sessions.jsonl", rows)
    with Archive.open(home, embedded=True) as archive:
        summary = archive.import_paths([source])
    assert not summary.errors, summary.errors


@pytest.fixture
def filled_home(cw_home: Path, home_cache: HomeCache) -> Path:
    """``CW_HOME`` with the four sessions of :func:`archive_lines` imported (a copy of an
    archive built once per test process: the test may write to it)."""
    return home_cache.clone("tui-filled", lambda home: _import_into(home, archive_lines()), cw_home)


@pytest.fixture
def search_home(cw_home: Path, home_cache: HomeCache) -> Path:
    """``CW_HOME`` with :func:`archive_lines` and the queue topic of :func:`topic_lines` (a copy,
    like :func:`filled_home`)."""
    rows = archive_lines() + topic_lines()
    return home_cache.clone("tui-search", lambda home: _import_into(home, rows), cw_home)


AppFactory = Callable[..., CwApp]


@pytest.fixture
def app_for() -> AppFactory:
    """``app_for(home)``: the real app over an embedded archive at ``home`` (opened lazily)."""

    def build(home: Path, archive_cls: type[Archive] = Archive) -> CwApp:
        return make_app(lambda: archive_cls.open(home, embedded=True))

    return build


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def settle(pilot: Any) -> None:
    """Wait until no worker is running and every message they posted has been handled.

    Handling a message may start another worker (a page near the end, a reload), so repeat until
    quiet. Never sleeps on a timer.
    """
    app = pilot.app
    for _ in range(50):
        await _wait_for_workers(app)
        await pilot.pause()
        if not any(worker.is_running for worker in app.workers):
            await pilot.pause()
            return
    raise AssertionError("workers never settled")


async def type_text(pilot: Any, text: str) -> None:
    """Type ``text`` as one burst (every key posted in one tick, as a paste or a fast typist
    delivers it), settle once, and check that the focused input holds it.

    For typing that sets a test up (a query, a reason, an id). ``pilot.press(*text)`` waits for
    the app to go idle twice per key, at least two of Textual's idle steps a letter and far more
    under load; tests of how keystrokes are handled one by one press them one by one.
    """
    app = pilot.app
    for character in text:
        # The key names ``pilot.press`` gives a single character (``space``, ``colon``, ...).
        app.post_message(events.Key(_character_to_key(character), character))
    await settle(pilot)
    focused = app.focused
    assert isinstance(focused, Input), f"{text!r} typed, but {focused!r} has the focus"
    assert text in focused.value, f"{text!r} typed, the input holds {focused.value!r}"


async def _wait_for_workers(app: Any) -> None:
    """Wait for the app's started workers. A worker cancelled meanwhile (an exclusive group's
    older search, say) is finished, not an error: ``WorkerManager.wait_for_complete`` raised
    ``WorkerCancelled`` for it, which made bursts fail at random. A worker not started yet is
    waited for on the next round; a failed worker still fails the test."""
    started = [worker for worker in app.workers if worker.state != WorkerState.PENDING]
    outcomes = await asyncio.gather(*(worker.wait() for worker in started), return_exceptions=True)
    for outcome in outcomes:
        if isinstance(outcome, BaseException) and not isinstance(outcome, WorkerCancelled):
            raise outcome

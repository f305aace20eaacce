"""Every test gets its own CW_HOME, an embedded store and a fixed clock unless it says otherwise.

Archives that many tests start from are built once per test process and
copied into each test's own CW_HOME (:class:`tests.helpers.HomeCache`), so a test that writes
still writes only to its own copy.

Hypothesis runs under one of two profiles: ``fast`` (the default, for ``make test``) and
``thorough`` (``CW_HYPOTHESIS_PROFILE=thorough``, set by ``make test-slow``). Tests that ask for
many examples scale their count with :func:`tests.helpers.examples`.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import textual._wait
import typer.main
import typer.testing
from hypothesis import is_hypothesis_test, settings

from cwcore.api import Archive
from cwcore.semantic import models
from cwcore.semantic.embedder import Embedder
from tests.helpers import HYPOTHESIS_PROFILE, HomeCache

FIXED_NOW = "2026-11-20T12:00:00Z"

# No deadline in either profile: a deadline measures wall time, which on a loaded 2-core machine
# says more about the other processes than about the code. Tests without their own count run 50
# examples in the fast profile and Hypothesis's usual 100 in the thorough one.
settings.register_profile("fast", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=100, deadline=None)
settings.load_profile(HYPOTHESIS_PROFILE)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every Hypothesis test ``property``: ``make test-slow`` runs them again under the
    thorough profile, so the fast tier's smaller example counts lose no coverage overall."""
    for item in items:
        if is_hypothesis_test(getattr(item, "obj", None)):
            item.add_marker(pytest.mark.property)


# Typer builds the whole click command tree from the app's function signatures on every
# CliRunner.invoke and every app() call: 0.5-1 s for cw's commands (mostly evaluating
# annotations), the larger part of an in-process CLI test. The tree depends only on the commands
# the app registers, which no test changes, so each process builds it once per app.
_build_command = typer.main.get_command
_built_commands: dict[int, tuple[typer.Typer, Any]] = {}


def _cached_command(app: typer.Typer) -> Any:
    built = _built_commands.get(id(app))
    if built is None or built[0] is not app:
        built = _built_commands[id(app)] = (app, _build_command(app))
    return built[1]


typer.main.get_command = _cached_command
typer.testing._get_command = _cached_command  # type: ignore[attr-defined]


# Textual's pilot decides the app is idle by sleeping in steps of SLEEP_GRANULARITY (20 ms) until
# the process used under SLEEP_IDLE (5% of a step) of CPU in one; every pilot.press waits so
# twice per key and every pause once, so a typed query of ten letters spent at least 0.4 s
# asleep, and 38-60% of a TUI test's wall time went to these sleeps under load. Steps of 5 ms
# with the same 5% share keep the same test of idleness at a finer grain. (The TUI tests' own
# settle() waits for the app's workers explicitly before it pauses.)
assert textual._wait.SLEEP_GRANULARITY == 1 / 50, "Textual's idle wait changed: review this"
textual._wait.SLEEP_GRANULARITY = 0.005
textual._wait.SLEEP_IDLE = textual._wait.SLEEP_GRANULARITY / 20


#: The summary-line category of tests skipped because the sibling ``../shared/data`` (the real
#: agent logs) is absent: ``1223 passed, 8 skipped: ../shared/data absent``, so a run without the
#: data says what it did not check.
SHARED_DATA_ABSENT = "skipped: ../shared/data absent"


@pytest.hookimpl(tryfirst=True)
def pytest_report_teststatus(report: pytest.TestReport) -> tuple[str, str, str] | None:
    """Count a skip whose reason names ``shared/data`` under :data:`SHARED_DATA_ABSENT`.

    Runs where the terminal reports (with xdist, the controller), so the count is the whole
    run's. Other skips keep pytest's own category."""
    if report.skipped and not hasattr(report, "wasxfail"):
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and "shared/data" in str(longrepr[2]):
            return SHARED_DATA_ABSENT, "s", "SKIPPED (../shared/data absent)"
    return None


@pytest.fixture(scope="session")
def home_cache(tmp_path_factory: pytest.TempPathFactory) -> HomeCache:
    return HomeCache(tmp_path_factory.mktemp("built-homes"))


@pytest.fixture(autouse=True)
def cw_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "cw-home"
    monkeypatch.setenv("CW_HOME", str(home))
    monkeypatch.setenv("CW_EMBEDDED", "1")
    monkeypatch.setenv("CW_NOW", FIXED_NOW)
    for name in ("CW_PROJECT", "CW_SESSION", "CW_SEMANTIC_RETRIEVAL", "CW_RERANKER_ENABLED"):
        monkeypatch.delenv(name, raising=False)
    return home


@pytest.fixture
def archive(cw_home: Path) -> Iterator[Archive]:
    with Archive.open(cw_home, embedded=True) as arch:
        yield arch


@pytest.fixture(scope="session")
def minilm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("minilm-home")
    models.install_minilm(home)
    return home


@pytest.fixture(scope="session")
def minilm(minilm_home: Path) -> Iterator[Embedder]:
    """The real model, loaded once with the network unavailable."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")

        def refuse(*args: object, **kwargs: object) -> None:
            raise OSError("network access attempted during an offline model load")

        mp.setattr(socket.socket, "connect", refuse)
        mp.setattr(socket.socket, "connect_ex", refuse)
        embedder = Embedder.for_home(minilm_home)
        embedder.load()
        embedder.embed(["warm up"])
    yield embedder
    embedder.close()

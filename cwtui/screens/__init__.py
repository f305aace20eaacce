"""The TUI's screens, and the registry of top-level ones.

Each top-level feature of the TUI is a Textual *mode*: a base screen with its own stack (the
sessions screen pushes transcripts onto the sessions stack; a search screen will push hit details
onto its own). :data:`MODES` lists them in order; :mod:`cwtui.app` turns every entry into an app
mode, a key binding (``1``, ``2``…) with the id ``cw.mode.<name>``, and a command palette entry.

Adding a screen for a new Archive feature is: write ``cwtui/screens/<name>.py`` with a
``Screen`` subclass that calls the Archive from thread workers (see :mod:`.common`), then add one
``ModeSpec`` here, its factory ``lazy("cwtui.screens.<name>", "<Class>")`` so the module loads
when the screen is first shown. Nothing else changes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.screen import Screen

from cwtui.screens.sessions import SessionsScreen


@dataclass(frozen=True)
class ModeSpec:
    """A top-level screen: ``name`` (mode and binding id), a ``title`` for people, the ``key``
    that switches to it, a one-line ``help``, and the ``factory`` that builds its base screen."""

    name: str
    title: str
    key: str
    help: str
    factory: Callable[[], Screen[Any]]


def lazy(module: str, name: str) -> Callable[[], Screen[Any]]:
    """A factory that imports ``module`` only when the screen is first shown, so screens other
    than the first cost nothing at start-up (first paint stays well under a second)."""

    def build() -> Screen[Any]:
        screen: Screen[Any] = getattr(importlib.import_module(module), name)()
        return screen

    build.__name__ = build.__qualname__ = f"lazy_{name}"
    return build


MODES: tuple[ModeSpec, ...] = (
    ModeSpec(
        "sessions",
        "Sessions",
        "1",
        "Projects and their sessions; open a transcript, export it",
        SessionsScreen,
    ),
    ModeSpec(
        "search",
        "Search",
        "2",
        "Search as you type; recall the exact source, open it, copy it, supersede it",
        lazy("cwtui.screens.search", "SearchScreen"),
    ),
    ModeSpec(
        "index",
        "Index",
        "3",
        "Index generation, per-handler outcomes, outbox depth and lag, the daemon",
        lazy("cwtui.screens.index", "IndexScreen"),
    ),
    ModeSpec(
        "hints",
        "Hints",
        "4",
        "Frozen preflight hints per session: outcomes, exact bytes, diagnostics, budget",
        lazy("cwtui.screens.hints", "HintsScreen"),
    ),
)

DEFAULT_MODE = MODES[0].name

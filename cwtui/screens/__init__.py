"""The TUI's screens, and the registry of top-level ones.

Each top-level feature of the TUI is a Textual *mode*: a base screen with its own stack (the
sessions screen pushes transcripts onto the sessions stack; a search screen will push hit details
onto its own). :data:`MODES` lists them in order; :mod:`cwtui.app` turns every entry into an app
mode, a key binding (``1``, ``2``…) with the id ``cw.mode.<name>``, and a command palette entry.

Adding a screen for a new Archive feature is: write ``cwtui/screens/<name>.py`` with a
``Screen`` subclass that calls the Archive from thread workers (see :mod:`.common`), then add one
``ModeSpec`` here. Nothing else changes.
"""

from __future__ import annotations

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


MODES: tuple[ModeSpec, ...] = (
    ModeSpec(
        "sessions",
        "Sessions",
        "1",
        "Projects and their sessions; open a transcript, export it",
        SessionsScreen,
    ),
)

DEFAULT_MODE = MODES[0].name

"""Plumbing every screen shares: the archive handle and how errors read.

The TUI never opens the store itself. It holds one :class:`ArchiveHandle` (created by
:func:`cwtui.app.make_app` from an archive factory) and calls the :class:`~cwcore.api.Archive`
facade through it, always from thread workers: opening may start the daemon, and every call is a
round trip, so none of it may run on the event loop (STYLE item 9).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from textual.app import App
from textual.message import Message

from cwcore.api import Archive, EmbeddedTransport
from cwcore.errors import CwError

ArchiveFactory = Callable[[], Archive]


class ArchiveHandle:
    """Opens the archive on first use and serializes calls to it.

    Contract: :meth:`use` may block (it opens the archive, then waits for any call in flight), so
    call it from thread workers only. A failed open is not remembered: the next :meth:`use` tries
    again, which is what a "retry" binding wants after the user starts the daemon. Calls are
    serialized because the embedded engine does not promise thread safety; the daemon client
    serializes on its one connection anyway, so nothing is lost.
    """

    def __init__(self, factory: ArchiveFactory) -> None:
        self._factory = factory
        self._archive: Archive | None = None
        self._lock = threading.RLock()
        #: Bumped (on the event loop) after the TUI changed the archive (forget, supersede);
        #: screens remember the value they loaded at and reload on resume when it moved.
        self.changes = 0

    def mark_changed(self) -> None:
        """Record that the archive changed, so screens showing older data reload on resume."""
        self.changes += 1

    @contextmanager
    def use(self) -> Iterator[Archive]:
        """The open archive, held exclusively for the duration of the ``with`` block."""
        with self._lock:
            if self._archive is None:
                self._archive = self._factory()
            yield self._archive

    def close(self, timeout: float = 5.0) -> bool:
        """Close the archive if it was ever opened (called once, when the app exits).

        Waits up to ``timeout`` seconds for a call in flight; if one is still running after
        that, leaves the archive to process exit rather than hang the quit. Returns whether the
        handle is closed.
        """
        if not self._lock.acquire(timeout=timeout):
            return False
        try:
            if self._archive is not None:
                archive, self._archive = self._archive, None
                archive.close()
            return True
        finally:
            self._lock.release()


def is_embedded(archive: Archive) -> bool:
    """Whether ``archive`` runs the engine in this process (no daemon to ask for its status)."""
    return isinstance(getattr(archive, "_transport", None), EmbeddedTransport)


def archive_handle(app: App[Any]) -> ArchiveHandle:
    """The handle of the running cw app (screens only ever run inside :class:`CwApp`)."""
    handle = getattr(app, "archive_handle", None)
    if not isinstance(handle, ArchiveHandle):
        raise RuntimeError("cw screens must run inside cwtui.app.CwApp")
    return handle


def error_text(exc: BaseException) -> str:
    """One line for people: the typed message of a cw error, else the exception's type and text."""
    if isinstance(exc, CwError):
        return exc.message
    return f"{type(exc).__name__}: {exc}"


class CallFailed(Message):
    """A screen's background call failed; ``text`` is the one-line error to show. Each screen
    subclasses it as its own ``Failed`` so Textual routes it to ``on_<screen>_failed``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

"""An Archive whose transport fails the test if a request reaches it: what a test of a
request record's own checks asks through, to show a bad request is refused before it is sent
(no store opened, no daemon started)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cwcore.api import Archive, OnEvent


class UnsentTransport:
    """A transport that raises AssertionError on any call."""

    @property
    def notices(self) -> list[str]:
        return []

    def call(
        self, method: str, params: dict[str, Any], on_event: OnEvent | None = None
    ) -> dict[str, Any]:
        raise AssertionError(f"{method} was sent")

    def close(self) -> None:
        pass


def unsent_archive(home: Path) -> Archive:
    """An Archive over :class:`UnsentTransport` (``home`` is never created or read)."""
    return Archive(UnsentTransport(), home)

"""The fault suite reuses the TUI tests' fixed archive and app factory."""

from tests.tui.conftest import anyio_backend, app_for, filled_home  # noqa: F401 - fixtures

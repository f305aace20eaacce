"""Every test gets its own CW_HOME, an embedded store and a fixed clock unless it says otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cwcore.api import Archive

FIXED_NOW = "2026-11-20T12:00:00Z"


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

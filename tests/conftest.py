"""Every test gets its own CW_HOME, an embedded store and a fixed clock unless it says otherwise."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from cwcore.api import Archive
from cwcore.semantic import models
from cwcore.semantic.embedder import Embedder

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

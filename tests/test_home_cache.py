"""The suite's shared-archive cache (tests.helpers.HomeCache)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import HomeCache


def test_a_failed_build_fails_again_with_its_own_error_then_can_succeed(tmp_path: Path) -> None:
    cache = HomeCache(tmp_path / "built")
    builds: list[Path] = []

    def broken(home: Path) -> None:
        home.mkdir()
        builds.append(home)
        raise RuntimeError("the build failed")

    for attempt in ("first", "second"):  # each test asking sees the build's error, not the dir
        with pytest.raises(RuntimeError, match="the build failed"):
            cache.clone("key", broken, tmp_path / attempt)

    def good(home: Path) -> None:
        home.mkdir()
        (home / "made").write_text("once")
        builds.append(home)

    for attempt in ("third", "fourth"):
        assert (cache.clone("key", good, tmp_path / attempt) / "made").read_text() == "once"
    assert len(builds) == 3  # two failed builds, one good one copied twice

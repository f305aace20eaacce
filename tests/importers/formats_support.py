"""What the per-format tests need to know about each newer format's fixtures: where its producer
writes the fixture under a home (so ``cw sync`` finds it), and how a live session grows (an
assistant message appended to its last turn, which must give that turn a new version)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tests.importers.golden_support import FIXTURES


@dataclass(frozen=True)
class Case:
    format: str
    fixture: str  # relative to FIXTURES: a file, or a folder copied whole
    place: str  # where it goes under the home
    grow: Callable[[Path], None]  # append to the placed copy (given the placed main file)
    main: str = ""  # the session file inside a copied folder

    def install(self, home: Path) -> Path:
        source = FIXTURES / self.fixture
        target = home / self.place
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target)
            return target / self.main
        shutil.copy(source, target)
        return target


def append_jsonl(path: Path, *rows: dict[str, object]) -> None:
    with path.open("a", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row) + "\n")


def _grow_copilot(path: Path) -> None:
    append_jsonl(
        path,
        {
            "type": "assistant.message",
            "data": {"messageId": "m-9", "content": "The failing test expects HALF_EVEN."},
            "id": "e0000099",
            "timestamp": "2026-03-05T09:01:20.000Z",
            "parentId": "e0000017",
        },
    )


CASES: list[Case] = [
    Case(
        "copilot",
        "copilot/3c0f11e2-7a4b-4d8e-9f10-0000000000c1",
        ".copilot/session-state/3c0f11e2-7a4b-4d8e-9f10-0000000000c1",
        _grow_copilot,
        main="events.jsonl",
    ),
]

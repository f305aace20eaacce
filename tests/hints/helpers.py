"""Builders for preflight tests: cw-jsonl rows with timestamps relative to the fixed clock."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from cwcore.api import Archive
from cwcore.clock import iso, parse_time
from tests.conftest import FIXED_NOW
from tests.helpers import write_jsonl

NOW = parse_time(FIXED_NOW)


def ago(days: float = 0, minutes: float = 0) -> str:
    return iso(NOW - timedelta(days=days, minutes=minutes))


def row(
    session: str,
    mid: str,
    role: str,
    text: str,
    *,
    days: float = 2,
    minute: float = 0,
    project: str = "alpha",
    **extra: Any,
) -> dict[str, Any]:
    body = {
        "session": session,
        "id": mid,
        "role": role,
        "text": text,
        "project": project,
        # Later messages are newer: minute counts forward from ``days`` ago.
        "timestamp": iso(NOW - timedelta(days=days) + timedelta(minutes=minute)),
    }
    body.update(extra)
    return body


def load(archive: Archive, tmp_path: Path, rows: list[dict[str, Any]], name: str = "a") -> None:
    path = write_jsonl(tmp_path / f"{name}.jsonl", rows)
    summary = archive.import_paths([path])
    assert not summary.errors, summary.errors

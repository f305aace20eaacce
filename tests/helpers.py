"""Small builders shared by tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def conversation(
    session: str, turns: int, *, project: str = "proj", start_minute: int = 0
) -> list[dict[str, Any]]:
    """A cw-jsonl session: ``turns`` exchanges of user question + assistant answer."""
    rows: list[dict[str, Any]] = []
    for i in range(turns):
        minute = start_minute + i
        stamp = f"2026-11-01T{10 + minute // 60:02d}:{minute % 60:02d}:00Z"
        rows.append(
            {
                "session": session,
                "id": f"u{i}",
                "role": "user",
                "project": project,
                "text": f"question {i} about parseConfig and ERR_{i:04d}",
                "timestamp": stamp,
            }
        )
        rows.append(
            {
                "session": session,
                "id": f"a{i}",
                "role": "assistant",
                "text": f"answer {i}: edit src/config/load_{i}.py",
                "timestamp": stamp,
            }
        )
    return rows

"""Session listings sorted by other keys, filtered by a text match, and id-prefix resolution."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.errors import InvalidInput, NotFound
from tests.helpers import write_jsonl


def session(sid: str, start: str, n: int, *, tools: int = 0, title: str | None = None) -> list:
    rows: list[dict[str, Any]] = []
    for i in range(n):
        rows.append(
            {
                "session": sid,
                "id": f"m{i}",
                "role": "user" if i % 2 == 0 else "assistant",
                "text": (title if i == 0 and title else f"message {i}"),
                "timestamp": f"{start[:14]}{i:02d}:00Z",
                "project": "p",
                "agent": "codex",
            }
        )
    for t in range(tools):
        rows.append(
            {
                "session": sid,
                "id": f"c{t}",
                "role": "assistant",
                "text": "",
                "tool_name": "Bash",
                "tool_input": {"command": "ls"},
                "timestamp": f"{start[:14]}{n + t:02d}:00Z",
                "project": "p",
                "agent": "codex",
            }
        )
    return rows


@pytest.fixture
def arch(cw_home: Path, tmp_path: Path) -> Any:
    rows = (
        session("aaaa-long", "2026-11-01T10:00:00Z", 30)
        + session("bbbb-tools", "2026-11-03T10:00:00Z", 4, tools=5)
        + session("cccc-new", "2026-11-05T10:00:00Z", 2)
        + session("cccc-other", "2026-11-04T10:00:00Z", 6)
    )
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
        yield archive


def ids(rows: list[Any]) -> list[str]:
    return [r.sessionId for r in rows]


def test_sort_keys_and_direction(arch: Archive) -> None:
    assert ids(arch.sessions()[0]) == ["cccc-new", "cccc-other", "bbbb-tools", "aaaa-long"]
    assert ids(arch.sessions(sort="messages")[0])[0] == "aaaa-long"
    assert ids(arch.sessions(sort="tools")[0])[0] == "bbbb-tools"
    assert ids(arch.sessions(sort="duration")[0])[0] == "aaaa-long"
    assert ids(arch.sessions(ascending=True)[0]) == [
        "aaaa-long",
        "bbbb-tools",
        "cccc-other",
        "cccc-new",
    ]
    with pytest.raises(InvalidInput):
        arch.sessions(sort="size")


def test_sorted_pages_follow_their_cursor(arch: Archive) -> None:
    first, cursor = arch.sessions(sort="messages", limit=3)
    assert cursor is not None
    rest, end = arch.sessions(sort="messages", limit=3, cursor=cursor)
    assert end is None and len(first) + len(rest) == 4
    assert set(ids(first)).isdisjoint(ids(rest))
    with pytest.raises(InvalidInput):
        arch.sessions(sort="tools", limit=3, cursor=cursor)  # another listing's cursor


def test_match_filters_ids_and_titles(arch: Archive) -> None:
    assert ids(arch.sessions(match="CCC")[0]) == ["cccc-new", "cccc-other"]
    assert ids(arch.sessions(match="nothing like it")[0]) == []


def test_resolve_a_prefix(arch: Archive) -> None:
    assert arch.resolve_session("bbbb").sessionId == "bbbb-tools"
    assert arch.resolve_session("cccc-o").sessionId == "cccc-other"
    with pytest.raises(NotFound, match="ambiguous"):
        arch.resolve_session("cccc")
    with pytest.raises(NotFound, match="no session"):
        arch.resolve_session("bbb")  # under four characters: only an exact id


def test_cw_sessions_sort_and_match(arch: Archive) -> None:
    import json

    from typer.testing import CliRunner

    from cwtui.cli import app

    arch.close()
    result = CliRunner().invoke(app, ["sessions", "--sort", "tools", "--json", "--limit", "1"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["sessions"][0]["sessionId"] == "bbbb-tools" and body["next_cursor"]
    result = CliRunner().invoke(app, ["sessions", "--match", "long", "--json"])
    assert [r["sessionId"] for r in json.loads(result.output)["sessions"]] == ["aaaa-long"]

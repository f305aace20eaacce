"""``cw mcp`` as a host starts it: a subprocess speaking MCP on stdin/stdout."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from typer.testing import CliRunner

from cwcore.api import Archive
from cwtui.cli import app
from tests.helpers import conversation, write_jsonl

ROOT = Path(__file__).parents[2]


def test_cw_mcp_over_stdio(tmp_path: Path, cw_home: Path) -> None:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "c.jsonl", conversation("s1", 3))])
    env = {**os.environ, "PYTHONPATH": str(ROOT), "CW_PROJECT": "proj"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "cwtui.cli", "mcp"], env=env, cwd=str(tmp_path)
    )

    async def main() -> tuple[list[str], dict[str, Any], str | None]:
        async with Client(params) as client:
            tools = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("context_window_search", {"query": "ERR_0002"})
            assert not result.is_error
            return tools, json.loads(result.content[0].text), client.instructions  # type: ignore[union-attr]

    tools, body, instructions = anyio.run(main)
    assert sorted(tools) == sorted(
        [
            "context_window_search",
            "context_window_gather",
            "context_window_recall",
            "context_window_supersede",
            "context_window_sessions",
            "context_window_messages",
            "context_window_memory",
        ]
    )
    assert body["results"][0]["source"]["project"] == "proj"
    assert "ERR_0002" in body["results"][0]["snippet"]
    assert instructions and "'proj'" in instructions


def test_cw_mcp_without_a_project_fails_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CW_PROJECT", raising=False)
    result = CliRunner().invoke(app, ["mcp"])
    assert result.exit_code == 2
    assert "--project" in result.stderr and result.stdout == ""

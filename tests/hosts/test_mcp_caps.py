"""MCP search and gather answers stay within 20 hits and 64,000 characters of hit JSON."""

from __future__ import annotations

import json

from cwcore.hosts.mcp_server import MAX_TOOL_CHARS, MAX_TOOL_HITS, cap_results


def _hit(i: int, size: int) -> dict:
    return {"documentId": f"d{i}", "snippet": "x" * size, "source": {"project": "p"}}


def test_at_most_twenty_hits() -> None:
    body = cap_results({"results": [_hit(i, 10) for i in range(50)]})
    assert len(body["results"]) == MAX_TOOL_HITS
    assert body["truncated"] == {"shown": 20, "dropped": 30}


def test_at_most_64000_characters_best_first() -> None:
    body = cap_results({"results": [_hit(i, 9_000) for i in range(15)]})
    size = sum(len(json.dumps(h)) for h in body["results"])
    assert size <= MAX_TOOL_CHARS and body["results"][0]["documentId"] == "d0"
    assert body["truncated"]["dropped"] == 15 - len(body["results"])


def test_a_small_answer_is_untouched() -> None:
    body = {"results": [_hit(i, 100) for i in range(3)], "query": "q"}
    assert cap_results(body) == body

"""The Markdown methods' requests (cwcore.contract.markdown): a wrong type names its key, and
the bounds (required keys, the character and hit caps, exactly one of lines or heading) are
refused by the record before anything is sent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.contract.markdown import (
    TOOL_RESULT_CHARS,
    MarkdownEvidence,
    MarkdownSearchRequest,
    ReadEntryRequest,
)
from cwcore.errors import InvalidInput
from tests.unsent import unsent_archive


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("markdown.read-entry", {"entry": 3}, r"^entry must be a string$"),
        ("markdown.read-entry", {"entry": "d", "maxChars": "9"}, r"^maxChars must be an integer$"),
        ("markdown.read", {"document": "d", "lines": 5}, r"^lines must be a string$"),
        ("markdown.search", {"query": "q", "sessions": "s1"}, r"^sessions must be a list$"),
        ("markdown.search", {"query": "q", "sessions": [1]}, r"^sessions must be a string$"),
        ("markdown.search", {"query": "  "}, r"^query is required$"),
    ],
)
def test_a_wrong_type_is_refused_naming_its_key(
    archive: Archive, method: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        archive.call(method, params)


@pytest.mark.parametrize(
    ("ask", "message"),
    [
        (lambda a: a.read_entry(""), r"^entry \(DOC or DOC#md:START:END\) is required$"),
        (lambda a: a.read_entry("d", max_chars=0), "^maxChars must be a positive integer$"),
        (
            lambda a: a.read_entry("d", max_chars=TOOL_RESULT_CHARS + 1),
            f"a tool result holds at most {TOOL_RESULT_CHARS}$",
        ),
        (lambda a: a.read_markdown("d"), "^give exactly one of --lines A-B or --heading TEXT$"),
        (
            lambda a: a.read_markdown("d", lines="1-2", heading="H"),
            "^give exactly one of --lines A-B or --heading TEXT$",
        ),
        (lambda a: a.read_markdown("", lines="1-2"), "^document is required$"),
    ],
)
def test_a_bound_is_refused_before_the_request_is_sent(
    tmp_path: Path, ask: Any, message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        ask(unsent_archive(tmp_path))


def test_search_limit_bounds_and_wire_keys() -> None:
    for bad in (0, 21):
        with pytest.raises(InvalidInput, match="limit"):
            MarkdownSearchRequest("q", limit=bad)
    request = MarkdownSearchRequest("q", sessions=("s1",), limit=3)
    assert request.to_json() == {"query": "q", "sessions": ["s1"], "limit": 3}
    assert MarkdownSearchRequest.parse(request.to_json()) == request
    assert ReadEntryRequest("d#md:0:4", 10).to_json() == {"entry": "d#md:0:4", "maxChars": 10}


def test_an_empty_evidence_answer_round_trips(archive: Archive) -> None:
    body = archive.call("markdown.search", {"query": "nothing here at all"})
    assert body == {
        "query": "nothing here at all",
        "results": [],
        "retrieval_status": "empty",
        "semantic_search_used": False,
    }
    assert MarkdownEvidence.from_json(body).to_json() == body

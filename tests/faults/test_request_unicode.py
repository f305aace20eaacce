"""A request carrying text that is not valid Unicode (a lone UTF-16 surrogate, as JSON can spell
it: a prompt or a filter cut inside an emoji) never ends in ``internal``: filters that name
no stored value match nothing, and a preflight message is read with each lone surrogate
replaced by U+FFFD, as imports read text (issue 32: a search scoped to such a project raised
``UnicodeEncodeError``; preflight answered ``failed`` "could not freeze"; the hook client could
not even send the prompt)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.daemon import protocol
from cwcore.hosts.hook_client import frame
from cwcore.text.unicode import without_lone_surrogates
from tests.helpers import conversation, write_jsonl

CUT = "What did we decide earlier about `parseRetryAfter` \ud83d?"


@pytest.fixture
def imported(archive: Archive, tmp_path: Path) -> Archive:
    source = write_jsonl(tmp_path / "s.jsonl", conversation("s1", 6))
    archive.import_paths([source])
    return archive


@pytest.mark.parametrize("field", ["project", "agent"])
def test_a_filter_with_a_lone_surrogate_matches_nothing(imported: Archive, field: str) -> None:
    assert not imported.search({"query": "parseConfig", field: "\udc00"}).results
    assert imported.search({"query": "parseConfig"}).results  # the same query unscoped finds some


def test_a_preflight_message_cut_inside_an_emoji_is_decided_and_frozen(
    imported: Archive,
) -> None:
    first = imported.preflight(CUT, session="s1")
    assert first.outcome != "failed", first
    again = imported.preflight(CUT, session="s1")
    assert again.to_json()["hint"] == first.to_json()["hint"] and again.frozen
    said = imported.hints(session="s1").to_json()
    assert "\ufffd" in str(said)  # what the user said is kept, replaced as imports replace
    assert without_lone_surrogates(str(said)) == str(said)


@given(st.text())
def test_the_hook_clients_frame_carries_any_string(text: str) -> None:
    """Any Python string, lone surrogates included, crosses the hook's frame exactly."""
    message: dict[str, object] = {"type": "request", "params": {"message": text}}
    body = frame(message)[4:]
    assert protocol.decode(body) == message


@given(st.text())
def test_replacement_leaves_valid_text_alone_and_is_encodable(text: str) -> None:
    fixed = without_lone_surrogates(text)
    fixed.encode("utf-8")
    if fixed == text:
        text.encode("utf-8")
    assert len(fixed) == len(text)

"""The candidate embedding units of ``bench/realtext_embed.py``: each text is built from the
window's own words, within its token budget, tool calls left out of the prose units."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench import realtext_embed as rte


@pytest.fixture(scope="module")
def tok() -> Any:
    folder = Path(str(resources.files("cwcore.semantic") / "model"))
    return rte._tokenizer(folder)


def _count(tok: Any, text: str) -> int:
    return len(tok.encode(text, add_special_tokens=False).ids)


WORDS = st.lists(
    st.sampled_from(
        ["alpha", "beta", "the", "deploy", "récupération", "x=1;", "über", "123", "path/to.py"]
    ),
    max_size=400,
).map(" ".join)


@settings(max_examples=40, deadline=None)
@given(text=WORDS, size=st.integers(min_value=8, max_value=300))  # a word here is < 8 tokens
def test_pieces_cover_the_text_in_order_within_the_budget(tok: Any, text: str, size: int) -> None:
    pieces = rte._pieces(tok, text, size)
    pos = 0
    for piece in pieces:
        at = text.find(piece, pos)
        assert at >= pos  # a piece is the text's own words, in order
        pos = at + len(piece)
        # cut at the tokenizer's own offsets: re-tokenized, a piece stays within the budget
        assert _count(tok, piece) <= size
    if text.strip():
        assert _count(tok, " ".join(pieces)) == _count(tok, text)


@settings(max_examples=40, deadline=None)
@given(
    user=WORDS,
    assistant=WORDS,
    call=WORDS,
    size=st.integers(min_value=16, max_value=254),
    share=st.integers(min_value=1, max_value=254),
)
def test_roles_puts_the_users_words_first_within_both_budgets(
    tok: Any, user: str, assistant: str, call: str, size: int, share: int
) -> None:
    parts = [
        ("user", "text", user),
        ("assistant", "tool-call", "CALL " + call),
        ("assistant", "text", assistant),
    ]
    text = rte._roles(tok, parts, size, share)
    assert "CALL" not in text  # tool calls are not prose
    assert _count(tok, text) <= size + 2  # two budgets cut apart, joined by a blank line
    head = rte._head(tok, user, min(share, size))  # the user's share fits in the unit
    assert text.startswith(head)
    assert _count(tok, head) <= min(share, size)


def test_a_window_of_tool_calls_only_has_no_prose_unit(tok: Any) -> None:
    assert rte._roles(tok, [("assistant", "tool-call", "ls -la")], 126, 96) == ""
    assert rte._head(tok, "   ", 126) == ""

"""The page's drafter: drafts remembered per window and page size, warm-up that stops when told."""

from __future__ import annotations

from typing import Any, cast

import pytest

from cwcore.index.derived import StoredWindow
from cwcore.retrieve import page
from cwcore.retrieve.candidates import Candidate


def _items(*wids: int) -> list[page.Ranked]:
    return [
        page.Ranked(Candidate(w, "lexical", 0.5, 1.0, "lexical"), cast(StoredWindow, {}))
        for w in wids
    ]


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, Any, int]]:
    """Every draft actually made: (window, share, cap)."""
    calls: list[tuple[int, Any, int]] = []

    def fake(item: page.Ranked, *rest: Any) -> Any:
        share, cap = rest[5], rest[6]
        calls.append((item.cand.wid, share, cap))
        return page._Draft(item, cast(Any, {}), "", [], 0, 0, "", "")

    monkeypatch.setattr(page, "_draft", fake)
    return calls


def test_warming_stops_as_soon_as_told_and_the_page_reuses_what_it_drafted(
    made: list[tuple[int, Any, int]],
) -> None:
    drafter = page.Drafter(cast(Any, None), None, ["bread"], {"bread": 1.0})
    polls = iter([False, False, True, True])
    items = _items(1, 2, 3, 4, 5)
    assert drafter.warm(items, 3, stop=lambda: next(polls)) == 2
    assert [w for w, _, _ in made] == [1, 2] and drafter.warmed == 2
    later = _items(1)[0]  # the same window, ranked again by fusion
    assert drafter.draft(later, 3).item is later  # the warm draft, carrying the final item
    assert drafter.reused == 1 and len(made) == 2
    drafter.draft(items[2], 3)  # never warmed: drafted now
    assert [w for w, _, _ in made] == [1, 2, 3]


def test_a_draft_is_remembered_per_page_size_when_the_size_shapes_the_snippet(
    made: list[tuple[int, Any, int]],
) -> None:
    """With a result budget each snippet's cap is a share of it: a page of another length
    drafts again; without one the size does not matter."""
    shared = page.Drafter(cast(Any, None), None, ["bread"], {}, result_chars=1200)
    item = _items(7)[0]
    shared.draft(item, 3)
    shared.draft(item, 4)
    shared.draft(item, 4)
    assert made == [(7, None, 400), (7, None, 300)] and shared.reused == 1
    made.clear()
    plain = page.Drafter(cast(Any, None), None, ["bread"], {})
    plain.draft(item, 3)
    plain.draft(item, 4)
    assert len(made) == 1 and plain.reused == 1


def test_a_drafter_serves_only_the_terms_it_was_made_for() -> None:
    drafter = page.Drafter(cast(Any, None), None, ["bread", "rye"], {"bread": 1.0}, ("~bread",))
    assert drafter.serves(["bread", "rye"], {"bread": 1.0}, ["~bread"])
    assert not drafter.serves(["bread", "rye", "flour"], {"bread": 1.0}, ["~bread"])
    assert not drafter.serves(["bread", "rye"], {"bread": 2.0}, ["~bread"])
    assert not drafter.serves(["bread", "rye"], {"bread": 1.0}, [])

"""The hint methods' requests (cwcore.contract.hints): a wrong type names its key, the bounds
are refused by the record before anything is sent, and the raw requests the hook client and
the lean CLI send keep their meaning."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.contract.hints import (
    MAX_MESSAGE_BYTES,
    HintsAnswer,
    HintsListing,
    HookTurn,
    HookTurnRequest,
    PreflightRequest,
)
from cwcore.errors import InvalidInput, LimitExceeded
from tests.unsent import unsent_archive


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("preflight", {"message": 1, "session": "s1"}, r"^message must be a string$"),
        ("preflight", {"message": "m", "session": "s1", "maxResults": "5"}, "^maxResults must"),
        ("preflight", {"message": "m"}, r"^session is required$"),
        (
            "preflight",
            {"message": "m", "session": "s1", "excludeVisibleSourceKeys": "k"},
            r"^excludeVisibleSourceKeys must be a list$",
        ),
        ("hook.turn", {"session": "s1", "cwd": 3}, r"^cwd must be a string$"),
        ("hook.turn", {"session": "s1", "event": "stop"}, r"^event must be one of"),
        ("hook.turn", {"session": "s1"}, r"^message is required$"),
        ("hints", {"all": "yes"}, r"^all must be true or false$"),
        ("hints", {"all": True}, r"^all applies to the excluded view only$"),
        ("hints.rotate", {"session": "s1", "active": [1]}, r"^active must be a string$"),
        ("hints.rotate", {"session": "s1"}, r"^active must be a list of message keys$"),
        ("hints.maintain", {"limit": 0}, r"^limit must be an integer from 1 to 100000$"),
        ("hints.locate", {"candidate": ""}, r"^candidate must be a candidate id"),
    ],
)
def test_a_wrong_type_or_bound_is_refused_naming_its_key(
    archive: Archive, method: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        archive.call(method, params)


@pytest.mark.parametrize(
    ("ask", "error", "message"),
    [
        (lambda a: a.preflight("m", session=""), InvalidInput, "^session is required$"),
        (lambda a: a.preflight("m", session="s", max_results=101), InvalidInput, "maxResults"),
        (
            lambda a: a.preflight("m", session="s", hint_budget_tokens=-1),
            InvalidInput,
            "^hintBudgetTokens must be a non-negative integer$",
        ),
        (
            lambda a: a.preflight("x" * (MAX_MESSAGE_BYTES + 1), session="s"),
            LimitExceeded,
            "^message exceeds 1 MiB$",
        ),
        (lambda a: a.hints(limit=0), InvalidInput, "limit must be an integer from 1 to 10000"),
        (lambda a: a.hints(everything=True), InvalidInput, "all applies to the excluded view"),
        (lambda a: a.hints_maintain(limit=100_001), InvalidInput, "from 1 to 100000"),
        (lambda a: a.hint_locator(""), InvalidInput, "candidate must be a candidate id"),
    ],
)
def test_a_bound_is_refused_before_the_request_is_sent(
    tmp_path: Path, ask: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        ask(unsent_archive(tmp_path))


def test_the_hook_clients_raw_turn_keeps_its_keys(archive: Archive) -> None:
    start = archive.call("hook.turn", {"session": "s-hook", "event": "session-start"})
    assert start["event"] == "session-start" and start["hint"] is None
    turn = archive.call(
        "hook.turn",
        {"session": "s-hook", "event": "prompt", "message": "how do queues drain?", "cwd": "/w"},
    )
    assert set(turn) == {
        "event",
        "session",
        "hint",
        "outcome",
        "messageKey",
        "memory",
        "memoryReason",
        "memoryBytes",
    }
    assert HookTurn.from_json(turn).to_json() == turn
    req = HookTurnRequest.parse({"session": "s", "message": "m", "messageKey": "k1"})
    assert req.preflight() == PreflightRequest("m", "s", "k1")


def test_hints_answer_is_written_as_the_shape_it_holds(archive: Archive) -> None:
    listing = archive.call("hints", {})
    answer = HintsAnswer.from_json(listing)
    assert isinstance(answer.answer, HintsListing) and answer.to_json() == listing
    view = archive.call("hints", {"view": "excluded", "all": True})
    assert HintsAnswer.from_json(view).to_json() == view and view["view"] == "excluded"

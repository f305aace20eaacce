"""``hook.turn``: the frozen hint and the per-turn memory block of one hook event (embedded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.contract.hints import MemoryDecision, MemoryExclusion
from cwcore.errors import InvalidInput
from cwcore.hints import frozen
from cwcore.memory import diagnostics
from cwtui.cli import app
from tests.hints.helpers import load, row
from tests.support import store_of

runner = CliRunner()
ROWS = [
    row("s", "u1", "user", "Why does REAP_DRAIN crash the reaper?", days=0.1),
    row("s", "a1", "assistant", "REAP_DRAIN blocks new work.", days=0.1, minute=1),
]


def _rules(archive: Archive) -> dict[str, str]:
    rule = archive.memory_add(
        "Never force-push to main",
        ruleType="avoid_pattern",
        confidence=0.92,
        layer="L2",
        scope="project:alpha",
    )
    other = archive.memory_add("Deploy beta with helm", scope="project:beta")
    return {"rule": rule.id, "other": other.id}


def test_a_prompt_gets_the_frozen_hint_and_the_memory_block(
    tmp_path: Path, archive: Archive
) -> None:
    load(archive, tmp_path, ROWS)
    ids = _rules(archive)
    params = {"session": "s", "message": "what about REAP_DRAIN before I force-push?"}
    body = archive.call("hook.turn", params)
    alone = archive.preflight(params["message"], session="s")
    assert body["hint"] == alone.hint and alone.frozen  # the same frozen decision
    assert body["hint"] and body["outcome"] == "marker" and body["event"] == "prompt"
    assert body["memory"].startswith("# Persistent Intelligence Context")
    assert "Never force-push to main" in body["memory"] and "helm" not in body["memory"]
    assert body["memoryBytes"] == len(body["memory"].encode()) and body["memoryReason"] is None
    # The listing shows the turn's memory selection beside its frozen decision.
    listed = archive.hints(session="s").hints
    memory = next(h for h in listed if h.message_key == body["messageKey"]).memory
    assert memory is not None
    assert dict(memory.sections)["Hard Rules"] == (ids["rule"],)
    raw = memory.to_json()
    assert "block" not in raw and "statement" not in json.dumps(raw)
    view = archive.hints(session="s", view="memory").decisions
    assert [d.message_key for d in view] == [body["messageKey"]]
    assert isinstance(view[0], MemoryDecision)
    other = MemoryExclusion(ids["other"], "project_mismatch:beta", "BasicScopeProcessor")
    assert other in view[0].excluded


def test_trivial_prompts_and_session_start(tmp_path: Path, archive: Archive) -> None:
    load(archive, tmp_path, ROWS)
    ids = _rules(archive)
    ack = archive.call("hook.turn", {"session": "s", "message": "ok thanks"})
    assert ack["hint"] is None and ack["memory"] is None and ack["memoryReason"]
    slash = archive.call("hook.turn", {"session": "s", "message": "/curate-memory now"})
    assert slash["memory"] is None
    # A session not archived yet: its project is the working directory's.
    start = archive.call(
        "hook.turn", {"session": "new-1", "event": "session-start", "cwd": "/home/me/alpha"}
    )
    assert start["hint"] is None and start["outcome"] is None
    assert start["messageKey"] == frozen.SESSION_START_KEY
    assert "Never force-push to main" in start["memory"]
    assert "## Selected Memory" not in start["memory"]
    elsewhere = archive.call(
        "hook.turn", {"session": "new-2", "event": "session-start", "cwd": "/home/me/beta"}
    )
    assert "Never force-push" not in (elsewhere["memory"] or "")
    (start_turn,) = archive.hints(session="new-1", view="memory").decisions
    assert isinstance(start_turn, MemoryDecision)
    assert start_turn.event == "session-start" and start_turn.project == "alpha"
    assert dict(start_turn.selected)["Hard Rules"] == (ids["rule"],)
    with pytest.raises(InvalidInput):
        archive.call("hook.turn", {"session": "s", "event": "nonsense"})


def test_a_failing_memory_half_still_gives_the_hint(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    load(archive, tmp_path, ROWS)
    from cwcore.memory import context

    def broken(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("records unreadable")

    monkeypatch.setattr(context, "context", broken)
    body = archive.call("hook.turn", {"session": "s", "message": "what about REAP_DRAIN?"})
    assert body["hint"] and body["memory"] is None and body["memoryReason"] == "failed"
    (turn,) = archive.hints(session="s", view="memory").decisions
    assert isinstance(turn, MemoryDecision) and turn.skipped and turn.reason == "failed"


def test_rotation_keeps_the_session_start_selection(tmp_path: Path, archive: Archive) -> None:
    load(archive, tmp_path, ROWS)
    _rules(archive)
    archive.call("hook.turn", {"session": "s", "event": "session-start"})
    turn = archive.call("hook.turn", {"session": "s", "message": "what about REAP_DRAIN?"})
    keys = {d.message_key for d in archive.hints(session="s", view="memory").decisions}
    assert keys == {frozen.SESSION_START_KEY, turn["messageKey"]}
    archive.hints_rotate("s", [])
    keys = {d.message_key for d in archive.hints(session="s", view="memory").decisions}
    assert keys == {frozen.SESSION_START_KEY}
    store = store_of(archive)
    assert frozen.memory_record(store, "s", turn["messageKey"]) is None


def test_kept_selections_are_bounded() -> None:
    result = {
        "skipped": False,
        "bytes": 10,
        "sections": {"Selected Memory": ["a"]},
        "traces": [
            {
                "processor": "StatusFilterProcessor",
                "input_count": 250,
                "output_count": 0,
                "excluded_ids": [f"m{i}" for i in range(250)],
                "exclusion_reasons": {f"m{i}": "status:deprecated" for i in range(250)},
            }
        ],
        "unselected": [{"id": f"u{i}", "reason": "not-relevant"} for i in range(130)],
        "ranking": {"mode": "fts", "weights": {}, "scores": [[f"u{i}", 1.0] for i in range(120)]},
        "block": "x" * 10,
    }
    kept = diagnostics.summary(result)
    trace = kept["traces"][0]
    assert len(trace["excluded_ids"]) == diagnostics.MAX_IDS and trace["excludedMore"] == 150
    assert len(trace["exclusion_reasons"]) == diagnostics.MAX_IDS
    assert len(kept["unselected"]) == diagnostics.MAX_IDS and kept["unselectedMore"] == 30
    assert kept["ranking"]["scoresMore"] == 20 and "block" not in kept


def test_cli_hints_memory(tmp_path: Path, archive: Archive) -> None:
    load(archive, tmp_path, ROWS)
    ids = _rules(archive)
    archive.call("hook.turn", {"session": "s", "message": "what about REAP_DRAIN force-push?"})
    archive.close()
    result = runner.invoke(app, ["hints", "memory", "--session", "s", "--json"])
    assert result.exit_code == 0, result.output
    decisions = json.loads(result.stdout)["decisions"]
    assert decisions[0]["selected"]["Hard Rules"] == [ids["rule"]]
    text = runner.invoke(app, ["hints", "memory", "--session", "s"])
    assert text.exit_code == 0
    assert ids["rule"] in text.stdout and "project_mismatch:beta" in text.stdout
    empty = runner.invoke(app, ["hints", "memory", "--session", "nobody"])
    assert empty.exit_code == 0 and "no memory selections" in empty.stdout


def test_memory_injection_can_be_turned_off(
    tmp_path: Path, cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_MEMORY_INJECTION", "0")
    with Archive.open(cw_home, embedded=True) as archive:
        load(archive, tmp_path, ROWS)
        _rules(archive)
        body = archive.call("hook.turn", {"session": "s", "message": "what about REAP_DRAIN?"})
        assert body["hint"] and body["memory"] is None and body["memoryReason"] == "disabled"
        start = archive.call("hook.turn", {"session": "s", "event": "session-start"})
        assert start["memory"] is None
        assert archive.hints(session="s", view="memory").decisions == ()

"""``cw preflight``, ``cw hints``, ``cw hints rotate`` through Typer's runner (embedded)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cwcore.api import Archive
from cwtui.cli import app
from tests.hints.helpers import load, row

runner = CliRunner()


def _json(args: list[str]) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_preflight_hints_and_rotate(tmp_path: Path, archive: Archive) -> None:
    load(archive, tmp_path, [row("s", "u1", "user", "REAP_DRAIN keeps the reaper from draining")])
    archive.close()
    body = _json(["preflight", "remember REAP_DRAIN?", "--session", "s", "--message-key", "u:1"])
    assert set(body) >= {"outcome", "hint", "messageKey", "queryHash", "generation", "diagnostics"}
    assert body["outcome"] == "excerpt" and body["messageKey"] == "u:1"
    again = _json(["preflight", "remember REAP_DRAIN?", "--session", "s", "--message-key", "u:1"])
    assert again["hint"] == body["hint"] and again["frozen"]
    plain = runner.invoke(app, ["preflight", "ok thanks", "--session", "s"])
    assert plain.exit_code == 0 and "no-query" in plain.stdout
    listed = _json(["hints", "--session", "s"])
    assert {h["messageKey"] for h in listed["hints"]} >= {"u:1"}
    entry = next(h for h in listed["hints"] if h["messageKey"] == "u:1")
    assert entry["bytes"] == len(body["hint"].encode()) and entry["tokens"] == body["tokens"]
    assert entry["queryHash"] == body["queryHash"] and entry["generation"] == body["generation"]
    table = runner.invoke(app, ["hints"])
    assert table.exit_code == 0 and "excerpt" in table.stdout
    rotated = _json(["hints", "rotate", "--session", "s", "--active", "nothing"])
    assert "u:1" in rotated["dropped"] and rotated["activeTokens"] == 0
    bad = runner.invoke(app, ["preflight", "x", "--session", "s", "--max-results", "0", "--json"])
    assert bad.exit_code == 2 and json.loads(bad.stdout)["error"]["code"] == "invalid-input"


VIEW_ROWS = [
    row("s", "u1", "user", "REAP_DRAIN keeps the reaper from draining the pool"),
    row("s", "a1", "assistant", "ok", minute=1),
    # Identical text once more: kept once, the copy is a duplicate.
    row("s", "u2", "user", "REAP_DRAIN keeps the reaper from draining the pool", minute=2),
    row("s", "a2", "assistant", "ok", minute=3),
    # A tool payload older than its 7-day source-age limit: dropped before ranking.
    row("s", "u3", "user", "run the build", days=8),
    row("s", "t3", "tool", "REAP_DRAIN failed in the build log", days=8, minute=1,
        tool_call_id="c1"),
]  # fmt: skip


def _views_archive(tmp_path: Path, archive: Archive) -> dict[str, Any]:
    load(archive, tmp_path, VIEW_ROWS)
    archive.close()
    return _json(["preflight", "remember REAP_DRAIN?", "--session", "s", "--message-key", "u:1"])


def test_hints_retrieved_view(tmp_path: Path, archive: Archive) -> None:
    shown = _views_archive(tmp_path, archive)
    assert shown["outcome"] == "excerpt", shown["diagnostics"]
    body = _json(["hints", "retrieved", "--session", "s"])
    assert body["view"] == "retrieved"
    (d,) = body["decisions"]
    assert d["messageKey"] == "u:1" and d["outcome"] == "excerpt"
    assert d["excerpt"] and "REAP_DRAIN" in d["excerpt"] and d["markerPhrases"] is None
    assert d["counts"]["dedup"] == 1 and d["counts"]["candidates"] >= 2
    assert "branch" in d["counts"] and d["tokens"] == shown["tokens"]
    assert d["candidates"][0]["id"] == shown["diagnostics"]["included"][0]["id"]
    assert d["budget"]["message"] == 160 and d["latencyMs"] is not None
    # Planner exclusions only: the duplicate (rank) and the stale row (filter) are not here.
    assert all(e["stage"] == "planner" for e in d["exclusions"])
    text = runner.invoke(app, ["hints", "retrieved", "--session", "s"])
    assert text.exit_code == 0 and "excerpt: " in text.stdout and "1 dedup" in text.stdout


def test_hints_manifest_view_lists_source_ids_without_text(
    tmp_path: Path, archive: Archive
) -> None:
    shown = _views_archive(tmp_path, archive)
    body = _json(["hints", "manifest", "--session", "s", "--message-key", "u:1"])
    (d,) = body["decisions"]
    (entry,) = d["entries"]
    assert entry["kind"] == "retrieval" and entry["included"] is True
    assert entry["classification"] == "historical-evidence"
    assert entry["tokens"] == shown["tokens"] and entry["group"] == "u:1"
    assert d["retrievedEventIds"] == [entry["id"]]
    document, _, key = entry["id"].partition("#")
    assert document.startswith("t-") and key  # canonical source id: document and message key
    assert "draining" not in json.dumps(d)  # no retrieved text in the manifest
    text = runner.invoke(app, ["hints", "manifest", "--session", "s"])
    assert text.exit_code == 0 and "retrievedEventIds" in text.stdout


def test_hints_included_view(tmp_path: Path, archive: Archive) -> None:
    shown = _views_archive(tmp_path, archive)
    _json(["preflight", "ok thanks", "--session", "s", "--message-key", "u:2"])
    body = _json(["hints", "included", "--session", "s"])
    by_key = {d["messageKey"]: d for d in body["decisions"]}
    assert by_key["u:2"]["included"] == [] and by_key["u:2"]["outcome"] == "no-query"
    (item,) = by_key["u:1"]["included"]
    assert item == shown["diagnostics"]["included"][0] and item["priority"] == 85
    text = runner.invoke(app, ["hints", "included"])
    assert text.exit_code == 0 and "historical-evidence" in text.stdout


def test_hints_excluded_view_and_all(tmp_path: Path, archive: Archive) -> None:
    _views_archive(tmp_path, archive)
    body = _json(["hints", "excluded", "--session", "s"])
    assert body["view"] == "excluded" and body["all"] is False
    (d,) = body["decisions"]
    reasons = {(e["stage"], e["reason"]) for e in d["excluded"]}
    assert ("rank", "duplicate") in reasons
    assert not any(stage == "filter" for stage, _ in reasons)
    wide = _json(["hints", "excluded", "--session", "s", "--all"])
    assert wide["all"] is True
    reasons = {(e["stage"], e["reason"]) for e in wide["decisions"][0]["excluded"]}
    assert ("rank", "duplicate") in reasons and ("filter", "stale:tool-payload") in reasons
    text = runner.invoke(app, ["hints", "excluded", "--all"])
    assert text.exit_code == 0 and "duplicate" in text.stdout and "stale" in text.stdout
    bad = runner.invoke(app, ["hints", "--json"], catch_exceptions=False)
    assert bad.exit_code == 0


def _candidate(ident: str, score: float, tier: int) -> dict[str, Any]:
    """A ranked candidate row as a decision keeps it in its diagnostics."""
    return {
        "id": ident,
        "documentId": ident.split("#")[0],
        "session": "s",
        "kind": "turn",
        "role": "user",
        "timestamp": "2026-11-18T12:00:00.000Z",
        "score": score,
        "normalized": round(score / 160, 4),
        "tier": tier,
        "matchType": "exact-error" if tier == 0 else "lexical",
        "matchedUnits": 1,
        "coverage": 1.0,
        "maxIdf": 1.0,
        "strong": tier == 0,
    }


def test_hints_views_of_privacy_and_withdrawn_decisions() -> None:
    """The manifest keeps privacy-excluded evidence (id, classification, reason only); a hint
    withdrawn at freezing (active budget) is excluded, not included."""
    from cwcore.contract.hints import ExcludedDecision, IncludedDecision, ManifestDecision
    from cwcore.hints import views

    cand = _candidate("t-1#user:u1", 142.0, 0)
    runner_up = _candidate("t-2#user:u2", 90.0, 2)
    private = {
        "session": "s",
        "messageKey": "k1",
        "outcome": "none",
        "reason": "privacy",
        "hint": None,
        "diagnostics": {
            "retrieved": [runner_up],
            "included": [],
            "excluded": [
                {"id": "t-1#user:u1", "classification": "confidential", "reason": "privacy:HR"}
            ],
        },
    }

    def one(name: str, record: dict[str, Any]) -> Any:
        view = views.view(name, [record], truncated=False)
        assert type(view).from_json(view.to_json()) == view
        return view.decisions[0]

    body = one("manifest", private)
    assert isinstance(body, ManifestDecision)
    assert body.retrieved_event_ids == ("t-1#user:u1",)
    assert body.entries[0].included is False
    assert body.entries[0].classification == "confidential"
    left = one("excluded", private)
    assert isinstance(left, ExcludedDecision)
    assert [(e.id, e.reason) for e in left.excluded] == [
        ("t-1#user:u1", "privacy:HR"),
        ("t-2#user:u2", views.BEHIND_SHOWN),
    ]
    item = {
        "id": cand["id"],
        "kind": "retrieval",
        "classification": "historical-evidence",
        "score": 142.0,
        "matchType": "exact-error",
        "tokens": 150,
        "priority": 85,
        "group": "k2",
        "reason": "exact identifier, 1/1 units",
    }
    withdrawn = {
        "session": "s",
        "messageKey": "k2",
        "outcome": "none",
        "reason": "active-budget",
        "hint": None,
        "diagnostics": {"retrieved": [cand], "included": [item]},
    }
    shown = one("included", withdrawn)
    assert isinstance(shown, IncludedDecision) and shown.included == ()
    left = one("excluded", withdrawn)
    assert [(e.id, e.reason) for e in left.excluded] == [("t-1#user:u1", "active-budget")]
    assert one("manifest", withdrawn).retrieved_event_ids == ()


def test_hints_view_requests_are_validated(archive: Archive) -> None:
    import pytest

    from cwcore.errors import InvalidInput

    with pytest.raises(InvalidInput):
        archive.hints(view="everything")
    with pytest.raises(InvalidInput):
        archive.hints(view="manifest", everything=True)
    with pytest.raises(InvalidInput):
        archive.hints(everything=True)
    assert archive.hints(view="included").decisions == ()

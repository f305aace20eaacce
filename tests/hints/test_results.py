"""The typed preflight and hints results serialize to exactly the JSON the engine answers.

``from_json(x).to_json()`` must give ``x`` back — the same keys with the same values and types —
for a decision as it was built (this call decided it) and as read back from the store (whose
encoding sorts keys at every depth), for every outcome, every view and the golden answers. Key
order is the codec's (issue 37: goldens compare parsed JSON, not bytes), so every comparison is
of canonical JSON text (sorted keys), which also tells ``1`` from ``true`` and ``1.0``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.contract.hints import (
    Exclusion,
    HintsListing,
    HintsView,
    MemoryDecision,
    RetrievedDecision,
)
from cwcore.contract.preflight import (
    Budget,
    CandidateRow,
    Counts,
    Diagnostics,
    Gate,
    GateThresholds,
    IncludedItem,
    PreflightDecision,
    PrivacyExclusion,
    QueryUnits,
)
from cwcore.hints import candidates as cand_mod
from cwcore.hints import preflight as preflight_mod
from cwcore.hints import privacy
from cwcore.store import codec
from tests.hints.helpers import load, row

GOLDEN = Path(__file__).parents[1] / "results" / "golden" / "hints.jsonl"


def text(body: Any) -> str:
    return json.dumps(body, ensure_ascii=False, sort_keys=True)


def stored(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as the store gives it back: keys sorted at every depth."""
    decoded = codec.decode_record(codec.encode_record(body))
    return decoded


def typed(label: str, body: dict[str, Any]) -> Any:
    if label.startswith("preflight"):
        return PreflightDecision.from_json(body)
    if "view" in body:
        return HintsView.from_json(body)
    return HintsListing.from_json(body)


def test_every_golden_preflight_and_hints_answer_round_trips() -> None:
    lines = [json.loads(line) for line in GOLDEN.read_text(encoding="utf-8").splitlines()]
    answers = [
        (line["label"], line["answer"])
        for line in lines
        if line["label"].startswith(("preflight", "hints")) and "." not in line["label"]
    ]
    labels = {label for label, _ in answers}
    assert {"preflight", "preflight none", "hints", "hints excluded all"} <= labels
    assert {f"hints {v}" for v in ("retrieved", "manifest", "included", "excluded", "memory")} <= (
        labels
    )
    for label, body in answers:
        assert text(typed(label, body).to_json()) == text(body), label


ROWS = [
    row("s", "u1", "user", "REAP_DRAIN keeps the reaper from draining the pool"),
    row("s", "a1", "assistant", "ok", minute=1),
    # The same text again: a duplicate of the first.
    row("s", "u2", "user", "REAP_DRAIN keeps the reaper from draining the pool", minute=2),
    row("s", "a2", "assistant", "The heartbeat table lists FLUSH_GATE owners.", minute=3),
    row("s", "u4", "user", "FLUSH_GATE stalls the writer.", minute=4),
    row("s", "u5", "user", "FLUSH_GATE stalls the reader.", minute=5),
    # A tool payload past its source-age limit: filtered before ranking.
    row("s", "u3", "user", "run the build", days=8),
    row("s", "t3", "tool", "REAP_DRAIN failed in the build log", days=8, minute=1,
        tool_call_id="c1"),
]  # fmt: skip


def _round_trips(raw: dict[str, Any], kind: Any) -> Any:
    record = kind.from_json(raw)
    assert text(record.to_json()) == text(raw)
    return record


def test_every_outcome_and_view_round_trips_fresh_and_frozen(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    load(archive, tmp_path, ROWS)
    archive.memory_add("Never force-push to main", ruleType="avoid_pattern", scope="project:alpha")

    def ask(message: str, key: str, session: str = "s") -> PreflightDecision:
        params = {"message": message, "session": session, "messageKey": key}
        record: PreflightDecision = _round_trips(
            archive.call("preflight", params), PreflightDecision
        )
        return record

    outcomes: dict[str, PreflightDecision] = {}
    # First, before another decision's exposure suppresses the row the policy withholds.
    policy = privacy.RegexPolicy([r"heartbeat table"], "confidential", "internal design")
    privacy.register_policy(policy)
    try:
        outcomes["privacy"] = ask("remember the heartbeat table FLUSH_GATE owners?", "k-private")
    finally:
        privacy.unregister_policy(policy)
    outcomes["excerpt"] = ask("remember REAP_DRAIN?", "k-excerpt")
    outcomes["marker"] = ask("remember FLUSH_GATE?", "k-marker")
    outcomes["no-query"] = ask("ok thanks", "k-none")
    outcomes["unknown"] = ask("remember REAP_DRAIN?", "k-ghost", session="ghost")
    outcomes["suppressed"] = ask("what about REAP_DRAIN again?", "k-again")
    with monkeypatch.context() as m:

        def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("bm25 segment unreadable")

        m.setattr(cand_mod, "lexical_candidates", broken)
        outcomes["warned"] = ask("remember FLUSH_GATE writer stalls?", "k-warned")
    with monkeypatch.context() as m:
        m.setattr(preflight_mod, "retrieve", broken)
        outcomes["failed"] = ask("remember REAP_DRAIN draining?", "k-failed")
    # Between them the calls reach every optional part of the diagnostics.
    assert outcomes["excerpt"].outcome == "excerpt" and outcomes["marker"].outcome == "marker"
    assert outcomes["failed"].outcome == "failed" and outcomes["no-query"].outcome == "no-query"
    assert outcomes["privacy"].diagnostics.reason == "privacy", text(outcomes["privacy"].to_json())
    assert any(isinstance(r, PrivacyExclusion) for r in outcomes["privacy"].diagnostics.left_out)
    assert outcomes["warned"].diagnostics.warnings
    assert outcomes["suppressed"].diagnostics.counts
    assert outcomes["unknown"].diagnostics.reason == "unknown-session"
    reasons = {r.reason for r in outcomes["excerpt"].diagnostics.left_out}
    assert {"duplicate", "stale:tool-payload"} <= reasons
    # Asked again, each decision comes back frozen: its diagnostics read back from the store.
    for key in ("k-excerpt", "k-marker", "k-none", "k-private", "k-warned", "k-failed"):
        again = ask("(frozen already)", key)
        assert again.frozen and again.diagnostics.frozen
    archive.call("hook.turn", {"session": "s", "message": "what about REAP_DRAIN force-push?"})
    archive.call("hook.turn", {"session": "s", "event": "session-start"})

    listing = _round_trips(archive.call("hints", {"limit": 100}), HintsListing)
    assert any(h.memory is not None for h in listing.hints)
    for view in ("retrieved", "manifest", "included", "excluded", "memory"):
        params = {"limit": 100, "view": view}
        body = _round_trips(archive.call("hints", params), HintsView)
        assert body.decisions, view
    wide = _round_trips(archive.call("hints", {"view": "excluded", "all": True}), HintsView)
    assert wide.all
    retrieved = archive.hints(view="retrieved")
    assert all(isinstance(d, RetrievedDecision) for d in retrieved.decisions)
    memory = archive.hints(view="memory")
    assert all(isinstance(d, MemoryDecision) for d in memory.decisions)


# -- every shape of the records, fresh and stored ------------------------------------------------

ids = st.text(alphabet="abcdefgh#:@w-0123456789", min_size=1, max_size=12)
words = st.text(alphabet="abcdefghij-:", min_size=0, max_size=10)
scores = st.floats(min_value=0, max_value=500, allow_nan=False).map(lambda f: round(f, 2))
shares = st.floats(min_value=0, max_value=1, allow_nan=False)
counts_n = st.integers(min_value=0, max_value=10_000)

candidate_rows = st.builds(
    CandidateRow,
    id=ids,
    document_id=ids,
    session=ids,
    kind=words,
    role=st.none() | words,
    timestamp=words,
    score=scores,
    normalized=shares,
    tier=st.integers(0, 2),
    match_type=words,
    matched_units=counts_n,
    coverage=shares,
    max_idf=shares,
    strong=st.booleans(),
    reason=st.none() | words,
)
privacy_rows = st.builds(PrivacyExclusion, id=ids, classification=words, reason=words)
included_items = st.builds(
    IncludedItem,
    id=ids,
    kind=words,
    classification=words,
    score=scores,
    match_type=words,
    tokens=counts_n,
    priority=counts_n,
    group=ids,
    reason=words,
)
optional_count = st.none() | counts_n
diagnostics = st.builds(
    Diagnostics,
    units=st.none() | st.builds(QueryUnits, counts_n, counts_n, counts_n),
    historical_intent=st.none() | st.booleans(),
    counts=st.none() | st.builds(Counts, *([optional_count] * 14)),
    retrieved=st.none() | st.lists(candidate_rows, max_size=3).map(tuple),
    included=st.none() | st.lists(included_items, max_size=2).map(tuple),
    excluded=st.none() | st.lists(candidate_rows | privacy_rows, max_size=3).map(tuple),
    warnings=st.none() | st.lists(words, min_size=1, max_size=2).map(tuple),
    gate=st.none()
    | st.builds(
        Gate,
        strong=st.booleans(),
        margin=st.none() | shares,
        ambiguous=st.booleans(),
        thresholds=st.builds(GateThresholds, counts_n, shares, shares, shares),
    ),
    budget=st.none() | st.builds(Budget, counts_n, counts_n, counts_n, counts_n),
    reason=st.none() | words,
    latency_ms=st.none() | shares,
)


@settings(max_examples=200, deadline=None)
@given(diag=diagnostics, frozen=st.booleans(), call_ms=shares)
def test_diagnostics_round_trip_as_built_and_as_stored(
    diag: Diagnostics, frozen: bool, call_ms: float
) -> None:
    built = diag.to_json()
    assert Diagnostics.from_json(built) == diag
    assert text(Diagnostics.from_json(built).to_json()) == text(built)
    # Read back from the store, then answered by preflight: sorted keys, the call's keys last.
    answered = {**stored(built), "frozen": frozen, "callMs": call_ms}
    back = Diagnostics.from_json(answered)
    assert back == Diagnostics(**{**diag.__dict__, "frozen": frozen, "call_ms": call_ms})
    assert text(back.to_json()) == text(answered)


@settings(max_examples=100, deadline=None)
@given(
    diag=diagnostics,
    outcome=st.sampled_from(preflight_mod.OUTCOMES),
    hint=st.none() | st.text(max_size=40),
    generation=st.none() | counts_n,
)
def test_preflight_decisions_round_trip(
    diag: Diagnostics, outcome: str, hint: str | None, generation: int | None
) -> None:
    decision = PreflightDecision(outcome, hint, "k", "s", None, generation, 0, False, diag)
    body = decision.to_json()
    assert PreflightDecision.from_json(body) == decision
    assert text(PreflightDecision.from_json(body).to_json()) == text(body)


@settings(max_examples=100, deadline=None)
@given(
    row=candidate_rows | privacy_rows,
    as_stored=st.booleans(),
    reason=words,
    stage=st.sampled_from(("filter", "rank", "planner")),
)
def test_view_exclusions_round_trip(
    row: CandidateRow | PrivacyExclusion, as_stored: bool, reason: str, stage: str
) -> None:
    """A view lists a kept row with the view's reason and stage merged over it: a row that kept
    a reason keeps it in its place (the view's is the same), one without gets it appended."""
    kept = row.to_json()
    if as_stored:
        kept = stored(kept)
    if "reason" in kept:
        reason = kept["reason"]
    body = {**kept, "reason": reason, "stage": stage}
    exclusion = Exclusion.from_json(body)
    assert exclusion.id == row.id and exclusion.reason == reason and exclusion.stage == stage
    assert text(exclusion.to_json()) == text(body)


@pytest.mark.parametrize(
    "diag",
    [
        {"counts": {"lineageSessions": 1, "bogus": 2}},  # a counter no decision keeps
        {"retrieved": [{"id": "t-1#user:u1"}]},  # a row without its fields
        {"gate": "strong"},  # the wrong type
    ],
)
def test_stored_diagnostics_that_do_not_read_back_are_corrupt(diag: dict[str, Any]) -> None:
    from cwcore.errors import CorruptRecord
    from cwcore.hints import views

    record = {"session": "s", "messageKey": "k", "outcome": "none", "diagnostics": diag}
    with pytest.raises(CorruptRecord, match="hint diagnostics is corrupt"):
        views.diagnostics(record)


def test_a_stored_memory_turn_without_its_fields_is_corrupt() -> None:
    from cwcore.errors import CorruptRecord
    from cwcore.hints import views

    with pytest.raises(CorruptRecord, match="memory turn is corrupt"):
        views.memory_turn({"session": "s", "messageKey": "k"})

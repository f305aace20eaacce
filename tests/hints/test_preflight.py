"""Preflight gate, candidates and ranking (spec 000 gate, spec 001 pipeline and priorities)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cwcore.api import Archive
from cwcore.contract.preflight import PreflightDecision
from cwcore.errors import InvalidInput, LimitExceeded
from cwcore.hints import candidates as cand_mod
from cwcore.hints import gate, render
from cwcore.hints import lineage as lineage_mod
from cwcore.hints.candidates import Evidence, is_strong, normalized_idf
from cwcore.hints.lineage import Allowed, exact_wids
from cwcore.hints.query import extract
from cwcore.index import derived
from cwcore.model import DocumentPart, DocumentSpec, SessionSpec
from tests.hints.helpers import NOW, load, row
from tests.support import engine_of

ROWS = [
    row("s1", "u1", "user", "Why does the reaper crash with REAP_DRAIN in src/reaper/drain.py?"),
    row(
        "s1",
        "a1",
        "assistant",
        "REAP_DRAIN prevents accepting new work while the pool drains.",
        minute=1,
    ),
    row("s1", "u2", "user", "Please switch the pool to bounded queues.", minute=2),
    row("s1", "a2", "assistant", "We use bounded queues with a capacity of 64 jobs.", minute=3),
    row(
        "s1",
        "u3",
        "user",
        "The scheduler misses heartbeats when garbage collection pauses.",
        minute=4,
    ),
    row("s1", "a3", "assistant", "Heartbeat timers now run on a dedicated thread.", minute=5),
    row("fork", "u1", "user", "Starting a fork about zebra stripes.", days=1, parent_session="s1"),
    row("sib", "u1", "user", "SIBLING_ONLY_TOKEN and heartbeats live here.", days=1),
]


@pytest.fixture
def arch(tmp_path: Path, archive: Archive) -> Archive:
    load(archive, tmp_path, ROWS)
    return archive


def pf(arch: Archive, message: str, session: str = "fork", **kw: Any) -> PreflightDecision:
    return arch.preflight(message, session=session, **kw)


def test_contract_shape(arch: Archive) -> None:
    body = pf(arch, "what did we decide about REAP_DRAIN last time?")
    keys = {"outcome", "hint", "messageKey", "queryHash", "generation", "diagnostics"}
    assert set(body.to_json()) >= keys
    assert body.outcome in ("no-query", "none", "excerpt", "marker", "failed")
    assert body.message_key.startswith("text-")
    assert isinstance(body.generation, int) and body.generation >= 1


def test_excerpt_for_explicit_historical_intent(arch: Archive) -> None:
    body = pf(arch, "what did we decide about REAP_DRAIN last time?")
    assert body.outcome == "excerpt", body.diagnostics
    hint = body.hint
    assert hint.startswith(render.SEPARATOR + render.EVIDENCE_OPEN)
    assert hint.endswith(render.EVIDENCE_CLOSE)
    assert f"Date: {ROWS[0]['timestamp'][:10]}" in hint
    assert render.DATA_NOTICE in hint and "\nOriginal role: user\n" in hint
    assert "\nRetrieval score: " in hint and "\nReason: exact identifier, " in hint
    quoted = render.quoted_content(hint)
    assert quoted is not None and "REAP_DRAIN" in quoted
    assert body.tokens <= 160
    included = body.diagnostics.included
    assert len(included) == 1 and included[0].priority == 85
    assert included[0].tokens == body.tokens
    assert included[0].classification == "historical-evidence"


def test_marker_for_recurring_concept_without_cue(arch: Archive) -> None:
    message = "tune the REAP_DRAIN handling of the reaper"
    body = pf(arch, message)
    assert body.outcome == "marker", body.diagnostics
    phrases = render.marker_phrases(body.hint)
    assert "REAP_DRAIN" in phrases and all(p in message for p in phrases)
    assert "prevents" not in body.hint and "drain.py" not in body.hint
    assert "SEARCH PROMPT, NOT EVIDENCE" in body.hint


def test_ambiguous_historical_match_gives_marker(tmp_path: Path, archive: Archive) -> None:
    rows = [
        row("s", "u1", "user", "FLUSH_GATE stalls the writer.", minute=0),
        row("s", "a1", "assistant", "ok", minute=1),
        row("s", "u2", "user", "FLUSH_GATE stalls the reader.", minute=2),
        row("s", "a2", "assistant", "ok", minute=3),
    ]
    load(archive, tmp_path, rows)
    body = archive.preflight("remember FLUSH_GATE?", session="s")
    assert body.outcome == "marker"
    assert body.diagnostics.reason == "ambiguous-historical"
    assert body.diagnostics.gate.margin < gate.AMBIGUITY_MARGIN
    assert render.marker_phrases(body.hint) == ["FLUSH_GATE"]


def test_weak_single_keyword_gives_nothing(arch: Archive) -> None:
    body = pf(arch, "remember the heartbeats?")
    assert body.outcome == "none" and body.hint is None
    assert body.diagnostics.reason == "weak"


def test_coverage_threshold(arch: Archive) -> None:
    # 3 of 6 units match (0.50): weak. 3 of 5 (0.60): strong.
    weak = pf(arch, "remember heartbeats garbage collection zebu okapi quagga")
    assert weak.diagnostics.retrieved[0].coverage == 0.5
    assert weak.outcome == "none" and weak.diagnostics.reason == "weak"
    strong = pf(arch, "remember heartbeats garbage collection zebu okapi")
    assert strong.diagnostics.retrieved[0].coverage == 0.6
    assert strong.outcome == "excerpt", strong.diagnostics


def test_idf_threshold(tmp_path: Path, archive: Archive) -> None:
    rows = [row("s", f"u{i}", "user", f"kiwi mango note {i}", minute=i) for i in range(12)]
    load(archive, tmp_path, rows)
    body = archive.preflight("remember kiwi mango", session="s")
    top = body.diagnostics.retrieved[0]
    assert top.coverage == 1.0 and top.max_idf < cand_mod.IDF_MIN
    assert body.outcome == "none" and body.diagnostics.reason == "weak"


@pytest.mark.parametrize(
    ("literal", "matched", "coverage", "idf", "strong"),
    [
        (True, 1, 0.1, 0.0, True),  # a verbatim exact anchor is enough
        (False, 2, 0.60, 0.60, True),
        (False, 1, 1.0, 1.0, False),  # fewer than two matched units
        (False, 2, 0.59, 1.0, False),  # coverage below 0.60
        (False, 3, 1.0, 0.59, False),  # max normalized idf below 0.60
    ],
)
def test_strength_thresholds(
    literal: bool, matched: int, coverage: float, idf: float, strong: bool
) -> None:
    assert is_strong(literal, matched, coverage, idf) is strong


def test_normalized_idf() -> None:
    assert normalized_idf(0.0, 100) == 0.0
    import math

    assert normalized_idf(math.log1p(99.5 / 1.5), 100) == pytest.approx(1.0)
    assert normalized_idf(5.0, 0) == 0.0


def _ev(
    tier: int, score: float, norm: float, strong: bool = True, ts: str = "2026-11-10"
) -> Evidence:
    ev = Evidence(1, {"documentId": f"d{score}", "session": "s", "kind": "turn", "created": ts})
    ev.tier, ev.score, ev.norm, ev.strong, ev.timestamp = tier, score, norm, strong, ts
    ev.message_key, ev.matched_units = "user:u", [0]
    return ev


@pytest.mark.parametrize(("margin", "outcome"), [(0.05, "excerpt"), (0.0499, "marker")])
def test_ambiguity_margin(margin: float, outcome: str) -> None:
    query = extract("remember REAP_DRAIN")
    top, second = _ev(0, 150, 0.9), _ev(0, 140, round(0.9 - margin, 4))
    decision = gate.decide(query, [top, second])
    assert decision.outcome == outcome


def test_lower_tier_never_makes_a_literal_match_ambiguous() -> None:
    query = extract("remember REAP_DRAIN")
    decision = gate.decide(query, [_ev(0, 150, 0.90), _ev(2, 150, 0.90)])
    assert decision.outcome == "excerpt" and decision.margin is None


def test_gate_routes() -> None:
    assert gate.decide(extract("ok thanks"), []).outcome == "no-query"
    assert gate.decide(extract("REAP_DRAIN"), []).outcome == "none"
    assert gate.decide(extract("REAP_DRAIN"), [_ev(0, 150, 0.9, strong=False)]).reason == "weak"
    assert gate.decide(extract("REAP_DRAIN"), [_ev(0, 150, 0.9)]).outcome == "marker"
    assert gate.decide(extract("REAP_DRAIN again"), [_ev(0, 150, 0.9)]).outcome == "excerpt"


def _scored(
    message: str, text: str, *, literal: list[int], matched: list[int], **kw: Any
) -> Evidence:
    query = extract(message)
    ev = Evidence(1, {"documentId": "d", "session": kw.get("session", "me"), "kind": "turn",
                      "created": "2026-11-19T12:00:00.000Z"})  # fmt: skip
    ev.text, ev.role = text, kw.get("role", "user")
    ev.timestamp = kw.get("timestamp", "2026-11-20T12:00:00.000Z")
    ev.literal_units, ev.matched_units = literal, matched
    cand_mod.score(ev, query, "me", {}, 100, NOW.timestamp(), 30 * 86400)
    return ev


def test_ranking_priorities() -> None:
    # Exact identifier 100 + same error 12 + active branch 15 + user 8 + recency 8.
    ev = _scored("REAP_DRAIN", "REAP_DRAIN", literal=[0], matched=[0])
    assert ev.tier == 0 and ev.score == pytest.approx(100 + 12 + 15 + 8 + 8, abs=0.1)
    # Exact phrase 85; assistant authority 5; an ancestor's row gets no branch bonus.
    ev = _scored('"bounded queues"', "x", literal=[0], matched=[0], role="assistant", session="p")
    assert ev.tier == 1 and ev.score == pytest.approx(85 + 5 + 8, abs=0.1)
    # FTS 60, extra distinct matches 40 each but at most 80.
    ev = _scored("alpha beta gamma delta", "x", literal=[], matched=[0, 1, 2, 3], role="tool")
    assert ev.tier == 2 and ev.score == pytest.approx(60 + 80 + 15 + 8, abs=0.1)
    ev = _scored("alpha beta gamma delta", "x", literal=[], matched=[0, 1], role="tool")
    assert ev.score == pytest.approx(60 + 40 + 15 + 8, abs=0.1)
    # Same file 12 each, same symbol 10 each.
    ev = _scored("src/a.py parseConfig", "x", literal=[0, 1], matched=[0, 1], role="tool")
    assert ev.score == pytest.approx(100 + 40 + 12 + 10 + 15 + 8, abs=0.1)
    # Recency 0..8 over the age limit; token penalty up to 12.
    old = _scored("REAP_DRAIN", "x", literal=[0], matched=[0], timestamp="2026-11-05T12:00:00Z")
    assert old.score == pytest.approx(100 + 12 + 15 + 8 + 4, abs=0.1)
    long = _scored("REAP_DRAIN", "x" * 10_000, literal=[0], matched=[0])
    assert long.score == pytest.approx(100 + 12 + 15 + 8 + 8 - 12, abs=0.1)


def test_tiers_precede_scores_and_ties_break_by_time_then_id(
    tmp_path: Path, archive: Archive
) -> None:
    rows = [
        row("s", "u1", "user", "CACHE_KEY in the loader", minute=0),
        row("s", "u2", "user", "the loader cache key misses and misses and loader", minute=5),
    ]
    load(archive, tmp_path, rows)
    body = archive.preflight("CACHE_KEY loader misses", session="s")
    retrieved = body.diagnostics.retrieved
    assert [r.tier for r in retrieved] == sorted(r.tier for r in retrieved)
    assert retrieved[0].tier == 0


def test_branch_isolation(arch: Archive) -> None:
    assert pf(arch, "remember SIBLING_ONLY_TOKEN?", session="fork").outcome == "none"
    assert pf(arch, "remember SIBLING_ONLY_TOKEN?", session="sib").outcome == "excerpt"
    # The parent does not see its fork's rows either.
    assert pf(arch, "remember zebra stripes fork?", session="s1").outcome == "none"


def test_branch_isolation_applies_before_limits(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Many sibling rows match better (shorter, more often); the one lineage row still wins.
    siblings = [
        row(f"other{i}", "u1", "user", "WIDGET_ID WIDGET_ID widget sprocket", days=1)
        for i in range(60)
    ]
    note = "WIDGET_ID is the widget sprocket. " + "a long note that mentions the widget " * 5
    mine = [row("mine", "u1", "user", note)]
    load(archive, tmp_path, siblings + mine)
    body = archive.preflight("remember widget sprocket WIDGET_ID?", session="mine")
    assert body.outcome == "excerpt"
    assert body.diagnostics.counts.candidates == 1
    # Exact lookups are complete for the lineage whichever way they read the postings.
    eng = engine_of(archive)
    gen = derived.generation(eng.store)["n"]
    own = lineage_mod.cache_for(eng.store).rows(eng.store, eng.indexer.bm25, "mine", gen)
    allowed = Allowed(np.asarray(own.wids, dtype=np.uint32))
    assert exact_wids(eng.store, "WIDGET_ID", allowed) == own.wids  # seeks the runs
    monkeypatch.setattr(lineage_mod, "MAX_SEEK_RUNS", 0)
    assert exact_wids(eng.store, "WIDGET_ID", allowed) == own.wids  # scans all 61 postings
    assert exact_wids(eng.store, "WIDGET_ID", allowed, scan_limit=5) == own.wids  # falls back


def test_visible_rows_are_excluded(arch: Archive) -> None:
    keys = ["user:u1", "assistant:a1"]
    body = pf(arch, "what did we decide about REAP_DRAIN last time?", session="s1", visible=keys)
    assert body.outcome == "none"
    assert body.diagnostics.counts.visible >= 1


def test_visible_limits_are_enforced(arch: Archive) -> None:
    with pytest.raises(LimitExceeded):
        pf(arch, "REAP_DRAIN", visible=[f"user:{i}" for i in range(1001)])
    with pytest.raises(LimitExceeded):
        pf(arch, "REAP_DRAIN", visible=["x" * 600_000, "y" * 600_000])
    for bad in (0, 101):
        with pytest.raises(InvalidInput):
            pf(arch, "REAP_DRAIN", max_results=bad)
    assert pf(arch, "REAP_DRAIN crash again", max_results=100).outcome in ("excerpt", "marker")


def test_dedup_of_normalized_identical_text(tmp_path: Path, archive: Archive) -> None:
    rows = [
        row("s", "u1", "user", "Deploy FOO_BAR through the canary  lane.", minute=0),
        row("s", "a1", "assistant", "noted", minute=1),
        row("s", "u2", "user", "deploy FOO_BAR  through the CANARY lane.", minute=2),
        row("s", "a2", "assistant", "noted again", minute=3),
    ]
    load(archive, tmp_path, rows)
    body = archive.preflight("remember FOO_BAR canary?", session="s")
    assert body.diagnostics.counts.dedup == 1
    assert body.outcome == "excerpt"  # the duplicate no longer makes it ambiguous
    # Same score but for recency: the newer copy stays.
    assert "deploy FOO_BAR" in (render.quoted_content(body.hint) or "")


def test_source_age_limits(tmp_path: Path, archive: Archive) -> None:
    rows = [
        row("s", "u1", "user", "OLD_ANCHOR was configured here.", days=31),
        row("s", "u2", "user", "run the build", days=8),
        row("s", "t2", "tool", "TOOL_ANCHOR failed in the build log", days=8, minute=1,
            tool_call_id="c1"),
        row("s", "u3", "user", "run it again", days=6),
        row("s", "t3", "tool", "FRESH_TOOL_ANCHOR in the build log", days=6, minute=1,
            tool_call_id="c2"),
    ]  # fmt: skip
    load(archive, tmp_path, rows)
    old = archive.preflight("remember OLD_ANCHOR?", session="s")
    assert old.outcome == "none" and old.diagnostics.counts.stale >= 1
    tool = archive.preflight("remember TOOL_ANCHOR?", session="s")
    assert tool.outcome == "none"
    assert [e.reason for e in tool.diagnostics.excluded] == ["stale:tool-payload"]
    fresh = archive.preflight("remember FRESH_TOOL_ANCHOR?", session="s")
    assert fresh.outcome == "excerpt"
    assert "\nOriginal role: tool output\n" in fresh.hint


def test_source_age_follows_the_settable_clock(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    load(archive, tmp_path, [row("s", "u1", "user", "CLOCK_ANCHOR here", days=20)])
    monkeypatch.setenv("CW_NOW", "2026-12-20T12:00:00Z")  # now 50 days old
    assert archive.preflight("remember CLOCK_ANCHOR?", session="s").outcome == "none"


def test_durable_archives_are_never_inserted(arch: Archive) -> None:
    eng = engine_of(arch)
    session = SessionSpec("fork", "alpha", "cw-jsonl")
    for kind in ("note", "decision"):
        spec = DocumentSpec(
            document_id=f"{kind}-1",
            kind=kind,
            session_id="fork",
            project="alpha",
            agent="cw-jsonl",
            parts=(DocumentPart(f"system:{kind}", "system", "text", "DURABLE_ANCHOR decided"),),
            created="2026-11-19T10:00:00Z",
        )
        eng.admission.admit_one(session, spec)
    eng.after_admission(2)
    body = pf(arch, "remember DURABLE_ANCHOR?")
    assert body.outcome == "none"
    assert body.diagnostics.counts.durable == 2


def test_superseded_rows_are_not_candidates(arch: Archive) -> None:
    eng = engine_of(arch)
    doc = next(
        r["documentId"] for r in eng.reader.session_document_refs("s1")
    )  # the REAP_DRAIN turn
    arch.supersede(doc, reason="reversed")
    assert pf(arch, "what did we decide about REAP_DRAIN last time?").outcome == "none"


def test_logs_hold_counts_only(arch: Archive, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="cw.hints"):
        pf(arch, "what did we decide about REAP_DRAIN last time?")
    text = " ".join(r.getMessage() for r in caplog.records)
    assert "outcome=excerpt" in text
    for secret in ("REAP_DRAIN", "reaper", "decide", "prevents"):
        assert secret not in text


def test_diagnostics_hold_no_text(arch: Archive) -> None:
    body = pf(arch, "what did we decide about REAP_DRAIN last time?")
    diag = body.diagnostics.to_json()
    import json

    blob = json.dumps(diag)
    assert "REAP_DRAIN" not in blob and "prevents" not in blob
    counts = diag["counts"]
    for name in ("candidates", "dedup", "branch", "exact", "lexical", "verified"):
        assert name in counts
    assert "latencyMs" in diag


def test_no_embeddings_reranker_or_expansion(
    arch: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cwcore.retrieve import expand, search
    from cwcore.retrieve import importance as prior

    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("not on the preflight path")

    monkeypatch.setattr(expand, "rm3_terms", boom)
    monkeypatch.setattr(prior, "importance", boom)
    monkeypatch.setattr(search, "importance", boom)
    monkeypatch.setattr(search, "search", boom)
    assert pf(arch, "remember heartbeats garbage collection?").outcome == "excerpt"


def test_lexical_failure_keeps_the_exact_hits_and_warns(
    arch: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("bm25 segment unreadable")

    monkeypatch.setattr(cand_mod, "lexical_candidates", broken)
    body = pf(arch, "what did we decide about REAP_DRAIN last time?")
    assert body.outcome == "excerpt", body.diagnostics
    assert "REAP_DRAIN" in (render.quoted_content(body.hint) or "")
    diag = body.diagnostics
    assert diag.warnings == ("lexical-failed:RuntimeError",)
    assert diag.counts.lexical == 0 and diag.counts.exact >= 1


def test_exact_failure_disables_the_call(arch: Archive, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("exact postings unreadable")

    monkeypatch.setattr(cand_mod, "exact_wids", broken)
    body = pf(arch, "what did we decide about REAP_DRAIN last time?")
    assert body.outcome == "failed" and body.hint is None
    assert body.diagnostics.reason == "failed"
    again = pf(arch, "what did we decide about REAP_DRAIN last time?")
    assert again.frozen and again.outcome == "failed"

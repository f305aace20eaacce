"""Memory records (spec 002): records, processors and traces, ranking, the injection block."""

from __future__ import annotations

import json
import math
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.clock import iso, parse_time
from cwcore.contract.memory import MemoryEvent, MemoryRecord, MemoryScope
from cwcore.errors import Conflict, InvalidInput, NotFound
from cwcore.memory import injection, processors, rank
from cwcore.memory.injection import build, trivial
from cwcore.semantic.embedder import Embedder
from cwtui.cli import app
from tests.conftest import FIXED_NOW
from tests.helpers import write_jsonl
from tests.results import canonical
from tests.support import semantic_of, use_embedder

NOW = parse_time(FIXED_NOW)


def rec(rid: str, statement: str, **fields: Any) -> dict[str, Any]:
    """A record as the store holds it (for pure-function tests)."""
    updated = iso(NOW - timedelta(days=fields.pop("age", 0)))
    body: dict[str, Any] = {
        "id": rid,
        "statement": statement,
        "tags": [],
        "status": "active",
        "profile_id": None,
        "scope": {"type": "global", "name": None},
        "does_not_apply_when": [],
        "known_exceptions": [],
        "layer": "L1",
        "confidence": 0.7,
        "ruleType": None,
        "created": updated,
        "updated": updated,
    }
    body.update(fields)
    return body


# -- records -----------------------------------------------------------------------------------


def test_add_list_show_contest_deprecate(archive: Archive) -> None:
    first = archive.memory_add(
        "Never force-push to main",
        ruleType="avoid_pattern",
        confidence=0.92,
        layer="L2",
        scope="project:alpha",
        tags=["git"],
        doesNotApplyWhen=["personal fork"],
        knownExceptions=["release branch"],
        profileId="work",
    )
    assert first.id.startswith("mem_") and first.status == "active"
    assert first.scope == MemoryScope("project", "alpha")
    assert first.does_not_apply_when == ("personal fork",)
    assert first.known_exceptions == ("release branch",)
    assert first.profile_id == "work" and first.rule_type == "avoid_pattern"
    assert first.created == first.updated and first.layer == "L2" and first.tags == ("git",)
    assert first.confidence == 0.92
    assert archive.memory_show(first.id) == first
    contested = archive.memory_contest(first.id, reason="two sources disagree")
    assert contested.status == "contested"
    assert contested.history[-1] == MemoryEvent(
        contested.updated, "contest", "two sources disagree"
    )
    assert archive.memory_deprecate(first.id).status == "deprecated"
    second = archive.memory_add("Rebase before merging", supersedes=first.id)
    old = archive.memory_show(first.id)
    assert old.status == "superseded" and old.superseded_by == second.id
    assert archive.call("memory.delete", {"id": second.id})["status"] == "deleted"
    listed = archive.memory_list().records
    assert {r.id for r in listed} == {first.id, second.id}
    assert archive.memory_list(status="deleted").records[0].id == second.id
    assert archive.memory_list(tag="git").records[0].id == first.id
    # The record rebuilds from its answer and serializes back to the same JSON (key order is
    # the codec's, so compared as canonical text).
    raw = archive.call("memory.show", {"id": first.id})
    assert canonical(MemoryRecord.from_json(raw).to_json()) == canonical(raw)


@pytest.mark.parametrize(
    "fields",
    [
        {"confidence": 1.5},
        {"confidence": "high"},
        {"layer": "L3"},
        {"ruleType": "vibe"},
        {"scope": "planet:x"},
        {"scope": "project:"},
        {"tags": ["x" * 65]},
    ],
)
def test_invalid_records_are_rejected(archive: Archive, fields: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        archive.memory_add("statement", **fields)


def test_missing_and_conflicting_ids(archive: Archive) -> None:
    with pytest.raises(InvalidInput):
        archive.memory_add("   ")
    with pytest.raises(NotFound):
        archive.memory_show("mem_nothing")
    record = archive.memory_add("x statement")
    archive.memory_add("y statement", supersedes=record.id)
    with pytest.raises(Conflict):
        archive.memory_add("z statement", supersedes=record.id)


# -- processors --------------------------------------------------------------------------------


def test_processor_traces_and_reasons() -> None:
    records = [
        rec("mem_ok", "use bounded queues"),
        rec("mem_dep", "old idea", status="deprecated"),
        rec("mem_con", "disputed idea", status="contested"),
        rec("mem_prof", "other profile", profile_id="project:other"),
        rec("mem_legacy", "legacy without a profile"),
        rec("mem_proj", "beta only", scope={"type": "project", "name": "beta"}),
        rec("mem_dom", "domain rule", scope={"type": "domain", "name": "web"}),
        rec("mem_neg", "hugo builds the blog", does_not_apply_when=["publish"]),
        rec("mem_exc", "tabs everywhere", known_exceptions=["makefile edits"]),
    ]
    ctx = processors.Context.make(
        "we are publishing the post after the Makefile edit", profile="me", project="alpha"
    )
    kept, traces = processors.run_pipeline(records, ctx)
    assert [t.processor for t in traces] == [
        "StatusFilterProcessor",
        "ProfileScopeProcessor",
        "BasicScopeProcessor",
        "NegativeScopeProcessor",
    ]
    reasons = {k: v for t in traces for k, v in t.exclusion_reasons.items()}
    assert reasons == {
        "mem_dep": "status:deprecated",
        "mem_con": "status:contested",
        "mem_prof": "profile_mismatch:project:other",
        "mem_proj": "project_mismatch:beta",
        "mem_neg": "does_not_apply_when:publish",
        "mem_exc": "known_exceptions:makefile edits",
    }
    assert {r["id"] for r in kept} == {"mem_ok", "mem_legacy", "mem_dom"}
    for trace in traces:
        body = trace.to_json()
        assert set(body) == {
            "processor",
            "input_count",
            "output_count",
            "excluded_ids",
            "exclusion_reasons",
        }
        assert body["input_count"] - body["output_count"] == len(body["excluded_ids"])


def test_negative_scope_matching_is_phrase_based() -> None:
    words = processors.words("Publishing the blog from /home/u/site-build")
    assert processors.phrase_matches("publish", words)
    assert processors.phrase_matches("the blog", words)
    assert processors.phrase_matches("site build", words)  # working-directory words count
    assert not processors.phrase_matches("blog the", words)  # order matters
    assert not processors.phrase_matches("pub", words)  # too short for a prefix variant
    assert processors.phrase_matches("PUBLISHÉ", processors.words("publishe"))


# -- ranking -----------------------------------------------------------------------------------


def test_fts_ranking_is_bm25_over_statement_and_tags() -> None:
    records = [
        rec("mem_a", "bounded queues for the worker pool", tags=["queues"]),
        rec("mem_b", "heartbeat timers on a dedicated thread"),
        rec("mem_c", "worker pool shutdown drains the queues"),
        rec("mem_d", "nothing relevant here"),
    ]
    prompt = "how are the worker queues bounded?"
    ranked = rank.rank(prompt, records)
    assert ranked.mode == "fts"
    assert [rid for rid, _ in ranked.order] == ["mem_a", "mem_c"]
    # Lucene BM25 (k1 1.2, b 0.75) by hand for mem_a: terms worker, queues (tf 2), bounded.
    docs = [rank.record_terms(r) for r in records]
    avgdl = sum(map(len, docs)) / 4

    def part(tf: int, df: int, dl: int) -> float:
        idf = math.log1p((4 - df + 0.5) / (df + 0.5))
        return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))

    dl = len(docs[0])
    expected = part(1, 2, dl) + part(2, 2, dl) + part(1, 1, dl)
    assert dict(ranked.order)["mem_a"] == pytest.approx(expected)


def test_hybrid_hook_and_term_match_fallback(monkeypatch: pytest.MonkeyPatch) -> None:
    records = [rec("mem_a", "alpha queue"), rec("mem_b", "beta queue")]
    hybrid = rank.rank("queue", records, semantic=lambda p, rs: [("mem_b", 0.9), ("mem_a", 0.1)])
    assert hybrid.mode == "hybrid"
    assert (rank.FTS_WEIGHT, rank.SEMANTIC_WEIGHT, rank.RRF_K) == (0.45, 0.55, 60)
    fts = [rid for rid, _ in rank.bm25("queue", records)]
    fused = dict(hybrid.order)
    for rid in ("mem_a", "mem_b"):
        semantic_rank = 1 if rid == "mem_b" else 2
        expected = 0.45 / (60 + fts.index(rid) + 1) + 0.55 / (60 + semantic_rank)
        assert fused[rid] == pytest.approx(expected)
    assert hybrid.order[0][0] == "mem_b"  # semantic weighs 0.55 against FTS's 0.45

    def broken(prompt: str, records: Any) -> Any:
        raise RuntimeError("fts down")

    monkeypatch.setattr(rank, "bm25", broken)
    fallback = rank.rank("beta queue", records)
    assert fallback.mode == "term-match" and fallback.order[0] == ("mem_b", 2.0)


# -- injection block ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "prompt",
    ["ok", "yes", "thanks", "Thanks!", "sounds good", "got it", "done", "Grazie mille",
     "va bene", "/curate-memory now", "   hi  "],
)  # fmt: skip
def test_trivial_prompts_are_skipped(prompt: str) -> None:
    assert trivial(prompt) is not None
    body = build([rec("mem_a", "bounded queues")], prompt, now=NOW)
    assert body["skipped"] and body["block"] is None


def test_real_prompts_are_not_trivial() -> None:
    assert trivial("how big are the worker queues?") is None


def test_hard_rules_selection_limits_and_prefixes() -> None:
    records = [
        rec(f"mem_r{i}", f"rule {i}", layer="L2", confidence=0.86 + i / 100, ruleType=t)
        for i, t in enumerate(["avoid_pattern", "prefer_pattern", "convention", "correction"] * 3)
    ]
    records += [
        rec("mem_low", "low confidence", layer="L2", confidence=0.84, ruleType="avoid_pattern"),
        rec("mem_l1", "working layer", layer="L1", confidence=0.99, ruleType="avoid_pattern"),
        rec("mem_none", "no rule type", layer="L2", confidence=0.99),
        rec("mem_con", "contested", layer="L2", confidence=0.99, ruleType="correction",
            status="contested"),
    ]  # fmt: skip
    rules = injection.hard_rules([r for r in records if r["status"] == "active"])
    assert len(rules) == 8
    confidences = [r["confidence"] for r in rules]
    assert confidences == sorted(confidences, reverse=True)
    assert {r["id"] for r in rules}.isdisjoint({"mem_low", "mem_l1", "mem_none", "mem_con"})
    block = build(records, "what rules apply to rule 3?", now=NOW)["block"]
    assert block.startswith("# Persistent Intelligence Context\n\n## Hard Rules\n")
    for prefix in ("⚠️ AVOID: [conf", "✓ PREFER: [conf", "📌 CONVENTION: [conf", "📌 RULE: [conf"):
        assert prefix in block
    assert "mem_con" not in block.split("## Selected Memory")[0]


def test_sections_order_staleness_contested_and_daily_log() -> None:
    records = [
        rec("mem_rule", "never force push", layer="L2", confidence=0.9, ruleType="avoid_pattern"),
        rec("mem_fresh", "worker queues hold 64 jobs", layer="L2", confidence=0.94),
        rec("mem_warm", "worker queues drain on shutdown", confidence=0.91, age=45),
        rec("mem_cold", "worker queues used to be unbounded", confidence=0.8, age=120),
        rec("mem_todo", "measure worker queues latency", tags=["scratchpad"]),
        rec("mem_c1", "worker queues should be unbounded", status="contested", confidence=0.88),
        rec("mem_c2", "worker queues live in redis", status="contested", confidence=0.7),
        rec("mem_c3", "worker queues are priority queues", status="contested", confidence=0.6),
        rec("mem_c4", "unrelated contested thing", status="contested"),
    ]

    def daily(now: Any) -> tuple[int, list[tuple[str, str]]]:
        return 3, [("alpha", "fixed the reaper"), ("beta", "wrote docs")]

    body = build(records, "how do the worker queues behave?", now=NOW, daily_log=daily)
    block = body["block"]
    order = ["## Hard Rules", "## Selected Memory", "## Scratchpad", "## Contested Memory",
             "## Daily Log (2026-11-20)", "## Today's Sessions"]  # fmt: skip
    positions = [block.index(h) for h in order]
    assert positions == sorted(positions)
    assert "- mem_fresh [L2, conf 0.94] worker queues hold 64 jobs" in block
    assert "- mem_warm [L1, conf 0.91 ⚠️ 30d]" in block
    assert "- mem_cold [L1, conf 0.80 🔴 90d]" in block
    assert "- [ ] measure worker queues latency" in block
    assert "Review before relying on them" in block
    assert len(body["sections"]["Contested Memory"]) == 2
    assert "⚠️ CONTESTED: [mem_c1, conf 0.88]" in block and "mem_c4" not in block
    assert "Sessions today: 3" in block and "- [alpha] fixed the reaper" in block
    assert body["ranking"]["mode"] == "fts"
    assert body["traces"][0]["processor"] == "StatusFilterProcessor"


def test_budget_truncates_later_sections() -> None:
    records = [
        rec(f"mem_{i:03d}", f"worker queue fact number {i} " + "x" * 400, confidence=0.8)
        for i in range(60)
    ]
    records.append(rec("mem_todo", "queue todo", tags=["scratchpad"]))
    body = build(records, "worker queue facts", now=NOW)
    assert body["bytes"] <= injection.BUDGET_BYTES == 14 * 1024
    small = build(records, "worker queue facts", now=NOW, budget=2_000)
    assert small["bytes"] <= 2_000
    assert "## Scratchpad" in small["truncated"] and "## Selected Memory" in small["truncated"]
    assert "## Scratchpad" not in small["block"]


def test_context_method_uses_the_archive(tmp_path: Path, archive: Archive) -> None:
    rows = [
        {"session": "today", "id": "u1", "role": "user", "text": "reaper work",
         "project": "alpha", "timestamp": "2026-11-20T09:00:00Z"},
        {"session": "today", "id": "a1", "role": "assistant", "text": "Fixed the reaper drain.",
         "timestamp": "2026-11-20T09:01:00Z"},
    ]  # fmt: skip
    archive.import_paths([write_jsonl(tmp_path / "t.jsonl", rows)])
    archive.memory_add("alpha queues hold 64 jobs", scope="project:alpha", layer="L2")
    archive.memory_add("beta queues hold 8 jobs", scope="project:beta", layer="L2")
    body = archive.memory_context("how many jobs do the queues hold?", session="today")
    block = body.block or ""
    assert "alpha queues hold 64 jobs" in block
    assert "beta queues" not in block
    assert "Sessions today: 1" in block
    assert "- [alpha] Fixed the reaper drain." in block
    reasons = {k: v for t in body.traces for k, v in t.exclusion_reasons}
    assert list(reasons.values()) == ["project_mismatch:beta"]
    assert archive.memory_context("ok").skipped


def test_memory_cli(archive: Archive) -> None:
    archive.close()
    runner = CliRunner()

    def run(*args: str) -> Any:
        result = runner.invoke(app, ["memory", *args, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    added = run("add", "Prefer small commits", "--rule-type", "prefer_pattern",
                "--confidence", "0.9", "--layer", "L2", "--scope", "domain:git", "--tag", "git",
                "--not-when", "squash merge")  # fmt: skip
    assert added["scope"] == {"type": "domain", "name": "git"}
    assert run("list")["records"][0]["id"] == added["id"]
    assert run("show", added["id"])["does_not_apply_when"] == ["squash merge"]
    context = run("context", "how should I structure commits in git?")
    assert "✓ PREFER: [conf 0.90] Prefer small commits" in context["block"]
    assert run("contest", added["id"], "--reason", "disputed")["status"] == "contested"
    assert run("deprecate", added["id"])["status"] == "deprecated"
    plain = runner.invoke(app, ["memory", "list"])
    assert plain.exit_code == 0 and "[deprecated]" in plain.stdout
    shown = runner.invoke(app, ["memory", "context", "ok"])
    assert shown.exit_code == 0 and "no memory block" in shown.stdout
    bad = runner.invoke(app, ["memory", "add", "x", "--layer", "L9", "--json"])
    assert bad.exit_code == 2


def test_context_ranks_by_meaning_too(
    archive: Archive, minilm: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    semantic = use_embedder(semantic_of(archive), minilm)  # the packaged model, loaded once
    archive.memory_add("Always run the database migrations before deploying", layer="L2")
    archive.memory_add("Use tabs for indentation in Go files", layer="L2")
    prompt = "how should we ship schema changes to production?"  # no word in common
    body = archive.memory_context(prompt)
    assert body.ranking is not None and body.ranking.mode == "hybrid"
    assert "database migrations" in (body.block or "")
    assert "indentation" not in (body.block or "")  # unrelated: below the semantic floor

    monkeypatch.setattr(semantic, "similarity", lambda *_a: 1 / 0)  # a failing model
    fallback = archive.memory_context(prompt)
    assert fallback.ranking is not None and fallback.ranking.mode == "fts"
    assert "database migrations" not in (fallback.block or "")


def test_opposite_polarity_on_the_same_pattern_contests_both(archive: Archive) -> None:
    avoid = archive.memory_add(
        "Avoid mocking the database in tests",
        ruleType="avoid_pattern", layer="L2", confidence=0.95, scope="project:alpha",
    )  # fmt: skip
    prompt = "should we mock the database in tests or use mocking at all?"
    before = archive.memory_context(prompt, project="alpha", dailyLog=False)
    assert "⚠️ AVOID: [conf 0.95] Avoid mocking the database in tests" in (before.block or "")
    prefer = archive.memory_add(
        "Prefer mocking the database in tests!",
        ruleType="prefer_pattern", layer="L2", confidence=0.9, scope="project:alpha",
    )  # fmt: skip
    assert prefer.status == "contested"
    assert prefer.history[-1] == MemoryEvent(
        prefer.updated, "contest", f"conflicting evidence: {avoid.id}"
    )
    old = archive.memory_show(avoid.id)
    assert old.status == "contested"
    assert old.history[-1].reason == f"conflicting evidence: {prefer.id}"
    body = archive.memory_context(prompt, project="alpha", dailyLog=False)
    assert "Hard Rules" not in dict(body.sections)  # contested records are never hard rules
    assert set(dict(body.sections)["Contested Memory"]) == {avoid.id, prefer.id}
    assert "⚠️ CONTESTED: [" + avoid.id in (body.block or "")


def test_only_the_same_pattern_scope_and_opposite_polarity_conflict(archive: Archive) -> None:
    base = archive.memory_add(
        "Avoid global mutable state", ruleType="avoid_pattern", scope="project:alpha"
    )
    same_polarity = archive.memory_add(
        "Never use global mutable state", ruleType="avoid_pattern", scope="project:alpha"
    )
    other_scope = archive.memory_add(
        "Prefer global mutable state", ruleType="prefer_pattern", scope="project:beta"
    )
    other_pattern = archive.memory_add(
        "Prefer global immutable state", ruleType="prefer_pattern", scope="project:alpha"
    )
    no_rule = archive.memory_add("Prefer global mutable state", scope="project:alpha")
    for record in (same_polarity, other_scope, other_pattern, no_rule):
        assert record.status == "active", record
    assert archive.memory_show(base.id).status == "active"
    # Replacing a record is not contradicting it (and a deprecated record is no evidence).
    archive.memory_deprecate(same_polarity.id)
    replaced = archive.memory_add(
        "Prefer global mutable state",
        ruleType="prefer_pattern", scope="project:alpha", supersedes=base.id,
    )  # fmt: skip
    assert replaced.status == "active"
    assert archive.memory_show(base.id).status == "superseded"


def test_an_explicit_conflicting_link_contests_both(archive: Archive) -> None:
    first = archive.memory_add("Workers use threads", layer="L2", confidence=0.9)
    second = archive.memory_add("Workers use processes", contradicts=[first.id])
    assert second.status == "contested"
    assert archive.memory_show(first.id).status == "contested"
    with pytest.raises(NotFound):
        archive.memory_add("x", contradicts=["mem_missing"])
    archive.memory_deprecate(first.id)
    with pytest.raises(Conflict):
        archive.memory_add("y", contradicts=[first.id])


def test_memory_cli_reports_conflicting_evidence(archive: Archive) -> None:
    archive.close()
    runner = CliRunner()
    first = runner.invoke(app, ["memory", "add", "Workers use threads", "--json"])
    first_id = json.loads(first.stdout)["id"]
    shown = runner.invoke(
        app, ["memory", "add", "Workers use processes", "--contradicts", first_id]
    )
    assert shown.exit_code == 0, shown.output
    assert "[contested]" in shown.stdout
    assert f"contested: conflicting evidence: {first_id}" in shown.stdout


def test_session_start_block_has_no_prompt_sections() -> None:
    records = [
        rec("mem_rule", "never force push", layer="L2", confidence=0.9, ruleType="avoid_pattern"),
        rec("mem_fact", "worker queues hold 64 jobs", layer="L2", confidence=0.94),
        rec("mem_todo", "measure worker queues latency", tags=["scratchpad"]),
        rec("mem_c1", "worker queues should be unbounded", status="contested", confidence=0.88),
    ]

    def daily(now: Any) -> tuple[int, list[tuple[str, str]]]:
        return 1, [("alpha", "fixed the reaper")]

    body = build(records, "ok", now=NOW, daily_log=daily, start=True)
    assert body["skipped"] is False  # no prompt to filter: the start block is always built
    assert set(body["sections"]) == {"Hard Rules", "Scratchpad", "Daily Log", "Today's Sessions"}
    assert "mem_fact" not in body["block"] and "## Contested Memory" not in body["block"]
    reasons = {u["id"]: u["reason"] for u in body["unselected"]}
    assert reasons == {"mem_fact": "not-relevant", "mem_c1": "contested:not-relevant"}


def test_records_left_out_of_the_block_say_why() -> None:
    rules = [
        rec(f"mem_r{i}", f"rule {i}", layer="L2", confidence=0.86 + i / 100, ruleType="convention")
        for i in range(9)
    ]
    facts = [rec(f"mem_f{i:02d}", f"queue fact {i}", confidence=0.8) for i in range(12)]
    other = [rec("mem_x", "unrelated statement about pelicans")]
    body = build(rules + facts + other, "which queue fact applies?", now=NOW)
    reasons = {u["id"]: u["reason"] for u in body["unselected"]}
    assert reasons["mem_r0"] == "hard-rule-limit"  # the lowest-confidence of nine
    assert sorted(r for r, why in reasons.items() if why == "selected-limit") == sorted(
        set(f["id"] for f in facts) - set(body["sections"]["Selected Memory"])
    )
    assert reasons["mem_x"] == "not-relevant"
    shown = {i for ids in body["sections"].values() for i in ids}
    assert shown.isdisjoint(reasons)
    small = build(rules + facts, "which queue fact applies?", now=NOW, budget=420)
    cut = {u["id"]: u["reason"] for u in small["unselected"]}
    assert "## Selected Memory" in small["truncated"]
    assert {cut[f] for f in small["sections"].get("Selected Memory", []) if f in cut} == set()
    assert "budget" in cut.values()


def test_project_only_context_never_sees_another_projects_records(
    tmp_path: Path, archive: Archive
) -> None:
    rows = [
        {"session": "s-alpha", "id": "u1", "role": "user", "text": "alpha work",
         "project": "alpha", "timestamp": "2026-11-20T09:00:00Z"},
        {"session": "s-beta", "id": "u1", "role": "user", "text": "beta secret work",
         "project": "beta", "timestamp": "2026-11-20T09:05:00Z"},
    ]  # fmt: skip
    archive.import_paths([write_jsonl(tmp_path / "t.jsonl", rows)])
    archive.memory_add("alpha queues hold 64 jobs", scope="project:alpha")
    beta = archive.memory_add("beta queues hold 8 jobs", scope="project:beta")
    body = archive.memory_context(
        "how many jobs do queues hold?", project="alpha", projectOnly=True
    )
    assert beta.id not in json.dumps(body.to_json()) and "beta" not in (body.block or "")
    assert "Sessions today: 1" in (body.block or "")
    wide = archive.memory_context("how many jobs do queues hold?", project="alpha")
    traces = [t.to_json() for t in wide.traces]
    assert beta.id in json.dumps(traces) and "Sessions today: 2" in (wide.block or "")
    with pytest.raises(InvalidInput):
        archive.memory_context("queues?", projectOnly=True)

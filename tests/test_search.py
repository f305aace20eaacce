"""Explicit search, recall, gather and supersession (spec 000 verification map rows)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.contract import bands
from cwcore.contract.search import SearchResponse
from cwcore.errors import InvalidInput, LimitExceeded
from cwcore.retrieve import fusion
from cwtui.cli import app
from tests.helpers import write_jsonl
from tests.support import engine_of

HIT_FIELDS = {
    "documentId",
    "version",
    "kind",
    "score",
    "band",
    "matchType",
    "margin",
    "snippet",
    "historical",
    "superseded",
    "locator",
    "reranked",
    "matchedTerms",
    "expandedTerms",
    "score_metadata",
    "source",
}
SOURCE_FIELDS = {
    "sessionId",
    "turnId",
    "messageKey",
    "messageKeys",
    "project",
    "agent",
    "timestamp",
}


def msg(session: str, mid: str, role: str, text: str, minute: int, project: str = "alpha") -> dict:
    return {
        "session": session,
        "id": mid,
        "role": role,
        "text": text,
        "project": project,
        "timestamp": f"2026-11-1{minute // 60}T10:{minute % 60:02d}:00Z",
    }


ROWS = [
    msg("s1", "u1", "user", "Why does the reaper crash with REAP_DRAIN in src/reaper/drain.py?", 0),
    msg(
        "s1", "a1", "assistant", "REAP_DRAIN prevents accepting new work while the pool drains.", 1
    ),
    msg("s1", "u2", "user", "Please switch the pool to bounded queues.", 2),
    msg("s1", "a2", "assistant", "We will use bounded queues with a capacity of 64 jobs.", 3),
    msg("s1", "u3", "user", "The scheduler misses heartbeats when garbage collection pauses.", 4),
    msg("s1", "a3", "assistant", "Heartbeat timers now run on a dedicated thread.", 5),
    msg("s2", "u1", "user", "How do we rotate the signing keys for webhooks?", 70),
    msg(
        "s2",
        "a1",
        "assistant",
        "Rotate keys with the admin endpoint; old keys stay valid for a day.",
        71,
    ),
    msg(
        "s3", "u1", "user", "Bounded queues again: what capacity did we pick?", 130, project="beta"
    ),
    msg("s3", "a1", "assistant", "We picked 64 in the alpha project.", 131, project="beta"),
]


@pytest.fixture
def arch(tmp_path: Path, archive: Archive) -> Archive:
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", ROWS)])
    return archive


def search(arch: Archive, **req: Any) -> SearchResponse:
    return arch.search(req)


def test_contract_shape(arch: Archive) -> None:
    body = search(arch, query="bounded queues").to_json()
    assert set(body) >= {
        "query",
        "results",
        "retrieval_status",
        "semantic_search_used",
        "generation",
        "timing_ms",
    }
    assert body["retrieval_status"] in ("ok", "partial", "lexical_fallback", "empty")
    for hit in body["results"]:
        assert set(hit) >= HIT_FIELDS
        assert set(hit["source"]) >= SOURCE_FIELDS
        assert hit["band"] == bands.band(hit["score"])
        assert hit["historical"] is True and hit["superseded"] is False
        assert 0.0 <= hit["score"] <= 1.0
        assert hit["source"]["messageKey"] in hit["source"]["messageKeys"]


def test_exact_first_and_not_broken_into_terms(arch: Archive) -> None:
    body = search(arch, query="REAP_DRAIN")
    assert body.results[0].match_type == "exact-error"
    assert body.results[0].source.session_id == "s1"
    assert "lexical" not in body.stages  # the exact lookup answered: no OR-term BM25
    path = search(arch, query="src/reaper/drain.py").results[0]
    assert path.match_type == "exact-path"
    assert path.source.message_key == "user:u1"


def test_a_full_path_outranks_its_file_name_alone(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cwcore.index import prepare

    # Big documents keep only their most specific anchors (the publication cap): the path, not
    # the file name inside it, which the query still extracts as an anchor of its own.
    monkeypatch.setattr(prepare, "MAX_EXACT_POSTINGS", 2)
    path = "/home/dev/project/internal/cli/root_test.go"
    rows = [
        msg("p2", "u1", "user", f"Update File: {path}", 0),
        msg("p2", "a1", "assistant", "Patched it.", 1),
        msg("p1", "u1", "user", "git status shows root_test.go modified", 10),
        msg("p1", "a1", "assistant", "Yes, it changed.", 11),
    ]
    archive.import_paths([write_jsonl(tmp_path / "p.jsonl", rows)])
    top = search(archive, query=path, semanticPolicy="never").results[0]
    assert top.source.session_id == "p2" and top.match_type == "exact-path"
    assert top.score == 1.0  # the file name inside the matched path counts as matched


def test_tiers_never_cross(arch: Archive) -> None:
    body = search(arch, query="REAP_DRAIN bounded queues", limit=10)
    tiers = [h.score_metadata["tier"] for h in body.results]
    assert tiers == sorted(tiers)
    assert tiers[0] == 0  # exact first, lexical after


def test_lexical_bands_and_margin(arch: Archive) -> None:
    body = search(arch, query="heartbeats garbage collection pauses")
    top = body.results[0]
    assert top.match_type == "lexical" and top.source.session_id == "s1"
    assert top.band in ("high", "moderate")
    assert top.margin >= 0
    assert set(top.matched_terms) >= {"heartbeats", "garbage", "collection"}


def test_scope_and_filters(arch: Archive) -> None:
    assert {h.source.project for h in search(arch, query="bounded queues").results} == {
        "alpha",
        "beta",
    }
    only_beta = search(arch, query="bounded queues", scope="project", project="beta")
    assert {h.source.session_id for h in only_beta.results} == {"s3"}
    session = search(arch, query="keys", scope="session", sessions=["s2"])
    assert {h.source.session_id for h in session.results} == {"s2"}
    by_role = search(arch, query="bounded queues capacity", role="assistant")
    assert all(
        any(k.startswith("assistant:") for k in h.source.message_keys) for h in by_role.results
    )
    later = search(arch, query="bounded queues", since="2026-11-12T00:00:00Z")
    assert {h.source.session_id for h in later.results} == {"s3"}


def test_exclude_visible_source_keys(arch: Archive) -> None:
    first = search(arch, query="rotate signing keys webhooks").results[0]
    keys = list(first.source.message_keys)
    again = search(arch, query="rotate signing keys webhooks", excludeVisibleSourceKeys=keys)
    assert first.document_id not in [h.document_id for h in again.results]
    with pytest.raises(LimitExceeded):
        search(arch, query="x", excludeVisibleSourceKeys=[f"user:{i}" for i in range(1001)])


def test_relation_structural_tier(arch: Archive) -> None:
    body = search(arch, relation="decision")
    assert body.results and all(h.match_type == "structural-decision" for h in body.results)
    combined = search(arch, relation="question", query="signing keys")
    assert combined.results[0].match_type == "structural-question"
    assert combined.results[0].source.session_id == "s2"


def test_a_decision_is_a_span_of_its_turn_recalled_verbatim(arch: Archive) -> None:
    """Imports create no ``decision`` documents: a decision is a structural span inside its
    turn, found with ``relation: decision`` and recalled as the verbatim span inside the
    complete turn that holds it."""
    hit = search(arch, relation="decision", query="bounded queues").results[0]
    assert (hit.kind, hit.match_type) == ("turn", "structural-decision")
    assert "We will use bounded queues" in hit.snippet
    answer = arch.recall(hit.locator)
    body = answer.source
    assert answer.status == "resolved" and body is not None
    assert body.document_id == hit.document_id
    assert body.kind == "turn" and body.range[0] == 0  # the whole turn, not a window
    raw = body.text.encode("utf-8")
    span = raw[body.match[0] - body.range[0] : body.match[1] - body.range[0]]
    assert span.decode("utf-8").startswith("We will use bounded queues")
    assert search(arch, query="bounded queues", kind="decision").results == ()


def test_expansion_only_when_weak(arch: Archive) -> None:
    strong = search(arch, query="REAP_DRAIN")
    assert "expanded" not in strong.stages
    weak = search(arch, query="capacity")
    assert "expanded" in weak.stages
    assert len(weak.stages["expanded"]) <= 8
    for hit in weak.results:
        assert set(hit.expanded_terms) <= set(weak.stages["expanded"])


def test_empty_evidence_gives_advice(arch: Archive) -> None:
    body = search(arch, query="kubernetes helm chart")
    assert body.results == () and body.retrieval_status == "empty"
    assert body.advice and "advice" in body.to_json()


def test_bad_requests() -> None:
    from cwcore.contract.search import parse_request

    for bad in (
        {},
        {"query": "x", "scope": "galaxy"},
        {"query": "x", "limit": 0},
        {"query": "x", "relation": "gossip"},
        {"query": "x", "scope": "session"},
        {"query": "x", "nonsense": 1},
        {"query": 3},
    ):
        with pytest.raises(InvalidInput):
            parse_request(bad)


def test_bands_thresholds() -> None:
    assert [bands.band(s) for s in (0.8, 0.79, 0.5, 0.49, 0.2, 0.19, 0.0)] == [
        "high",
        "moderate",
        "moderate",
        "some",
        "some",
        "low",
        "low",
    ]


def test_rrf_fusion_rank_credit_and_order() -> None:
    fused = fusion.fuse(
        {"lexical": ["a", "b", "c"], "semantic": ["c", "d"]},
        {"a": 0.9, "b": 0.5, "c": 0.4, "d": 0.3},
    )
    order = [f.key for f in fused]
    assert order[0] == "c"  # credit from both modes
    assert fused[0].ranks == {"lexical": 3, "semantic": 1}
    same = fusion.fuse({"lexical": ["x", "y", "z"]}, {"x": 0.5, "y": 0.5, "z": 0.5})
    assert [f.key for f in same] == ["x", "y", "z"]  # equal scores: rank order preserved
    assert (
        fusion.rank_weight(3) == 0.75
        and fusion.rank_weight(4) == 0.6
        and fusion.rank_weight(11) == 0.4
    )


def test_rrf_uses_k_60_and_gather_always_runs_the_semantic_mode() -> None:
    from cwcore import precheck
    from cwcore.retrieve.params import RetrievalParams

    fused = fusion.fuse({"lexical": ["a"], "semantic": ["a"]}, {"a": 0.0})
    assert RetrievalParams().rrf_k == 60 and fused[0].ranks == {"lexical": 1, "semantic": 1}
    assert fused[0].rrf == 1.0 / 61 + 0.3 / 61
    request, _ = precheck.gather({"query": "bounded queues", "semanticPolicy": "never"})
    assert request.semantic_policy == "always"


def test_recall_resolves_exact_source(arch: Archive) -> None:
    hit = search(arch, query="REAP_DRAIN").results[0]
    answer = arch.recall(hit.locator)
    body = answer.source
    assert answer.status == "resolved" and body is not None
    assert "REAP_DRAIN prevents accepting new work" in body.text
    assert body.source_keys[0] == "user:u1" and answer.to_json()["historical"] is True
    assert body.chunks and body.session == "s1" and body.created


def test_recall_statuses(arch: Archive, monkeypatch: pytest.MonkeyPatch) -> None:
    hit = search(arch, query="REAP_DRAIN").results[0]
    loc = hit.locator
    tampered = loc[:-2] + ("AA" if not loc.endswith("AA") else "BB")
    assert arch.recall(tampered).status == "locator-invalid"
    assert arch.recall("garbage").status == "locator-invalid"
    assert arch.recall(loc, project="beta").status == "locator-invalid"  # foreign project
    monkeypatch.setenv("CW_NOW", "2026-11-20T12:31:00Z")  # 31 minutes after the search
    assert arch.recall(loc).status == "lease-expired"
    monkeypatch.setenv("CW_NOW", "2026-11-20T12:00:00Z")
    with pytest.raises(InvalidInput):
        arch.recall(loc, neighbors=33)


def test_recall_of_a_version_that_does_not_exist_is_missing(arch: Archive) -> None:
    from dataclasses import replace

    from cwcore.retrieve.locator import Signer, load_key

    hit = search(arch, query="REAP_DRAIN").results[0]
    signer = Signer(load_key(arch.home))
    later = replace(signer.verify(hit.locator), version=hit.version + 5)
    assert arch.recall(signer.sign(later)).status == "missing"


def test_recall_tokens_are_capped_at_100000(arch: Archive) -> None:
    hit = search(arch, query="REAP_DRAIN").results[0]
    assert arch.recall(hit.locator, max_tokens=100_000).status == "resolved"
    with pytest.raises(InvalidInput):
        arch.recall(hit.locator, max_tokens=100_001)


def test_a_direct_read_over_the_size_limit_is_a_chunk_table(arch: Archive) -> None:
    from cwcore.recall.recall import read_document

    hit = search(arch, query="REAP_DRAIN").results[0]
    engine = engine_of(arch)
    answer = read_document(engine.store, hit.document_id, max_bytes=10)
    body = answer.document
    assert answer.status == "resolved" and body is not None
    assert body.truncated and body.text is None and "text" not in answer.to_json()
    assert body.chunks and len(body.chunks) <= 256 and len(body.source_keys) <= 16


def test_session_scoped_locator_needs_lineage(arch: Archive) -> None:
    hit = search(arch, query="keys", scope="session", sessions=["s2"]).results[0]
    assert arch.recall(hit.locator).status == "locator-invalid"
    assert arch.recall(hit.locator, session_ids=["s1"]).status == "locator-invalid"
    assert arch.recall(hit.locator, session_ids=["s2"]).status == "resolved"


def test_supersede_leaves_every_path_at_once(arch: Archive) -> None:
    exact = search(arch, query="REAP_DRAIN").results[0]
    doc = exact.document_id
    arch.supersede(doc, reason="reversed")
    assert doc not in [h.document_id for h in search(arch, query="REAP_DRAIN").results]
    assert doc not in [h.document_id for h in search(arch, query="reaper crash drains").results]
    assert doc not in [h.document_id for h in search(arch, relation="question").results]
    assert arch.recall(exact.locator).status == "superseded"
    audit = arch.show_document(doc, include_superseded=True)
    assert audit.state == "superseded"
    assert "REAP_DRAIN" in audit.versions[0].text
    with pytest.raises(InvalidInput):
        arch.show_document(doc)


def test_supersede_with_replacement_never_substitutes(arch: Archive) -> None:
    old = search(arch, query="bounded queues capacity", project="alpha").results[0]
    new = search(arch, query="picked 64 alpha", project="beta").results[0]
    arch.supersede(old.document_id, by=new.document_id, reason="moved")
    body = arch.recall(old.locator)
    assert body.status == "superseded" and body.source is None and body.document is None


def test_forgotten_source_recall_is_expired(arch: Archive) -> None:
    hit = search(arch, query="rotate signing keys").results[0]
    arch.forget(hit.source.session_id)
    assert arch.recall(hit.locator).status == "expired"


def test_gather_neighbours_have_no_score(arch: Archive) -> None:
    body = arch.gather({"query": "bounded queues", "limit": 2}).to_json()
    assert body["results"]
    for hit in body["results"]:
        assert "score" in hit and "band" in hit
        for neighbour in hit["before"] + hit["after"]:
            assert "score" not in neighbour and "band" not in neighbour


def test_recall_feedback_counter(arch: Archive) -> None:
    hit = search(arch, query="REAP_DRAIN").results[0]
    arch.recall(hit.locator)
    engine = engine_of(arch)
    from cwcore.retrieve.importance import importance as _importance

    ordinal = engine.reader.head(hit.document_id)["ordinal"]
    assert 1.0 < _importance(engine.store, [ordinal])[ordinal] <= 1.15


def test_cli_search_json_batch_and_recall(tmp_path: Path) -> None:
    runner = CliRunner()
    assert (
        runner.invoke(app, ["import", str(write_jsonl(tmp_path / "a.jsonl", ROWS))]).exit_code == 0
    )
    out = runner.invoke(app, ["search", "REAP_DRAIN", "--json"])
    assert out.exit_code == 0
    body = json.loads(out.stdout)
    assert body["results"][0]["matchType"] == "exact-error"
    table = runner.invoke(app, ["search", "REAP_DRAIN"])
    assert "high" in table.stdout and "exact-error" in table.stdout
    batch = tmp_path / "q.jsonl"
    batch.write_text(
        '{"id": "a", "query": "REAP_DRAIN"}\nnot json\n{"id": 7, "query": "x", "limit": 0}\n'
        '["REAP_DRAIN"]\n{"id": "z", "query": "REAP_DRAIN"}\n'
    )
    lines = [
        json.loads(x)
        for x in runner.invoke(app, ["search", "--batch", str(batch), "--json"]).stdout.splitlines()
    ]
    # A line that is JSON but not an object is refused like any bad line and the batch goes on
    # (it used to end the batch with an internal error).
    assert [x.get("id") for x in lines] == ["a", None, 7, None, "z"]
    assert (
        lines[0]["results"] and "error" in lines[1] and lines[2]["error"]["code"] == "invalid-input"
    )
    assert lines[3]["error"] == {
        "code": "invalid-input",
        "message": "a search request must be a JSON object",
    }
    assert lines[4]["results"]
    recalled = runner.invoke(app, ["recall", body["results"][0]["locator"]])
    assert recalled.exit_code == 0 and "REAP_DRAIN prevents" in recalled.stdout
    bad = runner.invoke(app, ["recall", "cwl1.x.y", "--json"])
    assert json.loads(bad.stdout)["status"] == "locator-invalid"


def test_recall_by_direct_document_id(arch: Archive) -> None:
    hit = search(arch, query="REAP_DRAIN").results[0]
    answer = arch.recall(hit.document_id)
    body = answer.document
    assert answer.status == "resolved" and body is not None and body.text is not None
    assert "REAP_DRAIN prevents" in body.text
    assert body.source_keys and answer.to_json()["historical"] is True
    assert arch.recall("no/such").status == "locator-invalid"

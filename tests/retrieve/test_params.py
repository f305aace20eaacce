"""One frozen :class:`RetrievalParams` carried by the search context (issue 37).

Before it, the ranking knobs were module globals and ``fusion.fuse`` captured ``RRF_K`` as a
default argument when the module loaded, so ``python -m eval --override
cwcore.retrieve.fusion.RRF_K=30`` changed nothing and said nothing. Now every stage reads the
context's instance, and a name that is not a field is refused.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.errors import InvalidInput
from cwcore.retrieve import fusion
from cwcore.retrieve import params as params_mod
from cwcore.retrieve.params import RetrievalParams
from tests.helpers import user_turns, write_jsonl
from tests.support import search_context_of


def _order(archive: Archive, query: str, params: RetrievalParams) -> list[str]:
    search_context_of(archive).params = params
    body = {"query": query, "semanticPolicy": "never", "limit": 10, "rerank": False}
    return [h.document_id for h in archive.search(body).results]


def test_defaults_are_the_shipped_values() -> None:
    p = RetrievalParams()
    assert (p.bm25_k1, p.bm25_b, p.rrf_k) == (1.2, 0.75, 60)
    assert (p.lexical_weight, p.semantic_weight, p.score_blend) == (1.0, 0.3, True)
    assert (p.weak_score, p.weak_coverage, p.expansion, p.expansion_weight) == (0.5, 0.6, True, 0.5)
    assert (p.expansion_terms, p.expansion_windows, p.expansion_candidates) == (8, 3, 24)
    assert (p.importance_cap, p.recency_bonus, p.lineage_step) == (1.15, 0.03, 0.02)
    assert (p.fetch_per_hit, p.fetch_extra, p.deeper, p.max_rounds) == (4, 40, 4, 6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.rrf_k = 30  # type: ignore[misc]


def test_an_unknown_field_is_refused_by_name() -> None:
    with pytest.raises(InvalidInput, match="RRF_K"):
        RetrievalParams().replace(RRF_K=30)
    with pytest.raises(InvalidInput, match="nope"):
        params_mod.parse(["rrf_k=30", "nope=1"])
    with pytest.raises(InvalidInput, match="rrf_k"):
        RetrievalParams().replace(rrf_k=-1)
    with pytest.raises(InvalidInput, match="expansion"):
        params_mod.parse(["expansion=maybe"])
    with pytest.raises(InvalidInput, match="expansion_terms"):
        RetrievalParams(expansion_terms=2.5)  # type: ignore[arg-type]
    assert params_mod.parse(["rrf_k=30", "expansion=false"]) == RetrievalParams(
        rrf_k=30, expansion=False
    )


def test_rrf_k_changes_a_fused_ranking() -> None:
    # "a" is lexical rank 1; "b" is lexical rank 2 and semantic rank 1. With k = 60 b's two
    # credits outweigh a's one; with k = 1 rank 1 is worth so much more that a leads.
    lexical = [("a", 0.5), ("b", 0.5)]
    semantic = [("b", 0.5)]
    assert next(e.key for e in fusion.fuse_tier(lexical, semantic)) == "b"
    steep = RetrievalParams().replace(rrf_k=1)
    assert next(e.key for e in fusion.fuse_tier(lexical, semantic, params=steep)) == "a"


def test_the_search_context_params_reach_fusion(archive: Archive, tmp_path: Path) -> None:
    """Through a real search: BM25 rank 1 (the rare word many times, the common one absent) has
    a lower calibrated score than rank 2 (both words once). A large RRF k flattens the rank
    credit, so the score decides; k = 0 makes rank 1's credit twice rank 2's."""
    texts = ["zebra " * 12 + "stripes grazing", "a zebra and a lion met near the river"]
    texts += [f"the lion slept in the heat, day {i}" for i in range(12)]
    texts += [f"filler note about weather number {i}" for i in range(30)]
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", user_turns(texts))])
    flat = RetrievalParams(recency_bonus=0.0)
    by_score = _order(archive, "zebra lion", flat.replace(rrf_k=1000))
    by_rank = _order(archive, "zebra lion", flat.replace(rrf_k=0))
    assert by_score[:2] == list(reversed(by_rank[:2]))
    # The context's instance is what the stages read: putting the defaults back restores them.
    assert _order(archive, "zebra lion", RetrievalParams()) == _order(
        archive, "zebra lion", RetrievalParams()
    )


def test_eval_param_builds_the_run_params(capsys: pytest.CaptureFixture[str]) -> None:
    from eval import __main__ as cli

    assert cli._params([]) is None
    run = cli._params(["rrf_k=30", "semantic_weight=0.5"])
    assert run == RetrievalParams(rrf_k=30, semantic_weight=0.5)
    assert cli._changed(run) == {"rrf_k": 30, "semantic_weight": 0.5}
    assert cli.main(["--param", "RRF_K=30", "--sets", "demo"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown retrieval parameter RRF_K" in err
    with pytest.raises(SystemExit, match="--param rrf_k"):
        cli._override("cwcore.retrieve.fusion.RRF_K=30")
    # K1 still exists (bm25.search's own default): setting it would silently change nothing.
    with pytest.raises(SystemExit, match="--param bm25_k1"):
        cli._override("cwcore.index.bm25.K1=2.0")


def test_eval_sets_open_their_archive_with_the_run_params(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from eval import common

    run = RetrievalParams(rrf_k=30)
    monkeypatch.setattr(common, "PARAMS", run)
    archive = common.open_archive(tmp_path / "home")
    try:
        assert search_context_of(archive).params is run
    finally:
        archive.close()
    monkeypatch.setattr(common, "PARAMS", None)
    archive = common.open_archive(tmp_path / "home")
    try:
        assert search_context_of(archive).params == RetrievalParams()
    finally:
        archive.close()


_values = st.fixed_dictionaries(
    {},
    optional={
        "bm25_k1": st.floats(0, 5),
        "bm25_b": st.floats(0, 1),
        "rrf_k": st.floats(0, 1000),
        "lexical_weight": st.floats(0, 3),
        "semantic_weight": st.floats(0, 3),
        "score_blend": st.booleans(),
        "weak_score": st.floats(0, 1),
        "weak_coverage": st.floats(0, 1),
        "expansion": st.booleans(),
        "expansion_weight": st.floats(0, 2),
        "expansion_terms": st.integers(0, 40),
        "expansion_windows": st.integers(0, 10),
        "expansion_candidates": st.integers(0, 60),
        "expansion_min_df": st.integers(0, 5),
        "exact_tier_share": st.floats(0, 1),
        "exact_tier_min_df": st.integers(0, 50),
        "fetch_per_hit": st.integers(1, 8),
        "fetch_extra": st.integers(0, 60),
        "deeper": st.integers(1, 6),
        "max_rounds": st.integers(1, 4),
        "session_depth": st.integers(1, 6),
        "importance_cap": st.floats(1, 2),
        "recall_step": st.floats(0, 1),
        "recall_max": st.integers(0, 10),
        "recency_bonus": st.floats(0, 1),
        "lineage_step": st.floats(0, 1),
        "lineage_max": st.integers(0, 5),
    },
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Archive]:
    home = tmp_path_factory.mktemp("params-home")
    archive = Archive.open(home, embedded=True)
    texts = [f"the flaky widget {c} broke the nightly build in src/app/{c}.py" for c in "abcdef"]
    texts += [f"filler text about weather number {i} and the build" for i in range(20)]
    archive.import_paths([write_jsonl(home.parent / "a.jsonl", user_turns(texts))])
    yield archive
    archive.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=_values, query=st.sampled_from(["flaky widget", "src/app/c.py", "weather build"]))
@example(values={"lexical_weight": 0.0}, query="flaky widget")  # no RRF credit at all
@example(values={"bm25_k1": 0.0, "bm25_b": 0.0, "rrf_k": 0.0}, query="weather build")
def test_valid_params_never_break_a_search(
    corpus: Archive, values: dict[str, object], query: str
) -> None:
    p = RetrievalParams().replace(**values)
    search_context_of(corpus).params = p
    body = {"query": query, "semanticPolicy": "never", "limit": 5, "rerank": False}
    hits = corpus.search(body).results
    assert len({h.document_id for h in hits}) == len(hits) <= 5
    assert all(0.0 <= h.score <= 1.0 for h in hits)

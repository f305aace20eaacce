"""The ``auto`` semantic rescue trigger (issue 35): a pure decision on the first lexical pass's
evidence (:func:`cwcore.retrieve.semantic.rescue`), equal to today's weak pass with the default
parameters, and what search passes to the semantic stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.retrieve import search as search_module
from cwcore.retrieve.params import DEFAULT, RetrievalParams
from cwcore.retrieve.semantic import (
    RescueEvidence,
    SemanticOutcome,
    content_words,
    rescue,
    rescue_evidence,
    weak,
)
from cwcore.semantic import index as handler
from tests.helpers import write_jsonl
from tests.semantic.conftest import FakeEmbedder, topic_rows
from tests.support import engine_of, search_context_of

share = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
evidence = st.builds(
    RescueEvidence,
    exact=st.booleans(),
    score=st.none() | share,
    coverage=share,
    content=share,
    margin=st.floats(min_value=-1.0, max_value=1.0, allow_nan=False),
    words=st.integers(min_value=0, max_value=40),
    absent=share,
)
knobs = st.fixed_dictionaries(
    {
        "rescue_score": share,
        "rescue_coverage": share,
        "rescue_content": share,
        "rescue_absent": share,
        "rescue_margin": share,
        "rescue_words": st.integers(min_value=0, max_value=40),
    }
)


def test_weak_is_the_documented_rule() -> None:
    assert weak(RescueEvidence(score=None))  # BM25 found nothing
    assert weak(RescueEvidence(score=0.49, coverage=1.0, content=1.0))
    assert weak(RescueEvidence(score=0.9, coverage=0.59, content=1.0))
    assert not weak(RescueEvidence(score=0.5, coverage=0.6, content=1.0))
    assert not weak(RescueEvidence(exact=True, score=None))  # an exact answer is never weak


def test_each_rescue_field_fires_on_a_strong_pass() -> None:
    strong = RescueEvidence(score=0.7, coverage=0.8, content=0.5, margin=0.05, words=6, absent=0.5)
    assert not rescue(strong) and not rescue(strong, OFF)
    assert rescue(strong, OFF.replace(rescue_score=0.8))
    assert rescue(strong, OFF.replace(rescue_coverage=0.9))
    assert rescue(strong, OFF.replace(rescue_content=0.75))
    assert rescue(strong, OFF.replace(rescue_absent=0.5))
    assert not rescue(strong, OFF.replace(rescue_absent=0.6))
    assert rescue(strong, OFF.replace(rescue_margin=0.1))
    assert rescue(strong, OFF.replace(rescue_words=6))
    assert not rescue(strong, OFF.replace(rescue_words=7))
    # Thresholds at or below the evidence do not fire.
    assert not rescue(strong, OFF.replace(rescue_score=0.7, rescue_coverage=0.8))


OFF = DEFAULT.replace(rescue_coverage=0.0)  # every rescue field off: the trigger before issue 35


@given(evidence)
def test_every_field_off_is_the_weak_pass_and_the_default_adds_coverage_below_0_8(
    ev: RescueEvidence,
) -> None:
    assert rescue(ev, OFF) == weak(ev)
    extra = not ev.exact and ev.score is not None and ev.coverage < 0.8
    assert rescue(ev) == rescue(ev, RetrievalParams()) == (weak(ev) or extra)


def test_the_shipped_trigger() -> None:
    assert DEFAULT.rescue_coverage == 0.8
    assert rescue(RescueEvidence(score=0.9, coverage=0.79, content=1.0))  # borderline: rescued
    assert not rescue(RescueEvidence(score=0.9, coverage=0.8, content=0.2))
    assert not rescue(RescueEvidence(exact=True, score=0.9, coverage=0.1))


@given(evidence, knobs)
def test_the_rescue_only_adds_to_the_weak_pass_and_never_after_an_exact_answer(
    ev: RescueEvidence, fields: dict[str, Any]
) -> None:
    params = DEFAULT.replace(**fields)
    if weak(ev, params):
        assert rescue(ev, params)
    if ev.exact:
        assert not rescue(ev, params)


@given(evidence, knobs, st.sampled_from(["rescue_score", "rescue_coverage", "rescue_content"]))
def test_raising_a_threshold_never_stops_a_rescue(
    ev: RescueEvidence, fields: dict[str, Any], name: str
) -> None:
    low = DEFAULT.replace(**fields)
    high = low.replace(**{name: min(1.0, fields[name] + 0.1)})
    assert not rescue(ev, low) or rescue(ev, high)


@given(
    st.lists(share, max_size=3),
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), unique=True),
    st.dictionaries(
        st.sampled_from(["alpha", "beta", "gamma", "delta"]),
        st.floats(min_value=0.0, max_value=12.0, allow_nan=False),
    ),
    st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), unique=True),
    st.booleans(),
)
@settings(max_examples=200)
def test_evidence_shares_stay_in_range(
    scores: list[float],
    matched: list[str],
    idfs: dict[str, float],
    words: list[str],
    exact: bool,
) -> None:
    ev = rescue_evidence(scores, matched, idfs, words, exact=exact)
    assert ev.exact is exact and ev.words == len(words)
    if not scores:
        assert ev.score is None and weak(ev) is not exact
        return
    assert ev.score == scores[0]
    assert 0.0 <= ev.coverage <= 1.0 + 1e-9 and 0.0 <= ev.content <= 1.0
    assert -1.0 <= ev.margin <= 1.0


def test_content_words_drop_every_stopword_list() -> None:
    assert content_words(["user", "angry", "selector", "edit", "botched"]) == [
        "user",
        "angry",
        "selector",
        "edit",
        "botched",
    ]
    assert content_words(["fix", "sqlite", "please"]) == ["sqlite"]
    assert content_words(["fix", "please"]) == ["fix", "please"]  # all stopwords: every term


@pytest.fixture
def topics(archive: Archive, tmp_path: Path) -> Archive:
    """Six turns about databases, a web page and cooking (tests/semantic's topic archive)."""
    archive.import_paths([write_jsonl(tmp_path / "topics.jsonl", topic_rows())], fmt="cw-jsonl")
    return archive


@pytest.fixture
def decisions(topics: Archive, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The rescue decision of every search that reached the semantic stage (vectors exist;
    the model is not run: the stage answers ``used`` when told the rescue fired)."""
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 16, embedder=FakeEmbedder())
    seen: list[bool] = []

    def record(*args: Any, weak: bool, **kwargs: Any) -> SemanticOutcome:
        seen.append(weak)
        return SemanticOutcome(used=weak)

    monkeypatch.setattr(search_module, "semantic_tier", record)
    return seen


def _search(archive: Archive, query: str, params: RetrievalParams = DEFAULT) -> Any:
    search_context_of(archive).params = params
    return archive.search({"query": query, "semanticPolicy": "auto"})


def test_a_strong_lexical_pass_skips_the_rescue_unless_a_field_asks(
    topics: Archive, decisions: list[bool]
) -> None:
    # Every word of the question is in one turn: a strong first pass, no rescue today.
    query = "test suite fails sqlite database locked errors"
    body = _search(topics, query)
    assert decisions == [False] and body.semantic_search_used is False
    trigger = body.stages["semantic"]["trigger"]
    assert trigger["exact"] is False and trigger["score"] >= 0.5 and trigger["coverage"] >= 0.6
    # "fails" and "errors" are request words, not content: five content words, all held.
    assert trigger["words"] == 5 and trigger["content"] == 1.0
    # A long question fires the rescue when rescue_words asks for it.
    body = _search(topics, query, DEFAULT.replace(rescue_words=5))
    assert decisions[-1] is True and body.semantic_search_used is True
    body = _search(topics, query, DEFAULT.replace(rescue_words=6))
    assert decisions[-1] is False


def test_words_the_archive_never_uses_look_strong_today_and_unmatched_queries_fire(
    topics: Archive, decisions: list[bool]
) -> None:
    # One rare word of five matched: low coverage, the rescue runs.
    # Five content words, one in the archive: words no window holds have no IDF, so the one
    # shared word covers the whole IDF weight and today's trigger sees a strong pass (issue 35).
    body = _search(topics, "grumpy colleague complained sourdough yesterday evening")
    trigger = body.stages["semantic"]["trigger"]
    assert decisions == [False] and trigger["coverage"] == 1.0 and trigger["score"] >= 0.5
    assert trigger["content"] == 0.2 and trigger["absent"] == 0.8
    # The content-word share and the absent share see it.
    body = _search(
        topics,
        "grumpy colleague complained sourdough yesterday evening",
        DEFAULT.replace(rescue_content=0.5),
    )
    assert decisions[-1] is True and body.semantic_search_used is True
    _search(topics, "grumpy colleague sourdough", DEFAULT.replace(rescue_absent=0.5))
    assert decisions[-1] is True
    # Nothing matched at all: BM25 found nothing, the rescue runs.
    body = _search(topics, "zyxwvut qwertyuiop")
    assert decisions[-1] is True and body.stages["semantic"]["trigger"]["score"] is None


def test_eval_scores_a_trigger_from_one_run_of_the_three_policies() -> None:
    """``eval.rescue.simulate``: per query the ``always`` metrics where the trigger fires and the
    ``never`` ones where it does not; today's trigger reproduces the measured ``auto``."""
    from eval import rescue as sim

    def query(kind: str, ev: dict[str, Any] | None, never: float, always: float) -> dict[str, Any]:
        auto = always if ev is not None and sim.weak(ev) else never
        return {
            "kind": kind,
            "rescue": {"cw-hybrid": {"fired": True, "trigger": ev}},
            "metrics": {
                "cw-lexical": {"hit@1": never},
                "cw-hybrid": {"hit@1": always},
                "cw-default": {"hit@1": auto},
            },
        }

    strong = {"exact": False, "score": 0.9, "coverage": 1.0, "content": 0.5, "margin": 0.1}
    weak_ev = {**strong, "score": 0.2}
    report = {
        "primary": ["hit@1"],
        "per_query": [
            query("a", strong | {"words": 8, "absent": 0.5}, 0.0, 1.0),
            query("a", weak_ev | {"words": 2, "absent": 0.0}, 0.0, 1.0),
            query("b", None, 1.0, 0.0),  # exact-looking input answered: never reaches the stage
            query("b", strong | {"words": 2, "absent": 0.0}, 1.0, 0.0),
        ],
        "overall": {"cw-default": {"hit@1": 0.75}},
    }
    today = sim.simulate(report, sim.weak)
    assert today["overall"] == {"hit@1": 0.75, "fired": 0.25}
    assert today["by_kind"]["a"] == {"hit@1": 0.5, "fired": 0.5}
    assert sim.check({"x": report}, sim.weak) == []
    assert sim.simulate(report, lambda ev: True)["overall"] == {"hit@1": 0.75, "fired": 0.75}
    longer = sim.candidates()["rescue_words=8"]
    assert sim.simulate(report, longer)["overall"] == {"hit@1": 1.0, "fired": 0.5}

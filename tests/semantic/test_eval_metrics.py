"""The LongMemEval metrics used by eval/ (session recall, NDCG, turn recall, MRR)."""

from __future__ import annotations

import math

from eval.metrics import ndcg, recall_all, recall_any, score_ranking, turn_recall


def test_session_metrics() -> None:
    ranked = ["s3", "s1", "s9", "s2"]
    assert recall_any(ranked, {"s1", "s7"}, 5) == 1.0
    assert recall_all(ranked, {"s1", "s7"}, 5) == 0.0
    assert recall_all(ranked, {"s1", "s2"}, 5) == 1.0
    assert ndcg(["s1", "s2"], {"s1", "s2"}, 10) == 1.0
    expected = (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    assert math.isclose(ndcg(["x", "s1"], {"s1", "s2"}, 10), expected)  # one of two, at rank 2
    assert ndcg([], {"s1"}, 10) == 0.0


def test_hits_map_to_sessions_in_first_occurrence_order() -> None:
    m = score_ranking(
        ["a", "a", "b", "c"],
        [{"a:0"}, {"a:1"}, {"b:0"}, set()],
        evidence={"b"},
        evidence_turns={"b:0", "b:1"},
    )
    assert m["recall_any@5"] == 1.0 and m["recall_all@5"] == 1.0
    assert math.isclose(m["ndcg@10"], 1 / math.log2(3))  # b is the second session
    assert m["turn_recall@10"] == 0.5
    assert m["session_mrr"] == 0.5 and m["turn_mrr"] == 1 / 3
    assert turn_recall([{"x"}], set(), 10) == 0.0

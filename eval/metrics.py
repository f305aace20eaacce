"""Retrieval metrics of LongMemEval: session-level recall_any/all@k, NDCG@k, turn recall@k."""

from __future__ import annotations

import math
from collections.abc import Sequence


def first_occurrence(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


def recall_any(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return float(bool(relevant & set(ranked[:k])))


def recall_all(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    return float(relevant <= set(ranked[:k]))


def ndcg(ranked: Sequence[str], relevant: set[str], k: int) -> float:
    """Binary-gain NDCG@k over a ranking without duplicates."""
    dcg = sum(1.0 / math.log2(i + 2) for i, s in enumerate(ranked[:k]) if s in relevant)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(k, len(relevant))))
    return dcg / ideal if ideal else 0.0


def turn_recall(hit_turns: Sequence[set[str]], evidence_turns: set[str], k: int) -> float:
    """Share of evidence turns covered by the top-k hits (each hit covers a set of turns)."""
    if not evidence_turns:
        return 0.0
    covered: set[str] = set()
    for turns in hit_turns[:k]:
        covered |= turns
    return len(covered & evidence_turns) / len(evidence_turns)


def reciprocal_rank(ranked: Sequence[str], relevant: set[str]) -> float:
    for i, item in enumerate(ranked):
        if item in relevant:
            return 1.0 / (i + 1)
    return 0.0


def turn_reciprocal_rank(hit_turns: Sequence[set[str]], evidence_turns: set[str]) -> float:
    for i, turns in enumerate(hit_turns):
        if turns & evidence_turns:
            return 1.0 / (i + 1)
    return 0.0


def score_ranking(
    sessions: Sequence[str],
    turns: Sequence[set[str]],
    evidence: set[str],
    evidence_turns: set[str],
) -> dict[str, float]:
    """All metrics of one ranked hit list (``sessions[i]``/``turns[i]`` describe hit i)."""
    ranked = first_occurrence(sessions)
    return {
        "recall_any@5": recall_any(ranked, evidence, 5),
        "recall_all@5": recall_all(ranked, evidence, 5),
        "ndcg@10": ndcg(ranked, evidence, 10),
        "turn_recall@10": turn_recall(turns, evidence_turns, 10),
        "session_mrr": reciprocal_rank(ranked, evidence),
        "turn_mrr": turn_reciprocal_rank(turns, evidence_turns),
    }

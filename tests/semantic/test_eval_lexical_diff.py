"""The per-question comparison helper (eval/lexical_diff.py): ranks from result files and the
questions whose rank-1 or top-5 outcome differs."""

from __future__ import annotations

import json
from pathlib import Path

from eval import lexical_diff


def _report(path: Path, mrrs: dict[str, dict[str, float]]) -> Path:
    rows = [
        {
            "qid": qid,
            "kind": "k",
            "question": qid,
            "metrics": {s: {"mrr": m} for s, m in by.items()},
        }
        for qid, by in mrrs.items()
    ]
    path.write_text(json.dumps({"per_query": rows}), encoding="utf-8")
    return path


def test_rank_from_reciprocal_rank() -> None:
    assert lexical_diff.rank({"mrr": 1.0}) == 1
    assert lexical_diff.rank({"mrr": 1 / 3}) == 3
    assert lexical_diff.rank({"mrr": 0.0}) == 99


def test_diff_lists_rank_one_and_top_five_disagreements(tmp_path: Path) -> None:
    path = _report(
        tmp_path / "r.json",
        {
            "same": {"a": 1.0, "b": 1.0},
            "first": {"a": 1.0, "b": 0.5},  # rank 1 against 2: differs at rank 1 only
            "top5": {"a": 0.25, "b": 1 / 7},  # 4 against 7: differs at top 5 only
            "deep": {"a": 1 / 6, "b": 0.0},  # 6 against none: both outside the top 5
        },
    )
    a, b = lexical_diff.ranks(path, "a"), lexical_diff.ranks(path, "b")
    assert lexical_diff.diff(a, b) == [("first", 1, 2), ("top5", 4, 7)]

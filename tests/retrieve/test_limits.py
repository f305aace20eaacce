"""Spec 004's default limits are settings under their names and the searches use them: vector30,
lexical30, candidates40, final6, result 16,000 characters, per-hit 3,000 (issue 32: some were
constants, vector30 was never used)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cwcore import config
from cwcore.api import Archive
from cwcore.markdown.limits import Limits
from cwcore.retrieve.search import _head
from tests.helpers import write_jsonl
from tests.support import search_context_of

SPEC = {"vector": 30, "lexical": 30, "candidates": 40, "final": 6, "result": 16_000}


def test_the_spec_defaults_are_settings_under_their_names(cw_home: Path) -> None:
    values = {v.name: v for v in config.load(cw_home)[1]}
    for name, default in {**SPEC, "perHit": 3_000}.items():
        assert values[name].value == default and values[name].source == "default", name
        assert name in config.RANGES
    assert Limits.of(config.Settings()) == Limits()


def _open(cw_home: Path, tmp_path: Path, n: int = 150, words: int = 3) -> Archive:
    rows = [
        {
            "session": f"s{i % 4}",
            "id": f"m{i}",
            "role": "user",
            "text": f"retry lease number {i} " + "filler " * (i % 7) + "tail " * words,
        }
        for i in range(n)
    ]
    arch = Archive.open(cw_home, embedded=True)
    arch.import_paths([write_jsonl(tmp_path / "a.jsonl", rows)], fmt="cw-jsonl")
    return arch


def test_the_limits_reach_the_search_context(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The settings under their spec names are what the search reads. (Conversation search does
    not take ``lexical`` / ``vector`` as its depths: they ranked lower on two dev sets, see
    cwcore/retrieve/search.py; Markdown evidence search ranks ``lexical`` units.)"""
    monkeypatch.setenv("CW_LEXICAL", "7")
    monkeypatch.setenv("CW_CANDIDATES", "5")
    monkeypatch.setenv("CW_VECTOR", "4")
    with _open(cw_home, tmp_path) as arch:
        assert search_context_of(arch).limits == Limits(vector=4, lexical=7, candidates=5)
        body = {"query": "retry lease", "semanticPolicy": "never"}
        assert len(arch.search({**body, "limit": 5}).results) == 5


def test_per_hit_and_result_cap_the_snippets(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_PER_HIT", "40")
    monkeypatch.setenv("CW_RESULT", "300")
    with _open(cw_home, tmp_path, n=30, words=200) as arch:
        body = {"query": "retry lease", "semanticPolicy": "never"}
        few = arch.search({**body, "limit": 3}).results
        assert len(few) == 3 and all(0 < len(h.snippet) <= 40 for h in few)
        many = arch.search({**body, "limit": 20}).results  # 300 // 20 = 15 characters each
        assert len(many) == 20 and sum(len(h.snippet) for h in many) <= 300
        assert all(len(h.snippet) <= 15 for h in many)


def test_the_default_cw_search_page_stays_ten(cw_home: Path, tmp_path: Path) -> None:
    # final6 is Markdown evidence search's default; cw search documents --limit 10 (README).
    with _open(cw_home, tmp_path, n=30) as arch:
        assert len(arch.search({"query": "retry lease", "semanticPolicy": "never"}).results) == 10


def test_head_keeps_the_top_tiers_whole() -> None:
    from cwcore.retrieve.candidates import Candidate
    from cwcore.retrieve.page import Ranked

    modes = ["exact"] * 3 + ["structural"] + ["lexical", "semantic"] * 5
    ranked = [Ranked(Candidate(i + 1, m, 0.5, 0.5, m), {}) for i, m in enumerate(modes)]
    assert [r.cand.wid for r in _head(ranked, 2)] == [1, 2, 3, 4, 5, 6]
    assert _head(ranked, 100) == ranked

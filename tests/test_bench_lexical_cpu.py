"""``python -m bench.lexical_cpu`` (issue 36's measurements) on a tiny stand-in of the shared
data: the answers file is exact and repeatable, the timing result has every mode and stage, and
a stage table naming a function the code no longer has fails before anything is wrapped.
Numbers are not checked (timing under load proves nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import lexical_cpu
from tests.test_bench_realtext import _stand_in

COPIES = 2
FIELDS = 12  # document id, version, score, snippet, highlights, match type, matched and expanded
# terms, message key, session, margin, score metadata


def stand_in_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copies: int = COPIES) -> Path:
    """The scale bench's corpus over a tiny stand-in of the shared data, ``copies`` times,
    imported by ``bench.lexical_cpu build`` into ``tmp_path/home`` (bench folders and results
    under ``tmp_path``; semantic retrieval off)."""
    _stand_in(tmp_path / "data")
    monkeypatch.setenv("CW_BENCH_DATA", str(tmp_path / "data"))
    monkeypatch.setenv("CW_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CW_BENCH_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "false")  # main() sets it; this restores it
    monkeypatch.delenv("CW_EMBEDDED", raising=False)
    home = tmp_path / "home"
    assert lexical_cpu.main(["build", "--copies", str(copies), str(home), "--glibc-default"]) == 0
    assert json.loads((home / "built.json").read_text())["copies"] == copies
    return home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return stand_in_home(tmp_path, monkeypatch)


def _run(*args: str) -> int:
    return lexical_cpu.main([*args, "--glibc-default"])


def test_answers_are_the_top_10_of_every_question_both_ways_byte_for_byte(
    home: Path, tmp_path: Path
) -> None:
    first, again = tmp_path / "a.json", tmp_path / "b.json"
    assert _run("answers", "--copies", str(COPIES), str(home), str(first)) == 0
    assert _run("answers", "--copies", str(COPIES), str(home), str(again)) == 0
    assert first.read_bytes() == again.read_bytes()
    got = json.loads(first.read_text())
    assert set(got) == {f"q{i}/{mode}" for i in (1, 2, 3) for mode in ("all", "haystack")}
    for key, hits in got.items():
        assert 0 < len(hits) <= 10
        for hit in hits:
            assert len(hit) == FIELDS
            assert isinstance(hit[2], float) and round(hit[2], 9) == hit[2]
        if key.endswith("/haystack"):  # question i is scoped to copy (i - 1) mod COPIES
            copy = (int(key[1]) - 1) % COPIES
            assert all(hit[9].endswith(f"~copy{copy}") for hit in hits), key


def test_time_with_stages_reports_every_mode_and_stage(home: Path, tmp_path: Path) -> None:
    assert _run("time", "--copies", str(COPIES), str(home), "--rounds", "2", "--stages") == 0
    result = json.loads((tmp_path / "results" / f"lexical-cpu-time-x{COPIES}.json").read_text())
    assert result["label"] == f"real text repeated ×{COPIES}, synthetic ids"
    assert result["allocator"] == "glibc default"
    labels = [label for _, _, label in lexical_cpu.STAGES]
    for mode in lexical_cpu.MODES:
        assert result[mode]["cpu"]["n"] == 2 * 3  # rounds × questions; the untimed pass not kept
        assert list(result[mode]["stages"]) == labels
        assert len(result["samples"][mode]) == 6
    for stage in ("lexical: BM25, visibility, calibration", "the page", "· locators"):
        assert result["stage_calls"][stage] >= 12  # every search, both modes, both rounds
    assert result["haystack"]["stages"]["scope: resolve the named sessions"]["mean_ms"] > 0


def test_a_stage_whose_function_is_gone_fails_before_wrapping_anything(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cwcore.retrieve import search

    resolve = vars(search)["resolve"]
    gone = ("cwcore.retrieve.search", "no_such_stage", "a stage the code lost")
    monkeypatch.setattr(lexical_cpu, "STAGES", (*lexical_cpu.STAGES, gone))
    with pytest.raises(lexical_cpu.StageMissing, match="no_such_stage"):
        _run("time", "--copies", str(COPIES), str(home), "--stages")
    assert vars(search)["resolve"] is resolve  # the stages listed before it were not left wrapped


def test_the_wrappers_time_and_count_calls_then_give_the_functions_back() -> None:
    from bench import common

    table = (("bench.common", "percentiles", "percentiles"),)
    spent: dict[str, float] = {}
    calls: dict[str, int] = {}
    percentiles = common.percentiles
    with lexical_cpu.wrapped(table, spent, calls):
        assert common.percentiles is not percentiles
        assert common.percentiles([2.0, 1.0])["n"] == 2
        common.percentiles([1.0])
    assert common.percentiles is percentiles
    assert calls == {"percentiles": 2} and spent["percentiles"] >= 0.0
    gone = lexical_cpu.wrapped((("cwcore.retrieve.candidates", "Visible.gone", "x"),), {}, {})
    with pytest.raises(lexical_cpu.StageMissing, match=r"Visible\.gone"):
        gone.__enter__()


def test_a_home_built_with_other_copies_is_refused(home: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="other --copies"):
        _run("answers", "--copies", "3", str(home), str(tmp_path / "x.json"))

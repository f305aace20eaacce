"""``python -m bench.semantic_graph`` on a tiny stand-in of the shared data, every window embedded
by the real model: the graph is built, both scans are timed for every k, and on a graph this small
(it holds every row within reach) its answers are the exact scan's. Numbers are not checked."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bench import semantic_graph
from cwcore.api import Archive
from tests.support import semantic_of
from tests.test_bench_lexical_cpu import stand_in_home

COPIES = 2


def embedded_stand_in_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, copies: int = COPIES
) -> Path:
    """:func:`stand_in_home` with every window embedded by the real model (semantic retrieval
    left on)."""
    home = stand_in_home(tmp_path, monkeypatch, copies)
    monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "true")
    with Archive.open(home, embedded=True) as archive:
        semantic = semantic_of(archive)
        while semantic.embed_pending():
            pass
    return home


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return embedded_stand_in_home(tmp_path, monkeypatch)


def test_the_graph_is_built_timed_and_checked_against_the_exact_scan(
    home: Path, tmp_path: Path
) -> None:
    assert semantic_graph.main([str(home), "--copies", str(COPIES), "--rounds", "1"]) == 0
    out = json.loads((tmp_path / "results" / f"semantic-graph-x{COPIES}.json").read_text())
    assert out["rows"] > 0 and out["graph"]["rows"] == out["rows"] and out["graph"]["bytes"] > 0
    for k in semantic_graph.KS:
        got = out[f"k{k}"]
        assert {"exact", "graph", "first", "top10", "topk", "ids"} <= set(got)
        assert got["first"] == got["top10"] == got["topk"] == 1.0
    default = out["default"]
    assert default["pages_with_other_scores"] == 0
    assert set(default["semantic_stage"]) == {"exact", "graph"}
    assert os.path.isfile(home / "store" / "semantic-matrix" / "graph.json")


def test_a_folder_without_an_archive_is_one_line(tmp_path: Path, capsys) -> None:
    assert semantic_graph.main([str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.count("\n") == 1

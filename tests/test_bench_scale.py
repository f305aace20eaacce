"""The scale bench (``python -m bench scale --copies N``): the repeated corpus keeps every text and
gives every copy new, deterministic ids; and the whole run's machinery on a tiny stand-in of the
shared data (numbers are not checked: timing under load proves nothing)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from bench.realtext_build import Corpus
from bench.scale import (
    copy_id,
    copy_marker,
    repeat_lines,
    scaled_corpus,
    scaled_queries,
    scaled_units,
)
from tests.test_bench_realtext import REPO, _stand_in

SAMPLE = [
    # U+2028 and U+0085 are line breaks to str.splitlines(), kept raw by ensure_ascii=False.
    {
        "session": s,
        "id": str(i),
        "role": role,
        "text": f"{s} turn {i} ünï\u2028co\x85de",
        "agent": "a",
    }
    for s in ("alpha", "beta_1", "gamma_2")
    for i, role in enumerate(("user", "assistant", "user"))
]


def test_two_copies_of_three_sessions_have_unique_deterministic_ids_and_equal_text(
    tmp_path: Path,
) -> None:
    lines = [json.dumps(m, ensure_ascii=False) for m in SAMPLE]
    src = tmp_path / "base.cw.jsonl"
    src.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    base = Corpus("base", src, "cw-jsonl", len(SAMPLE), 1, False)
    written = scaled_corpus(base, 2, tmp_path).source.read_text(encoding="utf-8")
    assert written.split("\n")[:-1] == list(repeat_lines(lines, 2))
    first = [json.loads(x) for x in repeat_lines(lines, 2)]
    again = [json.loads(x) for x in repeat_lines(lines, 2)]
    assert first == again  # deterministic: the ids come from the copy number alone
    assert len(first) == 2 * len(SAMPLE)
    keys = {(m["session"], m["id"]) for m in first}
    assert len(keys) == len(first)  # every (session, message) unique across copies
    assert {m["session"] for m in first}.isdisjoint({m["session"] for m in SAMPLE})
    assert len({m["session"] for m in first}) == 2 * 3
    for k in range(2):
        copy = first[k * len(SAMPLE) : (k + 1) * len(SAMPLE)]
        for orig, new in zip(SAMPLE, copy, strict=True):
            assert new["text"] == orig["text"]
            assert new["role"] == orig["role"] and new["agent"] == orig["agent"]
            assert new["session"] == copy_id(orig["session"], k)
            assert new["id"] == copy_id(orig["id"], k)


def test_marked_copies_hold_distinct_texts_that_differ_by_one_made_up_word(
    tmp_path: Path,
) -> None:
    lines = [json.dumps(m, ensure_ascii=False) for m in SAMPLE]
    plain = [json.loads(x) for x in repeat_lines(lines, 30)]
    marked = [json.loads(x) for x in repeat_lines(lines, 30, marked=True)]
    n = len(SAMPLE)
    for k in range(30):
        rows = zip(SAMPLE, plain[k * n : (k + 1) * n], marked[k * n : (k + 1) * n], strict=True)
        for orig, p, m in rows:
            assert (m["session"], m["id"]) == (p["session"], p["id"])  # the same ids
            word = copy_marker(k)
            assert m["text"] == (f"{orig['text']} {word}" if k else orig["text"])
            assert word == "" or (word.isascii() and word.isalpha())
    assert len({m["text"] for m in marked}) == len(marked)  # no two copies share a text
    assert len({copy_marker(k) for k in range(1, 800)}) == 799  # past 26: still distinct
    src = tmp_path / "base.cw.jsonl"
    src.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    base = Corpus("base", src, "cw-jsonl", len(SAMPLE), 1, False)
    corpus = scaled_corpus(base, 3, tmp_path, marked=True)
    assert corpus.name == "base-x3-marked"  # cached apart from the unmarked corpus
    written = corpus.source.read_text(encoding="utf-8").split("\n")[:-1]
    assert written == list(repeat_lines(lines, 3, marked=True))

    class Unit:
        def __init__(self, uid: str, text: str, group: str) -> None:
            self.uid, self.text, self.group = uid, text, group

    units = scaled_units([Unit("u", "some turn", "s")], 3, marked=True)
    assert [u.text for u in units] == ["some turn", "some turn qzcopyb", "some turn qzcopyc"]


def test_each_question_is_scoped_to_one_copy_of_its_haystack() -> None:
    from bench.realtext_search import Query

    qs = [Query(f"q{i}", "text", ("alpha", "beta_1")) for i in range(3)]
    scoped = scaled_queries(qs, 2)
    assert [q.haystack for q in scoped] == [
        (copy_id("alpha", i % 2), copy_id("beta_1", i % 2)) for i in range(3)
    ]


ARGS = ("--copies", "2", "--idle", "1", "--cli-runs", "1", "--paint-runs", "1")


# Slow: a daemon, an import, searches and CLI processes (a soak of the whole product).
@pytest.mark.slow
def test_scale_runs_every_phase_on_a_stand_in(tmp_path: Path) -> None:
    turns, questions = _stand_in(tmp_path / "data")
    runtime = Path(tempfile.mkdtemp(prefix="cwb", dir="/tmp"))  # short socket paths
    env = {k: v for k, v in os.environ.items() if not k.startswith("CW_")}
    env.update(
        CW_BENCH_DATA=str(tmp_path / "data"),
        CW_BENCH_CACHE=str(tmp_path / "cache"),
        CW_BENCH_RESULTS=str(tmp_path / "results"),
        TMPDIR=str(runtime),
        HF_HUB_OFFLINE="1",
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench", "scale", *ARGS],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "real text repeated ×2, synthetic ids" in done.stdout
    result = json.loads((tmp_path / "results" / "scale-2.json").read_text())
    assert result["label"] == "real text repeated ×2, synthetic ids"
    assert result["messages"] == 2 * turns
    assert result["documents_fts5"] == result["documents_cw"]
    assert result["import"]["outbox_depth_after_drain"] == 0
    for system in ("cw-lexical-daemon", "fts5"):
        for mode in ("all", "haystack"):
            assert result["timings"][f"{system}/{mode}"]["n"] == questions
            assert result["timings_after_idle"][f"{system}/{mode}"]["n"] == questions
    assert set(result["ratios_after_idle"]) == set(result["ratios"])
    assert set(result["cw_sessions_wall"]) == {"lean", "full"}
    paint = result["tui_first_paint"]
    assert paint["total_ms"]["n"] == 1 and paint["empty_archive_ms"]["n"] == 1
    assert paint["projects_counted_ms"]["p50_ms"] > 0
    assert result["memory_mb"]["after indexing"]["VmHWM"] > 0


def test_help_prints_the_usage_and_starts_nothing(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m bench scale --help`` used to start an hour-long run; it prints the options."""
    import bench.scale as scale

    def no_run(**_: object) -> None:
        raise AssertionError("--help started a run")

    monkeypatch.setattr(scale, "run", no_run)
    assert scale.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--keep DIR" in out and "--semantic" in out


class _Status:
    """A daemon client whose ``semantic.status`` answers come from a list (the last repeats)."""

    def __init__(self, answers: list[dict]) -> None:
        self.answers = answers
        self.calls = 0

    def call(self, method: str, params: dict | None = None) -> dict:
        assert method == "semantic.status"
        self.calls += 1
        return self.answers[min(self.calls, len(self.answers)) - 1]


def test_the_graph_wait_reads_the_stored_vectors_not_the_lagging_index() -> None:
    """Right after ``complete`` the daemon's loaded index held a quarter of the vectors, so the
    wait read 24,528 rows (under the graph's threshold) and the searches began without a graph."""
    from bench.scale import _wait_graph

    lagging = {"rows": 99_724, "indexRows": 24_528, "graphRows": 0}
    built = {"rows": 99_724, "indexRows": 99_724, "graphRows": 99_724}
    client = _Status([lagging, lagging, built])
    out = _wait_graph(client, 0.0, timeout_s=60.0, poll_s=0.0)
    assert (out["rows"], out["covered"], client.calls) == (99_724, 99_724, 3)
    small = _Status([{"rows": 1_000, "indexRows": 1_000, "graphRows": 0}])
    assert _wait_graph(small, 0.0, poll_s=0.0)["covered"] == 0 and small.calls == 1

"""The real-text bench's machinery (``python -m bench realtext --quick``) on a tiny stand-in of the
shared data layout, so ``make test`` needs no shared data. Numbers are not checked (timing under
load proves nothing); that every phase ran over the stand-in's messages and questions is."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
TOPICS = [
    ("apex", "I reached level {n} in Apex Legends and want to hit level 100 next season"),
    ("garden", "My tomato plants need {n} litres of water a week on the balcony garden"),
    ("bike", "The road bike chain snapped after {n} kilometres so I replaced the cassette"),
    ("bread", "Sourdough starter fed at {n} percent hydration rises in about six hours"),
    ("move", "We moved to the new flat on floor {n} and the piano barely fit the lift"),
    ("chess", "My chess rating climbed to {n} after studying rook endgames every night"),
]


def _stand_in(root: Path) -> tuple[int, int]:
    """LongMemEval-shaped sessions and questions plus one agent log; returns (turns, questions)."""
    lme = root / "longmemeval-s-dev"
    lme.mkdir(parents=True)
    turns = []
    for s, (topic, line) in enumerate(TOPICS):
        for i in range(6):
            role = "user" if i % 2 == 0 else "assistant"
            text = line.format(n=10 * s + i) if role == "user" else f"Noted about {topic}: {i}."
            turns.append(
                {
                    "session": f"{topic}_{s}",
                    "turn_id": f"{topic}_{s}:{i}",
                    "turn_index": i,
                    "role": role,
                    "text": text,
                    "has_answer": i == 0,
                }
            )
    with gzip.open(lme / "sessions.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.writelines(json.dumps(t) + "\n" for t in turns)
    questions = [
        ("q1", "What level did I reach in Apex Legends?", ["apex_0", "garden_1", "bike_2"]),
        ("q2", "How much water do the tomato plants need?", ["garden_1", "bread_3"]),
        ("q3", "What happened to the road bike chain?", ["bike_2", "move_4", "chess_5"]),
    ]
    with (lme / "queries.jsonl").open("w", encoding="utf-8") as fh:
        for qid, text, haystack in questions:
            row = {
                "qid": qid,
                "question": text,
                "answer": "-",
                "question_type": "single-session-user",
                "question_date": "2023/05/20 (Sat) 10:00",
                "abstention": False,
                "evidence": haystack[:1],
                "evidence_turns": [f"{haystack[0]}:0"],
                "haystack": haystack,
                "haystack_dates": ["2023/05/01 (Mon) 10:00"] * len(haystack),
            }
            fh.write(json.dumps(row) + "\n")
    logs = root / "agent-logs" / "claude_code"
    logs.mkdir(parents=True)
    for src in (REPO / "cwcore" / "demo" / "claude").rglob("*.jsonl"):
        shutil.copy(src, logs / src.name)
    return len(turns), len(questions)


# Slow: every phase of the real-text bench, daemons and all (a soak of the whole product).
@pytest.mark.slow
def test_realtext_quick_runs_every_phase_on_a_stand_in(tmp_path: Path) -> None:
    turns, questions = _stand_in(tmp_path / "data")
    runtime = Path(tempfile.mkdtemp(prefix="cwb", dir="/tmp"))  # short socket paths
    env = {k: v for k, v in os.environ.items() if not k.startswith("CW_")}
    env.update(
        CW_BENCH_DATA=str(tmp_path / "data"),
        CW_BENCH_CACHE=str(tmp_path / "cache"),
        CW_BENCH_RESULTS=str(tmp_path / "results"),
        XDG_RUNTIME_DIR=str(runtime),
        HF_HUB_OFFLINE="1",
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "bench", "realtext", "--quick"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
        )
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "results" / "realtext-quick.json").read_text())
    # The quick slices exceed the stand-in, so each holds all of it.
    for name in ("lme-1000", "lme-3000"):
        build = result["builds"][name]
        assert build["messages"] == turns
        assert build["indexing"]["admit"]["messages"] == turns
        assert build["indexing"]["drain"]["entries_done"] > 0
        assert build["disk_bytes_per_message"] > 0
        assert build["import"]["peak_rss_mb"] > 0
        through = result["daemon_import"][name]  # `cw import` against a running daemon
        assert through["messages"] == turns and through["messages_per_s"] > 0
        search = result["search"][name]
        systems = {"cw-lexical", "cw-default", "cw-lexical-daemon", "cw-default-daemon"}
        for system in systems | {"fts5", "fts5-snippet", "bm25s"}:
            for mode in ("all", "haystack"):
                assert search["timings"][f"{system}/{mode}"]["n"] == questions
        assert search["timings"]["cw-default-daemon/all"]["server"]["n"] == questions
        assert search["ratios"]["cw-lexical/haystack"]["p50_vs_fts5"] > 0
        assert search["ratios"]["cw-lexical/all"]["p95_vs_fts5_snippet"] > 0
        assert search["daemon_peak_rss_mb"] > 0
        busy = search["while_embedding"]
        assert busy["timings"]["cw-default-daemon/haystack"]["n"] == questions
        assert busy["state_after"] in ("embedding", "complete")
    assert result["search"]["lme-1000"]["timings"]["rank-bm25/all"]["n"] == questions
    assert "rank-bm25/haystack" not in result["search"]["lme-1000"]["timings"]
    assert result["builds"]["agent-logs"]["messages"] > 0
    for name in ("lme-1000", "lme-3000"):
        assert sum(result["preflight"][name]["outcomes"].values()) == questions
    emb = result["embedding"]
    assert emb["sampled_windows"] > 0
    for unit in ("window", "message", "head", "chunks"):
        assert emb[unit]["texts"] >= emb["sampled_windows"]
        assert emb[unit]["texts_per_s"] > 0
    assert 0 < emb["handler"]["windows"] <= emb["corpus_windows"]
    assert emb["handler"]["computed"] > 0  # cold: the cleared copy had no vector to reuse
    assert {t["met"] for t in result["targets"]} <= {True, False}
    assert "targets (issue 17)" in done.stdout


def test_realtext_skips_with_a_notice_when_the_data_is_absent(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CW_")}
    env.update(CW_BENCH_DATA=str(tmp_path / "none"), CW_BENCH_RESULTS=str(tmp_path / "results"))
    done = subprocess.run(
        [sys.executable, "-m", "bench", "realtext", "--quick"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "realtext: skipped" in done.stdout
    assert not (tmp_path / "results").exists()


def test_beside_times_cw_and_both_fts5_rows_on_a_built_home(tmp_path: Path) -> None:
    from bench import beside
    from bench import realtext_build as rb
    from bench import realtext_search as rs

    turns, questions = _stand_in(tmp_path / "data")
    corpus = rb.lme_corpus(tmp_path / "data", tmp_path, "lme-all", None)
    assert corpus.messages == turns
    rb._import_child(tmp_path / "home", corpus.source, corpus.fmt)
    queries = rs.load_questions(tmp_path / "data" / rb.LME / "queries.jsonl", None)
    out = beside.measure(tmp_path / "home", queries)
    for system in ("cw-lexical", "fts5", "fts5-snippet", "bm25s"):
        for mode in ("all", "haystack"):
            assert out["timings"][f"{system}/{mode}"]["n"] == questions
    assert set(out["ratios"]["cw-lexical/all"]) == {
        "p50_vs_fts5",
        "p95_vs_fts5",
        "p50_vs_fts5_snippet",
        "p95_vs_fts5_snippet",
    }


def test_beside_refuses_a_folder_without_an_archive(tmp_path: Path) -> None:
    _stand_in(tmp_path / "data")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CW_")}
    env["CW_BENCH_DATA"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-m", "bench.beside", "--home", str(tmp_path / "nothing")],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"bench.beside: {tmp_path / 'nothing'} holds no archive"
    ]


def test_the_semantic_tally_keeps_the_stage_times_of_searches_that_ran_it() -> None:
    from bench.realtext_search import SemanticTally

    tally = SemanticTally()
    tally.add("cw-default", True, {"used": True, "ms": 10.0, "embedMs": 4.0, "scanMs": 5.0})
    tally.add("cw-default", True, {"used": True, "ms": 20.0, "embedMs": 6.0, "scanMs": 12.0})
    tally.add("cw-default", False, {"used": False, "ms": 0.0})  # not run: not a sample
    tally.add("cw-lexical", False, None)
    assert tally.shares() == {"cw-default": 0.667, "cw-lexical": 0.0}
    stage = tally.stage_ms()
    assert set(stage) == {"cw-default"}
    assert stage["cw-default"]["ms"]["p50_ms"] == 15.0
    assert stage["cw-default"]["embedMs"]["p50_ms"] == 5.0

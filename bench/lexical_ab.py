"""Explicit lexical search, one source tree against another, on a built real-text archive.

Each round runs a child process per tree (``PYTHONPATH`` puts the baseline tree's ``cwcore``
first; the other child imports this checkout's), the order alternating between rounds, so load
that comes and goes on a shared machine hits both alike. A child opens a *copy* of the search
home (``Archive.open(home, embedded=True)``), searches every LongMemEval question once untimed,
then once timed, unrestricted and restricted to the question's haystack sessions, with
``semanticPolicy: never`` and ``limit`` 10. Printed per tree and mode: wall p50 / p95, the
search thread's CPU time p50 / p95 (what load on the other core does not inflate), and the p50
/ p95 over questions of each question's fastest round. ``--dump`` writes each search's ranked
hits (ids, scores, snippets, highlights, terms, score metadata) so two trees' answers can be
compared for identity.

    git archive main cwcore | tar -x -C /tmp/base
    cp -r <realtext cache>/builds/<key>/lme-20000/search /tmp/home-20k
    python -m bench.lexical_ab --home /tmp/home-20k \\
        --corpus <realtext cache>/builds/<key>/lme-20000.cw.jsonl --base /tmp/base --rounds 6
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

MODES = ("all", "haystack")


def _questions(path: Path, present: set[str]) -> list[tuple[str, str, list[str] | None]]:
    out = []
    for line in path.open(encoding="utf-8"):
        q = json.loads(line)
        scope = [s for s in q["haystack"] if s in present] or None
        out.append((q["qid"], q["question"], scope))
    return out


def _answer(hit: Any) -> list[Any]:
    """What must not change between two trees: ids, scores, snippet, highlights, terms."""
    return [
        *(hit.document_id, hit.score, hit.snippet, list(hit.highlights), hit.match_type),
        *(list(hit.matched_terms), list(hit.expanded_terms), hit.source.message_key),
        hit.score_metadata,
    ]


def child(home: Path, sessions: Path, questions: Path, out: Path, dump: bool) -> None:
    import cwcore
    from cwcore.api import Archive

    tree = os.environ.get("CW_AB_TREE")
    if tree and not Path(cwcore.__file__).is_relative_to(Path(tree).resolve()):
        raise SystemExit(f"cwcore came from {cwcore.__file__}, not {tree}")

    present = set(json.loads(sessions.read_text()))
    wall: dict[str, float] = {}
    cpu: dict[str, float] = {}
    hits: dict[str, Any] = {}
    with Archive.open(home, embedded=True) as archive:

        def run(text: str, scope: list[str] | None) -> Any:
            body: dict[str, Any] = {"query": text, "limit": 10, "semanticPolicy": "never"}
            if scope:
                body["sessions"] = scope
            return archive.search(body)

        for timed in (False, True):
            for qid, text, scope in _questions(questions, present):
                for mode, sessions_ in (("all", None), ("haystack", scope)):
                    if mode == "haystack" and not sessions_:
                        continue
                    t0, c0 = time.perf_counter(), time.thread_time()
                    response = run(text, sessions_)
                    if timed:
                        wall[f"{qid}/{mode}"] = (time.perf_counter() - t0) * 1000
                        cpu[f"{qid}/{mode}"] = (time.thread_time() - c0) * 1000
                    if timed and dump:
                        hits[f"{qid}/{mode}"] = [_answer(h) for h in response.results]
    out.write_text(json.dumps({"wall": wall, "cpu": cpu, "hits": hits}))


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p / 100 * (len(xs) - 1)))]


def drive(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sessions = Path(tmp) / "sessions.json"
        with Path(args.corpus).open(encoding="utf-8") as fh:
            sessions.write_text(json.dumps(sorted({json.loads(line)["session"] for line in fh})))
        runs: dict[str, list[dict[str, Any]]] = {"base": [], "new": []}
        for r in range(args.rounds):
            for which in ("base", "new") if r % 2 == 0 else ("new", "base"):
                env = dict(os.environ)
                env.pop("CW_AB_TREE", None)
                if which == "base":
                    env["CW_AB_TREE"] = str(args.base)
                out = Path(tmp) / f"{which}.json"
                cmd = [sys.executable, "-m", "bench.lexical_ab", "--child", str(args.home)]
                cmd += [str(sessions), str(args.questions), str(out)]
                subprocess.run(cmd + (["--dump"] if args.dump else []), env=env, check=True)
                runs[which].append(json.loads(out.read_text()))
    for which, got in runs.items():
        for mode in MODES:
            keys = [k for k in got[0]["wall"] if k.endswith("/" + mode)]
            wall = [g["wall"][k] for g in got for k in keys]
            cpu = [g["cpu"][k] for g in got for k in keys]
            best = [min(g["wall"][k] for g in got) for k in keys]
            print(
                f"{which:4s} {mode:8s} wall {_pct(wall, 50):.2f} / {_pct(wall, 95):.2f}"
                f"  cpu {_pct(cpu, 50):.2f} / {_pct(cpu, 95):.2f}"
                f"  fastest-round {_pct(best, 50):.2f} / {_pct(best, 95):.2f} ms"
            )
    if args.dump:
        a, b = runs["base"][-1]["hits"], runs["new"][-1]["hits"]
        differ = [k for k in a if a[k] != b.get(k)]
        print(f"answers: {len(a)} searches, {len(differ)} differ {differ[:5]}")


def main(argv: list[str]) -> None:
    if argv and argv[0] == "--child":
        tree = os.environ.get("CW_AB_TREE")
        if tree:  # ahead of the checkout (``-m`` puts the working directory first)
            sys.path.insert(0, str(Path(tree).resolve()))
        home, sessions, questions, out = (Path(a) for a in argv[1:5])
        child(home, sessions, questions, out, "--dump" in argv)
        return
    parser = argparse.ArgumentParser(prog="python -m bench.lexical_ab")
    parser.add_argument("--home", type=Path, required=True, help="a copy of a search home")
    parser.add_argument("--corpus", type=Path, required=True, help="its cw-jsonl corpus")
    parser.add_argument("--base", type=Path, required=True, help="a tree holding cwcore/")
    from eval.data import DEFAULT_DATA  # the shared data sets (no cwcore import)

    parser.add_argument("--questions", type=Path, default=DEFAULT_DATA / "queries.jsonl")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--dump", action="store_true", help="compare the two trees' answers")
    drive(parser.parse_args(argv))


if __name__ == "__main__":
    main(sys.argv[1:])

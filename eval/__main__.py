"""``python -m eval`` (``make eval``): every dev set, every system, in one run.

Sets (each skipped with a notice when its data is absent):

* ``agent-logs`` — 49 hand-checked queries over seven real Claude Code, Codex and pi logs
  (``data/agent-logs-queries``): hit@1, hit@5, hit@10, MRR, per kind;
* ``longmemeval`` — the 95 non-abstention questions of the LongMemEval_S dev subset, each within
  its haystack: session recall_all@5 and NDCG@10, recall_any@5, turn recall@10, per type;
* ``demo`` — the project's own queries over its demo archive (``eval/sets/demo``);
* ``conversations`` — the project's own conversational set (``eval/sets/conversations``): 198
  questions over nine multi-session two-person conversations, each searched within its own
  conversation: turn hit@1/5/10 and MRR, session recall_all@5, per kind;
* ``preflight-agent-logs``, ``preflight-longmemeval``, ``preflight-demo``, ``preflight-silent``
  — ``cw preflight`` on labelled should-hint / should-stay-silent messages
  (``eval/sets/preflight-*``, see :mod:`eval.preflight`): hint and false-hint rates, excerpt and
  marker precision, and the spec's zero-violation gates. These run no embeddings and ignore
  ``--systems``.

Retrieval parameters: ``--param NAME=VALUE`` (repeatable) sets a field of
:class:`cwcore.retrieve.params.RetrievalParams` for the run's explicit searches (the ranking
knobs: BM25 ``bm25_k1``/``bm25_b``, ``rrf_k``, the mode weights, expansion, priors, depths); a
name that is not a field is refused (exit 2). ``--override MODULE.NAME=VALUE`` sets any other
module constant (preflight gates, memory ranking).

Systems: cw's default search and its lexical-only, hybrid (``semanticPolicy: always``) and
``auto`` runs, cw's semantic mode alone, and the baselines SQLite FTS5, bm25s (plain and with a
Snowball stemmer, ``bm25s-stem``), MiniLM dense and
RRF(FTS5, dense) over the same units. Results: one table per set on stdout, JSON in
``eval/results/<set>.json``, all tables in ``eval/results/tables.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from eval import common


def table(report: dict[str, Any]) -> str:
    """The set's overall and per-kind rows as Markdown, systems as rows."""
    metrics = [m for m in next(iter(report["overall"].values())) if m != "n"]
    head = "| system | " + " | ".join(metrics) + " | p50 ms |"
    rule = "|---" * (len(metrics) + 2) + "|"
    out = [f"### {report['set']} ({report['queries']} queries)", "", head, rule]
    for system in report["systems"]:
        row = report["overall"][system]
        lat = report["latency"].get(system, {}).get("p50_ms", "")
        out.append(f"| {system} | " + " | ".join(f"{row[m]:.3f}" for m in metrics) + f" | {lat} |")
    for kind, rows in report["by_kind"].items():
        n = next(iter(rows.values())).get("n", "")
        out += [
            "",
            f"{report['set']} — {kind} ({n})",
            "",
            head.replace(" p50 ms |", ""),
            "|---" * (len(metrics) + 1) + "|",
        ]
        for system in report["systems"]:
            row = rows[system]
            out.append(f"| {system} | " + " | ".join(f"{row[m]:.3f}" for m in metrics) + " |")
    rescue = (report.get("rescue") or {}).get("overall") or {}
    if rescue:
        out += [
            "",
            "semantic mode ran (rescue firing): "
            + "; ".join(f"{s} {v['fired']}/{v['of']}" for s, v in rescue.items()),
        ]
    status = report.get("retrieval_status", {})
    if status:
        out += [
            "",
            "retrieval_status: "
            + "; ".join(f"{s} {dict(sorted(v.items()))}" for s, v in status.items()),
        ]
    return "\n".join(out) + "\n"


def render(report: dict[str, Any]) -> str:
    """A report's tables: the preflight layout for preflight sets, else :func:`table`."""
    if report.get("kind") == "preflight":
        from eval import preflight

        return preflight.table(report)
    return table(report)


#: The module constants that became retrieval parameters, for a clear refusal of an old command.
_MOVED = {
    "cwcore.index.bm25.K1": "bm25_k1",
    "cwcore.index.bm25.B": "bm25_b",
    "cwcore.retrieve.fusion.RRF_K": "rrf_k",
    "cwcore.retrieve.fusion.SCORE_BLEND": "score_blend",
    "cwcore.retrieve.fusion.MODE_WEIGHTS": "lexical_weight / semantic_weight",
    "cwcore.retrieve.search.EXPANSION": "expansion",
    "cwcore.retrieve.search.EXPANSION_WEIGHT": "expansion_weight",
    "cwcore.retrieve.search.WEAK_SCORE": "weak_score",
    "cwcore.retrieve.search.WEAK_COVERAGE": "weak_coverage",
    "cwcore.retrieve.importance.IMPORTANCE_CAP": "importance_cap",
    "cwcore.retrieve.importance.RECENCY_BONUS": "recency_bonus",
    "cwcore.retrieve.importance.LINEAGE_STEP": "lineage_step",
    "cwcore.retrieve.expand.MAX_TERMS": "expansion_terms",
    "cwcore.retrieve.expand.TOP_WINDOWS": "expansion_windows",
}


def _override(item: str) -> None:
    """``module.NAME=VALUE``: import the module and set the constant (an experiment knob that
    is not a retrieval parameter: those are ``--param``, read from the search context, so a
    module constant would change nothing)."""
    import ast
    import importlib

    target, _, value = item.partition("=")
    moved = _MOVED.get(target.strip())
    if moved:
        # bm25.K1/B still exist (bm25.search's own defaults): setting them would change nothing.
        raise SystemExit(f"eval: {target} is the retrieval parameter {moved}: --param {moved}=…")
    module_name, _, name = target.rpartition(".")
    module = importlib.import_module(module_name)
    if not hasattr(module, name):
        hint = ""
        if module_name.startswith("cwcore.retrieve") or module_name == "cwcore.index.bm25":
            hint = "; retrieval knobs are --param NAME=VALUE (see --help)"
        raise SystemExit(f"eval: {module_name} has no {name}{hint}")
    setattr(module, name, ast.literal_eval(value))


def _params(items: list[str]) -> Any:
    """The run's :class:`~cwcore.retrieve.params.RetrievalParams` from ``--param`` items, or
    None without any (the engine's own defaults). Raises InvalidInput for an unknown name or a
    bad value."""
    if not items:
        return None
    from cwcore.retrieve import params

    return params.parse(items)


def _changed(run: Any) -> dict[str, Any]:
    """The fields of the run's parameters that differ from the shipped defaults."""
    if run is None:
        return {}
    from cwcore.retrieve import params

    return {
        name: getattr(run, name)
        for name in params.names()
        if getattr(run, name) != getattr(params.DEFAULT, name)
    }


def _param_names() -> list[str]:
    from cwcore.retrieve import params

    return list(params.names())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval", description=__doc__)
    parser.add_argument(
        "--sets",
        default="agent-logs,longmemeval,demo,conversations,preflight-agent-logs,"
        "preflight-longmemeval,preflight-demo,preflight-silent",
    )
    parser.add_argument("--systems", default="", help="comma-separated names (default: all)")
    parser.add_argument("--lexical", action="store_true", help="no embeddings: lexical systems")
    parser.add_argument("--questions", type=int, default=0, help="LongMemEval: first N only")
    parser.add_argument(
        "--param",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="set a retrieval parameter (a field of cwcore.retrieve.params.RetrievalParams) "
        "for this run's searches, to measure an alternative; e.g. rrf_k=30, "
        "semantic_weight=0.5, expansion=false. Known: " + ", ".join(_param_names()),
    )
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="MODULE.NAME=VALUE",
        help="set another module constant for this run (a Python literal), e.g. a preflight "
        "gate; retrieval knobs are --param",
    )
    parser.add_argument("--tag", default="", help="suffix of the result file names")
    args = parser.parse_args(argv)
    from cwcore.errors import InvalidInput

    try:
        common.PARAMS = _params(args.param)
    except InvalidInput as exc:
        print(f"eval: {exc}", file=sys.stderr)
        return 2
    common.fix_clock()
    os.environ.setdefault("CW_EMBEDDED", "1")
    from eval import data as lme_data
    from eval import lines, lme, preflight

    for item in args.override:
        _override(item)
    systems = [s for s in args.systems.split(",") if s]
    cache = None if args.lexical else common.vector_cache()
    reports = []
    for name in [s for s in args.sets.split(",") if s]:
        if name in preflight.NAMES:
            ok, missing = preflight.available(name)
            if not ok:
                print(f"eval: {name}: {missing}; skipped", file=sys.stderr)
                continue
            report = preflight.evaluate(name, questions=args.questions)
        elif name in ("agent-logs", "demo"):
            line_set = lines.AGENT_LOGS if name == "agent-logs" else lines.DEMO
            if not line_set.available():
                print(f"eval: {name}: {line_set.queries} is not present; skipped", file=sys.stderr)
                continue
            report = lines.evaluate(
                line_set, cache=cache, semantic=not args.lexical, systems=systems
            )
        elif name == "conversations":
            from eval import conversations

            if not conversations.available():
                print(
                    f"eval: conversations: {conversations.SET} is not built; skipped",
                    file=sys.stderr,
                )
                continue
            report = conversations.evaluate(cache=cache, semantic=not args.lexical, systems=systems)
        elif name == "longmemeval":
            if not lme_data.available():
                print("eval: longmemeval: the data is not present; skipped", file=sys.stderr)
                continue
            report = lme.evaluate(
                cache=cache, questions=args.questions, semantic=not args.lexical, systems=systems
            )
        else:
            parser.error(f"unknown set {name!r}")
        report["load_average"] = round(os.getloadavg()[0], 2)
        reports.append(report)
        common.RESULTS.mkdir(parents=True, exist_ok=True)
        report["overrides"] = list(args.override)
        report["params"] = _changed(common.PARAMS)
        suffix = f"-{args.tag}" if args.tag else ""
        (common.RESULTS / f"{name}{suffix}.json").write_text(json.dumps(report, indent=1) + "\n")
        print(render(report), flush=True)
    pooled = [pair for r in reports for pair in r.get("semantic_calibration") or []]
    if pooled:
        fits = {
            r["set"]: common.fit_logistic(*zip(*r["semantic_calibration"], strict=True))
            for r in reports
            if r.get("semantic_calibration")
        }
        fits["pooled"] = common.fit_logistic(*zip(*pooled, strict=True))
        print("semantic calibration, P(relevant | cosine) per set and pooled:", fits, flush=True)
        (common.RESULTS / "calibration.json").write_text(json.dumps(fits, indent=1) + "\n")
    if reports:
        suffix = f"-{args.tag}" if args.tag else ""
        (common.RESULTS / f"tables{suffix}.md").write_text("\n".join(render(r) for r in reports))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""docs/evaluation.md from the evaluation's JSON report."""

from __future__ import annotations

from typing import Any

LABEL = {
    "fts5": "SQLite FTS5 (bm25)",
    "bm25s": "bm25s",
    "lexical": "cw lexical (`semanticPolicy: never`)",
    "semantic": "cw semantic only (MiniLM)",
    "hybrid": "cw hybrid (RRF lexical + semantic)",
    "hybrid+rerank": "cw hybrid + cross-encoder rerank",
    "cw-search-auto": "cw search `semanticPolicy: auto`",
    "cw-search-always": "cw search `semanticPolicy: always`",
    "cw-search-default": "cw search default (no policy: the setting, `{policy}`)",
}
METRICS = ("recall_any@5", "recall_all@5", "ndcg@10", "turn_recall@10")


def label(system: str, policy: str = "auto") -> str:
    return LABEL.get(system, system).format(policy=policy)


def _table(
    rows: dict[str, dict[str, Any]],
    systems: list[str],
    latency: dict[str, Any] | None = None,
    *,
    policy: str = "auto",
) -> str:
    head = "| system | n | recall_any@5 | recall_all@5 | NDCG@10 | turn recall@10 |"
    rule = "|---|---|---|---|---|---|"
    if latency is not None:
        head += " p50 ms | p95 ms |"
        rule += "---|---|"
    out = [head, rule]
    for s in systems:
        if s not in rows:
            continue
        r = rows[s]
        cells = " | ".join(f"{r[m]:.3f}" for m in METRICS)
        line = f"| {label(s, policy)} | {r['n']} | {cells} |"
        if latency is not None:
            lat = latency.get(s, {})
            line += f" {lat.get('p50_ms', '')} | {lat.get('p95_ms', '')} |"
        out.append(line)
    return "\n".join(out)


def _above(report: dict[str, Any], system: str, others: list[str], metric: str) -> bool:
    rows = report["overall"]
    return system in rows and all(
        rows[system][metric] > rows[o][metric] for o in others if o in rows
    )


def _decision(report: dict[str, Any], policy: str) -> list[str]:
    """The default-policy section: the policies side by side, the issue's checks, auto's
    misses."""
    rows, latency = report["overall"], report.get("latency", {})
    policies = [
        ("never", "lexical"),
        ("auto", "cw-search-auto"),
        ("always", "cw-search-always"),
    ]
    if not all(s in rows for _, s in policies) or "cw-search-default" not in rows:
        return []
    n = report["questions"]
    used = report.get("semantic_used") or {}
    out = [
        "",
        "## The default `semanticPolicy`",
        "",
        f"`cw search` without `--semantic` (and the MCP search tool, and the TUI's first search)"
        f" uses the `semanticPolicy` setting, `{policy}` (`cwcore/config.py`), chosen by this"
        " evaluation: the same searches with each policy, beside the baselines (why this"
        " policy: [semantic.md](semantic.md#policy)).",
        "",
        "| policy | recall_all@5 | NDCG@10 | recall_any@5 | turn recall@10 | semantic ran | "
        "p50 ms | p95 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, system in policies:
        r, lat = rows[system], latency.get(system, {})
        ran = {"never": 0}.get(name, used.get(system, n))
        mark = " (default)" if name == policy else ""
        out.append(
            f"| `{name}`{mark} | {r['recall_all@5']:.3f} | {r['ndcg@10']:.3f} | "
            f"{r['recall_any@5']:.3f} | {r['turn_recall@10']:.3f} | {ran} of {n} | "
            f"{lat.get('p50_ms', '')} | {lat.get('p95_ms', '')} |"
        )
    for system in ("fts5", "bm25s"):
        if system in rows:
            r, lat = rows[system], latency.get(system, {})
            out.append(
                f"| {label(system)} | {r['recall_all@5']:.3f} | {r['ndcg@10']:.3f} | "
                f"{r['recall_any@5']:.3f} | {r['turn_recall@10']:.3f} | | "
                f"{lat.get('p50_ms', '')} | {lat.get('p95_ms', '')} |"
            )
    baselines = [s for s in ("fts5", "bm25s") if s in rows]

    def yes(ok: bool) -> str:
        return "**yes**" if ok else "**no**"

    default = "cw-search-default"
    out += [
        "",
        'Checks (issue 8, "done when"):',
        "",
        f"- cw's default search above both baselines on recall_all@5: "
        f"{yes(_above(report, default, baselines, 'recall_all@5'))} "
        f"({rows[default]['recall_all@5']:.3f} vs "
        + ", ".join(f"{label(b)} {rows[b]['recall_all@5']:.3f}" for b in baselines)
        + "); on NDCG@10: "
        f"{yes(_above(report, default, baselines, 'ndcg@10'))} "
        f"({rows[default]['ndcg@10']:.3f} vs "
        + ", ".join(f"{rows[b]['ndcg@10']:.3f}" for b in baselines)
        + ").",
        f"- hybrid above lexical-only on recall_all@5 and NDCG@10: "
        f"{yes(_above(report, 'hybrid', ['lexical'], 'recall_all@5'))} and "
        f"{yes(_above(report, 'hybrid', ['lexical'], 'ndcg@10'))} (hybrid "
        f"{rows['hybrid']['recall_all@5']:.3f} / {rows['hybrid']['ndcg@10']:.3f}, lexical "
        f"{rows['lexical']['recall_all@5']:.3f} / {rows['lexical']['ndcg@10']:.3f}).",
    ]
    # What auto's trigger left out: questions it did not run the semantic mode on, where
    # always ranked differently from never.
    better = worse = better_all = skipped = 0
    for q in report.get("per_question", []):
        if q.get("semantic_used", {}).get("cw-search-auto", True):
            continue
        skipped += 1
        a, lx = q["metrics"]["cw-search-always"], q["metrics"]["lexical"]
        better += a["ndcg@10"] > lx["ndcg@10"]
        worse += a["ndcg@10"] < lx["ndcg@10"]
        better_all += a["recall_all@5"] > lx["recall_all@5"]
    out += [
        f"- `auto` skipped the semantic mode on {skipped} of {n} questions (a strong first "
        f"lexical pass); on those, `always` ranked better on {better} (NDCG@10; "
        f"{better_all} of them gained recall_all@5) and worse on {worse}.",
    ]
    return out


def markdown(report: dict[str, Any], compare: dict[str, Any] | None = None) -> str:
    systems = report["systems"]
    policy = report.get("default_policy", "auto")
    emb = report.get("embedding", {})
    lines = [
        "# Retrieval evaluation (LongMemEval_S dev subset)",
        "",
        "Generated by `make eval` (`python -m eval.longmemeval`, see eval/README.md); numbers",
        "below are from the last run on this machine. Every system searches only the question's",
        "haystack sessions and returns up to 50 cw turn documents (a user message and the answer",
        "after it); session-level metrics rank sessions by their first hit; turn recall@10 is the",
        "share of evidence turns inside the top 10 hits. FTS5 and bm25s index the same cw turn",
        "documents (corpus-wide statistics, haystack filter).",
        "",
        f"Questions: {report['questions']} non-abstention questions; corpus: "
        f"{report['documents']:,} documents, {report['windows']:,} windows; semantic mode: "
        f"`{report['semantic_mode']}`.",
        "",
        "## Overall",
        "",
        _table(report["overall"], systems, report.get("latency", {}), policy=policy),
        "",
        "Latency: per query, in-process (the `cw search` rows through the embedded engine's",
        "`search` method, each with its query embedding: no query vector is reused between",
        "runs; semantic = query embedding + matrix product; hybrid = the lexical and semantic",
        "runs plus fusion).",
    ]
    used = report.get("semantic_used") or {}
    if used:
        n = report["questions"]
        lines += [
            "",
            "How often `cw search` ran the semantic mode: "
            + "; ".join(f"{label(s, policy)} {k} of {n}" for s, k in used.items())
            + ".",
        ]
    stage = report.get("semantic_stage") or {}
    if stage:
        lines += [
            "",
            "The semantic stage inside those searches (query embedding + matrix product + "
            "candidates), when it ran: "
            + "; ".join(
                f"{label(s, policy)} p50 {v['p50_ms']} ms, p95 {v['p95_ms']} ms"
                for s, v in stage.items()
            )
            + ".",
        ]
    load = report.get("load_average")
    if load:
        lines += [
            "",
            f"Load average (1 min) at the start and end of the run: {load[0]:.1f} and "
            f"{load[1]:.1f} (2 cores; latencies grow with it).",
        ]
    lines += _decision(report, policy)
    lines += ["", "## By question type", ""]
    for qtype, rows in report["by_type"].items():
        lines += [f"### {qtype}", "", _table(rows, systems, policy=policy), ""]
    lines += [
        "## Relevance bands checked against relevance",
        "",
        "Share of the top-10 hits in each band whose session is an evidence session (bands from",
        "the presented calibrated score: high ≥ 0.8, moderate 0.5–0.8, some 0.2–0.5, low < 0.2).",
        "The base rate is low by construction: a haystack holds about 50 sessions, 1–3 of them",
        "evidence.",
        "",
        "| mode | band | hits | evidence | precision |",
        "|---|---|---|---|---|",
    ]
    order = {"high": 0, "moderate": 1, "some": 2, "low": 3}
    for mode, cells in report["bands"].items():
        for band in sorted(cells, key=lambda b: order.get(b, 9)):
            c = cells[band]
            lines.append(
                f"| {mode} | {band} | {c['hits']} | {c['evidence']} | {c['precision']:.3f} |"
            )
    fit = report.get("calibration_fit")
    if fit:
        lines += [
            "",
            "Semantic calibration fit (logistic regression of evidence-session relevance on the "
            f"cosine of the semantic top-10 hits, n = {fit['n']}): slope {fit['slope']}, "
            f"midpoint {fit['midpoint']}. cw's presented semantic score is "
            "`sigmoid(SLOPE × (cosine − MIDPOINT))` with the constants in "
            "`cwcore/semantic/search.py`.",
        ]
    if compare:
        lines += [
            "",
            "## Window text truncated vs per message",
            "",
            f"Same first {compare['questions']} questions, both modes (`window`: each window's",
            "text truncated by the model to 256 tokens, one vector; `message`: one vector per",
            "message of the window, a window scores its best message).",
            "",
            "| mode | system | recall_any@5 | recall_all@5 | NDCG@10 | turn recall@10 | "
            "session MRR | turn MRR |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for mode, rows in compare["modes"].items():
            for s in ("semantic", "hybrid"):
                if s in rows:
                    r = rows[s]
                    names = (*METRICS, "session_mrr", "turn_mrr")
                    cells = " | ".join(f"{r[m]:.3f}" for m in names if m in r)
                    lines.append(f"| {mode} | {s} | {cells} |")
        lines += ["", "Embedding cost of each mode on that subset:", ""]
        lines += ["| mode | texts embedded | seconds | texts/s |", "|---|---|---|---|"]
        for mode, info in compare["embedding"].items():
            rate = info["computed"] / info["seconds"] if info["seconds"] else 0.0
            lines.append(f"| {mode} | {info['computed']} | {info['seconds']} | {rate:.1f} |")
        lines += ["", compare.get("verdict", "")]
    if emb:
        lines += [
            "",
            "## Embedding",
            "",
            f"Model `{emb.get('model')}`; this run embedded {emb.get('computed')} texts in "
            f"{emb.get('seconds')} s (the rest came from the content-digest cache in eval/.cache).",
        ]
    return "\n".join(lines) + "\n"

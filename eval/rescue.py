"""Candidate ``auto`` semantic rescue triggers, scored from one run's per-query results
(``python -m eval.rescue TAG``; issue 35, docs/evaluation.md "Semantic rescue trigger").

Under ``auto`` a search is the ``never`` search when the rescue does not fire and the
``always`` search when it does: the first lexical pass, its expansion and the exact tier are the
same under every policy, and only the semantic mode's candidates differ. So one run of
``cw-default``, ``cw-lexical`` and ``cw-hybrid`` (``python -m eval --systems
cw-default,cw-lexical,cw-hybrid --tag TAG``) scores any trigger offline: per query, the
``cw-hybrid`` metrics where the trigger fires on the first pass's evidence
(``stages.semantic.trigger``, recorded per query under ``rescue``) and the ``cw-lexical`` ones
where it does not. The trigger the run's ``cw-default`` used reproduces its figures, which
checks the premise; a candidate worth adopting is then run for real with ``--param``.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eval.common import RESULTS

#: The dev sets the trigger is chosen on, in report order, with their primary metrics.
SETS = ("agent-logs", "demo", "conversations", "longmemeval")

Trigger = Callable[[dict[str, Any]], bool]


def weak(ev: dict[str, Any], score: float = 0.5, coverage: float = 0.6) -> bool:
    """The weak first pass (:func:`cwcore.retrieve.semantic.weak`), the trigger before issue
    35, on recorded evidence."""
    return not ev["exact"] and (
        ev["score"] is None or ev["score"] < score or ev["coverage"] < coverage
    )


def shipped(ev: dict[str, Any]) -> bool:
    """The trigger as shipped: :func:`cwcore.retrieve.semantic.rescue` with the default
    :class:`~cwcore.retrieve.params.RetrievalParams`, on recorded evidence."""
    from cwcore.retrieve.semantic import RescueEvidence, rescue

    return rescue(RescueEvidence(**ev))


def candidates() -> dict[str, Trigger]:
    """Every trigger measured: the weak pass, the shipped one, the thresholds raised, and the
    weak pass OR one extra condition (content-word coverage, words absent from the scope,
    margin, question length), none after an exact answer."""
    out: dict[str, Trigger] = {"weak (before issue 35)": weak, "shipped": shipped}
    out["always"] = lambda ev: True
    out["never"] = lambda ev: False
    # The rescue's own thresholds (expansion stays with ``weak_score``/``weak_coverage``).
    for s in (0.6, 0.7, 0.8, 0.9, 1.0):
        out[f"rescue_score={s}"] = lambda ev, s=s: weak(ev, score=s)
    for c in (0.7, 0.8, 0.9, 1.0):
        out[f"rescue_coverage={c}"] = lambda ev, c=c: weak(ev, coverage=c)
    for c in (0.8, 0.9, 1.0):
        for w in (6, 8):
            out[f"rescue_coverage={c} + rescue_words={w}"] = lambda ev, c=c, w=w: (
                weak(ev, coverage=c) or (not ev["exact"] and ev["words"] >= w)
            )
        out[f"rescue_coverage={c} + rescue_score=0.6"] = lambda ev, c=c: weak(
            ev, score=0.6, coverage=c
        )
    for c in (0.5, 0.6, 0.75, 0.9, 1.0):
        out[f"rescue_content={c}"] = lambda ev, c=c: (
            weak(ev) or (not ev["exact"] and ev["content"] < c)
        )
    for m in (0.02, 0.05, 0.1, 0.2, 0.3):
        out[f"rescue_margin={m}"] = lambda ev, m=m: (
            weak(ev) or (not ev["exact"] and ev["margin"] < m)
        )
    for w in (3, 4, 5, 6, 8):
        out[f"rescue_words={w}"] = lambda ev, w=w: (
            weak(ev) or (not ev["exact"] and ev["words"] >= w)
        )
    for a in (0.2, 0.34, 0.5):
        out[f"rescue_absent={a}"] = lambda ev, a=a: (
            weak(ev) or (not ev["exact"] and ev.get("absent", 0.0) >= a)
        )
    out["weak or exact"] = lambda ev: weak({**ev, "exact": False})
    return out


def load(tag: str) -> dict[str, dict[str, Any]]:
    """The run's reports that exist, by set name."""
    out = {}
    for name in SETS:
        path = RESULTS / f"{name}-{tag}.json" if tag else RESULTS / f"{name}.json"
        if path.exists():
            out[name] = json.loads(path.read_text())
    return out


def simulate(report: dict[str, Any], trigger: Trigger) -> dict[str, Any]:
    """The report's primary metrics overall and per kind, and the firing rate, with
    ``trigger`` deciding each query between ``cw-hybrid`` and ``cw-lexical``."""
    primary = report["primary"]
    rows = []
    for q in report["per_query"]:
        ev = (q.get("rescue", {}).get("cw-hybrid") or {}).get("trigger")
        # No evidence: the semantic stage was not reached even under ``always`` (exact-looking
        # input the exact tier answered), so every policy answers as ``never``.
        fire = ev is not None and trigger(ev)
        rows.append((q["kind"], fire, q["metrics"]["cw-hybrid" if fire else "cw-lexical"]))

    def mean(part: list[tuple[str, bool, dict[str, float]]]) -> dict[str, float]:
        body = {m: round(statistics.fmean(r[2][m] for r in part), 3) for m in primary}
        body["fired"] = round(sum(r[1] for r in part) / len(part), 3)
        return body

    kinds = sorted({r[0] for r in rows})
    return {
        "overall": mean(rows),
        "by_kind": {k: mean([r for r in rows if r[0] == k]) for k in kinds},
    }


def compare(reports: dict[str, dict[str, Any]]) -> list[tuple[str, dict[str, Any], bool]]:
    """Each candidate's simulated figures per set and whether it keeps or raises every primary
    metric of every set against the weak pass (the trigger before issue 35)."""
    base = {name: simulate(r, weak)["overall"] for name, r in reports.items()}
    out = []
    for label, trig in candidates().items():
        sims = {name: simulate(r, trig) for name, r in reports.items()}
        keeps = all(
            sims[name]["overall"][m] >= base[name][m]
            for name in reports
            for m in base[name]
            if m != "fired"
        )
        out.append((label, sims, keeps))
    return out


def render(reports: dict[str, dict[str, Any]]) -> str:
    lines = []
    names = list(reports)
    head = ["trigger"]
    for name in names:
        head += [f"{name} {m}" for m in reports[name]["primary"]] + [f"{name} fired"]
    head.append("keeps all")
    lines.append("| " + " | ".join(head) + " |")
    lines.append("|---" * len(head) + "|")
    for label, sims, keeps in compare(reports):
        cells = [label]
        for name in names:
            o = sims[name]["overall"]
            cells += [f"{o[m]:.3f}" for m in reports[name]["primary"]] + [f"{o['fired']:.2f}"]
        cells.append("yes" if keeps else "no")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def policies(report: dict[str, Any]) -> str:
    """One set's primary metrics under ``never`` (cw-lexical), ``auto`` (cw-default) and
    ``always`` (cw-hybrid), overall and per query kind, with how often ``auto`` ran the
    semantic mode."""
    primary = report["primary"]
    systems = (("never", "cw-lexical"), ("auto", "cw-default"), ("always", "cw-hybrid"))
    head = ["kind (n)"] + [f"{m} {p}" for m in primary for p, _ in systems] + ["auto fired"]
    lines = [f"{report['set']} ({report['queries']} queries)", ""]
    lines += ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    rates = report.get("rescue") or {}
    groups = [("all", report["overall"], rates.get("overall", {}))]
    for kind, rows in report["by_kind"].items():
        groups.append((kind, rows, rates.get("by_kind", {}).get(kind, {})))
    for kind, rows, rate in groups:
        n = rows["cw-default"].get("n", report["queries"])
        cells = [f"{kind} ({n})"]
        cells += [f"{rows[sys][m]:.3f}" for m in primary for _, sys in systems]
        fired = rate.get("cw-default")
        cells.append(f"{fired['fired']}/{fired['of']}" if fired else "")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def check(reports: dict[str, dict[str, Any]], trigger: Trigger | None = None) -> list[str]:
    """Where ``trigger`` (the shipped one by default) simulated differs from the measured
    ``cw-default`` of a run with the same trigger (should be nowhere: the premise of
    :func:`simulate`)."""
    problems = []
    for name, r in reports.items():
        sim = simulate(r, trigger or shipped)["overall"]
        real = r["overall"].get("cw-default", {})
        for m in r["primary"]:
            if m in real and abs(real[m] - sim[m]) > 1e-9:
                problems.append(f"{name} {m}: simulated {sim[m]} measured {real[m]}")
    return problems


def main(argv: list[str]) -> int:
    tag = argv[0] if argv else ""
    reports = load(tag)
    if not reports:
        print(f"eval.rescue: no results for tag {tag!r} in {RESULTS}", file=sys.stderr)
        return 2
    for report in reports.values():
        print(policies(report))
    print(render(reports))
    # The run's cw-default ran the trigger of its day: compare with the one that reproduces it.
    problems = check(reports)
    if problems and not check(reports, weak):
        problems = []  # a run from before issue 35's default: the weak pass reproduces it
    for problem in problems:
        print("premise check:", problem)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))


__all__ = ["Path", "candidates", "compare", "load", "main", "simulate", "weak"]

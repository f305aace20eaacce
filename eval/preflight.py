"""The preflight sets: real and hand-written user messages posed to ``cw preflight`` with the
clock at the message's time, scored for whether a hint appears, whether its source answers, and
the spec's zero-violation gates (:mod:`eval.preflight_metrics`).

Sets (``eval/sets/preflight-<name>/cases.jsonl``; each README says how its cases were chosen):

* ``preflight-agent-logs`` — later user messages of the seven real agent logs that name an
  identifier from earlier in the session (should hint), and each again 45 days later (should
  stay silent: every source is past its age limit). Each message is asked of a fresh store
  holding its log cut just before the message, as a host would ask it live;
* ``preflight-longmemeval`` — the LongMemEval dev questions, each the latest message of one
  session whose history is its haystack sessions in date order, the clock at the question date;
* ``preflight-demo`` — hand-written questions with a historical cue about the bundled demo
  archive, each answered by a query of the demo search set (should hint, asked in the answer's
  session), and some of them asked in another session (should stay silent: not its lineage);
* ``preflight-silent`` — hand-written acknowledgements and requests to proceed (English and
  Italian), general-knowledge and current-only requests, near-miss overlaps, and stale and
  superseded sources, over the bundled demo archive and a small fixture written for this set.

Every case is asked twice under the same message key: the second answer must be the frozen,
byte-identical first. Before each case the session's active hints are rotated out, so one
case's hint never uses up the next one's budget.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from eval.common import log
from eval.data import SHARED
from eval.preflight_metrics import GATES, Limits, Shown, score_case, summarize

SETS = Path(__file__).resolve().parent / "sets"
AGENT_LOGS = SHARED / "agent-logs"
LME = SHARED / "longmemeval-s-dev"
DEMO = Path(__file__).resolve().parent.parent / "cwcore" / "demo"
NAMES = ("preflight-agent-logs", "preflight-longmemeval", "preflight-demo", "preflight-silent")


def cases_path(name: str) -> Path:
    return SETS / name / "cases.jsonl"


def load_cases(name: str) -> list[dict[str, Any]]:
    text = cases_path(name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def available(name: str) -> tuple[bool, str]:
    """Whether the set can run here, and what is missing when it cannot."""
    if not cases_path(name).is_file():
        return False, f"{cases_path(name)} is not present"
    if name == "preflight-agent-logs" and not AGENT_LOGS.is_dir():
        return False, f"{AGENT_LOGS} is not present"
    if name == "preflight-longmemeval" and not (LME / "sessions.jsonl.gz").is_file():
        return False, f"{LME} is not present"
    return True, ""


@contextlib.contextmanager
def clock(now: str) -> Iterator[None]:
    """Run with cw's clock (``CW_NOW``) at ``now``; the previous setting is restored."""
    before = os.environ.get("CW_NOW")
    os.environ["CW_NOW"] = now
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("CW_NOW", None)
        else:
            os.environ["CW_NOW"] = before


class Sources:
    """A session's messages by ``<documentId>#<messageKey>``: their source locations (through
    ``locate``) and text, read with the public ``show`` call and cached per session."""

    def __init__(self, archive: Any, locate: Callable[[str, Any], set[str]]) -> None:
        self.archive = archive
        self.locate = locate
        self.cache: dict[str, dict[str, tuple[set[str], str]]] = {}

    def of(self, session: str, source: str | None) -> tuple[set[str], str | None]:
        if not source:
            return set(), None
        if session not in self.cache:
            tr = self.archive.show(session)
            self.cache[session] = {
                f"{m.document_id}#{m.message_key}": (
                    self.locate(session, m),
                    m.text + ("\n" + m.tool_input if m.tool_input else ""),
                )
                for m in tr.messages
            }
        found = self.cache[session].get(source)
        if found is None:  # a window-level row (``<doc>@w<n>``): every message of its document
            doc = source.split("#")[0].split("@")[0]
            rows = [v for k, v in self.cache[session].items() if k.startswith(doc + "#")]
            if not rows:
                return set(), None
            return set().union(*(r[0] for r in rows)), "\n".join(r[1] for r in rows)
        return found


def limits_of(archive: Any) -> Limits:
    """The budgets and age limits the archive runs with (the defaults if it does not say)."""
    settings = getattr(getattr(archive, "engine", None), "settings", None)
    return Limits(
        message_tokens=int(getattr(settings, "hint_message_tokens", 160)),
        conversation_days=float(getattr(settings, "conversation_max_age_days", 30)),
        tool_days=float(getattr(settings, "tool_payload_max_age_days", 7)),
    )


def settings_of(archive: Any) -> dict[str, Any]:
    settings = getattr(getattr(archive, "engine", None), "settings", None)
    names = (
        "hint_message_tokens",
        "hint_active_tokens",
        "hint_suppression_hours",
        "conversation_max_age_days",
        "tool_payload_max_age_days",
    )
    return {n: getattr(settings, n) for n in names if hasattr(settings, n)}


def ask(
    archive: Any, case: dict[str, Any], session: str, sources: Sources, *, limits: Limits
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Ask one case twice at its clock; its record and the first answer's gate thresholds."""
    from cwcore.text.tokens import estimate

    key = "eval-" + case["id"]
    with clock(case["now"]):
        with contextlib.suppress(Exception):  # an older archive without rotation: no reset
            archive.hints_rotate(session, [])
        started = time.perf_counter()
        first = Shown.from_json(
            archive.preflight(case["message"], session=session, message_key=key).to_json()
        )
        ms = (time.perf_counter() - started) * 1000
        repeat = Shown.from_json(
            archive.preflight(case["message"], session=session, message_key=key).to_json()
        )
    locations, text = sources.of(session, first.source)
    record = score_case(
        case,
        first,
        repeat,
        source_locations=locations,
        source_text=text,
        limits=limits,
        estimate=estimate,
    )
    record["ms"] = round(ms, 2)
    return record, dict(first.thresholds)


# -- agent logs ---------------------------------------------------------------------------------


def _run_agent_logs(cases: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from cwcore.api import Archive

    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for case in cases:
        ctx = case["context"]
        groups.setdefault((ctx["file"], int(ctx["before_line"])), []).append(case)
    records: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    for n, ((rel, before), group) in enumerate(sorted(groups.items()), 1):
        lines = (AGENT_LOGS / rel).read_text(encoding="utf-8").splitlines(keepends=True)
        with tempfile.TemporaryDirectory(prefix="cw-eval-pf-") as tmp:
            logs = Path(tmp) / "logs"
            cut = logs / rel
            cut.parent.mkdir(parents=True)
            cut.write_text("".join(lines[: before - 1]), encoding="utf-8")
            base = Path(tmp) / "base"
            # Imported at the message's time: the archive as it stood when the user sent it.
            with clock(min(c["now"] for c in group)):
                archive = Archive.open(base, embedded=True)
                archive.import_paths([str(cut)])
                archive.close()

            def locate(session: str, m: Any, rel: str = rel) -> set[str]:
                return {f"{rel}:{line}" for line in m.lines}

            for case in sorted(group, key=lambda c: c["now"]):
                # A copy per case: a hint shown for one case is suppressed for 24 hours in its
                # session, and must not silence the next case asked at the same point.
                home = Path(tmp) / "case"
                shutil.rmtree(home, ignore_errors=True)
                shutil.copytree(base, home)
                archive = Archive.open(home, embedded=True)
                try:
                    limits = limits_of(archive)
                    meta.setdefault("settings", settings_of(archive))
                    record, thresholds = ask(
                        archive,
                        case,
                        case["context"]["session"],
                        Sources(archive, locate),
                        limits=limits,
                    )
                    if thresholds:
                        meta.setdefault("thresholds", thresholds)
                    records.append(record)
                finally:
                    archive.close()
        if n % 5 == 0:
            log(f"preflight-agent-logs: {n}/{len(groups)} contexts")
    return records, meta


# -- LongMemEval ----------------------------------------------------------------------------------


def _run_longmemeval(
    cases: list[dict[str, Any]], questions: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from cwcore.api import Archive
    from eval import data as lme_data
    from eval.preflight_sets import lme_date

    if questions:
        cases = cases[:questions]
    ds = lme_data.load(LME)
    raw = {
        json.loads(line)["qid"]: json.loads(line)
        for line in (LME / "queries.jsonl").read_text(encoding="utf-8").splitlines()
    }
    records: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cw-eval-pf-lme-") as tmp:
        src = Path(tmp) / "preflight-longmemeval.cw.jsonl"
        messages = 0
        with src.open("w", encoding="utf-8") as out:
            for case in cases:
                q = raw[case["context"]["qid"]]
                session = "lme-" + q["qid"]
                dated = sorted(zip(q["haystack_dates"], q["haystack"], strict=True))
                for date, sid in dated:
                    start = lme_date(date)
                    for turn in ds.sessions.get(sid, []):
                        idx = int(turn["turn_index"])
                        # A second per turn from the session's date keeps the order and the day.
                        stamp = start[:-3] + f"{min(idx, 59):02d}Z"
                        line = {
                            "session": session,
                            "id": f"{sid}:{idx}",
                            "role": turn["role"],
                            "text": turn["text"],
                            "timestamp": stamp,
                            "project": "preflight-longmemeval",
                            "agent": "longmemeval",
                        }
                        out.write(json.dumps(line, ensure_ascii=False) + "\n")
                        messages += 1
        started = time.perf_counter()
        archive = Archive.open(Path(tmp) / "home", embedded=True)
        try:
            archive.import_paths([src], fmt="cw-jsonl")
            log(
                f"preflight-longmemeval: imported {messages} messages of {len(cases)} sessions "
                f"in {time.perf_counter() - started:.1f} s"
            )

            def locate(session: str, m: Any) -> set[str]:
                ident = m.message_key.split(":", 1)[1]
                sid = ident.rsplit(":", 1)[0]
                return {f"session:{sid}", f"turn:{ident}"}

            sources = Sources(archive, locate)
            limits = limits_of(archive)
            meta["settings"] = settings_of(archive)
            for n, case in enumerate(cases, 1):
                record, thresholds = ask(
                    archive, case, "lme-" + case["context"]["qid"], sources, limits=limits
                )
                if thresholds:
                    meta.setdefault("thresholds", thresholds)
                records.append(record)
                sources.cache.clear()  # each question's session is read once
                if n % 25 == 0:
                    log(f"preflight-longmemeval: {n}/{len(cases)} questions")
        finally:
            archive.close()
    return records, meta


# -- the silent set over the demo archive and its fixture -----------------------------------------


def _run_archive(
    name: str, cases: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from cwcore.api import Archive

    fixture = SETS / name / "fixture.cw.jsonl"
    records: list[dict[str, Any]] = []
    meta: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="cw-eval-pf-arc-") as tmp:
        base = Path(tmp) / "base"
        with clock(min(c["now"] for c in cases)):
            archive = Archive.open(base, embedded=True)
            archive.import_paths([str(DEMO)])
            if fixture.is_file():
                archive.import_paths([str(fixture)], fmt="cw-jsonl")
            archive.close()

        def locate(session: str, m: Any) -> set[str]:
            return {f"msg:{session}:{m.message_key.split(':', 1)[1]}"}

        for case in cases:
            # A copy per case: one case's hint or exposure never changes another's answer.
            home = Path(tmp) / "case"
            shutil.copytree(base, home)
            archive = Archive.open(home, embedded=True)
            try:
                session = case["context"]["session"]
                retire = set(case["context"].get("supersede") or ())
                if retire:
                    tr = archive.show(session)
                    docs = {
                        m.document_id
                        for m in tr.messages
                        if m.message_key.split(":", 1)[1] in retire
                    }
                    with clock(case["now"]):
                        for doc in sorted(docs):
                            archive.supersede(doc, reason="reversed (preflight eval)")
                limits = limits_of(archive)
                meta.setdefault("settings", settings_of(archive))
                record, thresholds = ask(
                    archive, case, session, Sources(archive, locate), limits=limits
                )
                if thresholds:
                    meta.setdefault("thresholds", thresholds)
                records.append(record)
            finally:
                archive.close()
                shutil.rmtree(home)
    return records, meta


def evaluate(name: str, *, questions: int = 0) -> dict[str, Any]:
    """Run one preflight set; the report :func:`table` prints and ``eval/results`` keeps."""
    cases = load_cases(name)
    started = time.perf_counter()
    if name == "preflight-agent-logs":
        records, meta = _run_agent_logs(cases)
    elif name == "preflight-longmemeval":
        records, meta = _run_longmemeval(cases, questions)
    else:
        records, meta = _run_archive(name, cases)
    summary = summarize(records)
    ms = sorted(r["ms"] for r in records)
    return {
        "set": name,
        "kind": "preflight",
        "cases": len(records),
        "thresholds": meta.get("thresholds"),
        "settings": meta.get("settings"),
        "metrics": {k: v for k, v in summary.items() if k != "by_category"},
        "by_category": summary["by_category"],
        "latency": {"p50_ms": ms[len(ms) // 2] if ms else None, "max_ms": ms[-1] if ms else None},
        "seconds": round(time.perf_counter() - started, 1),
        "per_case": records,
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def table(report: dict[str, Any]) -> str:
    """The set's metrics, outcomes per category and gate violations, with the thresholds."""
    m = report["metrics"]
    th = report.get("thresholds") or {}
    st = report.get("settings") or {}
    out = [
        f"### {report['set']} ({report['cases']} cases: {m['should_hint']} should hint, "
        f"{m['should_stay_silent']} should stay silent)",
        "",
        "thresholds: "
        + ", ".join(f"{k} {v}" for k, v in th.items())
        + ("; " if th and st else "")
        + ", ".join(f"{k} {v}" for k, v in st.items()),
        "",
        "| metric | value |",
        "|---|---|",
        f"| hint rate (should hint) | {_fmt(m['hint_rate'])} |",
        f"| excerpt rate / marker rate (should hint) | {_fmt(m['excerpt_rate'])} / "
        f"{_fmt(m['marker_rate'])} |",
        f"| false-hint rate (should stay silent) | {_fmt(m['false_hint_rate'])} |",
        f"| excerpt precision ({m['excerpts']} excerpts) | {_fmt(m['excerpt_precision'])} |",
        f"| marker precision ({m['markers']} markers) | {_fmt(m['marker_precision'])} |",
        f"| hint source precision (any hint, should hint) | {_fmt(m['hint_source_precision'])} |",
    ]
    if m.get("excerpt_turn_precision") is not None:
        out.append(f"| excerpt turn precision | {_fmt(m['excerpt_turn_precision'])} |")
    if m.get("anchor_whole") is not None:
        out.append(f"| excerpts quoting the anchor whole | {_fmt(m['anchor_whole'])} |")
    if m.get("quote_chars_p50") is not None:
        out.append(f"| quoted characters per excerpt, median | {m['quote_chars_p50']} |")
    out += [
        f"| gate violations (total) | {sum(m['violations'].values())} |",
        "",
        "| category | expect | n | excerpt | marker | none | no-query | failed | hint rate |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for cat, row in report["by_category"].items():
        out.append(
            f"| {cat} | {row['expect']} | {row['n']} | {row['excerpt']} | {row['marker']} | "
            f"{row['none']} | {row['no-query']} | {row['failed']} | {_fmt(row['hint_rate'])} |"
        )
    out += ["", "| gate | violations |", "|---|---|"]
    for gate in GATES:
        out.append(f"| {gate} | {m['violations'].get(gate, 0)} |")
    for gate, ids in (m.get("violation_cases") or {}).items():
        out.append(f"\n{gate}: {', '.join(ids[:12])}{' …' if len(ids) > 12 else ''}")
    return "\n".join(out) + "\n"

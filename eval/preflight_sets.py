"""Building the preflight sets' case files (``eval/sets/preflight-*/cases.jsonl``) from the dev
data, by the documented rules, so they can be rebuilt and checked.

``python -m eval.preflight_sets agent-logs|longmemeval|demo`` rewrites that set's ``cases.jsonl``
(the silent set is written by hand). The rules are stated in each set's README; the functions
below are those rules, nothing more.

A case is one JSON object a line::

    {"id", "category", "expect": "hint"|"silent", "lang", "message", "now" (the clock, ISO-8601),
     "context": {...}, "expected": [source locations], "anchor"?, "why"}

``context.kind`` says where the message is posed: ``agent-log`` (``file`` relative to the
agent-log folder, ``before_line``: the log is cut just before that 1-based line, ``session``),
``longmemeval`` (``qid``: the question's haystack, in date order, is the session's history) or
``archive`` (``session`` of the silent set's archive, ``supersede``: message ids whose documents
are retired first). ``expected`` lists source locations that answer: ``<file>:<line>`` for agent
logs, ``session:<id>`` for LongMemEval, ``msg:<session>:<message id>`` for the silent set.
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Any

from eval.data import SHARED

SETS = Path(__file__).resolve().parent / "sets"
AGENT_LOGS = SHARED / "agent-logs"
LME = SHARED / "longmemeval-s-dev"

#: A stale variant asks the same message this long after it was sent: past the 30-day limit of
#: conversation (and the 7-day limit of tool payloads), so no source of the session is eligible.
STALE_AFTER = timedelta(days=45)

# The identifier rule (independent of cw's own extractor, so the set does not grade cw by its
# own definition): backticked spans, paths, camel/Pascal case with an inner capital, snake or
# screaming case, dotted qualified names, long flags, hex colours.
_ANCHOR = re.compile(
    r"`([^`\n]{3,80})`"
    r"|(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+|[\w-]+\.(?:md|ts|tsx|js|json|go|py|yml|yaml|toml|txt))"
    r"|(?<![\w.])([a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|[A-Za-z]+_[A-Za-z0-9_]+"
    r"|[A-Za-z]\w*\.[A-Za-z]\w*(?:\(\))?)"
    r"|(?<![\w-])(--[a-z][\w-]+)"
    r"|(#[0-9a-fA-F]{6})\b"
)


def anchors(message: str) -> list[str]:
    """The identifier-like spans of ``message`` by the rule above, at least 4 characters,
    in order, without repeats. A trailing ``()`` is dropped (``fn()`` is looked for as ``fn``)."""
    out: dict[str, None] = {}
    for m in _ANCHOR.finditer(message):
        text = next(g for g in m.groups() if g)
        text = text.strip().removesuffix("()").rstrip(".,:;")
        if len(text) >= 4 and not text.startswith("http"):
            out.setdefault(text, None)
    return list(out)


def occurs(anchor: str, text: str) -> bool:
    """``anchor`` in ``text`` case-sensitively, not glued to a longer identifier."""
    pattern = r"(?<![\w])" + re.escape(anchor) + r"(?![\w])"
    return re.search(pattern, text) is not None


#: Cases the hand check dropped: the anchor is in the earlier log only incidentally (the user
#: pastes it afresh, or names a file the agent never worked on before). Key: case id.
HAND_DROPPED: dict[str, str] = {
    "pf-al-170cebcc-240": "`GitHub` is the product name, not earlier work",
    "pf-al-pi-mono_-383": "a new screenshot path; only its temp folder name recurs",
    "pf-al-pi-mono_-407": "a new screenshot path; only its temp folder name recurs",
    "pf-al-pi-mono_-429": "a new screenshot path; only its temp folder name recurs",
}


#: The one question template of the *asked-back* cases: issue 33's own example, with the case's
#: longest anchor. Real messages of the logs rarely carry a historical cue, so without these the
#: set could not show whether an excerpt quotes the right source.
ASKED_BACK = "What did we decide earlier about `{}`?"


def agent_log_cases() -> list[dict[str, Any]]:
    """Every later real user message of the seven agent logs that names an identifier also
    named in an earlier message of its session, as a should-hint case, and its stale variant
    (the same message 45 days later) as a should-stay-silent case."""
    import os

    from cwcore.api import Archive
    from cwcore.clock import iso, parse_time

    os.environ.setdefault("CW_EMBEDDED", "1")
    files = sorted(p for p in AGENT_LOGS.rglob("*.jsonl") if p.is_file())
    cases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="cw-pf-build-") as tmp:
        archive = Archive.open(Path(tmp) / "home", embedded=True)
        try:
            archive.import_paths([str(f) for f in files])
            sessions, _ = archive.sessions(limit=1000)
            for info in sorted(sessions, key=lambda s: s.sessionId):
                if info.parent:  # sub-agent sidechains: preflight runs in the main session
                    continue
                tr = archive.show(info.sessionId)
                source = tr.session.source if hasattr(tr.session, "source") else None
                rel = _file_of(info.sessionId, files, source)
                if rel is None:
                    continue
                earlier: list[tuple[str, list[int]]] = []
                first_user = True
                for m in tr.messages:
                    text = m.text + ("\n" + m.tool_input if m.tool_input else "")
                    real_user = m.role == "user" and m.kind == "text" and not m.meta
                    if real_user and not first_user and not m.text.lstrip().startswith("/"):
                        kept = [a for a in anchors(m.text) if any(occurs(a, t) for t, _ in earlier)]
                        if kept and m.timestamp and m.lines:
                            line = min(m.lines)
                            cid = f"pf-al-{rel.split('/')[-1][:8]}-{line}"
                            if cid not in HAND_DROPPED:
                                expected = sorted(
                                    {
                                        f"{rel}:{n}"
                                        for t, lines in earlier
                                        if any(occurs(a, t) for a in kept)
                                        for n in lines
                                    },
                                    key=lambda s: int(s.rsplit(":", 1)[1]),
                                )
                                base = {
                                    "message": m.text,
                                    "lang": "en",
                                    "context": {
                                        "kind": "agent-log",
                                        "file": rel,
                                        "before_line": line,
                                        "session": info.sessionId,
                                    },
                                    "anchor": max(kept, key=len),
                                    "anchors": kept,
                                }
                                cases.append(
                                    {
                                        "id": cid,
                                        "category": "refers-back",
                                        "expect": "hint",
                                        "now": m.timestamp,
                                        **base,
                                        "expected": expected,
                                        "why": f"names {', '.join(kept)} from earlier in the "
                                        "session",
                                    }
                                )
                                anchor = base["anchor"]
                                cases.append(
                                    {
                                        "id": cid + "-asked",
                                        "category": "asked-back",
                                        "expect": "hint",
                                        "now": m.timestamp,
                                        **base,
                                        "message": ASKED_BACK.format(anchor),
                                        "anchors": [anchor],
                                        "expected": sorted(
                                            {
                                                f"{rel}:{n}"
                                                for t, lines in earlier
                                                if occurs(anchor, t)
                                                for n in lines
                                            },
                                            key=lambda s: int(s.rsplit(":", 1)[1]),
                                        ),
                                        "why": f"the issue's question about {anchor}, asked "
                                        "instead of the real message",
                                    }
                                )
                                later = iso(parse_time(m.timestamp) + STALE_AFTER)
                                cases.append(
                                    {
                                        "id": cid + "-stale",
                                        "category": "stale",
                                        "expect": "silent",
                                        "now": later,
                                        **base,
                                        "expected": [],
                                        "why": "the same message 45 days later: every source of "
                                        "the session is past its age limit",
                                    }
                                )
                    if real_user:
                        first_user = False
                    if m.lines:
                        earlier.append((text, list(m.lines)))
        finally:
            archive.close()
    return cases


def _file_of(session: str, files: list[Path], source: str | None) -> str | None:
    """The log file (relative to the agent-log folder) holding ``session``: by name, or by the
    session id in its first lines (pi names the session in its header)."""
    for f in files:
        if session in f.name:
            return str(f.relative_to(AGENT_LOGS))
    for f in files:
        with f.open(encoding="utf-8") as fh:
            head = fh.readline()
        if session in head:
            return str(f.relative_to(AGENT_LOGS))
    return None


def lme_date(text: str) -> str:
    """LongMemEval's ``2023/10/08 (Sun) 15:29`` as ISO-8601 UTC."""
    day, _, rest = text.partition(" ")
    clock = rest.split(")")[-1].strip() or "00:00"
    return day.replace("/", "-") + "T" + clock + ":00Z"


def longmemeval_cases() -> list[dict[str, Any]]:
    """Every non-abstention dev question, posed at its date as the latest message of a session
    whose history is its haystack: should hint when an evidence session lies within the 30-day
    limit of the question date, else should stay silent (its only answer is stale)."""
    from cwcore.clock import parse_time

    cases = []
    for line in (LME / "queries.jsonl").read_text(encoding="utf-8").splitlines():
        q = json.loads(line)
        if q.get("abstention"):
            continue
        now = lme_date(q["question_date"])
        dates = dict(zip(q["haystack"], q["haystack_dates"], strict=True))
        ages = [
            (parse_time(now) - parse_time(lme_date(dates[e]))).total_seconds() / 86400
            for e in q["evidence"]
        ]
        fresh = any(a <= 30 for a in ages)
        cases.append(
            {
                "id": f"pf-lme-{q['qid']}",
                "category": q["question_type"] if fresh else "stale-evidence",
                "expect": "hint" if fresh else "silent",
                "lang": "en",
                "message": q["question"],
                "now": now,
                "context": {"kind": "longmemeval", "qid": q["qid"]},
                "expected": [f"session:{e}" for e in q["evidence"]] if fresh else [],
                "expected_turns": list(q.get("evidence_turns") or []),
                "evidence_age_days": [round(a, 1) for a in ages],
                "why": (
                    "an evidence session within 30 days of the question"
                    if fresh
                    else "every evidence session is older than 30 days at the question date"
                ),
            }
        )
    return cases


DEMO = Path(__file__).resolve().parent.parent / "cwcore" / "demo"
DEMO_QUERIES = SETS / "demo" / "queries.jsonl"
DEMO_NOW = "2026-11-20T12:00:00Z"

#: Hand-written questions with a historical cue about the demo archive, each answered by one
#: query of the demo search set (its expected lines are the answer): (demo query id, language,
#: the question). The question is asked at the end of the session holding the answer.
DEMO_QUESTIONS: tuple[tuple[str, str, str], ...] = (
    ("demo-07", "en", "Which commit fixed `ERR_LEASE_EXPIRED` last time?"),
    ("demo-01", "en", "Did `test_renew_survives_wall_clock_step` pass earlier?"),
    ("demo-13", "en", "Remind me which clock we said the scheduler uses for lease renewals?"),
    ("demo-08", "en", "Where did we find `parseRetryAfter` defined earlier?"),
    ("demo-17", "en", "What cap on the Retry-After delay did we decide earlier?"),
    ("demo-06", "en", "What was commit 9c1e4d2 again?"),
    ("demo-03", "en", "Remind me what `RocksQueue` looked like earlier."),
    ("demo-10", "en", "When did we make `--queue-backend=rocksdb` the default earlier?"),
    ("demo-19", "en", "What was the SQLite queue bench baseline we measured earlier?"),
    ("demo-04", "en", "How did we revert commit 5d21f8a earlier?"),
    ("demo-22", "en", "Who was holding the RocksDB queue LOCK file earlier?"),
    ("demo-11", "en", "What did the journalctl output for orbit-worker@2 show earlier?"),
    ("demo-05", "en", "What did `test_no_job_is_claimed_twice` check, as we wrote it earlier?"),
    ("demo-26", "en", "Why did we decide to use spawn instead of fork for the multiprocess test?"),
    ("demo-12", "en", "Did the pytest run of tests/queue/test_multiprocess.py pass last time?"),
    ("demo-07", "it", "Quale commit aveva corretto `ERR_LEASE_EXPIRED` l'altra volta?"),
    ("demo-08", "it", "Dove avevamo trovato la definizione di `parseRetryAfter` prima?"),
)
#: The same questions asked in a session that is not in the answer's lineage: automatic
#: preflight looks only at the session and its ancestors, so these should stay silent.
DEMO_OTHER_SESSION = ("demo-07", "demo-08", "demo-03", "demo-22", "demo-05")


def demo_cases() -> list[dict[str, Any]]:
    """The demo set: :data:`DEMO_QUESTIONS` asked in the answer's session (should hint; the
    expected sources are the demo query's expected lines, as message ids) and, for
    :data:`DEMO_OTHER_SESSION`, in another demo session (should stay silent)."""
    import os

    from cwcore.api import Archive

    os.environ.setdefault("CW_EMBEDDED", "1")
    queries = {
        q["qid"]: q
        for q in map(json.loads, DEMO_QUERIES.read_text(encoding="utf-8").splitlines())
        if q
    }
    cases: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="cw-pf-demo-") as tmp:
        archive = Archive.open(Path(tmp) / "home", embedded=True)
        try:
            archive.import_paths([str(DEMO)])
            sessions = [s.sessionId for s in archive.sessions(limit=100)[0]]
            ids_by_line: dict[tuple[str, int], tuple[str, str]] = {}
            session_of_file: dict[str, str] = {}
            for sid in sessions:
                for f in DEMO.rglob("*.json*"):
                    if sid[:8] in f.name:
                        session_of_file[str(f.relative_to(DEMO))] = sid
                for m in archive.show(sid).messages:
                    for n in m.lines:
                        ids_by_line[(sid, n)] = (sid, m.message_key.split(":", 1)[1])
            order = sorted(sessions)
            for qid, lang, question in DEMO_QUESTIONS:
                q = queries[qid]
                sid = session_of_file[q["expected"][0]["file"]]
                expected = sorted(
                    {
                        f"msg:{s}:{i}"
                        for e in q["expected"]
                        if (hit := ids_by_line.get((sid, int(e["line"])))) is not None
                        for s, i in [hit]
                    }
                )
                cid = f"pf-demo-{qid[5:]}-{lang}"
                found = anchors(question)
                cases.append(
                    {
                        "id": cid,
                        "category": "historical",
                        "expect": "hint",
                        "lang": lang,
                        "message": question,
                        "now": DEMO_NOW,
                        "context": {"kind": "archive", "session": sid},
                        "expected": expected,
                        **({"anchor": max(found, key=len)} if found else {}),
                        "why": f"answered by {qid}: {q['why']}",
                    }
                )
                if qid in DEMO_OTHER_SESSION and lang == "en":
                    other = order[(order.index(sid) + 1) % len(order)]
                    cases.append(
                        {
                            "id": cid + "-other",
                            "category": "other-session",
                            "expect": "silent",
                            "lang": lang,
                            "message": question,
                            "now": DEMO_NOW,
                            "context": {"kind": "archive", "session": other},
                            "expected": [],
                            "why": f"{qid}'s answer is in session {sid}, outside this "
                            "session's lineage",
                        }
                    )
        finally:
            archive.close()
    return cases


def write(name: str, cases: list[dict[str, Any]]) -> Path:
    path = SETS / f"preflight-{name}" / "cases.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases))
    return path


def main(argv: list[str]) -> int:
    builders = {
        "agent-logs": agent_log_cases,
        "longmemeval": longmemeval_cases,
        "demo": demo_cases,
    }
    for name in argv or list(builders):
        if name not in builders:
            raise SystemExit(f"unknown set {name!r}; one of {', '.join(builders)}")
        path = write(name, builders[name]())
        print(f"{path}: {sum(1 for _ in path.open())} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

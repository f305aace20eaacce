"""The project's conversational set (``eval/sets/conversations/``): multi-session casual
conversations between two people, with questions whose evidence is one or more turns.

Each conversation session becomes one cw session (project ``conversations``); each turn one
cw-jsonl message with ``id`` = its turn index, the first speaker as ``user`` and the second as
``assistant``, the text prefixed with the speaker's name (``"Ana: …"``) so a question naming a
person can match as it would in a chat export. cw groups a user message and the reply after it
into one turn document, as for LongMemEval. Every question is searched within the sessions of
its own conversation (the LongMemEval haystack filter) and scored on turns — hit@1, hit@5,
hit@10 and MRR: a hit is relevant when it covers an evidence turn — and on sessions:
recall_all@5, every evidence session among the first five distinct sessions of the ranking.
Scored overall and per kind (single-hop, multi-hop, temporal, paraphrase).

The set is written by hand in ``src/*.txt`` (format in the set's README); ``python -m
eval.conversations build`` turns it into ``conversations.jsonl`` and ``questions.jsonl``, the
files the evaluation reads, and checks every evidence label resolves to exactly one turn.
"""

from __future__ import annotations

import json
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

SET = Path(__file__).resolve().parent / "sets" / "conversations"
PROJECT = "conversations"
TOP = 50
KINDS = ("single-hop", "multi-hop", "temporal", "paraphrase")
METRICS = ("hit@1", "hit@5", "hit@10", "mrr", "recall_all@5")


@dataclass(frozen=True)
class Turn:
    """One message of a session: ``turn`` is its 0-based index, ``text`` has the name prefix."""

    session: str
    turn: int
    speaker: str
    role: str
    text: str
    timestamp: str


@dataclass(frozen=True)
class Question:
    qid: str
    conversation: str
    question: str
    date: str
    kind: str
    evidence: tuple[str, ...]  # "<session>:<turn>"
    answer: str

    @property
    def sessions(self) -> frozenset[str]:
        return frozenset(e.rsplit(":", 1)[0] for e in self.evidence)


@dataclass
class Dataset:
    #: session id -> its turns in order; session ids are ``<conversation>-sNN``.
    sessions: dict[str, list[Turn]]
    #: conversation id -> its session ids in date order.
    conversations: dict[str, list[str]]
    questions: list[Question]


def available(folder: Path = SET) -> bool:
    return (folder / "conversations.jsonl").is_file() and (folder / "questions.jsonl").is_file()


def load(folder: Path = SET) -> Dataset:
    """The built set (``conversations.jsonl``, ``questions.jsonl``) of ``folder``."""
    sessions: dict[str, list[Turn]] = {}
    conversations: dict[str, list[str]] = {}
    for line in (folder / "conversations.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        sid = r["session"]
        if sid not in sessions:
            sessions[sid] = []
            conversations.setdefault(r["conversation"], []).append(sid)
        sessions[sid].append(
            Turn(sid, int(r["turn"]), r["speaker"], r["role"], r["text"], r["timestamp"])
        )
    questions = []
    for line in (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        q = json.loads(line)
        questions.append(
            Question(
                q["qid"],
                q["conversation"],
                q["question"],
                q["date"],
                q["kind"],
                tuple(f"{e['session']}:{e['turn']}" for e in q["evidence"]),
                q["answer"],
            )
        )
    return Dataset(sessions, conversations, questions)


def cw_jsonl_lines(ds: Dataset, conversations: Sequence[str] | None = None) -> Iterator[str]:
    for conv, sids in ds.conversations.items():
        if conversations is not None and conv not in conversations:
            continue
        for sid in sids:
            for t in ds.sessions[sid]:
                yield json.dumps(
                    {
                        "session": sid,
                        "id": str(t.turn),
                        "role": t.role,
                        "text": t.text,
                        "timestamp": t.timestamp,
                        "project": PROJECT,
                        "agent": "conversations",
                    },
                    ensure_ascii=False,
                )


# -- building the JSONL files from the hand-written source -------------------------------------

_CONV = re.compile(r"^=\s*(c\d+)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*$")
_SESSION = re.compile(r"^==\s*(s\d+)\s*\|\s*(\d{4}-\d\d-\d\d \d\d:\d\d)\s*$")
_TURN = re.compile(r"^([AB]):\s*(.+?)\s*$")
_LABELS = re.compile(r"\s*\[\[([^\]]+)\]\]")
_QUESTION = re.compile(r"^\?\?\s*(.+)$")


class SourceError(ValueError):
    pass


def parse_source(
    text: str, where: str = "<source>"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One source file -> (turn records, question records), evidence resolved to turns.

    Raises :class:`SourceError` on a malformed line, an unknown or duplicate label, an unknown
    kind or a question without evidence.
    """
    conv = ""
    names: dict[str, str] = {}
    sid = ""
    start: datetime | None = None
    turns: list[dict[str, Any]] = []
    labels: dict[str, tuple[str, int]] = {}
    raw_qs: list[tuple[int, list[str]]] = []
    index = 0
    for n, line in enumerate(text.splitlines(), 1):
        line = line.rstrip()
        if not line.strip() or line.startswith("#"):
            continue
        if m := _CONV.match(line):
            conv, names = m.group(1), {"A": m.group(2), "B": m.group(3)}
        elif m := _SESSION.match(line):
            sid = f"{conv}-{m.group(1)}"
            start = datetime.strptime(m.group(2), "%Y-%m-%d %H:%M")
            index = 0
        elif m := _QUESTION.match(line):
            raw_qs.append((n, [p.strip() for p in m.group(1).split("|")]))
        elif m := _TURN.match(line):
            if not sid or start is None:
                raise SourceError(f"{where}:{n}: a turn before any session")
            body = m.group(2)
            for lab in _LABELS.findall(body):
                for name in lab.split(","):
                    name = name.strip()
                    if name in labels:
                        raise SourceError(f"{where}:{n}: label {name!r} used twice")
                    labels[name] = (sid, index)
            body = _LABELS.sub("", body).strip()
            speaker = names[m.group(1)]
            turns.append(
                {
                    "conversation": conv,
                    "session": sid,
                    "turn": index,
                    "speaker": speaker,
                    "role": "user" if m.group(1) == "A" else "assistant",
                    "text": f"{speaker}: {body}",
                    "timestamp": (start + timedelta(minutes=2 * index)).strftime(
                        "%Y-%m-%dT%H:%M:00Z"
                    ),
                }
            )
            index += 1
        else:
            raise SourceError(f"{where}:{n}: cannot read {line[:60]!r}")
    questions = []
    for k, (n, parts) in enumerate(raw_qs, 1):
        if len(parts) != 5:
            raise SourceError(f"{where}:{n}: a question needs kind | date | text | answer | labels")
        kind, date, question, answer, labs = parts
        if kind not in KINDS:
            raise SourceError(f"{where}:{n}: unknown kind {kind!r}")
        evidence = []
        for name in [x.strip() for x in labs.split(",") if x.strip()]:
            if name not in labels:
                raise SourceError(f"{where}:{n}: unknown label {name!r}")
            s, t = labels[name]
            evidence.append({"session": s, "turn": t})
        if not evidence:
            raise SourceError(f"{where}:{n}: no evidence")
        questions.append(
            {
                "qid": f"{conv}-q{k:02d}",
                "conversation": conv,
                "question": question,
                "date": date,
                "kind": kind,
                "evidence": evidence,
                "answer": answer,
            }
        )
    return turns, questions


def build_set(folder: Path = SET) -> tuple[int, int]:
    """Parse ``folder/src/*.txt`` and write the two JSONL files; returns (turns, questions)."""
    turns: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    for path in sorted((folder / "src").glob("*.txt")):
        t, q = parse_source(path.read_text(encoding="utf-8"), str(path))
        turns += t
        questions += q
    with (folder / "conversations.jsonl").open("w", encoding="utf-8") as f:
        for r in turns:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with (folder / "questions.jsonl").open("w", encoding="utf-8") as f:
        for r in questions:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return len(turns), len(questions)


# -- evaluation ----------------------------------------------------------------------------------


def score(turn_sets: Sequence[set[str]], sessions: Sequence[str], q: Question) -> dict[str, float]:
    """The metrics of one ranking: ``turn_sets[i]`` the turns hit ``i`` covers, ``sessions[i]``
    its session."""
    from eval.metrics import first_occurrence, recall_all

    ev = set(q.evidence)
    first = next((i for i, ts in enumerate(turn_sets) if ts & ev), None)
    return {
        "hit@1": float(first is not None and first < 1),
        "hit@5": float(first is not None and first < 5),
        "hit@10": float(first is not None and first < 10),
        "mrr": 1.0 / (first + 1) if first is not None else 0.0,
        "recall_all@5": recall_all(first_occurrence(sessions), set(q.sessions), 5),
    }


def evaluate(
    *, cache: Any, folder: Path = SET, semantic: bool = True, systems: Sequence[str] = ()
) -> dict[str, Any]:
    """Every system on every question of the set; ``systems`` (names) narrows the run."""
    from eval import baselines, common
    from eval.common import BandStats, SemanticOnly, embed_all, log, percentiles
    from eval.lines import CW_SYSTEMS
    from eval.lme import Corpus

    ds = load(folder)
    qs = ds.questions
    wanted = set(systems)

    def on(name: str) -> bool:
        return not wanted or name in wanted

    with tempfile.TemporaryDirectory(prefix="cw-eval-conv-") as tmp:
        src = Path(tmp) / "conversations.cw.jsonl"
        src.write_text("".join(line + "\n" for line in cw_jsonl_lines(ds)), encoding="utf-8")
        archive = common.open_archive(Path(tmp) / "home")
        try:
            summary = archive.import_paths([src], fmt="cw-jsonl")
            log(f"conversations: {len(ds.sessions)} sessions, {summary.imported} documents")
            engine = archive.engine
            embedding = embed_all(engine, cache) if semantic else None
            status = archive.index_status().to_json()
            corpus = Corpus(engine)
            units = [baselines.Unit(d, corpus.text[d], corpus.doc_session[d]) for d in corpus.docs]
            base: dict[str, Any] = {}
            if on("fts5") or on("rrf-fts5-dense"):
                base["fts5"] = baselines.Fts5(units)
            if on("bm25s"):
                base["bm25s"] = baselines.Bm25s(units)
            if on("bm25s-stem"):
                base["bm25s-stem"] = baselines.Bm25s(units, stem=True)
            sem_only = None
            if semantic:
                if on("dense") or on("rrf-fts5-dense"):
                    embed, embed_query = baselines.embedder_functions(engine.home, cache)
                    base["dense"] = baselines.Dense(units, embed, embed_query)
                if on("rrf-fts5-dense"):
                    base["rrf-fts5-dense"] = baselines.RrfHybrid(base["fts5"], base["dense"], TOP)
                if on("cw-semantic"):
                    sem_only = SemanticOnly(engine)
            base = {k: v for k, v in base.items() if on(k)}
            cw_runs = [(n, x) for n, x in CW_SYSTEMS if on(n) and (semantic or "lexical" in n)]
            per_q: list[dict[str, Any]] = []
            timings: dict[str, list[float]] = defaultdict(list)
            statuses: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
            bands = BandStats()
            calibration: list[tuple[float, int]] = []
            for q in qs:
                haystack = ds.conversations[q.conversation]
                ev = set(q.evidence)
                runs: dict[str, list[str]] = {}
                rescue: dict[str, dict[str, Any]] = {}
                for name, extra in cw_runs:
                    body = {"query": q.question, "sessions": haystack, "limit": TOP, **extra}
                    t = time.perf_counter()
                    resp = archive.search(body)
                    timings[name].append((time.perf_counter() - t) * 1000)
                    statuses[name][resp.retrieval_status] += 1
                    rescue[name] = common.trigger_of(resp)
                    hits = resp.hits()
                    runs[name] = [h.document_id for h in hits]
                    for h in hits[:10]:
                        relevant = bool(corpus.doc_turns[h.document_id] & ev)
                        bands.add(name, h.band, relevant, h.match_type)
                if sem_only is not None:
                    t = time.perf_counter()
                    scored = sem_only.search_scored(q.question, TOP, corpus.haystack_wids(haystack))
                    timings["cw-semantic"].append((time.perf_counter() - t) * 1000)
                    runs["cw-semantic"] = [corpus.wid_doc[w] for w, _ in scored]
                    for w, cos in scored[:10]:
                        relevant = bool(corpus.doc_turns[corpus.wid_doc[w]] & ev)
                        calibration.append((cos, int(relevant)))
                for name, system in base.items():
                    t = time.perf_counter()
                    runs[name] = system.search(q.question, TOP, haystack)
                    timings[name].append((time.perf_counter() - t) * 1000)
                per_q.append(
                    {
                        "qid": q.qid,
                        "kind": q.kind,
                        "question": q.question,
                        "answer": q.answer,
                        "evidence": sorted(ev),
                        "rescue": rescue,
                        "metrics": {
                            name: score(
                                [corpus.doc_turns[d] for d in docs],
                                [corpus.doc_session[d] for d in docs],
                                q,
                            )
                            for name, docs in runs.items()
                        },
                        "top": {
                            name: [sorted(corpus.doc_turns[d]) for d in docs[:5]]
                            for name, docs in runs.items()
                        },
                    }
                )
        finally:
            archive.close()
    names = [n for n, _ in cw_runs] + (["cw-semantic"] if sem_only else []) + list(base)

    def mean(rows: list[dict[str, Any]], system: str) -> dict[str, float]:
        vals = [r["metrics"][system] for r in rows if system in r["metrics"]]
        return {m: round(statistics.fmean(v[m] for v in vals), 3) for m in METRICS} | {
            "n": len(vals)
        }

    kinds = [k for k in KINDS if any(r["kind"] == k for r in per_q)]
    return {
        "set": "conversations",
        "queries": len(qs),
        "systems": names,
        "primary": ["hit@1", "hit@5", "recall_all@5"],
        "overall": {s: mean(per_q, s) for s in names},
        "by_kind": {
            k: {s: mean([r for r in per_q if r["kind"] == k], s) for s in names} for k in kinds
        },
        "latency": {s: percentiles(v) for s, v in timings.items()},
        "retrieval_status": {s: dict(v) for s, v in statuses.items()},
        "rescue": common.rescue_rates(per_q, [n for n, _ in cw_runs]),
        "index": {
            "generation": status.get("generation"),
            "complete": status.get("complete"),
            "documents": status.get("documents"),
            "windows": status.get("windows"),
        },
        "embedding": embedding,
        "bands": bands.to_json(),
        "semantic_calibration": calibration,
        "per_query": per_q,
    }


if __name__ == "__main__":
    if sys.argv[1:] == ["build"]:
        turns, questions = build_set()
        print(f"conversations: {turns} turns, {questions} questions written to {SET}")
    else:
        raise SystemExit("usage: python -m eval.conversations build")

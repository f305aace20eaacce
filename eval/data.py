"""LongMemEval_S dev subset: loading, conversion to cw-jsonl, import into a cw store.

Each LongMemEval session becomes one cw session (project ``longmemeval``); each turn one
cw-jsonl message with ``id`` = its turn index and role user/assistant. cw then groups a user
message and the answer after it into one turn document, cut into search windows.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The shared data sets: ``../shared/data`` beside the checkout, or ``CW_SHARED_DATA``.
SHARED = Path(
    os.environ.get("CW_SHARED_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data"
)
DEFAULT_DATA = SHARED / "longmemeval-s-dev"
PROJECT = "longmemeval"


@dataclass
class Question:
    qid: str
    question: str
    qtype: str
    evidence: list[str]
    evidence_turns: list[str]
    haystack: list[str]
    abstention: bool


@dataclass
class Dataset:
    sessions: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    questions: list[Question] = field(default_factory=list)

    def session_order(self, questions: list[Question] | None = None) -> list[str]:
        """Sessions in the order the questions first need them (so a partial embedding run
        covers whole haystacks of the first questions)."""
        seen: dict[str, None] = {}
        for q in questions if questions is not None else self.questions:
            for sid in q.haystack:
                if sid in self.sessions:
                    seen.setdefault(sid, None)
        return list(seen)


def available(data: Path = DEFAULT_DATA) -> bool:
    return (data / "sessions.jsonl.gz").is_file() and (data / "queries.jsonl").is_file()


def load(data: Path = DEFAULT_DATA) -> Dataset:
    ds = Dataset()
    with gzip.open(data / "sessions.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            turn = json.loads(line)
            ds.sessions.setdefault(turn["session"], []).append(turn)
    for turns in ds.sessions.values():
        turns.sort(key=lambda t: int(t["turn_index"]))
    with (data / "queries.jsonl").open(encoding="utf-8") as f:
        for line in f:
            q = json.loads(line)
            ds.questions.append(
                Question(
                    qid=q["qid"],
                    question=q["question"],
                    qtype=q["question_type"],
                    evidence=list(q["evidence"]),
                    evidence_turns=list(q.get("evidence_turns") or []),
                    haystack=list(q["haystack"]),
                    abstention=bool(q.get("abstention")),
                )
            )
    return ds


def cw_jsonl_lines(ds: Dataset, order: list[str]) -> Iterator[str]:
    for sid in order:
        for turn in ds.sessions[sid]:
            yield json.dumps(
                {
                    "session": sid,
                    "id": str(turn["turn_index"]),
                    "role": turn["role"],
                    "text": turn["text"],
                    "project": PROJECT,
                    "agent": "longmemeval",
                },
                ensure_ascii=False,
            )


def write_cw_jsonl(ds: Dataset, order: list[str], path: Path) -> int:
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for line in cw_jsonl_lines(ds, order):
            f.write(line + "\n")
            n += 1
    return n

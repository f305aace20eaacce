"""Per-question comparison of two systems' rankings (an analysis helper, not part of ``make eval``).

``python -m eval.lexical_diff diff RESULT_A SYSTEM_A [RESULT_B SYSTEM_B]`` reads result files
written by ``python -m eval`` (``eval/results/<set>[-tag].json``; B defaults to A's file) and
lists the questions where one system finds an evidence turn at rank 1 (or in the top 5) and the
other does not, with both ranks (99: not in the top 50).

``python -m eval.lexical_diff explain QID...`` builds the conversational set's archive (as
``eval.conversations`` does) and shows, per question, what cw's lexical tier sees: its query
terms, the RM3 expansion terms, the bm25s-stem query tokens, the evidence turns and cw's first
hit, and the word-form signal: query words whose Snowball stem occurs in an evidence turn while
the word itself does not (only a stemmer finds those). See docs/evaluation.md, "Why bm25s-stem
beats cw lexical on conversation".
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any


def rank(metrics: dict[str, float]) -> int:
    """1-based rank of the first evidence hit from its reciprocal rank; 99 when none."""
    return round(1 / metrics["mrr"]) if metrics["mrr"] else 99


def ranks(path: Path, system: str) -> dict[str, tuple[int, dict[str, Any]]]:
    """qid -> (rank, the question's per-query record) of ``system`` in a result file."""
    report = json.loads(path.read_text(encoding="utf-8"))
    return {
        q["qid"]: (rank(q["metrics"][system]), q)
        for q in report["per_query"]
        if system in q["metrics"]
    }


def diff(
    a: dict[str, tuple[int, Any]], b: dict[str, tuple[int, Any]]
) -> list[tuple[str, int, int]]:
    """Questions whose rank-1 or top-5 outcome differs between ``a`` and ``b``."""
    out = []
    for qid, (ra, _) in a.items():
        if qid not in b:
            continue
        rb = b[qid][0]
        if (ra == 1) != (rb == 1) or (ra <= 5) != (rb <= 5):
            out.append((qid, ra, rb))
    return out


def _diff_main(args: list[str]) -> None:
    path_a, sys_a = Path(args[0]), args[1]
    path_b, sys_b = (Path(args[2]), args[3]) if len(args) >= 4 else (path_a, args[2])
    a, b = ranks(path_a, sys_a), ranks(path_b, sys_b)
    rows = diff(a, b)
    wins = {
        "rank 1": (
            sum(1 for _, x, y in rows if x == 1 and y != 1),
            sum(1 for _, x, y in rows if y == 1 and x != 1),
        ),
        "top 5": (
            sum(1 for _, x, y in rows if x <= 5 < y),
            sum(1 for _, x, y in rows if y <= 5 < x),
        ),
    }
    for qid, x, y in rows:
        q = a[qid][1]
        print(f"{qid}\t{q['kind']}\t{x}\t{y}\t{q.get('question', q.get('query'))}")
    for what, (wa, wb) in wins.items():
        print(f"{what}: only {sys_a} {wa}, only {sys_b} {wb}")


def _explain_main(qids: list[str]) -> None:
    import Stemmer

    from cwcore.api import Archive
    from cwcore.retrieve.lexical import query_terms
    from cwcore.text.tokenize import tokens
    from eval import common, conversations
    from eval.lme import Corpus

    common.fix_clock()
    stem = Stemmer.Stemmer("english").stemWord
    ds = conversations.load()
    turns = {f"{t.session}:{t.turn}": t.text for s in ds.sessions.values() for t in s}
    wanted = [q for q in ds.questions if not qids or q.qid in qids]
    with tempfile.TemporaryDirectory(prefix="cw-lexdiff-") as tmp:
        src = Path(tmp) / "c.jsonl"
        src.write_text("".join(x + "\n" for x in conversations.cw_jsonl_lines(ds)), "utf-8")
        archive = Archive.open(Path(tmp) / "home", embedded=True)
        try:
            archive.import_paths([src], fmt="cw-jsonl")
            corpus = Corpus(archive.engine)
            for q in wanted:
                body = {
                    "query": q.question,
                    "sessions": ds.conversations[q.conversation],
                    "limit": 5,
                    "semanticPolicy": "never",
                }
                resp = archive.search(body)
                terms = query_terms(q.question)
                ev_tokens = {t for e in q.evidence for t in tokens(turns[e])}
                ev_stems = {stem(t) for t in ev_tokens}
                forms = [t for t in terms if t not in ev_tokens and stem(t) in ev_stems]
                missing = [t for t in terms if t not in ev_tokens and stem(t) not in ev_stems]
                print(f"== {q.qid} [{q.kind}] {q.question}")
                print(f"   cw terms {terms}  expanded {resp.stages.get('expanded')}")
                print(f"   forms only a stemmer joins: {forms}; absent from evidence: {missing}")
                for e in q.evidence:
                    print(f"   evidence {e}: {turns[e][:160]}")
                for i, h in enumerate(resp.hits()[:3], 1):
                    mark = "*" if corpus.doc_turns[h.document_id] & set(q.evidence) else " "
                    text = corpus.text[h.document_id].replace("\n", " ")[:160]
                    print(f"   {mark}{i} {text}")
        finally:
            archive.close()


def main(argv: list[str]) -> None:
    if argv[:1] == ["diff"] and len(argv) >= 4:
        _diff_main(argv[1:])
    elif argv[:1] == ["explain"]:
        _explain_main(argv[1:])
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

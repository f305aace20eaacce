"""BM25 through the indexer: admission -> outbox -> IndexWorker -> postings -> ``bm25.search``.

* Unweighted documents (``note``/``markdown``: no role structure) score exactly as rank-bm25's
  ``BM25Okapi`` with Lucene's idf, window by window (a window is one BM25 document; its id is the
  posting ordinal and its record maps it back to the document and its character range).
* BM25F weights: the same term ranks user text > assistant prose > tool call > tool output;
  question/request/correction/answer spans and decision-candidate documents are boosted. The
  expected scores are computed here from the documented weights, independently of the indexer.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

from cwcore.config import Settings
from cwcore.index import bm25, derived
from cwcore.index.worker import IndexWorker
from cwcore.model import Annotation, DocumentPart, DocumentSpec, MessageKind, Role, SessionSpec
from cwcore.store.admission import Admission
from cwcore.store.limits import PART_SEPARATOR
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store
from cwcore.text.tokenize import tokens

SESSION = SessionSpec("sess-bm25", "proj", "test")


class LuceneOracle(BM25Okapi):
    """rank_bm25's BM25Okapi with Lucene's idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``."""

    def __init__(self, corpus: list[list[str]]) -> None:
        super().__init__(corpus, k1=bm25.K1, b=bm25.B)

    def _calc_idf(self, nd: dict[str, int]) -> None:
        for word, freq in nd.items():
            self.idf[word] = math.log(1 + (self.corpus_size - freq + 0.5) / (freq + 0.5))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "db") as db:
        yield db


def _note(doc_id: str, text: str, kind: str = "note") -> DocumentSpec:
    part = DocumentPart(f"user:{doc_id}", "user", "text", text)
    return DocumentSpec(doc_id, kind, SESSION.session_id, "proj", "test", (part,))


def _live_windows(store: Store) -> dict[int, dict]:
    """wid -> window record for every published window."""
    max_wid = int(derived.generation(store)["maxWid"])
    records = derived.window_records(store, list(range(1, max_wid + 1)))
    return {wid: r for wid, r in zip(range(1, max_wid + 1), records, strict=True) if r}


def _scores(worker: IndexWorker, query: list[str], k: int) -> dict[int, float]:
    hits = bm25.search(worker.bm25.reader(), query, k=k)
    return {int(o): float(s) for o, s in zip(hits.ordinals, hits.scores, strict=True)}


# -- unweighted documents against the oracle -------------------------------------------------------


def _random_text(rng: random.Random, words: list[str], weights: list[float]) -> str:
    return " ".join(rng.choices(words, weights, k=rng.randint(3, 70)))


def test_unweighted_documents_score_as_rank_bm25_through_the_indexer(store: Store) -> None:
    rng = random.Random(20261120)
    words = [f"w{i}" for i in range(60)]
    weights = [1 / (i + 1) for i in range(60)]  # Zipf-like: a few common, many rare terms
    docs = {f"note-{i:02d}": _random_text(rng, words, weights) for i in range(40)}
    admission = Admission(store)
    admission.admit(
        SESSION,
        (),
        [
            _note(d, t, "markdown" if i % 5 == 0 else "note")
            for i, (d, t) in enumerate(docs.items())
        ],
    )
    # Small windows so long notes are cut into several overlapping windows (16 is the minimum).
    worker = IndexWorker(store, Settings(window_tokens=16, window_overlap=0.25))
    assert worker.depth() == len(docs)
    assert worker.drain() == len(docs)
    assert worker.depth() == 0

    windows = _live_windows(store)
    assert {r["documentId"] for r in windows.values()} == set(docs)
    assert len(windows) > len(docs)  # some notes have several windows
    # The oracle's documents: the tokens of each window's character range of its note's text.
    wids = sorted(windows)
    corpus = [
        tokens(docs[windows[w]["documentId"]][windows[w]["start"] : windows[w]["end"]])
        for w in wids
    ]
    for doc_id, text in docs.items():  # windows cover every token of their note
        covered = [t for w in wids if windows[w]["documentId"] == doc_id for t in corpus[w - 1]]
        assert set(covered) == set(tokens(text))
    oracle = LuceneOracle(corpus)
    queries = [["w0"], ["w1", "w7"], ["w3", "w11", "w42"], ["w59", "w0", "w2"], ["w5", "w5", "w8"]]
    queries += [rng.sample(words, 4) for _ in range(10)]
    for query in queries:
        # cw counts each distinct query term once (bm25.search); rank-bm25 would count twice.
        expected = oracle.get_scores(list(dict.fromkeys(query)))
        got = _scores(worker, tokens(" ".join(query)), k=len(wids))
        for i, wid in enumerate(wids):
            if expected[i] > 0:
                assert got[wid] == pytest.approx(expected[i], rel=1e-9, abs=1e-12), (query, wid)
            else:
                assert wid not in got or got[wid] == pytest.approx(0.0, abs=1e-12)


def test_markdown_structure_does_not_change_unweighted_scores(store: Store) -> None:
    """A note's weight ignores roles: a ``note`` with a tool-role part scores as plain BM25."""
    admission = Admission(store)
    text = "alpha beta gamma alpha"
    plain = _note("n-plain", text)
    odd = DocumentSpec(
        "n-tool",
        "note",
        SESSION.session_id,
        "proj",
        "test",
        (DocumentPart("tool:n-tool", "tool", "tool-result", text),),
    )
    admission.admit(SESSION, (), [plain, odd, _note("n-other", "delta epsilon")])
    worker = IndexWorker(store, Settings())
    worker.drain()
    windows = _live_windows(store)
    by_doc = {r["documentId"]: w for w, r in windows.items()}
    got = _scores(worker, ["alpha"], k=10)
    assert got[by_doc["n-plain"]] == pytest.approx(got[by_doc["n-tool"]], rel=1e-12)
    oracle = LuceneOracle([tokens(text), tokens(text), tokens("delta epsilon")])
    assert got[by_doc["n-plain"]] == pytest.approx(oracle.get_scores(["alpha"])[0], rel=1e-9)


# -- BM25F field weights ---------------------------------------------------------------------------

#: The documented weights (cwcore/index/fields.py docstring and docs/indexing.md).
WEIGHTS = {"user": 1.5, "assistant": 1.0, "call": 0.7, "tool": 0.5}
SPAN, DECISION = 2.0, 1.25
FILLER = ["orbit", "ledger", "harbor", "quartz"]  # every part holds four tokens
TARGET = "zebra"


def _turn(
    doc_id: str, target_in: str | None, relation: str | None = None
) -> tuple[DocumentSpec, list[tuple[str, float]]]:
    """A turn of four parts (user text, assistant text, tool call, tool output) with the same
    four filler tokens each; ``target_in`` names the part whose first token is the target term.
    ``relation`` annotates that part's whole text. Returns the spec and the expected weighted
    tokens (the oracle's view of the document)."""
    layout: list[tuple[str, Role, MessageKind]] = [
        ("user", "user", "text"),
        ("assistant", "assistant", "text"),
        ("call", "assistant", "tool-call"),
        ("tool", "tool", "tool-result"),
    ]
    parts, texts, weighted = [], [], []
    offset = 0
    annotations = []
    for name, role, kind in layout:
        words = list(FILLER)
        if name == target_in:
            words[0] = TARGET
        text = " ".join(words)
        parts.append(DocumentPart(f"{role}:{doc_id}-{name}", role, kind, text))
        weight = WEIGHTS[name]
        if relation is not None and name == target_in:
            annotations.append(
                Annotation(relation, offset, offset + len(text), f"{role}:{doc_id}-{name}")
            )
            if relation != "decision":
                weight *= SPAN
        weighted += [(w, weight) for w in words]
        texts.append(text)
        offset += len(text) + len(PART_SEPARATOR)
    if relation == "decision":
        weighted = [(w, x * DECISION) for w, x in weighted]
    spec = DocumentSpec(
        doc_id,
        "turn",
        SESSION.session_id,
        "proj",
        "test",
        tuple(parts),
        annotations=tuple(annotations),
        starts_turn=True,
    )
    return spec, weighted


def _bm25f_expected(docs: dict[str, list[tuple[str, float]]], term: str) -> dict[str, float]:
    """BM25 over weighted term frequencies and lengths, from first principles."""
    lengths = {d: sum(w for _, w in toks) for d, toks in docs.items()}
    avgdl = sum(lengths.values()) / len(docs)
    tfs = {d: sum(w for t, w in toks if t == term) for d, toks in docs.items()}
    df = sum(1 for tf in tfs.values() if tf > 0)
    idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
    k1, b = bm25.K1, bm25.B
    return {
        d: idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[d] / avgdl))
        for d, tf in tfs.items()
        if tf > 0
    }


def _index_turns(
    store: Store, specs: list[tuple[DocumentSpec, list[tuple[str, float]]]]
) -> tuple[dict[str, float], dict[str, float]]:
    Admission(store).admit(SESSION, (), [s for s, _ in specs])
    worker = IndexWorker(store, Settings())
    worker.drain()
    by_wid = {w: r["documentId"] for w, r in _live_windows(store).items()}
    got = {by_wid[w]: s for w, s in _scores(worker, [TARGET], k=100).items()}
    return got, _bm25f_expected({s.document_id: toks for s, toks in specs}, TARGET)


def _ranking(scores: dict[str, float]) -> list[str]:
    return sorted(scores, key=lambda d: -scores[d])


def test_role_weights_order_user_over_assistant_over_tool_output(store: Store) -> None:
    specs = [_turn(f"t-{name}", name) for name in WEIGHTS] + [_turn("t-none", None)]
    got, expected = _index_turns(store, specs)
    assert _ranking(got) == ["t-user", "t-assistant", "t-call", "t-tool"]
    assert got == pytest.approx(expected, rel=1e-9)
    assert "t-none" not in got


@pytest.mark.parametrize("relation", ["question", "request", "correction", "answer"])
def test_structural_spans_boost_their_terms(store: Store, relation: str) -> None:
    """The same term in assistant prose: inside a question/request/correction/answer span it
    counts twice (title-like), and even beats the same term in plain user text."""
    specs = [
        _turn("t-span", "assistant", relation),
        _turn("t-plain", "assistant"),
        _turn("t-user", "user"),
        _turn("t-none", None),
    ]
    got, expected = _index_turns(store, specs)
    assert _ranking(got) == ["t-span", "t-user", "t-plain"]
    assert got == pytest.approx(expected, rel=1e-9)


def test_decision_candidate_documents_are_boosted(store: Store) -> None:
    specs = [
        _turn("t-decision", "assistant", "decision"),
        _turn("t-plain", "assistant"),
        _turn("t-none", None),
    ]
    got, expected = _index_turns(store, specs)
    assert _ranking(got) == ["t-decision", "t-plain"]
    assert got == pytest.approx(expected, rel=1e-9)
    # The prior agrees: a decision candidate carries the importance bonus.
    reader = Reader(store)
    importance = {
        d: derived.unpack_float(
            store.get(
                "importance",
                derived.IMPORTANCE.encode(
                    derived.IMPORTANCE_NAMESPACE, int(reader.head(d)["ordinal"])
                ),
            )
            or b""
        )
        for d in ("t-decision", "t-plain")
    }
    assert importance["t-decision"] == pytest.approx(importance["t-plain"] + 0.05)


def test_a_query_weight_scales_its_terms_contribution(store: Store) -> None:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(30)]
    notes = [
        _note(f"n{i}", " ".join(rng.choice(vocab) for _ in range(rng.randint(5, 40))))
        for i in range(60)
    ]
    Admission(store).admit(SESSION, (), notes)
    worker = IndexWorker(store, Settings())
    worker.drain()
    reader = worker.bm25.reader()

    def scores(terms: list[str], weights: dict[str, float] | None = None) -> dict[int, float]:
        hits = bm25.search(reader, terms, k=1000, weights=weights)
        return {int(o): float(s) for o, s in zip(hits.ordinals, hits.scores, strict=True)}

    a, b = scores(["w1"]), scores(["w2"])
    weighted = scores(["w1", "w2"], {"w2": 0.25})
    assert weighted.keys() == a.keys() | b.keys()
    for ordinal, score in weighted.items():
        assert score == pytest.approx(a.get(ordinal, 0.0) + 0.25 * b.get(ordinal, 0.0))
    # The top 5 under pruning equal the full ranking's head.
    top = bm25.search(reader, ["w1", "w2"], k=5, weights={"w2": 0.25})
    full = sorted(weighted.items(), key=lambda x: (-x[1], x[0]))[:5]
    assert [int(o) for o in top.ordinals] == [o for o, _ in full]

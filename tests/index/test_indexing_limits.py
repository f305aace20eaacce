"""Every bounded-work limit of index preparation is labeled, and publishes no misleading posting.

Spec 003 "Index preparation": past a limit the handler's outcome is ``partial`` (work truncated)
or ``skipped`` (work omitted), durably, per document and in the generation's counts; what was
cut is not searchable, and nothing published points at text that was not analyzed.

* a window with more than 256 unique terms -> bm25 ``partial``, exactly 256 terms kept
  (non-stopwords first, then by frequency, then longer terms);
* a window with more than 16,000 token occurrences -> bm25 ``partial``, the tail not indexed;
* more than 1,000 exact anchors -> exact ``partial``, 1,000 postings of the most specific kinds;
* more than 4,096 windows -> bm25 ``partial``, the text past the last window not indexed;
* an annotation that cannot be resolved -> structural ``skipped``, no relation posting at all.

The three BM25 limits apply per window here; spec 003 bounds them per document, a scope measured
and rejected on quality (``test_bm25_limit_scope.py``, docs/indexing.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cwcore.config import Settings
from cwcore.index import anchors, bm25, derived, fields, maintenance, windows
from cwcore.index.derived import EXACT, RELATION
from cwcore.index.prepare import MAX_EXACT_POSTINGS, prepare
from cwcore.index.worker import IndexWorker
from cwcore.model import Annotation, DocumentPart, DocumentSpec, SessionSpec
from cwcore.store import codec, keys
from cwcore.store.admission import Admission
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store

SESSION = SessionSpec("sess-limits", "proj", "test")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "db") as db:
        yield db


def _admit(store: Store, *specs: DocumentSpec) -> None:
    result = Admission(store).admit(SESSION, (), list(specs))
    assert not result.rejected, result.rejected


def _note(doc_id: str, text: str) -> DocumentSpec:
    part = DocumentPart(f"user:{doc_id}", "user", "text", text)
    return DocumentSpec(doc_id, "note", SESSION.session_id, "proj", "test", (part,))


def _marker(store: Store, doc_id: str) -> dict[str, Any]:
    mark = derived.marker(store, int(Reader(store).head(doc_id)["ordinal"]))
    assert mark is not None, f"{doc_id} is not indexed"
    return mark


def _wids(store: Store, doc_id: str) -> range:
    mark = _marker(store, doc_id)
    return range(int(mark["firstWid"]), int(mark["firstWid"]) + int(mark["windows"]))


def _found(worker: IndexWorker, term: str) -> set[int]:
    hits = bm25.search(worker.bm25.reader(), [term], k=10_000)
    return {int(o) for o in hits.ordinals}


def _status(store: Store, worker: IndexWorker, doc_id: str) -> dict[str, str]:
    return dict(maintenance.status(store, worker, doc_id).to_json()["document"]["handlers"])


# -- BM25 ---------------------------------------------------------------------------------------


def test_more_than_256_unique_terms_cuts_windows_and_every_term_stays_findable(
    store: Store,
) -> None:
    frequent = [f"kw{i:03d}" for i in range(240)]
    stop = ["the", "and", "with", "that", "this"]
    long_once = [f"longsingleterm{i:02d}" for i in range(16)]
    short_once = [f"s{i:02d}" for i in range(14)]
    words = frequent * 2 + stop * 4 + long_once + short_once  # 530 tokens, 275 distinct
    _admit(store, _note("n-vocab", " ".join(words)), _note("n-small", "kw000 alpha"))
    worker = IndexWorker(store, Settings())
    worker.drain()

    # Fewer than 900 tokens, but more distinct terms than a window may keep: two windows.
    assert len(_wids(store, "n-vocab")) == 2
    assert _status(store, worker, "n-vocab")["bm25"] == "complete"
    handlers = maintenance.status(store, worker).to_json()["handlers"]
    assert handlers["bm25"] == {"complete": 2, "partial": 0, "skipped": 0}
    wids = set(_wids(store, "n-vocab"))
    for term in set(words):
        assert wids & _found(worker, term), f"{term} has no posting"


def test_the_unique_term_cap_still_keeps_the_256_that_matter() -> None:
    # The cap is a safety bound of the analysis itself (windows are cut to stay inside it);
    # past it, non-stopwords are kept first, then by weighted frequency, then longer terms.
    from cwcore.index.windows import Window
    from cwcore.text.tokenize import tokens_with_offsets

    frequent = [f"kw{i:03d}" for i in range(240)]
    stop = ["the", "and", "with", "that", "this"]
    long_once = [f"longsingleterm{i:02d}" for i in range(16)]
    short_once = [f"s{i:02d}" for i in range(14)]
    text = " ".join(frequent * 2 + stop * 4 + long_once + short_once)
    toks = tokens_with_offsets(text)
    window = Window(0, 0, len(toks), 0, len(text), 0, len(text))
    (terms,) = fields.analyze(toks, [window], [], [], kind="note", decision_candidate=False)
    assert terms.partial
    assert set(terms.tfs) == set(frequent) | set(long_once)


def test_more_than_16000_occurrences_in_a_window_is_partial(store: Store) -> None:
    head = [f"occ{i % 200}" for i in range(fields.MAX_OCCURRENCES)]
    tail = [f"tailword{i % 10}" for i in range(500)]
    _admit(store, _note("n-long", " ".join(head + tail)))
    # One window wide enough to hold every token (the default 900 never reaches 16,000).
    worker = IndexWorker(store, Settings(window_tokens=20_000))
    worker.drain()
    assert len(_wids(store, "n-long")) == 1
    assert _status(store, worker, "n-long")["bm25"] == "partial"
    wid = _wids(store, "n-long")[0]
    assert wid in _found(worker, "occ199")
    assert not _found(worker, "tailword0")  # past the analyzed prefix: no posting
    manifest = worker.bm25.manifest()
    assert manifest.live_docs == 1
    assert manifest.avgdl == pytest.approx(fields.MAX_OCCURRENCES)  # dl of the analyzed prefix


def test_more_than_4096_windows_is_partial_and_the_tail_unindexed(store: Store) -> None:
    size, overlap = 16, 0.15
    step = size - int(size * overlap)
    n = size + step * windows.MAX_WINDOWS + 100  # more than 4,096 windows' worth of tokens
    text = " ".join(f"t{i % 8}" for i in range(n)) + " finalmarker"
    _admit(store, _note("n-many", text), _note("n-other", "finalmarker elsewhere"))
    worker = IndexWorker(store, Settings(window_tokens=size, window_overlap=overlap))
    worker.drain()
    wids = _wids(store, "n-many")
    assert len(wids) == windows.MAX_WINDOWS == 4096
    outcomes = _status(store, worker, "n-many")
    assert outcomes["bm25"] == "partial"
    assert outcomes["exact"] == "complete" and outcomes["structural"] == "complete"
    last = derived.window_record(store, wids[-1])
    assert last is not None and last["index"] == 4095 and last["end"] < len(text)
    # The marker only appears past the last window: the only posting is the other note's.
    assert _found(worker, "finalmarker") == set(_wids(store, "n-other"))
    assert set(_found(worker, "t7")) <= set(wids)
    assert len(_found(worker, "t7")) == 4096


# -- exact ----------------------------------------------------------------------------------------


def test_more_than_1000_anchors_keeps_the_most_specific(store: Store) -> None:
    errors = [f"ERR_CODE_{i:04d}" for i in range(500)]
    paths = [f"pkg{i % 40:02d}/mod{i:03d}" for i in range(700)]
    values = [f"v1.2.{i}" for i in range(300)]
    text = "\n".join(errors + paths + values)
    found = anchors.extract(text)
    assert Counter(a.kind for a in found) == {"error": 500, "path": 700, "value": 300}
    _admit(store, _note("n-anchors", text))
    worker = IndexWorker(store, Settings())
    worker.drain()
    assert _status(store, worker, "n-anchors")["exact"] == "partial"
    assert maintenance.status(store, worker).to_json()["handlers"]["exact"]["partial"] == 1

    wids = set(_wids(store, "n-anchors"))
    starts = {a.start: a for a in found}
    kept: list[anchors.Anchor] = []
    for key, value in store.scan("exact", EXACT.prefix()):
        digest, wid, start = EXACT.decode(key)
        assert wid in wids
        kind, s, e, bs, be = derived.unpack_span(value)
        anchor = starts[s]
        # The posting points exactly at its anchor: digest, kind and both coordinates agree.
        assert (s, e, kind) == (anchor.start, anchor.end, anchor.kind) and start == s
        assert digest == derived.anchor_digest(text[s:e])
        assert text.encode()[bs:be].decode() == anchor.value
        kept.append(anchor)
    assert len(kept) == MAX_EXACT_POSTINGS == 1000
    assert Counter(a.kind for a in kept) == {"error": 500, "path": 500}
    dropped = set(found) - set(kept)
    assert max(a.rank for a in kept) <= min(a.rank for a in dropped)


# -- structural -----------------------------------------------------------------------------------


def _question_turn(doc_id: str) -> DocumentSpec:
    user = "why does the socket time out?"
    answer = "because the retry loop never backs off."
    return DocumentSpec(
        doc_id,
        "turn",
        SESSION.session_id,
        "proj",
        "test",
        (
            DocumentPart(f"user:{doc_id}-u", "user", "text", user),
            DocumentPart(f"assistant:{doc_id}-a", "assistant", "text", answer),
        ),
        annotations=(
            Annotation("question", 0, len(user), f"user:{doc_id}-u"),
            Annotation(
                "answer", len(user) + 2, len(user) + 2 + len(answer), f"assistant:{doc_id}-a"
            ),
        ),
        starts_turn=True,
    )


def test_unresolvable_annotation_skips_structural_in_prepare(store: Store) -> None:
    _admit(store, _question_turn("t-q"))
    reader = Reader(store)
    manifest = reader.manifest("t-q")
    good = prepare(reader, manifest, window_tokens=900, window_overlap=0.15)
    assert good.outcomes["structural"] == "complete"
    assert {r.relation for r in good.relations} == {"question", "answer"}

    for bad_span in ([10_000, 10_010], [5, 5], [-1, 4], [20, 10]):
        tampered = {
            **manifest,
            "annotations": [*manifest["annotations"], ["correction", *bad_span, "user:t-q-u"]],
        }
        bad = prepare(reader, tampered, window_tokens=900, window_overlap=0.15)
        assert bad.outcomes["structural"] == "skipped", bad_span
        assert bad.relations == [], "a skipped handler publishes no relation posting"
        # Nor do the document's spans boost BM25 any more: the weights are the plain ones.
        plain = prepare(
            reader, {**manifest, "annotations": []}, window_tokens=900, window_overlap=0.15
        )
        assert [t.tfs for t in bad.terms] == [t.tfs for t in plain.terms]
        assert bad.terms != good.terms
        assert bad.outcomes["bm25"] == "complete" and bad.outcomes["exact"] == "complete"


def test_unresolvable_annotation_through_the_worker_publishes_no_relation(store: Store) -> None:
    _admit(store, _question_turn("t-good"), _question_turn("t-bad"))
    # Tamper with the stored manifest before indexing (admission validates offsets, so a bad
    # span can only come from a corrupted or hand-made record).
    reader = Reader(store)
    manifest = reader.manifest("t-bad")
    manifest["annotations"].append(["question", 0, 10**6, "user:t-bad-u"])
    batch = store.batch()
    batch.put(
        "documents",
        keys.DOC_VERSION.encode("t-bad", int(manifest["version"])),
        codec.encode_record(manifest),
    )
    store.commit(batch)

    worker = IndexWorker(store, Settings())
    worker.drain()
    assert _status(store, worker, "t-bad")["structural"] == "skipped"
    assert _status(store, worker, "t-good")["structural"] == "complete"
    assert maintenance.status(store, worker).to_json()["handlers"]["structural"] == {
        "complete": 1,
        "partial": 0,
        "skipped": 1,
    }
    by_wid: dict[int, list[str]] = {}
    for key, _ in store.scan("relations", RELATION.prefix()):
        relation, wid, _start = RELATION.decode(key)
        by_wid.setdefault(int(wid), []).append(str(relation))
    assert not set(by_wid) & set(_wids(store, "t-bad"))
    assert sorted(r for w in _wids(store, "t-good") for r in by_wid[w]) == ["answer", "question"]
    assert _marker(store, "t-bad")["relationKeys"] == []


def test_limits_are_the_specified_numbers() -> None:
    """The numbers of spec 003, as the handlers use them."""
    assert (fields.MAX_OCCURRENCES, fields.MAX_UNIQUE_TERMS) == (16_000, 256)
    assert fields.MAX_TERM_WINDOW_PAIRS == 1_024
    assert fields.LIMIT_SCOPE == "window"  # per window, not per document: docs/indexing.md
    assert windows.MAX_WINDOWS == 4_096
    from cwcore.index import prepare as prep

    assert (prep.MAX_ANCHORS_RANKED, prep.MAX_EXACT_POSTINGS) == (8_000, 1_000)
    assert (prep.MAX_STAGED_MUTATIONS, prep.MAX_STAGED_BYTES) == (4_500, 8 * 1024 * 1024)
    assert prep.SEGMENT_BYTES == 256 * 1024


def test_window_defaults_are_900_tokens_with_15_percent_overlap() -> None:
    settings = Settings()
    assert (settings.window_tokens, settings.window_overlap) == (900, 0.15)


def test_importance_prior_signals_and_cap() -> None:
    from cwcore.index.prepare import importance_v1

    one = {"parts": [{}], "pinned": False}
    assert importance_v1(one, False, 0) == pytest.approx(1.01)  # one source message
    assert importance_v1(one, True, 0) == pytest.approx(1.06)  # a decision candidate
    assert importance_v1({**one, "pinned": True}, False, 0) == pytest.approx(1.05)
    assert importance_v1(one, False, 2) == pytest.approx(1.03)  # supersession-chain depth
    many = {"parts": [{}] * 1000, "pinned": True}
    assert importance_v1(many, True, 10) == pytest.approx(1.15)  # every signal at its ceiling


# -- foreground publication and the fast analysis paths -----------------------------------------


def test_foreground_publishes_a_small_document_and_leaves_a_large_one_to_the_worker(
    store: Store,
) -> None:
    """Foreground publication is for documents up to 64 KiB and a few pending entries."""
    from cwcore.index import worker as worker_mod

    worker = IndexWorker(store, Settings())
    _admit(store, _note("small", "a small note about zebras"))
    assert worker.foreground() == 1
    assert _found(worker, "zebras")
    big = "walrus " * (worker_mod.FOREGROUND_MAX_BYTES // 7 + 1)
    _admit(store, _note("big", big))
    assert worker.foreground() == 0  # over 64 KiB: it stays at the outbox head
    assert worker.depth() == 1 and not _found(worker, "walrus")
    assert worker.run_once() == 1 and _found(worker, "walrus")
    for i in range(worker_mod.FOREGROUND_MAX_ENTRIES + 1):
        _admit(store, _note(f"n{i}", f"note {i} about otters"))
    assert worker.foreground() == 0  # more pending than the bound: the worker's turn
    assert worker.depth() == worker_mod.FOREGROUND_MAX_ENTRIES + 1


def _reference_terms(
    tokens: list[tuple[str, int, int]],
    wins: list[windows.Window],
    parts: list[fields.PartSpan],
    spans: list[tuple[str, int, int]],
    kind: str,
    decision: bool,
) -> list[tuple[dict[str, float], float, bool]]:
    """BM25F window terms summed token by token, the definition ``fields.analyze`` keeps."""
    import bisect

    structured = kind in fields.STRUCTURED_KINDS and bool(parts)
    starts = [p.start for p in parts]
    boosts = sorted((s, e) for r, s, e in spans if r in fields.BOOSTED_RELATIONS)
    weights = []
    next_span, covered_to = 0, -1  # boosted spans swept in step with the token starts
    for _, start, _ in tokens:
        weight = 1.0
        if structured:
            at = bisect.bisect_right(starts, start) - 1
            weight = fields.part_weight(parts[at].role, parts[at].kind) if at >= 0 else 1.0
            while next_span < len(boosts) and boosts[next_span][0] <= start:
                covered_to = max(covered_to, boosts[next_span][1])
                next_span += 1
            if start < covered_to:
                weight *= fields.SPAN_BOOST
            weight *= fields.DECISION_BOOST if decision else 1.0
        weights.append(weight)
    out = []
    for w in wins:
        tfs: dict[str, float] = {}
        length = 0.0
        last = min(w.last_token, w.first_token + fields.MAX_OCCURRENCES)
        for i in range(w.first_token, last):
            if weights[i] > 0:
                tfs[tokens[i][0]] = tfs.get(tokens[i][0], 0.0) + weights[i]
                length += weights[i]
        out.append((tfs, length, w.last_token - w.first_token > fields.MAX_OCCURRENCES))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_analyze_counts_per_run_exactly_as_token_by_token(seed: int) -> None:
    """Per-run counting gives the token-by-token sums bit for bit, tool-call weights (0.7,
    not a binary fraction) included, and the unique-term window cut matches its definition."""
    import random

    from cwcore.text.tokenize import tokens_with_offsets

    rnd = random.Random(seed)
    words = ["alpha", "beta", "gamma", "delta", "parseConfig", "x_y", "the", "of"]
    if seed % 2:
        words.append("a/b/c.py")  # a file-name token steps back: token starts out of order
    roles = [("user", "text"), ("assistant", "text"), ("assistant", "tool-call")]
    roles += [("tool", "tool-result"), ("assistant", "thinking")]
    text, parts = "", []
    for _ in range(rnd.randint(1, 5)):
        start = len(text)
        n = rnd.randint(0, 400)
        text += " ".join(rnd.choice(words) + str(rnd.randint(0, 300)) for _ in range(n)) + "\n"
        role, kind = rnd.choice(roles)
        parts.append(fields.PartSpan(start, len(text), role, kind))
    spans = []
    for _ in range(rnd.randint(0, 4)):
        a = rnd.randint(0, len(text))
        spans.append((rnd.choice(["question", "answer", "decision"]), a, rnd.randint(a, len(text))))
    toks = tokens_with_offsets(text)
    wins, _ = windows.cut(
        text, toks, rnd.choice([16, 64, 900]), 0.15, max_unique=rnd.choice([8, 256])
    )
    for w in wins:  # no window holds more distinct terms than the bound
        assert w.last_token > w.first_token
    kind = rnd.choice(["turn", "note"])
    decision = rnd.random() < 0.3
    got = fields.analyze(toks, wins, parts, spans, kind=kind, decision_candidate=decision)
    want = _reference_terms(toks, wins, parts, spans, kind, decision)
    for g, (tfs, length, _partial) in zip(got, want, strict=True):
        if len(tfs) <= fields.MAX_UNIQUE_TERMS:
            assert g.tfs == tfs and list(g.tfs) == list(tfs)  # values and first-seen order
        assert g.length == length

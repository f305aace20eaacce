"""Stem terms beside the surface forms (cwcore/text/stems.py): which words get one, how a
window counts them, and which indexes have them (a new or rebuilt one, never half of one)."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.index import derived, fields, maintenance
from cwcore.index.windows import cut
from cwcore.text import stems
from cwcore.text.tokenize import tokens, tokens_with_offsets
from cwtui.cli import app
from tests.helpers import user_turns, write_jsonl
from tests.support import engine_of, store_of


def test_prose_words_get_a_stem_and_nothing_else_does() -> None:
    assert stems.is_prose("coaches") and stems.is_prose("run")
    # Too short, a grammar word, digits, an identifier part with a digit, non-ASCII letters.
    for term in ("go", "the", "because", "1234", "utf8", "café"):
        assert not stems.is_prose(term), term
    assert stems.stem_term("coaches") == stems.stem_term("coaching") == "~coach"
    assert stems.stem_term("coach") == "~coach"
    assert stems.is_stem("~coach") and not stems.is_stem("coach")


@given(st.text(max_size=200))
def test_no_surface_term_is_ever_a_stem_term(text: str) -> None:
    # The tokenizer splits on the prefix, so a stem term can never collide with a word.
    assert not any(stems.is_stem(t) for t in tokens(text))


def test_a_window_counts_a_stem_over_its_forms() -> None:
    got = stems.with_stems({"coaches": 1.5, "coaching": 1.0, "the": 2.0, "x86": 1.0})
    assert got == {"coaches": 1.5, "coaching": 1.0, "the": 2.0, "x86": 1.0, "~coach": 2.5}
    assert stems.query_stems(["coach", "coaches", "the", "plots"]) == ["~coach", "~plot"]


def _analyze(text: str, with_stems: bool) -> list[fields.WindowTerms]:
    toks = tokens_with_offsets(text)
    windows, _ = cut(text, toks, 200, 0.1, max_unique=fields.MAX_UNIQUE_TERMS)
    return fields.analyze(
        toks, windows, [], [], kind="note", decision_candidate=False, stems=with_stems
    )


def test_stems_add_to_a_window_without_changing_its_surface_terms_or_length() -> None:
    text = "The coach said she runs and was running well. " * 3 + " ".join(
        f"word{i} plotting{i}" for i in range(400)
    )
    plain, stemmed = _analyze(text, False), _analyze(text, True)
    assert len(plain) == len(stemmed)
    for a, b in zip(plain, stemmed, strict=True):
        assert a.length == b.length and a.partial == b.partial
        surface = {t: f for t, f in b.tfs.items() if not stems.is_stem(t)}
        assert surface == a.tfs  # the caps chose the same surface terms
        assert all(stems.stem_term(t) in b.tfs for t in a.tfs if stems.is_prose(t))
    first = stemmed[0].tfs
    assert first["~run"] == first["runs"] + first["running"]


def _df(archive: Archive, term: str) -> int:
    reader = engine_of(archive).indexer.bm25.reader()
    return reader.plan(reader.snapshot(), [term])[0].df


def test_a_new_index_has_stems_an_old_one_gets_them_only_by_a_rebuild(
    archive: Archive, tmp_path: Path
) -> None:
    store = store_of(archive)
    archive.import_paths(
        [write_jsonl(tmp_path / "a.jsonl", user_turns(["Priya coaches netball"], "a"))]
    )
    assert derived.stems_indexed(store)
    assert _df(archive, "~coach") == 1
    # An index begun by a cw without stems: its state has no flag and windows already exist.
    state = store.meta_get("index-state")
    assert state is not None and int(state["nextWid"]) > 1
    del state[derived.STEMS_KEY]
    batch = store.batch()
    store.meta_put(batch, "index-state", state)
    store.commit(batch)
    archive.import_paths(
        [write_jsonl(tmp_path / "b.jsonl", user_turns(["Rob coaching chess"], "b"))]
    )
    assert not derived.stems_indexed(store)
    assert _df(archive, "~coach") == 1  # the new window was indexed without stems
    engine = engine_of(archive)
    maintenance.rebuild(store, engine.indexer)
    engine.indexer.run_once()
    assert derived.stems_indexed(store)
    assert _df(archive, "~coach") == 2


def test_the_stem_cache_stays_bounded_and_never_changes_an_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stems, "CACHE_WORDS", 8)
    monkeypatch.setattr(stems, "_known", {})
    words = [
        f"{w}{suffix}" for w in ("walk", "plot", "coach", "jump") for suffix in ("", "s", "ing")
    ]
    for start in range(0, len(words), 5):  # windows overlapping the cache's emptying
        tfs = {w: 1.0 for w in [*words[start : start + 5], "the", "x86"]}
        expected = dict(tfs)
        for w in tfs:
            if stems.is_prose(w):
                expected[stems.stem_term(w)] = expected.get(stems.stem_term(w), 0.0) + 1.0
        assert stems.with_stems(tfs) == expected
        assert len(stems._known) <= 8 + len(tfs)


def test_threads_stemming_at_once_get_the_serial_answers() -> None:
    # A PyStemmer instance is not safe to share: each thread gets its own.
    words = [
        f"{w}{s}" for w in ("walk", "plot", "coach", "jump", "decide") for s in ("s", "ing", "ed")
    ]
    serial = [stems.stem_term(w) for w in words]
    with ThreadPoolExecutor(max_workers=4) as pool:
        runs = list(pool.map(lambda _: [stems.stem_term(w) for w in words * 50], range(8)))
    assert all(run == serial * 50 for run in runs)


def test_the_per_document_limit_mode_indexes_no_stems(monkeypatch: pytest.MonkeyPatch) -> None:
    # Its 1,024-pair bound counts every (term, window) pair; stems would double them past it.
    monkeypatch.setattr(fields, "LIMIT_SCOPE", "document")
    for window in _analyze("The coach said she runs and was running well.", True):
        assert not any(stems.is_stem(t) for t in window.tfs)


def test_cw_index_status_says_when_an_index_predates_word_forms(
    archive: Archive, tmp_path: Path
) -> None:
    archive.import_paths(
        [write_jsonl(tmp_path / "a.jsonl", user_turns(["Priya coaches netball"], "a"))]
    )
    runner = CliRunner()

    def status() -> tuple[str, dict]:
        text = runner.invoke(app, ["index", "status"], terminal_width=200)
        body = runner.invoke(app, ["index", "status", "--json"])
        assert text.exit_code == 0 and body.exit_code == 0, text.output + body.output
        return text.output, json.loads(body.output.strip().splitlines()[-1])

    store = store_of(archive)
    state = store.meta_get("index-state")
    archive.close()
    text, body = status()
    assert body["wordStems"] is True and "word forms" not in text
    with Archive.open(Path(os.environ["CW_HOME"]), embedded=True) as again:
        store = store_of(again)
        assert state is not None
        del state[derived.STEMS_KEY]
        batch = store.batch()
        store.meta_put(batch, "index-state", state)
        store.commit(batch)
    text, body = status()
    assert body["wordStems"] is False
    assert "word forms: not indexed" in text and "cw index rebuild" in text

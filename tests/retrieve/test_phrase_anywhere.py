"""A quoted phrase is confirmed wherever it is in the index (issue 32: only the BM25 top 30 were
checked verbatim), from its rarest term's postings, bounded, and within the scope."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from cwcore.api import Archive
from cwcore.retrieve import exact
from tests.helpers import write_jsonl
from tests.support import engine_of


def _rows(texts: list[tuple[str, str]]) -> list[dict]:
    return [
        {"session": s, "id": f"m{i}", "role": "user", "text": t, "project": "p"}
        for i, (s, t) in enumerate(texts)
    ]


def _corpus(tmp_path: Path, archive: Archive) -> str:
    # 60 short messages dense in the phrase's words, never in its order: they outrank the one
    # long message that holds the phrase verbatim, so that one is far below the BM25 top 30.
    texts = [
        ("s-noise", f"config drift report {i}: report drift config, drift report")
        for i in range(60)
    ]
    filler = " ".join(f"word{j}" for j in range(400))
    texts.append(("s-needle", f"{filler} the config drift report was attached {filler}"))
    archive.import_paths([write_jsonl(tmp_path / "a.jsonl", _rows(texts))], fmt="cw-jsonl")
    return "config drift report was"


def test_a_phrase_below_the_bm25_top_30_is_found(archive: Archive, tmp_path: Path) -> None:
    phrase = _corpus(tmp_path, archive)
    plain = archive.search({"query": phrase, "semanticPolicy": "never", "limit": 100})
    ranks = [h.source.session_id for h in plain.results]
    assert "s-needle" not in ranks[:30]  # the premise: BM25 alone ranks it low
    quoted = archive.search({"query": f'"{phrase}"', "semanticPolicy": "never", "limit": 5})
    top = quoted.results[0]
    assert top.source.session_id == "s-needle"
    assert top.score_metadata["tier"] == 0 and phrase in top.snippet
    assert all(h.score_metadata["tier"] != 0 for h in quoted.results[1:])


def test_phrase_windows_respects_the_scope_and_case(archive: Archive, tmp_path: Path) -> None:
    phrase = _corpus(tmp_path, archive)
    engine = engine_of(archive)
    ctx = engine.search_context()
    from cwcore.contract.search import SearchRequest
    from cwcore.retrieve.candidates import Visible
    from cwcore.retrieve.scope import Scope

    visible = Visible(engine.store, engine.reader, Scope(None, None, SearchRequest()), 10_000)
    found = exact.phrase_windows(ctx.postings, visible, phrase, None)
    assert len(found) == 1
    assert exact.phrase_windows(ctx.postings, visible, phrase.upper(), None) == []
    assert exact.phrase_windows(ctx.postings, visible, "config nosuchterm", None) == []
    outside = np.array([w for w in range(1, 61)], dtype=np.uint32)
    assert exact.phrase_windows(ctx.postings, visible, phrase, outside) == []
    quoted = archive.search(
        {"query": f'"{phrase}"', "semanticPolicy": "never", "sessions": ["s-noise"]}
    )
    assert all(h.score_metadata["tier"] != 0 for h in quoted.results)

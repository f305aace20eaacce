"""Lexical evidence for paragraphs the windows do not cover: coverage per occurrence, merged
disjoint units (nothing indexed twice across window boundaries), search, supersession, limits.

Windows keep every term of the text they hold (they are cut at 256 distinct terms), so what is
uncovered is the tail past the per-document window cap. The cap is lowered to two windows here,
so a few kilobytes of text have a tail."""

from __future__ import annotations

import bisect
import itertools
from pathlib import Path

import pytest

from cwcore.api import Archive
from cwcore.contract.gather import GatherResponse
from cwcore.contract.search import SearchHit
from cwcore.index import windows as index_windows
from cwcore.index.windows import cut
from cwcore.markdown import evidence
from cwcore.markdown import fingerprint as fp
from cwcore.markdown.limits import HIT_CHARS, RESULT_CHARS
from cwcore.markdown.parse import analyze
from cwcore.text.tokenize import tokens_with_offsets
from tests.markdown.conftest import write
from tests.support import store_of

SIZE, OVERLAP = 900, 0.15


@pytest.fixture(autouse=True)
def two_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_windows, "MAX_WINDOWS", 2)


def varied(paragraphs: int = 40, words: int = 50, offset: int = 0) -> str:
    """Paragraphs of distinct words: a window holds 256 of them, two windows far fewer than all."""
    out = ["# Inventory\n\n"]
    n = offset
    for p in range(paragraphs):
        if p % 10 == 0:
            out.append(f"## Part {p // 10}\n\n")
        out.append(" ".join(f"item{n + i:05d}" for i in range(words)) + "\n\n")
        n += words
    return "".join(out)


def check_units(text: str) -> evidence.Coverage:
    structure = analyze(text)
    cov = evidence.uncovered_units(
        text, structure.blocks, window_tokens=SIZE, window_overlap=OVERLAP
    )
    toks = tokens_with_offsets(text)
    mask, _, _ = evidence.covered_mask(toks, text, SIZE, OVERLAP)
    bounds = [*structure.blocks, len(text)]
    units = cov.units
    # disjoint, ordered, aligned to blocks
    for unit in units:
        assert unit.start in bounds and unit.end in bounds and unit.start < unit.end
        assert text[: unit.start].encode() == text.encode()[: unit.byte_start]
        assert len(text[unit.start : unit.end].encode()) == unit.byte_end - unit.byte_start
    for a, b in itertools.pairwise(units):
        assert a.end <= b.start
        if a.end == b.start:  # contiguous units exist only where the size cap split a run
            assert (b.end - a.start) > RESULT_CHARS
    # each uncovered occurrence is in exactly one unit, each covered one in none
    starts = [u.start for u in units]
    counted: dict[int, dict[str, int]] = {}
    for i, (term, start, _) in enumerate(toks):
        holders = [u for u in units if u.start <= start < u.end]
        assert len(holders) <= 1
        if mask[i]:
            continue
        assert holders, f"uncovered {term!r} at {start} is in no unit"
        at = bisect.bisect_right(starts, start) - 1
        counted.setdefault(at, {})
        counted[at][term] = counted[at].get(term, 0) + 1
    assert {i: u.terms for i, u in enumerate(units)} == counted
    assert sum(u.length for u in units) == cov.uncovered == len(toks) - sum(mask)
    return cov


def test_varied_text_has_uncovered_occurrences_and_exact_units() -> None:
    text = varied()
    cov = check_units(text)
    assert cov.windows == 2 and cov.uncovered > 1000 and cov.units
    assert cov.truncated


def test_a_paragraph_across_a_window_boundary_is_one_unit() -> None:
    text = varied()
    toks = tokens_with_offsets(text)
    wins, _ = cut(text, toks, SIZE, OVERLAP, max_unique=256)
    boundary = wins[-1].end  # the last window ends inside a paragraph
    structure = analyze(text)
    assert boundary not in structure.blocks
    cov = check_units(text)
    block = bisect.bisect_right(structure.blocks, boundary) - 1
    holders = [u for u in cov.units if u.start <= structure.blocks[block] < u.end]
    assert len(holders) == 1  # one copy of the paragraph, though a window holds part of it


def test_contiguous_uncovered_paragraphs_merge_into_one_range() -> None:
    text = varied()
    cov = check_units(text)
    structure = analyze(text)
    spans = [
        sum(1 for b in structure.blocks if u.start <= b < u.end) for u in cov.units
    ]  # blocks per unit
    assert max(spans) > 1


def test_the_tail_past_the_last_window_is_evidence() -> None:
    text = varied(paragraphs=10, words=5) * 40  # repeated: windows keep terms, but only 2 windows
    cov = check_units(text)
    assert cov.truncated
    toks = tokens_with_offsets(text)
    last_window_end = cut(text, toks, SIZE, OVERLAP, max_unique=256)[0][-1].end
    # every occurrence past the last window is uncovered (check_units placed each in a unit)
    assert cov.units[-1].end == len(text)
    tail = [u for u in cov.units if u.end > last_window_end]
    assert tail and tail[0].start <= last_window_end


def test_covered_text_has_no_units() -> None:
    text = "# Short\n\nA small page about keyspace layouts.\n"
    cov = check_units(text)
    assert cov.units == [] and cov.uncovered == 0


def uncovered_term(text: str) -> str:
    """A term none of whose occurrences any window indexes."""
    toks = tokens_with_offsets(text)
    mask, _, _ = evidence.covered_mask(toks, text, SIZE, OVERLAP)
    covered = {t for i, (t, _, _) in enumerate(toks) if mask[i]}
    return next(
        t
        for i, (t, _, _) in enumerate(toks)
        if not mask[i] and t not in covered and t.startswith("item")
    )


def test_evidence_search_finds_what_the_windows_dropped(archive: Archive, tmp_path: Path) -> None:
    root = tmp_path / "inventory"
    text = varied()
    write(root / "items.md", text)
    archive.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "items.md")
    term = uncovered_term(text)
    # the window index cannot find the term (search finds it only through the evidence)...
    found = archive.search({"query": term}).hits()
    assert all(h.score_metadata["mode"] == "markdown-evidence" for h in found)
    # ...the evidence layer can, with exact Markdown fields
    body = archive.call("markdown.search", {"query": term})
    [hit] = body["results"]
    assert hit["documentId"] == doc and hit["kind"] == "markdown" and hit["matchType"] == "lexical"
    assert term in hit["snippet"] and hit["matchedTerms"] == [term]
    md = hit["markdown"]
    assert text[md["start"] : md["end"]] == hit["snippet"]
    assert hit["evidenceId"] == f"{doc}#md:{md['start']}:{md['end']}"
    section = analyze(text).section_at(md["start"])
    assert section is not None and hit["headingPath"] == list(section.path)
    assert hit["headingPath"][0] == "Inventory"
    read = archive.call("markdown.read-entry", {"entry": hit["evidenceId"]})
    assert read["text"] == hit["snippet"] and read["lines"] == md["lines"]
    assert hit["score_metadata"]["mode"] == "markdown-evidence"
    assert all(s["direction"] == "higher-is-better" for s in hit["score_metadata"]["stages"])
    assert 0 < hit["score"] <= 1


def test_evidence_follows_the_live_version(archive: Archive, tmp_path: Path) -> None:
    root = tmp_path / "inventory"
    old = varied()
    write(root / "items.md", old)
    archive.import_paths([root], fmt="markdown")
    term = uncovered_term(old)
    assert archive.call("markdown.search", {"query": term})["results"]
    write(root / "items.md", varied(offset=50_000))
    assert archive.import_paths([root], fmt="markdown").imported == 1
    assert archive.call("markdown.search", {"query": term})["results"] == []
    new_term = uncovered_term(varied(offset=50_000))
    [hit] = archive.call("markdown.search", {"query": new_term})["results"]
    assert hit["version"] == 2
    # the evidence of the old version is gone, the stats follow
    store = store_of(archive)
    units = list(store.scan("scopes", fp.MD_UNIT.prefix()))
    assert evidence.stats(store)["units"] == len(units)


def test_evidence_search_limits(archive: Archive, tmp_path: Path) -> None:
    root = tmp_path / "many"
    for i in range(10):
        write(root / f"f{i}.md", varied(offset=i * 10_000))  # each has its own dropped terms
    archive.import_paths([root], fmt="markdown")
    terms = " ".join(uncovered_term(varied(offset=i * 10_000)) for i in range(10))
    body = archive.call("markdown.search", {"query": terms})
    assert len(body["results"]) == 6  # final 6 by default
    body = archive.call("markdown.search", {"query": terms, "limit": 20})
    assert len(body["results"]) == 10
    total = sum(len(h["snippet"]) for h in body["results"])
    assert total <= RESULT_CHARS and all(len(h["snippet"]) <= HIT_CHARS for h in body["results"])
    assert all(h["markdown"]["truncated"] for h in body["results"])  # long units were cut
    body = archive.call("markdown.search", {"query": terms, "limit": 1})
    [hit] = body["results"]
    assert len(hit["snippet"]) == HIT_CHARS and hit["markdown"]["truncated"]
    for bad in (0, 21, "6"):
        with pytest.raises(Exception, match="limit"):
            archive.call("markdown.search", {"query": terms, "limit": bad})


def test_cw_search_fills_a_short_page_with_evidence_and_recall_reads_it(
    archive: Archive, tmp_path: Path
) -> None:
    root = tmp_path / "inventory"
    text = varied()
    write(root / "items.md", text)
    archive.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "items.md")
    term = uncovered_term(text)
    body = archive.search({"query": term, "semanticPolicy": "never"})
    [hit] = body.evidence  # the evidence hit stays the JSON the evidence layer wrote
    assert body.results == () and SearchHit.is_evidence(hit)
    assert hit["documentId"] == doc and hit["kind"] == "markdown" and term in hit["snippet"]
    assert body.stages["markdownEvidence"] == 1 and body.retrieval_status != "empty"
    for field in ("locator", "margin", "historical", "superseded", "reranked", "source"):
        assert field in hit
    recalled = archive.recall(hit["locator"], neighbors=0)
    assert recalled.source is not None
    assert recalled.status == "resolved" and term in recalled.source.text
    # Gather takes the evidence hit as an anchor too, its JSON kept as the search gave it.
    raw = archive.call("gather", {"query": term, "neighbors": 1})
    [anchor] = GatherResponse.from_json(raw).anchors
    assert anchor.hit is None and anchor.document_id == doc and anchor.locator
    assert GatherResponse.from_json(raw).to_json() == raw
    # A page the windows fill takes no evidence.
    covered = text[: text.index("item00050")].split()[-1]
    full = archive.search({"query": covered, "semanticPolicy": "never", "limit": 1})
    assert full.stages.get("markdownEvidence") is None

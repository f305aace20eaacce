"""``markdown_fields``: evidence id, exact ``md:start:end``, heading path, excerpt limit, lines."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.index.windows import cut
from cwcore.markdown import fingerprint as fp
from cwcore.markdown.hits import markdown_fields
from cwcore.markdown.ingest import build_document
from cwcore.markdown.limits import HIT_CHARS
from cwcore.markdown.parse import analyze
from cwcore.text.tokenize import tokens_with_offsets
from tests.markdown.conftest import CHINESE, windows_of, write
from tests.support import engine_of

WORDS = [
    "alpha", "bravo", "charlie", "delta", "échelle", "naïve", "Straße", "数据库", "检索",
    "压缩", "🎉", "keyspace", "window", "overlap", "offset", "byte", "character", "line",
]  # fmt: skip


def make_doc(seed: int) -> str:
    rng = random.Random(seed)
    newline = rng.choice(["\n", "\r\n"])
    out: list[str] = []
    for _ in range(rng.randint(3, 40)):
        kind = rng.random()
        if kind < 0.2:
            out.append("#" * rng.randint(1, 4) + " " + " ".join(rng.sample(WORDS, 2)) + newline)
        elif kind < 0.25:
            out.append("```" + newline + "# code" + newline + newline + "```" + newline)
        else:
            for _ in range(rng.randint(1, 12)):
                out.append(" ".join(rng.choices(WORDS, k=rng.randint(3, 14))) + newline)
        out.append(newline)
    if rng.random() < 0.5:  # one long section, longer than an excerpt
        out.append("## long" + newline)
        out += [" ".join(rng.choices(WORDS, k=12)) + newline for _ in range(rng.randint(40, 90))]
    return "".join(out)


def manifest_of(text: str, tmp_path: Path) -> dict[str, Any]:
    spec, _ = build_document(
        root=tmp_path, relative="x.md", path=tmp_path / "x.md", text=text, sha256="0", project="p"
    )
    return {"documentId": spec.document_id, "metadata": spec.metadata, "kind": "markdown"}


def records_of(text: str, size: int = 900) -> list[dict[str, Any]]:
    toks = tokens_with_offsets(text)
    windows, _ = cut(text, toks, size, 0.15)
    return [
        {
            "start": w.start,
            "end": w.end,
            "byteStart": w.byte_start,
            "byteEnd": w.byte_end,
            "first": w.first_token,
            "last": w.last_token,
        }
        for w in windows
    ]


def check(text: str, manifest: dict[str, Any], record: dict[str, Any], match: int) -> None:
    """Every invariant of one hit whose first match starts at character ``match``."""
    structure = analyze(text)
    match_byte = len(text[:match].encode("utf-8"))
    got = markdown_fields(manifest, record, match_byte)
    md = got["markdown"]
    s, e = md["start"], md["end"]
    section = structure.section_at(match)
    assert section is not None
    lo, hi = max(record["start"], section.start), min(record["end"], section.end)
    assert lo <= s <= match < e <= hi or (s == e == match == hi)
    assert e - s <= HIT_CHARS
    assert md["truncated"] == (hi - lo > HIT_CHARS)
    if not md["truncated"]:
        assert (s, e) == (lo, hi)
    assert got["evidenceId"] == f"{manifest['documentId']}#md:{s}:{e}"
    assert md["range"] == f"md:{s}:{e}" and md["excerptRange"] == [s, e]
    assert got["headingPath"] == list(structure.section_at(s).path)  # type: ignore[union-attr]
    assert md["lines"] == [structure.line_at(s), structure.last_line(s, e)]
    assert md["page"] is None and md["relativePath"] == "x.md"


@pytest.mark.parametrize("seed", range(25))
def test_fields_invariants_on_generated_documents(seed: int, tmp_path: Path) -> None:
    text = make_doc(seed)
    manifest = manifest_of(text, tmp_path)
    toks = tokens_with_offsets(text)
    rng = random.Random(seed)
    for record in records_of(text):
        span = toks[record["first"] : record["last"]]
        for _, start, _ in rng.sample(span, min(8, len(span))):
            check(text, manifest, record, start)


def test_a_long_section_is_cut_at_the_hit_limit_around_the_match(tmp_path: Path) -> None:
    body = "".join(f"line {i} of the long section about keyspace layouts\r\n" for i in range(120))
    text = "# Top\r\n\r\nintro\r\n\r\n## Long\r\n\r\n" + body + "## Next\r\nend\r\n"
    manifest = manifest_of(text, tmp_path)
    match = text.index("line 70 of")
    record = next(r for r in records_of(text) if r["start"] <= match < r["end"] - 100)
    got = markdown_fields(manifest, record, len(text[:match].encode()))
    md = got["markdown"]
    assert md["truncated"] and md["end"] - md["start"] == HIT_CHARS
    assert md["start"] <= match < md["end"]
    assert got["headingPath"] == ["Top", "Long"]
    check(text, manifest, record, match)


def test_a_huge_non_ascii_line_still_gives_a_valid_exact_range(tmp_path: Path) -> None:
    line = "".join(CHINESE) * 12  # one line of about 6,000 characters, 3 bytes each
    text = "# 中文\n\n" + line + "\n"
    manifest = manifest_of(text, tmp_path)
    record = records_of(text, size=20_000)[0]  # one window holding the whole line
    match = text.index("山上的寺庙", 3000)
    got = markdown_fields(manifest, record, len(text[:match].encode()))
    md = got["markdown"]
    assert md["truncated"] and md["end"] - md["start"] == HIT_CHARS
    assert record["start"] <= md["start"] < md["end"] <= record["end"]
    assert md["lines"] == [3, 3] and got["headingPath"] == ["中文"]
    # the match's character position inside the line is interpolated from its byte offset:
    # for uniform 3-byte text it is exact, so the excerpt holds the match
    assert md["start"] <= match < md["end"]


def test_long_files_keep_a_sparse_line_index_and_never_invent_lines(tmp_path: Path) -> None:
    text = "# Log\n" + "".join(f"entry {i}\n" for i in range(10_000))
    manifest = manifest_of(text, tmp_path)
    index = manifest["metadata"]["lineIndex"]
    assert index["stride"] == 3 and len(index["start"]) <= 4_096
    structure = analyze(text)
    for record in records_of(text):
        match = record["start"] + 3
        md = markdown_fields(manifest, record, len(text[:match].encode()))["markdown"]
        if md["lines"] is not None:  # given only when both ends map exactly
            assert md["lines"] == [
                structure.line_at(md["start"]),
                structure.last_line(md["start"], md["end"]),
            ]


def test_without_markdown_metadata_nothing_is_invented() -> None:
    manifest = {"documentId": "m-x", "metadata": {}, "kind": "markdown"}
    record = {"start": 10, "end": 50, "byteStart": 12, "byteEnd": 52}
    got = markdown_fields(manifest, record, 20)
    assert "headingPath" not in got
    assert got["markdown"]["lines"] is None and got["markdown"]["page"] is None
    assert got["markdown"]["sourcePath"] is None
    assert (got["markdown"]["start"], got["markdown"]["end"]) == (10, 50)


def test_fields_of_a_stored_hit_read_back_exactly(archive: Archive, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    text = make_doc(7).replace("\n", "\r\n").replace("\r\r\n", "\r\n")
    raw = text.encode()
    write(root / "x.md", raw)
    archive.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "x.md")
    engine = engine_of(archive)
    head = engine.reader.head(doc)
    manifest = engine.reader.manifest(doc)
    for record in windows_of(engine.store, int(head["ordinal"])):
        got = markdown_fields(manifest, record, int(record["byteStart"]) + 1)
        body = archive.call("markdown.read-entry", {"entry": got["evidenceId"]})
        md = got["markdown"]
        assert body["text"] == text[md["start"] : md["end"]]
        assert raw[body["byteStart"] : body["byteEnd"]] == body["text"].encode()
        assert body["lines"] == md["lines"] and body["headingPath"] == got["headingPath"]
        assert md["sourcePath"] == str(root / "x.md")

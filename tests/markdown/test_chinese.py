"""Chinese Markdown: literal terms and bigrams are searchable beside the unicode tokens, through
the window index and through the evidence of paragraphs the windows could not keep."""

from __future__ import annotations

from pathlib import Path

import pytest

from cwcore.api import Archive
from cwcore.index import windows as index_windows
from cwcore.markdown import evidence
from cwcore.markdown import fingerprint as fp
from cwcore.markdown.hits import markdown_fields
from cwcore.markdown.parse import analyze
from cwcore.text.tokenize import tokens_with_offsets
from tests.markdown.conftest import CHINESE, windows_of, write
from tests.support import engine_of

SHORT = (
    "# 系统设计\r\n\r\n"
    "## 检索\r\n\r\n"
    "搜索引擎使用二元分词来处理中文文本，这样短语也能被找到。\r\n\r\n"
    "## 存储\r\n\r\n"
    "数据库采用键值存储，压缩在后台线程中进行。\r\n"
)


def test_chinese_queries_find_chinese_passages(archive: Archive, tmp_path: Path) -> None:
    root = tmp_path / "设计文档"
    write(root / "设计.md", SHORT)
    assert archive.import_paths([root], fmt="markdown").imported == 1
    doc = fp.document_id(root, "设计.md")
    for query in ("二元分词", "键值存储", "中文文本", "压缩", "后台线程中进行"):
        hits = archive.search({"query": query}).hits()
        assert [h.document_id for h in hits] == [doc], query
    rows, _ = archive.sessions()
    assert {r.project for r in rows} == {"设计文档"}


def test_a_chinese_hit_has_its_heading_path(archive: Archive, tmp_path: Path) -> None:
    root = tmp_path / "docs"
    write(root / "设计.md", SHORT)
    archive.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "设计.md")
    engine = engine_of(archive)
    manifest = engine.reader.manifest(doc)
    [record] = windows_of(engine.store, int(engine.reader.head(doc)["ordinal"]))
    match = SHORT.index("键值存储")
    got = markdown_fields(manifest, record, len(SHORT[:match].encode()))
    assert got["headingPath"] == ["系统设计", "存储"]
    md = got["markdown"]
    assert SHORT[md["start"] : md["end"]].startswith("## 存储")
    assert md["lines"] == [7, 9] and not md["truncated"]
    body = archive.call("markdown.read", {"document": doc, "heading": "检索"})
    assert (
        body["text"]
        == "## 检索\r\n\r\n搜索引擎使用二元分词来处理中文文本，这样短语也能被找到。\r\n\r\n"
    )
    assert body["headingPath"] == ["系统设计", "检索"] and body["lines"] == [3, 6]


def long_chinese() -> str:
    out = ["# 笔记\n\n"]
    for i, sentence in enumerate(CHINESE):
        if i % 5 == 0:
            out.append(f"## 第{i // 5 + 1}部分\n\n")
        out.append(sentence + "\n\n")
    return "".join(out) * 2


def test_chinese_windows_keep_every_bigram(archive: Archive, tmp_path: Path) -> None:
    # A character and a bigram per character: Chinese text reaches 256 distinct terms fast, so
    # its windows are short, and every bigram stays findable through them.
    text = long_chinese()
    root = tmp_path / "notes"
    write(root / "笔记.md", text)
    archive.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "笔记.md")
    toks = tokens_with_offsets(text)
    mask, windows, truncated = evidence.covered_mask(toks, text, 900, 0.15)
    assert windows >= 2 and not truncated and all(mask)
    bigrams = sorted({t for t, _, _ in toks if len(t) == 2})
    for bigram in bigrams[:: max(1, len(bigrams) // 8)]:
        hits = archive.search({"query": bigram}).hits()
        assert hits and hits[0].document_id == doc and bigram in hits[0].matched_terms


def test_chinese_bigrams_past_the_window_cap_are_evidence(
    archive: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(index_windows, "MAX_WINDOWS", 2)
    text = long_chinese()
    root = tmp_path / "notes"
    write(root / "笔记.md", text)
    archive.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "笔记.md")
    toks = tokens_with_offsets(text)
    mask, windows, _ = evidence.covered_mask(toks, text, 900, 0.15)
    covered = {t for i, (t, _, _) in enumerate(toks) if mask[i]}
    dropped = sorted(
        {t for i, (t, _, _) in enumerate(toks) if not mask[i] and t not in covered and len(t) == 2}
    )
    assert windows == 2 and dropped, "the text should run past two windows"
    for bigram in dropped[:5]:
        # the window index has no posting for the bigram...
        for h in archive.search({"query": bigram}).hits():
            assert bigram not in h.matched_terms
        # ...the paragraph holding the bigram literal is still lexical evidence, with its
        # heading path and exact range
        [hit, *_] = archive.call("markdown.search", {"query": bigram})["results"]
        assert hit["documentId"] == doc and bigram in hit["snippet"]
        assert bigram in hit["matchedTerms"]
        md = hit["markdown"]
        assert text[md["start"] : md["end"]] == hit["snippet"]
        section = analyze(text).section_at(md["start"])
        assert section is not None and hit["headingPath"] == list(section.path)

"""Markdown structure: headings and their paths, sections and blocks tile the text, lines."""

from __future__ import annotations

import itertools

from cwcore.markdown.parse import analyze

DOC = (
    "---\r\ntitle: x\r\n# not a heading\r\n---\r\n"
    "# Architecture\r\n\r\nIntro paragraph\r\ncontinues here.\r\n\r\n"
    "## Keyspace ##\r\n\r\nKeys are binary.\r\n"
    "```python\r\n# a comment, not a heading\r\n\r\nx = 1\r\n```\r\n"
    "Setext title\r\n------------\r\n\r\n- a list item\r\n---\r\n\r\n"
    "# Retrieval\r\n    # indented code\r\nlast line"
)


def test_headings_paths_and_lines() -> None:
    s = analyze(DOC)
    got = [(h.level, h.title, h.path, h.line) for h in s.headings]
    assert got == [
        (1, "Architecture", ("Architecture",), 5),
        (2, "Keyspace", ("Architecture", "Keyspace"), 10),
        (2, "Setext title", ("Architecture", "Setext title"), 18),
        (1, "Retrieval", ("Retrieval",), 24),
    ]
    for h in s.headings:
        assert s.line_at(h.start) == h.line
        assert DOC[h.start :].split("\r\n", 1)[0].lstrip("# ").startswith(h.title.split()[0])
    # a heading's content runs to the next heading of the same or a higher level
    arch = s.headings[0]
    assert DOC[arch.start : arch.end].endswith("---\r\n\r\n")
    assert arch.end == s.headings[3].start


def test_sections_and_blocks_tile_the_text() -> None:
    s = analyze(DOC)
    assert s.sections[0].path == () and s.sections[0].start == 0  # front matter
    assert [sec.path for sec in s.sections[1:]] == [h.path for h in s.headings]
    bounds = [(sec.start, sec.end) for sec in s.sections]
    assert bounds[0][0] == 0 and bounds[-1][1] == len(DOC)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    assert s.blocks[0] == 0 and s.blocks == sorted(set(s.blocks))
    # the fenced block (blank line inside) is one block
    fence = DOC.index("```python")
    assert fence in s.blocks
    assert DOC.index("x = 1") not in s.blocks
    assert not any(fence < b < DOC.index("```\r\nSetext") for b in s.blocks)


def test_lines_are_split_at_newline_only() -> None:
    text = "a\r\nb\rc\n\nd"
    s = analyze(text)
    assert s.lines == 4
    assert [text[a:b] for a, b in (s.line_span(i, i) for i in range(1, 5))] == [
        "a\r\n",
        "b\rc\n",
        "\n",
        "d",
    ]
    assert s.line_at(len(text)) == 4
    assert analyze("").lines == 0 and analyze("").sections == []
    assert analyze("x\n").lines == 1


def test_no_headings_is_one_section() -> None:
    s = analyze("just text\n\nmore\n")
    assert [(x.path, x.start, x.end) for x in s.sections] == [((), 0, 16)]
    assert s.blocks == [0, 11]

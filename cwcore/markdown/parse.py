"""Markdown structure over a file's exact text: lines, headings, sections and paragraph blocks.

Every offset is a character offset (a Python ``str`` index, i.e. a code point) into the file's
decoded text, which is the stored document text unchanged: CRLF line ends stay two characters, a
byte-order mark stays one. A **line** ends at ``\\n`` (a ``\\r`` before it belongs to the line
ending; a lone ``\\r`` is not a line end). Lines are numbered from 1.

Headings (a pragmatic CommonMark subset, never inside fenced code or YAML front matter):

* ATX: up to three spaces, 1–6 ``#``, then a space or the end of the line; a closing ``#`` run
  preceded by a space is dropped (``## Keyspace ##`` → ``Keyspace``);
* setext: a paragraph (lines that are not list items, quotes or indented code) underlined by a
  line of ``=`` (level 1) or ``-`` (level 2); the heading starts at the paragraph's first line
  and its title is the paragraph's lines joined by a space.

A heading's **path** is the titles of the headings enclosing it and its own
(``["Architecture", "Keyspace"]``). **Sections** tile the text: each starts at a heading (the
text before the first heading is a section with the empty path) and ends where the next heading
starts. A heading's **content** (what ``read-markdown --heading`` returns) runs to the next
heading of the same or a higher level, so it includes its sub-sections.

**Blocks** tile the text too: a block starts at the first line of a paragraph, a heading or a
fence (a fenced code block is one block, blank lines and all) and runs up to the next block, so
blank lines belong to the block before them. Blocks are the paragraphs of the lexical evidence
layer (:mod:`cwcore.markdown.evidence`).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

_ATX = re.compile(r"^ {0,3}(#{1,6})(?=[ \t]|$)(.*)$")
_ATX_CLOSE = re.compile(r"(?:^|[ \t]+)#+[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})(.*)$")
_NOT_PARAGRAPH = re.compile(r"^(?: {0,3}(?:[-+*]|\d{1,9}[.)])(?:[ \t]|$)| {0,3}>|    |\t)")


@dataclass(frozen=True)
class Heading:
    level: int
    title: str
    path: tuple[str, ...]
    line: int  # 1-based line of the heading (a setext heading: its first line)
    start: int  # character offset of that line
    end: int  # end of its content: the next heading of the same or a higher level, or EOF


@dataclass(frozen=True)
class Section:
    """One tile of the text: from a heading (or the start) to the next heading."""

    path: tuple[str, ...]
    start: int
    end: int
    line: int


@dataclass
class Structure:
    text: str
    line_starts: list[int] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    blocks: list[int] = field(default_factory=list)  # block start offsets, ascending

    @property
    def lines(self) -> int:
        return len(self.line_starts)

    def line_at(self, pos: int) -> int:
        """The 1-based line holding character ``pos`` (the last line for ``pos == len(text)``)."""
        return max(1, bisect.bisect_right(self.line_starts, pos))

    def line_span(self, first: int, last: int) -> tuple[int, int]:
        """Character range of lines ``first``..``last`` (1-based, inclusive, line ends kept)."""
        start = self.line_starts[first - 1]
        end = self.line_starts[last] if last < len(self.line_starts) else len(self.text)
        return start, end

    def section_at(self, pos: int) -> Section | None:
        """The section containing ``pos`` (for ``pos == len(text)``, the last section)."""
        if not self.sections:
            return None
        at = bisect.bisect_right([s.start for s in self.sections], pos) - 1
        return self.sections[max(0, at)]

    def last_line(self, start: int, end: int) -> int:
        """The line of the last character of a non-empty range ``[start, end)``."""
        return self.line_at(max(start, end - 1))


def _title(raw: str) -> str:
    title = raw.strip()
    return _ATX_CLOSE.sub("", title).strip()


def line_starts(text: str) -> list[int]:
    if not text:
        return []
    starts = [0]
    starts += [m.end() for m in re.finditer("\n", text) if m.end() < len(text)]
    return starts


def analyze(text: str) -> Structure:
    """Lines, headings, sections and blocks of ``text`` (see the module docstring)."""
    starts = line_starts(text)
    out = Structure(text=text, line_starts=starts)
    if not starts:
        return out
    ends = [*starts[1:], len(text)]
    found: list[tuple[int, str, int]] = []  # level, title, line index
    blocks: set[int] = {0}
    fence: tuple[str, int] | None = None
    para: int | None = None  # first line of the open paragraph (setext candidates)
    boundary_next = True  # the next non-blank line starts a block
    index = 0
    first = text[starts[0] : ends[0]].rstrip("\r\n")
    if first == "---":  # YAML front matter: one block, no headings
        for j in range(1, len(starts)):
            if text[starts[j] : ends[j]].rstrip("\r\n").rstrip() in ("---", "..."):
                index = j + 1
                break
    for i in range(index, len(starts)):
        content = text[starts[i] : ends[i]].rstrip("\n").rstrip("\r")
        if fence is not None:
            close = _FENCE.match(content)
            if (
                close is not None
                and close.group(1)[0] == fence[0]
                and len(close.group(1)) >= fence[1]
                and not close.group(2).strip()
            ):
                fence = None
                boundary_next = True
            continue
        opened = _FENCE.match(content)
        if opened is not None and not (opened.group(1)[0] == "`" and "`" in opened.group(2)):
            fence = (opened.group(1)[0], len(opened.group(1)))
            blocks.add(starts[i])
            para = None
            continue
        if not content.strip():
            para = None
            boundary_next = True
            continue
        atx = _ATX.match(content)
        if atx is not None:
            found.append((len(atx.group(1)), _title(atx.group(2)), i))
            blocks.add(starts[i])
            para = None
            boundary_next = True
            continue
        underline = _SETEXT.match(content)
        if underline is not None and para is not None:
            title = " ".join(text[starts[j] : ends[j]].strip() for j in range(para, i))
            found.append((1 if underline.group(1)[0] == "=" else 2, title, para))
            blocks.add(starts[para])
            para = None
            boundary_next = True
            continue
        if boundary_next:
            blocks.add(starts[i])
            boundary_next = False
        if _NOT_PARAGRAPH.match(content):
            para = None
        elif para is None:
            para = i
    found.sort(key=lambda h: h[2])
    stack: list[tuple[int, str]] = []
    for n, (level, title, line) in enumerate(found):
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        end = len(text)
        for later_level, _, later_line in found[n + 1 :]:
            if later_level <= level:
                end = starts[later_line]
                break
        out.headings.append(
            Heading(level, title, tuple(t for _, t in stack), line + 1, starts[line], end)
        )
    heads = out.headings
    if not heads or heads[0].start > 0:
        first_end = heads[0].start if heads else len(text)
        out.sections.append(Section((), 0, first_end, 1))
    for n, head in enumerate(heads):
        end = heads[n + 1].start if n + 1 < len(heads) else len(text)
        out.sections.append(Section(head.path, head.start, end, head.line))
    out.blocks = sorted(blocks)
    return out


def normalize_heading(text: str) -> str:
    """The form headings are matched in: case-folded, backticks dropped, spaces collapsed."""
    return " ".join(text.replace("`", "").casefold().split())

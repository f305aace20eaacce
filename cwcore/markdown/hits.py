"""The Markdown fields of a search hit, from the manifest alone (no text is read).

``search.py`` calls :func:`markdown_fields` for every hit of kind ``markdown`` and merges the
returned dict into the hit::

    hit.update(markdown_fields(manifest, record, match_start))

``record`` is the hit's window record (``start``/``end`` characters, ``byteStart``/``byteEnd``
bytes) and ``match_start`` the UTF-8 byte offset of the first match in the document text. The
result::

    {"evidenceId": "<documentId>#md:<start>:<end>",
     "headingPath": ["Architecture", "Keyspace"],          # only when the section is known
     "markdown": {"range": "md:<start>:<end>", "start", "end", "excerptRange": [start, end],
                  "truncated", "sourcePath", "relativePath", "root",
                  "lines": [first, last] | null, "page": null}}

``start``/``end`` are character offsets into the document text (= the file's text, CRLF kept).
The excerpt is the window's part of the section holding the match; longer than
:data:`~cwcore.markdown.limits.HIT_CHARS` it is cut to that many characters around the match and
``truncated`` is true. Character/byte conversion uses only positions known exactly from the
manifest (window bounds, section bounds, line starts), so ``start``/``end`` are exact; inside a
very long non-ASCII line the match's own character position is interpolated, which can only move
the excerpt, never make its offsets wrong. ``lines`` is given only when the stored line index
maps both ends exactly; Markdown has no pages, so ``page`` is always null — neither is ever
synthesized.
"""

from __future__ import annotations

import bisect
from typing import Any

from cwcore.index.derived import StoredWindow
from cwcore.markdown.limits import HIT_CHARS
from cwcore.store.records import Manifest


def evidence_id(document_id: str, start: int, end: int) -> str:
    return f"{document_id}#md:{start}:{end}"


def _sections(meta: dict[str, Any]) -> list[dict[str, Any]]:
    sections = meta.get("sections")
    return sections if isinstance(sections, list) else []


def section_at_char(meta: dict[str, Any], pos: int) -> dict[str, Any] | None:
    """The recorded section holding character ``pos`` (None when unknown)."""
    for section in _sections(meta):
        if int(section["start"]) <= pos < int(section["end"]):
            return section
    sections = _sections(meta)
    if sections and pos == int(sections[-1]["end"]):
        return sections[-1]
    return None


def _section_at_byte(meta: dict[str, Any], pos: int) -> dict[str, Any] | None:
    sections = _sections(meta)
    for section in sections:
        if int(section["byteStart"]) <= pos < int(section["byteEnd"]):
            return section
    if sections and pos == int(sections[-1]["byteEnd"]):
        return sections[-1]
    return None


def line_of(meta: dict[str, Any], pos: int) -> int | None:
    """The 1-based line of character ``pos`` when the line index knows it exactly."""
    index = meta.get("lineIndex")
    if not isinstance(index, dict) or not index.get("start"):
        return None
    starts: list[int] = index["start"]
    stride = int(index.get("stride", 1))
    at = bisect.bisect_right(starts, pos) - 1
    if at < 0:
        return None
    if stride == 1:
        return at + 1
    if starts[at] == pos:
        return at * stride + 1
    for section in _sections(meta):  # a section start is a line start with a known line
        if int(section["start"]) == pos:
            return int(section["line"])
    return None


def lines_of(meta: dict[str, Any], start: int, end: int) -> list[int] | None:
    first = line_of(meta, start)
    last = line_of(meta, max(start, end - 1))
    return None if first is None or last is None else [first, last]


def fields(
    manifest: Manifest,
    start: int,
    end: int,
    *,
    truncated: bool,
    lines: list[int] | None,
) -> dict[str, Any]:
    """The hit fields for the character range ``[start, end)`` of a Markdown document."""
    meta = manifest.get("metadata") or {}
    info = meta.get("markdown") or {}
    doc = str(manifest["documentId"])
    out: dict[str, Any] = {"evidenceId": evidence_id(doc, start, end)}
    section = section_at_char(meta, start)
    if section is not None:
        out["headingPath"] = list(section["headingPath"])
    out["markdown"] = {
        "range": f"md:{start}:{end}",
        "start": start,
        "end": end,
        "excerptRange": [start, end],
        "truncated": truncated,
        "sourcePath": info.get("path"),
        "relativePath": info.get("relativePath"),
        "root": info.get("root"),
        "lines": lines,
        "page": None,
    }
    return out


def _known_points(
    meta: dict[str, Any], lo: tuple[int, int], hi: tuple[int, int]
) -> list[tuple[int, int]]:
    """``(byte, char)`` pairs known exactly, within ``[lo, hi]`` (by byte)."""
    points = {lo, hi}
    index = meta.get("lineIndex")
    if isinstance(index, dict):
        for char, byte in zip(index.get("start", []), index.get("byteStart", []), strict=False):
            if lo[0] <= byte <= hi[0]:
                points.add((int(byte), int(char)))
    for section in _sections(meta):
        for byte, char in (
            (section["byteStart"], section["start"]),
            (section["byteEnd"], section["end"]),
        ):
            if lo[0] <= int(byte) <= hi[0]:
                points.add((int(byte), int(char)))
    return sorted(points)


def markdown_fields(
    manifest: Manifest, record: StoredWindow, match_start_byte: int
) -> dict[str, Any]:
    """Evidence id, ``md:start:end`` range, source path, heading path, excerpt range and the
    truncation flag for a hit on window ``record`` whose first match starts at byte
    ``match_start_byte`` of the document text (see the module docstring)."""
    meta = manifest.get("metadata") or {}
    w_lo = (int(record["byteStart"]), int(record["start"]))
    w_hi = (int(record["byteEnd"]), int(record["end"]))
    match = min(max(int(match_start_byte), w_lo[0]), w_hi[0])
    lo, hi = w_lo, w_hi
    section = _section_at_byte(meta, match)
    if section is not None:
        s_lo = (int(section["byteStart"]), int(section["start"]))
        s_hi = (int(section["byteEnd"]), int(section["end"]))
        lo, hi = max(lo, s_lo), min(hi, s_hi)
        if lo[0] > hi[0]:  # a record that does not overlap its own match: keep the window
            lo, hi = w_lo, w_hi
    if hi[1] - lo[1] <= HIT_CHARS:
        start, end, truncated = lo[1], hi[1], False
    else:
        points = _known_points(meta, lo, hi)
        at = max(0, bisect.bisect_right([b for b, _ in points], match) - 1)
        before = points[at]
        after = points[at + 1] if at + 1 < len(points) else hi
        span_bytes, span_chars = after[0] - before[0], after[1] - before[1]
        if span_bytes == span_chars or span_bytes <= 0:
            match_char = before[1] + min(match - before[0], span_chars)
        else:  # inside one non-ASCII stretch: interpolate (moves the excerpt only)
            match_char = before[1] + round((match - before[0]) * span_chars / span_bytes)
        start = (
            before[1] if match_char - before[1] <= HIT_CHARS // 2 else match_char - HIT_CHARS // 4
        )
        start = max(lo[1], min(start, hi[1] - HIT_CHARS))
        end = min(hi[1], start + HIT_CHARS)
        truncated = True
    return fields(manifest, start, end, truncated=truncated, lines=lines_of(meta, start, end))

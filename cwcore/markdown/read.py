"""``read-entry`` and ``read-markdown``: exact text of a Markdown document by range, lines or
heading, never more than the result budget.

Every answer carries the exact range it returns — ``start``/``end`` characters, ``byteStart``/
``byteEnd`` UTF-8 bytes of the document text (= the file, CRLF kept), one-based ``lines`` — the
``evidenceId`` (``<documentId>#md:<start>:<end>``) that reads it again, the heading path of the
section it starts in, the source path, and ``truncated`` with a ``next`` evidence id when the
text was cut at ``maxChars`` (default :data:`~cwcore.markdown.limits.RESULT_CHARS`, at most
:data:`~cwcore.markdown.limits.TOOL_RESULT_CHARS`).
"""

from __future__ import annotations

import re
from typing import Any

from cwcore.errors import InvalidInput, NotFound, excerpt
from cwcore.markdown import fingerprint as fp
from cwcore.markdown.hits import evidence_id
from cwcore.markdown.limits import RESULT_CHARS, clamp_chars
from cwcore.markdown.parse import Heading, Structure, analyze, normalize_heading
from cwcore.store.reader import Reader
from cwcore.store.records import DocumentHead, Manifest

_ENTRY = re.compile(r"^(?P<doc>[^#]+?)(?:@v(?P<version>\d+))?(?:#md:(?P<start>\d+):(?P<end>\d+))?$")
_LINES = re.compile(r"^\s*(\d+)\s*(?:[-:]\s*(\d+)\s*)?$")
MAX_CANDIDATES = 20


def parse_entry(entry: str) -> tuple[str, int | None, tuple[int, int] | None]:
    """``DOC``, ``DOC#md:S:E``, optionally ``DOC@vN…`` → (document id, version, range)."""
    if entry.startswith("md:"):
        raise InvalidInput(
            f"{excerpt(entry)} names no document: qualify it as <documentId>#{entry} "
            "(the evidenceId of a search hit)"
        )
    m = _ENTRY.match(entry.strip())
    if m is None:
        raise InvalidInput(f"{excerpt(entry)} is not an entry id (DOC or DOC#md:START:END)")
    version = int(m["version"]) if m["version"] else None
    span = (int(m["start"]), int(m["end"])) if m["start"] is not None else None
    return m["doc"], version, span


def resolve_document(reader: Reader, name: str) -> str:
    """A document id, or the source path / relative path of an imported Markdown file."""
    try:
        reader.head(name)
        return name
    except (NotFound, InvalidInput):
        pass
    matches = [r for r in fp.files(reader.store) if name in (r.get("path"), r.get("relativePath"))]
    if len(matches) == 1:
        return str(matches[0]["documentId"])
    if not matches:
        raise NotFound(f"no document or imported Markdown file {excerpt(name)}")
    listed = ", ".join(f"{m['documentId']} ({m['path']})" for m in matches[:MAX_CANDIDATES])
    raise InvalidInput(f"{excerpt(name)} names several Markdown documents: {listed}")


def _load(reader: Reader, document: str, version: int | None) -> tuple[DocumentHead, Manifest, str]:
    head = reader.head(document)
    if version is not None and version not in reader.versions(document):
        raise NotFound(f"{document} has no version {version}")
    manifest = reader.manifest(document, version or int(head["version"]))
    return head, manifest, reader.text(manifest)


def _answer(
    head: DocumentHead,
    manifest: Manifest,
    text: str,
    structure: Structure | None,
    start: int,
    end: int,
    max_chars: int,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    doc = str(manifest["documentId"])
    cut = min(end, start + max_chars)
    body = text[start:cut]
    info = (manifest.get("metadata") or {}).get("markdown") or {}
    out: dict[str, Any] = {
        "documentId": doc,
        "version": int(manifest["version"]),
        "current": int(manifest["version"]) == int(head["version"]),
        "state": head.get("state", "live"),
        "kind": manifest["kind"],
        "evidenceId": evidence_id(doc, start, cut),
        "range": f"md:{start}:{cut}",
        "start": start,
        "end": cut,
        "byteStart": len(text[:start].encode("utf-8", "surrogatepass")),
        "byteEnd": len(text[:cut].encode("utf-8", "surrogatepass")),
        "characters": cut - start,
        "truncated": cut < end,
        "next": evidence_id(doc, cut, end) if cut < end else None,
        "text": body,
    }
    if manifest["kind"] == "markdown":
        s = structure or analyze(text)
        section = s.section_at(start)
        out["headingPath"] = list(section.path) if section is not None else []
        out["lines"] = [s.line_at(start), s.last_line(start, cut)] if s.lines else []
        out["sourcePath"] = info.get("path")
        out["relativePath"] = info.get("relativePath")
    out.update(extra or {})
    return out


def read_entry(reader: Reader, entry: str, *, max_chars: object = None) -> dict[str, Any]:
    """Expand a hit: ``DOC#md:S:E`` (characters S..E) or a whole document ``DOC``."""
    budget = clamp_chars(max_chars, RESULT_CHARS)
    document, version, span = parse_entry(entry)
    head, manifest, text = _load(reader, document, version)
    if head.get("state", "live") != "live" and version is None:
        raise InvalidInput(
            f"{document} is {head.get('state')}; name a version (DOC@vN#md:S:E) to audit it"
        )
    if span is None:
        start, end = 0, len(text)
    else:
        start, end = span
        if not 0 <= start <= end <= len(text):
            raise InvalidInput(
                f"md:{start}:{end} is outside {document} v{manifest['version']} "
                f"({len(text)} characters)"
            )
    return _answer(head, manifest, text, None, start, end, budget)


def parse_lines(value: str) -> tuple[int, int]:
    m = _LINES.match(value)
    if m is None:
        raise InvalidInput(f"--lines takes A-B (one-based, inclusive), got {excerpt(value)}")
    first = int(m.group(1))
    last = int(m.group(2)) if m.group(2) else first
    if first < 1 or last < first:
        raise InvalidInput(f"--lines {excerpt(value)}: lines are one-based and A <= B")
    return first, last


def heading_label(heading: Heading) -> str:
    return f"{' > '.join(heading.path)} (line {heading.line})"


def find_heading(structure: Structure, wanted: str) -> Heading:
    """The unique heading ``wanted`` names: a heading whose title, or whose path joined by
    `` > `` or ``/``, equals it (case-insensitively, backticks and extra spaces ignored); when
    none does, the unique heading whose title or path contains it."""
    key = normalize_heading(wanted)
    if not key:
        raise InvalidInput("--heading is empty")

    def forms(h: Heading) -> tuple[str, str, str]:
        return (
            normalize_heading(h.title),
            normalize_heading(" > ".join(h.path)),
            normalize_heading("/".join(h.path)),
        )

    matches = [h for h in structure.headings if key in forms(h)]
    if not matches:
        matches = [h for h in structure.headings if any(key in f for f in forms(h))]
    if len(matches) == 1:
        return matches[0]
    if matches:
        listed = "; ".join(heading_label(h) for h in matches[:MAX_CANDIDATES])
        raise InvalidInput(
            f"heading {excerpt(wanted)} is ambiguous ({len(matches)} matches): {listed}. "
            "Name it by its path, e.g. 'Parent > Child'."
        )
    pool = structure.headings
    listed = "; ".join(heading_label(h) for h in pool[:MAX_CANDIDATES])
    more = f" (and {len(pool) - MAX_CANDIDATES} more)" if len(pool) > MAX_CANDIDATES else ""
    raise InvalidInput(
        f"no heading {excerpt(wanted)}; "
        + (f"candidates: {listed}{more}" if listed else "the document has no headings")
    )


def read_markdown(
    reader: Reader,
    document: str,
    *,
    lines: str | None = None,
    heading: str | None = None,
    max_chars: object = None,
) -> dict[str, Any]:
    """One-based ``lines`` (``A-B``) or a unique ``heading`` of a live Markdown document."""
    budget = clamp_chars(max_chars, RESULT_CHARS)
    if (lines is None) == (heading is None):
        raise InvalidInput("give exactly one of --lines A-B or --heading TEXT")
    doc = resolve_document(reader, document)
    head, manifest, text = _load(reader, doc, None)
    if manifest["kind"] != "markdown":
        raise InvalidInput(f"{doc} is a {manifest['kind']} document, not Markdown")
    if head.get("state", "live") != "live":
        raise InvalidInput(f"{doc} is {head.get('state')}")
    structure = analyze(text)
    if lines is not None:
        first, last = parse_lines(lines)
        if first > structure.lines:
            raise InvalidInput(f"--lines {lines}: {doc} has {structure.lines} line(s)")
        last = min(last, structure.lines)
        start, end = structure.line_span(first, last)
        return _answer(head, manifest, text, structure, start, end, budget)
    assert heading is not None
    found = find_heading(structure, heading)
    return _answer(
        head,
        manifest,
        text,
        structure,
        found.start,
        found.end,
        budget,
        {"heading": {"title": found.title, "level": found.level, "line": found.line}},
    )

"""What ``markdown.read-entry`` and ``markdown.read`` answer, as a frozen dataclass.

:mod:`cwcore.markdown.read` builds the answer as JSON (``cw read-entry --json``, ``cw
read-markdown --json``, the MCP tools and the daemon protocol carry it unchanged);
:class:`cwcore.api.Archive` turns it into a :class:`MarkdownRead` with ``from_json()`` so the
faces read attributes. ``to_json()`` keeps exactly the keys, order and values the engine answers,
and ``from_json(x).to_json() == x``: the Markdown place (heading path, lines, paths) is present
only for Markdown documents, the matched heading only for a read by heading.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MarkdownPlace:
    """Where a range of a Markdown document sits: the heading path of the section its first
    character is in (empty before the first heading), its one-based first and last lines (empty
    for an empty document), the imported file's path and its path relative to the imported
    folder (either may be None)."""

    heading_path: tuple[str, ...]
    lines: tuple[int, ...]
    source_path: str | None
    relative_path: str | None


@dataclass(frozen=True)
class HeadingRef:
    """The heading a read by ``--heading`` matched: title, level (1-6), one-based line."""

    title: str
    level: int
    line: int

    def to_json(self) -> dict[str, Any]:
        return {"title": self.title, "level": self.level, "line": self.line}


@dataclass(frozen=True)
class MarkdownRead:
    """The exact characters ``start..end`` (Python string offsets into the document's text) of
    one version of a document, with their UTF-8 byte offsets in the imported file.

    ``current`` says the version read is the document's head; ``state`` is the head's state
    (``live``, ``superseded`` …). When ``truncated``, the range asked for went on past ``end``
    and ``next`` is the evidence id of the rest."""

    document_id: str
    version: int
    current: bool
    state: str
    kind: str
    evidence_id: str
    range: str
    start: int
    end: int
    byte_start: int
    byte_end: int
    characters: int
    truncated: bool
    next: str | None
    text: str
    place: MarkdownPlace | None = None
    heading: HeadingRef | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "documentId": self.document_id,
            "version": self.version,
            "current": self.current,
            "state": self.state,
            "kind": self.kind,
            "evidenceId": self.evidence_id,
            "range": self.range,
            "start": self.start,
            "end": self.end,
            "byteStart": self.byte_start,
            "byteEnd": self.byte_end,
            "characters": self.characters,
            "truncated": self.truncated,
            "next": self.next,
            "text": self.text,
        }
        if self.place is not None:
            body["headingPath"] = list(self.place.heading_path)
            body["lines"] = list(self.place.lines)
            body["sourcePath"] = self.place.source_path
            body["relativePath"] = self.place.relative_path
        if self.heading is not None:
            body["heading"] = self.heading.to_json()
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MarkdownRead:
        place = None
        if "headingPath" in body:
            place = MarkdownPlace(
                tuple(body["headingPath"]),
                tuple(body["lines"]),
                body["sourcePath"],
                body["relativePath"],
            )
        found = body.get("heading")
        return cls(
            document_id=body["documentId"],
            version=body["version"],
            current=body["current"],
            state=body["state"],
            kind=body["kind"],
            evidence_id=body["evidenceId"],
            range=body["range"],
            start=body["start"],
            end=body["end"],
            byte_start=body["byteStart"],
            byte_end=body["byteEnd"],
            characters=body["characters"],
            truncated=body["truncated"],
            next=body["next"],
            text=body["text"],
            place=place,
            heading=None
            if found is None
            else HeadingRef(found["title"], found["level"], found["line"]),
        )

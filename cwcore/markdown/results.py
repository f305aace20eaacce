"""What ``markdown.read-entry`` and ``markdown.read`` answer, as a frozen dataclass.

:mod:`cwcore.markdown.read` builds the answer as JSON (``cw read-entry --json``, ``cw
read-markdown --json``, the MCP tools and the daemon protocol carry it unchanged);
:class:`cwcore.api.Archive` turns it into a :class:`MarkdownRead` with ``from_json()`` so the
faces read attributes. The JSON is derived from the fields (:mod:`cwcore.contract.codec`):
``from_json(x).to_json() == x`` as parsed JSON; the Markdown place (heading path, lines,
paths) is present only for Markdown documents, the matched heading only for a read by heading.
"""

from __future__ import annotations

from cwcore.contract.codec import Record, field


class MarkdownPlace(Record):
    """Where a range of a Markdown document sits: the heading path of the section its first
    character is in (empty before the first heading), its one-based first and last lines (empty
    for an empty document), the imported file's path and its path relative to the imported
    folder (either may be None). Its keys are written into the read's own object."""

    heading_path: tuple[str, ...]
    lines: tuple[int, ...]
    source_path: str | None
    relative_path: str | None


class HeadingRef(Record):
    """The heading a read by ``--heading`` matched: title, level (1-6), one-based line."""

    title: str
    level: int
    line: int


class MarkdownRead(Record):
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
    place: MarkdownPlace | None = field(default=None, omit_none=True, flatten=True)
    heading: HeadingRef | None = field(default=None, omit_none=True)

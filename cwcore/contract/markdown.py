"""The Markdown methods' contract: ``markdown.read-entry`` and ``markdown.read`` (a
:class:`MarkdownRead`) and ``markdown.search`` (:class:`MarkdownEvidence`), with the caps a tool
result keeps to.

:mod:`cwcore.markdown.read` builds a read as JSON and :func:`cwcore.markdown.evidence.search`
the evidence hits; the handlers answer these records, serialized once. The JSON is derived from
the fields (:mod:`cwcore.contract.codec`): ``from_json(x).to_json() == x`` as parsed JSON; the
Markdown place (heading path, lines, paths) is present only for Markdown documents, the matched
heading only for a read by heading.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cwcore.contract.codec import Record, field
from cwcore.errors import InvalidInput

RESULT_CHARS = 16_000  # characters of one result (a read, or all hit excerpts together)
TOOL_RESULT_CHARS = 64_000  # the most characters any one tool result may carry
TOOL_RESULT_HITS = 20  # the most hits any one tool result may carry


def check_chars(value: int) -> int:
    """A requested character budget: 1 to :data:`TOOL_RESULT_CHARS` (else ``invalid-input``)."""
    if value < 1:
        raise InvalidInput("maxChars must be a positive integer")
    if value > TOOL_RESULT_CHARS:
        raise InvalidInput(f"maxChars is {value}; a tool result holds at most {TOOL_RESULT_CHARS}")
    return value


def check_hits(value: int) -> int:
    """A requested hit count: 1 to :data:`TOOL_RESULT_HITS` (else ``invalid-input``)."""
    if value < 1:
        raise InvalidInput("limit must be a positive integer")
    if value > TOOL_RESULT_HITS:
        raise InvalidInput(f"limit is {value}; a tool result holds at most {TOOL_RESULT_HITS} hits")
    return value


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


class MarkdownEvidence(Record, keys="snake"):
    """``markdown.search``: the ``query``, its evidence hits, best first (each a search hit's
    JSON with its ``markdown`` place and excerpt, as :func:`cwcore.markdown.evidence.search`
    writes it), ``retrieval_status`` (``ok``, or ``empty`` without a hit) and
    ``semantic_search_used`` (always false: the evidence search is lexical)."""

    query: str
    results: tuple[Mapping[str, Any], ...]
    retrieval_status: str
    semantic_search_used: bool


# -- requests ---------------------------------------------------------------------------------


class ReadEntryRequest(Record):
    """``markdown.read-entry``: the ``entry`` (``DOC``, ``DOC#md:S:E``, ``DOC@vN#md:S:E``) and at
    most ``maxChars`` characters (1..64000; default 16000)."""

    entry: str | None = field(default=None, omit_none=True)
    max_chars: int | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not self.entry:
            raise InvalidInput("entry (DOC or DOC#md:START:END) is required")
        if self.max_chars is not None:
            check_chars(self.max_chars)


class ReadMarkdownRequest(Record):
    """``markdown.read``: a live Markdown ``document`` (id or imported path) and exactly one of
    ``lines`` (``A-B``, one-based, inclusive) or ``heading``; at most ``maxChars`` characters."""

    document: str | None = field(default=None, omit_none=True)
    lines: str | None = field(default=None, omit_none=True)
    heading: str | None = field(default=None, omit_none=True)
    max_chars: int | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not self.document:
            raise InvalidInput("document is required")
        if self.max_chars is not None:
            check_chars(self.max_chars)
        if (self.lines is None) == (self.heading is None):
            raise InvalidInput("give exactly one of --lines A-B or --heading TEXT")


class MarkdownSearchRequest(Record):
    """``markdown.search``: the ``query``, optionally confined to a ``project`` and to
    ``sessions``, at most ``limit`` hits (1..20; default the ``final`` setting)."""

    query: str | None = field(default=None, omit_none=True)
    project: str | None = field(default=None, omit_none=True)
    sessions: tuple[str, ...] | None = field(default=None, omit_none=True)
    limit: int | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not self.query or not self.query.strip():
            raise InvalidInput("query is required")
        if self.limit is not None:
            check_hits(self.limit)

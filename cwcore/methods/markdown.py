"""The Markdown methods (the ``import`` of Markdown files is :mod:`cwcore.methods.archive`'s):

* ``markdown.read-entry`` ``{"entry", "maxChars"?}`` and ``markdown.read``
  ``{"document", "lines"? | "heading"?, "maxChars"?}``: :mod:`cwcore.markdown.read`.
* ``markdown.search`` ``{"query", "project"?, "sessions"?, "limit"?}``: the lexical evidence of
  paragraphs the search windows do not cover (:func:`cwcore.markdown.evidence.search`).
"""

from __future__ import annotations

from cwcore.contract.markdown import (
    MarkdownEvidence,
    MarkdownRead,
    MarkdownSearchRequest,
    ReadEntryRequest,
    ReadMarkdownRequest,
)
from cwcore.contract.methods import MARKDOWN_READ, MARKDOWN_READ_ENTRY, MARKDOWN_SEARCH
from cwcore.engine import Engine
from cwcore.markdown import evidence, read
from cwcore.markdown.limits import Limits
from cwcore.methods.registry import Method, typed


def _read_entry(engine: Engine, req: ReadEntryRequest) -> MarkdownRead:
    body = read.read_entry(engine.reader, req.entry or "", max_chars=req.max_chars)
    return MarkdownRead.from_json(body)


def _read_markdown(engine: Engine, req: ReadMarkdownRequest) -> MarkdownRead:
    body = read.read_markdown(
        engine.reader,
        req.document or "",
        lines=req.lines,
        heading=req.heading,
        max_chars=req.max_chars,
    )
    return MarkdownRead.from_json(body)


def _search(engine: Engine, req: MarkdownSearchRequest) -> MarkdownEvidence:
    body = evidence.search(
        engine.store,
        engine.reader,
        req.query or "",
        project=req.project,
        sessions=None if req.sessions is None else list(req.sessions),
        limit=req.limit,
        limits=Limits.of(engine.settings),
    )
    return MarkdownEvidence.from_json(body)


METHODS: tuple[Method, ...] = (
    typed(MARKDOWN_READ_ENTRY, _read_entry),
    typed(MARKDOWN_READ, _read_markdown),
    typed(MARKDOWN_SEARCH, _search),
)

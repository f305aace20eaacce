"""The Markdown methods (the ``import`` of Markdown files is :mod:`cwcore.methods.archive`'s):

* ``markdown.read-entry`` ``{"entry", "maxChars"?}`` and ``markdown.read``
  ``{"document", "lines"? | "heading"?, "maxChars"?}``: :mod:`cwcore.markdown.read`.
* ``markdown.search`` ``{"query", "project"?, "sessions"?, "limit"?}``: the lexical evidence of
  paragraphs the search windows do not cover (:func:`cwcore.markdown.evidence.search`).
"""

from __future__ import annotations

import threading
from typing import Any

from cwcore.engine import Emit, Engine, MiB
from cwcore.errors import InvalidInput
from cwcore.markdown import evidence, read
from cwcore.markdown.limits import Limits
from cwcore.methods.params import param_str, required_str
from cwcore.methods.registry import Method


def _read_entry(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    entry = required_str(params, "entry", "DOC or DOC#md:START:END")
    return read.read_entry(engine.reader, entry, max_chars=params.get("maxChars"))


def _read_markdown(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    document = required_str(params, "document")
    return read.read_markdown(
        engine.reader,
        document,
        lines=param_str(params, "lines"),
        heading=param_str(params, "heading"),
        max_chars=params.get("maxChars"),
    )


def _search(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    query = param_str(params, "query")
    if not query or not query.strip():
        raise InvalidInput("query is required")
    sessions = params.get("sessions")
    if sessions is not None and (
        not isinstance(sessions, list) or not all(isinstance(s, str) for s in sessions)
    ):
        raise InvalidInput("sessions must be a list of strings")
    return evidence.search(
        engine.store,
        engine.reader,
        query,
        project=param_str(params, "project"),
        sessions=sessions,
        limit=params.get("limit"),
        limits=Limits.of(engine.settings),
    )


METHODS: tuple[Method, ...] = (
    Method("markdown.read-entry", _read_entry, output_bytes=2 * MiB),
    Method("markdown.read", _read_markdown, output_bytes=2 * MiB),
    Method("markdown.search", _search, output_bytes=2 * MiB),
)

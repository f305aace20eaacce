"""Engine methods for Markdown (loaded by :func:`cwcore.engine.load_method_modules`).

* ``import`` (wraps the built-in one): ``format: "markdown"`` imports folders/files with
  :func:`cwcore.markdown.ingest.import_markdown`; ``format: "auto"`` runs the pipeline with a
  deferral list open (:func:`cwcore.importers.markdown.deferring`) and then imports the Markdown
  files it detected; every other format is the built-in method unchanged.
* ``markdown.read-entry`` ``{"entry", "maxChars"?}`` and ``markdown.read``
  ``{"document", "lines"? | "heading"?, "maxChars"?}``: :mod:`cwcore.markdown.read`.
* ``markdown.search`` ``{"query", "project"?, "sessions"?, "limit"?}``: the lexical evidence of
  paragraphs the search windows do not cover (:func:`cwcore.markdown.evidence.search`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from cwcore import engine as engine_module
from cwcore.engine import Emit, Engine, Handler, method, param_str, required_str
from cwcore.errors import InvalidInput
from cwcore.importers.markdown import deferring
from cwcore.markdown import evidence, ingest, read

MiB = 1024 * 1024


def _base_import() -> Handler:
    current = engine_module._METHODS["import"]
    return getattr(current, "base_import", current)


_BASE_IMPORT: Handler = _base_import()


def _context(engine: Engine, emit: Emit, cancel: threading.Event) -> ingest.Context:
    return ingest.Context(
        home=engine.home,
        store=engine.store,
        admission=engine.admission,
        settings=engine.settings,
        emit=emit,
        cancelled=cancel.is_set,
    )


@method("import")
def _import(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    fmt = params.get("format", "auto") or "auto"
    if fmt not in ("auto", "markdown"):
        return _BASE_IMPORT(engine, params, emit, cancel)
    paths = params.get("paths")
    if not isinstance(paths, list) or not paths or not all(isinstance(p, str) for p in paths):
        raise InvalidInput("paths must be a non-empty list of strings")
    project = param_str(params, "project")
    ctx = _context(engine, emit, cancel)
    if fmt == "markdown":
        summary = ingest.import_markdown(ctx, paths, project)
        engine.after_admission(summary.imported)
        return summary.to_json()
    with deferring() as found:
        body = _BASE_IMPORT(engine, params, emit, cancel)
    if not found:
        return body
    extra = ingest.import_deferred(ctx, paths, [Path(p) for p in found], project)
    engine.after_admission(extra.imported)
    return ingest.merge(body, extra)


_import.base_import = _BASE_IMPORT  # type: ignore[attr-defined]


@method("markdown.read-entry", output_bytes=2 * MiB)
def _read_entry(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    entry = required_str(params, "entry", "DOC or DOC#md:START:END")
    return read.read_entry(engine.reader, entry, max_chars=params.get("maxChars"))


@method("markdown.read", output_bytes=2 * MiB)
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


@method("markdown.search", output_bytes=2 * MiB)
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
    )

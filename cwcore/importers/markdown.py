"""Markdown: ``.md``/``.markdown`` files as documents of kind ``markdown`` (not sessions).

The sniffer accepts a file by its extension alone. A Markdown file is not a session log, so it
does not go through turn grouping: the engine's ``import`` method (:mod:`cwcore.markdown.methods`)
runs the pipeline with a *deferral* list open, :meth:`MarkdownImporter.parse` records each
Markdown file there and returns no sessions, and the engine then imports the recorded files
with :mod:`cwcore.markdown.ingest` (roots, fingerprints, locking, ``markdown`` documents).
``--format markdown`` goes to :mod:`cwcore.markdown.ingest` directly. Called outside the engine
(``pipeline.import_paths`` alone) the importer reads nothing: the file counts as read, and no
document is made.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from cwcore.importers.base import Location, register
from cwcore.model import FileParse

SUFFIXES = (".md", ".markdown")

_DEFERRED: ContextVar[list[Path] | None] = ContextVar("cw_markdown_deferred", default=None)


@contextmanager
def deferring() -> Iterator[list[Path]]:
    """Collect the Markdown files ``parse`` sees while the block runs."""
    sink: list[Path] = []
    token = _DEFERRED.set(sink)
    try:
        yield sink
    finally:
        _DEFERRED.reset(token)


class MarkdownImporter:
    name = "markdown"
    agent = "markdown"
    priority = 900  # before cw-jsonl: a Markdown file is never a JSON log
    locations: tuple[Location, ...] = ()

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        return path.suffix.lower() in SUFFIXES

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return True  # any text file named with --format markdown is read as Markdown

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        sink = _DEFERRED.get()
        if sink is not None:
            sink.append(path)
        return FileParse(())


register(MarkdownImporter())

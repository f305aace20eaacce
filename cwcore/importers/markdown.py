"""Markdown: ``.md``/``.markdown`` files as documents of kind ``markdown`` (not sessions).

The sniffer accepts a file by its extension alone. A Markdown file is not a session log, so it
does not go through turn grouping: the import pipeline hands the Markdown files it detects back
to its caller (``markdown_files`` of :func:`cwcore.importers.pipeline.import_paths`), and the
engine's ``import`` method imports them with :mod:`cwcore.markdown.ingest` (roots,
fingerprints, locking, ``markdown`` documents). ``--format markdown`` goes to
:mod:`cwcore.markdown.ingest` directly. :meth:`MarkdownImporter.parse` reads nothing: the
importer exists for detection, ``--format`` and the format table.
"""

from __future__ import annotations

from pathlib import Path

from cwcore.importers.base import Location, register
from cwcore.model import FileParse

NAME = "markdown"
SUFFIXES = (".md", ".markdown")


class MarkdownImporter:
    name = NAME
    agent = "markdown"
    priority = 900  # before cw-jsonl: a Markdown file is never a JSON log
    not_read = "nothing: the file is the document (folders: non-Markdown files)"
    locations: tuple[Location, ...] = ()

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        return path.suffix.lower() in SUFFIXES

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        return True  # any text file named with --format markdown is read as Markdown

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        """No sessions: a Markdown file's documents are made by :mod:`cwcore.markdown.ingest`."""
        return FileParse(())


register(MarkdownImporter())

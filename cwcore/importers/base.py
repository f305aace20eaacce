"""The importer registry: one module per source format, each behind a small Protocol.

Adding a format is adding a module that defines an :class:`Importer` and calls :func:`register`.
``sniff`` looks at the first lines of a file (:func:`~cwcore.importers.lines.read_head`: a bounded
head) and answers whether the format is its own; ``accepts`` is the looser check for a format the
user forced; ``parse`` returns the sessions of a file. Importers never touch the store: they return
:class:`~cwcore.model.ParsedSession` values and report malformed lines as ``problems``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Protocol

from cwcore.errors import UnknownFormat, excerpt
from cwcore.importers.lines import read_head
from cwcore.model import FileParse

__all__ = ["Importer", "detect", "formats", "get", "json_lines", "read_head", "register"]


class Importer(Protocol):
    name: str  # the --format value, e.g. "claude-code"
    agent: str  # the agent recorded on sessions, e.g. "claude-code"

    def sniff(self, path: Path, head: list[bytes]) -> bool:
        """True when the file (its path and first lines) is in this format."""
        ...

    def accepts(self, path: Path, head: list[bytes]) -> bool:
        """Whether a file given with ``--format`` (this format forced) looks like this format at
        all: cheap, from the head alone, and never stricter than ``sniff``. A forced format that
        the file does not match is an error, never an import of nothing."""
        ...

    def parse(self, path: Path, *, project: str | None = None) -> FileParse:
        """Every session in the file, and its unreadable lines. ``project`` overrides the
        derived project name. Raises :class:`~cwcore.errors.CwError` only when the file as a
        whole cannot be read."""
        ...


_REGISTRY: dict[str, Importer] = {}


def register(importer: Importer) -> Importer:
    _REGISTRY[importer.name] = importer
    return importer


def formats() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get(name: str) -> Importer:
    _load_builtin()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownFormat(
            f"unknown format {excerpt(name)}; known: {', '.join(formats())}"
        ) from None


def detect(path: Path) -> Importer | None:
    """The first importer whose ``sniff`` accepts the file, or None."""
    _load_builtin()
    head = read_head(path)
    for name in _SNIFF_ORDER:
        importer = _REGISTRY.get(name)
        if importer is not None and importer.sniff(path, head):
            return importer
    for name, importer in sorted(_REGISTRY.items()):
        if name not in _SNIFF_ORDER and importer.sniff(path, head):
            return importer
    return None


def json_lines(head: list[bytes]) -> list[dict[str, Any]]:
    """Decode the head lines that are JSON objects (sniffers share this); a line that is not
    one, nested too deeply included, is left out."""
    out = []
    for raw in head:
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


# Most specific formats first: cw-jsonl is the most permissive shape, so it is tried last.
_SNIFF_ORDER = ("claude-code", "codex", "pi", "gemini", "markdown", "cw-jsonl")

_loaded = False


def _load_builtin() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    import importlib
    import pkgutil

    import cwcore.importers as pkg

    for info in pkgutil.iter_modules(pkg.__path__):
        if info.name not in ("base", "documents", "lines", "pipeline", "scrub", "sync"):
            importlib.import_module(f"cwcore.importers.{info.name}")

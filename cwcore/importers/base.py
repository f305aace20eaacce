"""The importer registry: one module per source format, each behind a small Protocol.

Adding a format is adding a module that defines an :class:`Importer` and calls :func:`register`,
and naming it in :data:`IMPORTER_MODULES`: the listed modules are loaded on first use, and the
``--format`` choices, ``cw sync``'s walk, ``cw sources`` and the format table of
docs/importers.md all come from the registry.
An importer declares its ``name``, its ``priority`` in detection (lower is tried first: the most
specific shapes before the permissive ones), its standard ``locations`` (:class:`Location`),
``sniff`` — looks at the first lines of a file (:func:`~cwcore.importers.lines.read_head`: a bounded
head; SQLite formats check the schema) and answers whether the format is its own —, ``accepts``,
the looser check for a format the user forced, and ``parse``, the sessions of a file. Importers
never touch the store: they return :class:`~cwcore.model.ParsedSession` values and report
malformed lines as ``problems``.

Optional members an importer may add: ``configured_locations(settings)`` (locations a setting
names, e.g. per-project logs: :func:`project_locations`), ``configured_note`` (how the docs
describe them), ``not_read`` (what of the format cw leaves unread, one line for the format
table of docs/importers.md), ``companions(path)`` (other files a session of ``path`` also lives
in, whose changes ``cw sync`` must notice: sidecars, a JSON tree), and ``is_companion(path)``
(True for such a file: a folder import and ``cw sync`` count it quietly instead of reporting it
as a file they could not read).
"""

from __future__ import annotations

import fnmatch
import importlib
import json
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from cwcore.errors import UnknownFormat, excerpt
from cwcore.importers.lines import read_head
from cwcore.model import FileParse

if TYPE_CHECKING:
    from cwcore.config import Settings

__all__ = [
    "IMPORTER_MODULES",
    "Importer",
    "Location",
    "accepts",
    "detect",
    "formats",
    "get",
    "importers",
    "json_lines",
    "project_locations",
    "read_head",
    "register",
    "sniffs",
]

#: XDG base directories and their defaults under the home (the XDG Base Directory spec), and
#: Windows' roaming application data.
_BASES = {
    "$XDG_DATA_HOME": ".local/share",
    "$XDG_CONFIG_HOME": ".config",
    "$XDG_STATE_HOME": ".local/state",
    "$APPDATA": "AppData/Roaming",
    "$LOCALAPPDATA": "AppData/Local",
}


@dataclass(frozen=True)
class Location:
    """A standard place a format's producer writes, walked by ``cw sync`` and ``cw watch``.

    ``root`` is a folder under the user's home (``~/.codex/sessions``) or under a base
    directory (``$XDG_DATA_HOME/opencode``: the variable when it is set and the user's own home is
    used, else its default under the home given, so a fake home is self-contained). Files under
    ``root`` (any depth, hidden folders skipped) whose name matches one of ``names`` (fnmatch
    patterns) are candidates; ``depth`` limits how many folder levels below ``root`` are
    entered (0: its own files only; None: all). An absolute ``root`` is taken as it is (a
    configured location). ``platforms`` limits the location to ``sys.platform`` values
    (``darwin``, ``linux``, ``win32``); empty means every platform.
    """

    root: str
    names: tuple[str, ...] = ("*.jsonl",)
    platforms: tuple[str, ...] = ()
    depth: int | None = None

    def resolve(self, home: Path | None = None) -> Path:
        """The folder on this machine; ``home`` replaces the user's home (and the XDG
        variables, which then take their defaults under it)."""
        user_home = Path(os.path.expanduser("~"))
        base_dir = home or user_home
        real = base_dir == user_home
        if Path(self.root).is_absolute():
            return Path(self.root)
        head, _, rest = self.root.partition("/")
        if head == "~":
            return base_dir / rest
        if head in _BASES:
            value = os.environ.get(head[1:]) if real else None
            return Path(value) / rest if value else base_dir / _BASES[head] / rest
        return base_dir / self.root

    def matches(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.names)

    def applies(self, platform: str | None = None) -> bool:
        return not self.platforms or (platform or sys.platform) in self.platforms

    def label(self) -> str:
        """``root/<names>`` as the docs and ``cw sources`` show it."""
        names = ", ".join(self.names)
        where = f" ({', '.join(self.platforms)})" if self.platforms else ""
        deep = "/" if self.depth == 0 else "/**/"
        return f"{self.root}{deep}{names}{where}"


def project_locations(
    settings: Settings | None, relative: str, names: tuple[str, ...]
) -> list[Location]:
    """One location (its own files only) per folder of the ``syncProjects`` setting
    (``os.pathsep``-separated), ``relative`` to that folder."""
    raw = settings.sync_projects if settings is not None else ""
    out = []
    for entry in raw.split(os.pathsep) if raw else ():
        if entry.strip():
            root = Path(entry.strip()).expanduser()
            out.append(Location(str(root / relative) if relative else str(root), names, depth=0))
    return out


class Importer(Protocol):
    name: str  # the --format value, e.g. "claude-code"
    agent: str  # the agent recorded on sessions, e.g. "claude-code"
    priority: int  # detection order: lower is sniffed first
    locations: tuple[Location, ...]  # where cw sync looks (empty: only cw import PATH)

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


def importers() -> list[Importer]:
    """Every registered importer in detection order (priority, then name)."""
    _load_builtin()
    return sorted(_REGISTRY.values(), key=lambda i: (i.priority, i.name))


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
    head = read_head(path)
    for importer in importers():
        if sniffs(importer, path, head):
            return importer
    return None


def sniffs(importer: Importer, path: Path, head: list[bytes]) -> bool:
    """``importer.sniff``, where a sniffer that meets a value it did not expect (a list where
    a type name belongs) says no instead of stopping the import."""
    try:
        return bool(importer.sniff(path, head))
    except (OSError, UnicodeDecodeError):
        raise
    except Exception:
        return False


def accepts(importer: Importer, path: Path, head: list[bytes]) -> bool:
    """``importer.accepts``, guarded as :func:`sniffs` is."""
    try:
        return bool(importer.accepts(path, head))
    except (OSError, UnicodeDecodeError):
        raise
    except Exception:
        return False


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


#: The modules of this package that define importers (each registers its own on import). A test
#: checks that every module of the package that registers an importer is listed here.
IMPORTER_MODULES = (
    "aider",
    "amp",
    "claude_code",
    "cline",
    "codex",
    "copilot",
    "crush",
    "cursor",
    "cw_jsonl",
    "droid",
    "gemini",
    "goose",
    "kiro",
    "markdown",
    "openclaw",
    "openhands",
    "opencode",
    "pi",
    "qwen",
    "vscode_copilot",
    "zed",
)
_loaded = False
_load_lock = threading.RLock()  # re-entrant: a module may look up another while loading


def _load_builtin() -> None:
    """Import every importer module once. Imports right after the daemon starts run on several
    threads: none may see the registry half filled (a file would be "not a recognized session
    log" or its format unknown), so the flag is set only after every module registered, under
    a lock."""
    global _loaded
    if _loaded:
        return
    with _load_lock:
        if _loaded:
            return
        for name in IMPORTER_MODULES:
            importlib.import_module(f"cwcore.importers.{name}")
        _loaded = True

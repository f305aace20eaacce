"""The import pipeline: paths -> importer -> scrub -> documents -> admission, streaming acks.

``emit`` receives small JSON-able events as work commits: ``{"type": "ack", ...}`` for each newly
acknowledged document (after its batch committed), ``{"type": "progress", "file", "files",
"total"}`` after each file and ``{"type": "notice", "message"}`` for skipped files.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cwcore.config import Settings
from cwcore.errors import CwError, UnknownFormat, excerpt
from cwcore.importers import base
from cwcore.importers.documents import build_documents, session_spec
from cwcore.model import ParsedSession
from cwcore.store.admission import Admission

Emit = Callable[[dict[str, Any]], None]

#: Documents per WriteBatch in bulk admission: large enough to amortize the commit, small
#: enough that acknowledgements stream and a batch stays a few MiB.
BATCH_DOCUMENTS = 256

_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv"}


@dataclass(frozen=True)
class ImportProblem:
    path: str
    line: int | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason}


@dataclass
class ImportSummary:
    """The BRIEF's summary object: files read, documents imported / skipped (unchanged), errors."""

    files: int = 0
    imported: int = 0
    skipped: int = 0
    sessions: int = 0
    messages: int = 0
    errors: list[ImportProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "imported": self.imported,
            "skipped": self.skipped,
            "sessions": self.sessions,
            "messages": self.messages,
            "errors": [e.to_json() for e in self.errors],
            "notices": list(self.notices),
        }

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ImportSummary:
        return cls(
            files=int(body.get("files", 0)),
            imported=int(body.get("imported", 0)),
            skipped=int(body.get("skipped", 0)),
            sessions=int(body.get("sessions", 0)),
            messages=int(body.get("messages", 0)),
            errors=[ImportProblem(e["path"], e.get("line"), e["reason"]) for e in body["errors"]],
            notices=list(body.get("notices", [])),
        )


def _walk(path: Path) -> Iterator[Path]:
    for child in sorted(path.iterdir()):
        if child.name in _SKIP_DIRS or child.name.startswith("."):
            continue
        if child.is_dir() and not child.is_symlink():
            yield from _walk(child)
        elif child.is_file():
            yield child


def plan(
    paths: Iterable[str | Path], fmt: str, summary: ImportSummary, emit: Emit
) -> list[tuple[Path, base.Importer]]:
    """Resolve paths to ``(file, importer)`` pairs; record errors and notices in ``summary``."""
    forced = None if fmt == "auto" else base.get(fmt)
    work: list[tuple[Path, base.Importer]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for file in _walk(path):
                importer = forced or _detect(file)
                if importer is not None and forced is None and importer.name == "markdown":
                    # Folders of session logs often hold READMEs and notes: Markdown joins an
                    # automatic folder import only when asked for (--format markdown).
                    importer = None
                if importer is None:
                    note = f"skipped {file}: not a session log"
                    summary.notices.append(note)
                    emit({"type": "notice", "message": note})
                    continue
                work.append((file, importer))
            continue
        if not path.exists():
            summary.errors.append(ImportProblem(str(path), None, "no such file or directory"))
            continue
        try:
            importer = forced or base.detect(path)
        except OSError as exc:
            summary.errors.append(ImportProblem(str(path), None, f"cannot read: {exc.strerror}"))
            continue
        if importer is None:
            summary.errors.append(
                ImportProblem(str(path), None, "not a recognized session log (try --format)")
            )
            continue
        work.append((path, importer))
    return work


def _detect(file: Path) -> base.Importer | None:
    try:
        return base.detect(file)
    except (OSError, UnicodeDecodeError):
        return None


def _scrub(parsed: ParsedSession, settings: Settings) -> ParsedSession:
    if not settings.scrub_secrets:
        return parsed
    from cwcore.importers import scrub

    return scrub.scrub_session(parsed)


def import_paths(
    admission: Admission,
    paths: Iterable[str | Path],
    *,
    fmt: str = "auto",
    project: str | None = None,
    settings: Settings,
    emit: Emit = lambda event: None,
    cancelled: Callable[[], bool] = lambda: False,
) -> ImportSummary:
    """Import files and folders. Never raises for a bad file or line: they become ``errors``."""
    summary = ImportSummary()
    if fmt != "auto":
        base.get(fmt)  # an unknown --format is the caller's error, raised before any work
    work = plan(paths, fmt, summary, emit)
    total = len(work)
    for index, (path, importer) in enumerate(work, start=1):
        if cancelled():
            break
        summary.files += 1
        try:
            parsed_file = importer.parse(path, project=project)
        except CwError as exc:
            summary.errors.append(ImportProblem(str(path), None, exc.message))
            continue
        except (OSError, UnicodeDecodeError) as exc:
            summary.errors.append(ImportProblem(str(path), None, f"cannot read: {exc}"))
            continue
        for line, reason in parsed_file.problems:
            summary.errors.append(ImportProblem(str(path), line, reason))
        for parsed in parsed_file.sessions:
            _admit_session(admission, _scrub(parsed, settings), settings, summary, str(path), emit)
        emit({"type": "progress", "file": str(path), "files": index, "total": total})
    return summary


def _admit_session(
    admission: Admission,
    parsed: ParsedSession,
    settings: Settings,
    summary: ImportSummary,
    path: str,
    emit: Emit,
) -> None:
    docs = build_documents(parsed, segment_bytes=settings.segment_bytes)
    spec = session_spec(parsed)
    summary.sessions += 1
    summary.messages += len(parsed.messages)
    events = parsed.events
    for start in range(0, max(len(docs), 1), BATCH_DOCUMENTS):
        group = docs[start : start + BATCH_DOCUMENTS]
        try:
            result = admission.admit(spec, events, group)
        except CwError as exc:
            summary.errors.append(
                ImportProblem(path, None, f"session {parsed.session_id}: {exc.message}")
            )
            return
        events = ()
        for rejected in result.rejected:
            summary.errors.append(ImportProblem(path, None, rejected.error.message))
        for ack in result.acks:
            if ack.new:
                summary.imported += 1
                emit({"type": "ack", **ack.to_json()})
            else:
                summary.skipped += 1


def check_format(fmt: str) -> None:
    if fmt != "auto" and fmt not in base.formats():
        raise UnknownFormat(
            f"unknown format {excerpt(fmt)}; known: auto, {', '.join(base.formats())}"
        )

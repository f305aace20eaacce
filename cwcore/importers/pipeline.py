"""The import pipeline: paths -> importer -> scrub -> documents (:mod:`cwcore.importers.prepared`,
in a second process for large imports) -> admission, streaming acks.

``emit`` receives small JSON-able events as work commits: ``{"type": "ack", ...}`` for each newly
acknowledged document (after its batch committed), ``{"type": "progress", "file", "files",
"total"}`` after each file and ``{"type": "notice", "message"}`` for skipped files.

A Markdown file is a document, not a session log: the pipeline never turns it into sessions. It
counts as a file read and is handed back in ``markdown_files`` for the caller to import as a
Markdown document (:mod:`cwcore.markdown.ingest`, which the engine's ``import`` method runs).
"""

from __future__ import annotations

import dataclasses
import errno
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from cwcore.config import Settings
from cwcore.contract.imports import ImportProblem
from cwcore.errors import CwError, UnknownFormat, excerpt
from cwcore.importers import base, prepared, streaming
from cwcore.importers import markdown as markdown_importer
from cwcore.importers.documents import (
    build_documents,
    session_counts,
    session_spec,
)
from cwcore.importers.streaming import LineProblem
from cwcore.importers.summary import ImportSummary
from cwcore.model import DocumentSpec, ParsedSession
from cwcore.store import identity, keys
from cwcore.store.admission import Admission
from cwcore.store.records import SessionRecord, decode_session

__all__ = ["BATCH_DOCUMENTS", "ImportProblem", "ImportSummary", "check_format", "import_paths"]

Emit = Callable[[dict[str, Any]], None]

#: Documents per WriteBatch in bulk admission: large enough to amortize the commit, small
#: enough that acknowledgements stream and a batch stays a few MiB.
BATCH_DOCUMENTS = 256

_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv"}


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
    """Resolve paths to ``(file, importer)`` pairs; record errors and notices in ``summary``.

    Raises :class:`UnknownFormat` when a file named explicitly does not look like a forced
    ``fmt`` at all, before anything is read further or written.
    """
    forced = None if fmt == "auto" else base.get(fmt)
    work: list[tuple[Path, base.Importer]] = []
    for raw in paths:
        path = Path(raw).expanduser()
        if path.is_dir():
            for file in _walk(path):
                if _companion(file, forced) is not None:
                    # A sidecar or tree file of a multi-file session: read with the session
                    # file it belongs to, so it is counted, never reported one by one.
                    summary.companions += 1
                    continue
                importer = _detect(file) if forced is None else _accepting(forced, file)
                if (
                    importer is not None
                    and forced is None
                    and importer.name == markdown_importer.NAME
                ):
                    # Folders of session logs often hold READMEs and notes: Markdown joins an
                    # automatic folder import only when asked for (--format markdown).
                    importer = None
                if importer is None:
                    what = "not a session log" if forced is None else f"not a {fmt} log"
                    note = f"skipped {file}: {what}"
                    summary.notice(note)
                    emit({"type": "notice", "message": note})
                    continue
                work.append((file, importer))
            continue
        problem = _unreadable(path)
        if problem:
            summary.error(str(path), None, problem)
            continue
        try:
            if forced is not None:
                if not _forced_accepts(forced, path):
                    raise UnknownFormat(_mismatch(path, forced))
                importer = forced
            else:
                importer = base.detect(path)
        except OSError as exc:
            summary.error(str(path), None, f"cannot read: {exc.strerror or exc}")
            continue
        if importer is None:
            owner = _companion(path, forced)
            reason = (
                f"part of a {owner.name} session, read with the session's own file"
                if owner is not None
                else "not a recognized session log (try --format)"
            )
            summary.error(str(path), None, reason)
            continue
        work.append((path, importer))
    return work


def _companion(file: Path, forced: base.Importer | None) -> base.Importer | None:
    """The importer whose multi-file sessions ``file`` is a part of (not their entry file)."""
    for importer in [forced] if forced is not None else base.importers():
        check = getattr(importer, "is_companion", None)
        try:
            if check is not None and check(file):
                return importer
        except OSError:
            continue
    return None


#: Lines a forced format may look through for one of its own when the first ones are not.
FORCED_LOOK_LINES = 2000


def _forced_accepts(importer: base.Importer, path: Path) -> bool:
    """Whether a file given with ``--format`` looks like that format: its head, else — a file
    whose first lines are damaged must still yield its valid ones — its first
    :data:`FORCED_LOOK_LINES` lines (within the head's byte budget)."""
    if base.accepts(importer, path, base.read_head(path)):
        return True
    return base.accepts(importer, path, base.read_head(path, lines=FORCED_LOOK_LINES))


def _unreadable(path: Path) -> str | None:
    """Why a file named explicitly cannot be read as a log, or None. A FIFO or a device would
    block the reader (a daemon worker) forever, so only regular files are opened."""
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        if path.is_symlink():
            return "a symbolic link that leads nowhere (a loop, or a missing target)"
        return "no such file or directory" if exc.errno == errno.ENOENT else f"cannot read: {exc}"
    if not stat.S_ISREG(mode):
        return "not a regular file (a FIFO, socket or device): nothing was read"
    return None


def _mismatch(path: Path, forced: base.Importer) -> str:
    detected = _detect(path)
    looks = f"it looks like {detected.name}" if detected else "cw does not recognize it"
    return f"{path} is not a {forced.name} log ({looks}); nothing was imported"


def _detect(file: Path) -> base.Importer | None:
    try:
        return base.detect(file)
    except (OSError, UnicodeDecodeError):
        return None


def _accepting(importer: base.Importer, file: Path) -> base.Importer | None:
    try:
        return importer if _forced_accepts(importer, file) else None
    except (OSError, UnicodeDecodeError):
        return None


def import_paths(
    admission: Admission,
    paths: Iterable[str | Path],
    *,
    fmt: str = "auto",
    project: str | None = None,
    settings: Settings,
    emit: Emit = lambda event: None,
    cancelled: Callable[[], bool] = lambda: False,
    markdown_files: list[Path] | None = None,
) -> ImportSummary:
    """Import files and folders. Never raises for a bad file or line: they become ``errors``,
    and the other files still import. Raises :class:`UnknownFormat` for an unknown ``fmt`` or
    an explicitly named file that does not look like a forced ``fmt``, before any work.

    The files are read, scrubbed and cut into documents by :func:`prepared.items` (in a second
    process for large imports) and admitted here, in order; a cancelled import stops between
    sessions (what was admitted stays acknowledged).

    The Markdown files met (named explicitly under ``fmt="auto"``) are counted as files and
    appended to ``markdown_files`` in the order met; without that list they import nothing."""
    summary = ImportSummary()
    if fmt != "auto":
        base.get(fmt)  # an unknown --format is the caller's error, raised before any work
    work = plan(paths, fmt, summary, emit)
    total = len(work)
    logs = [(path, importer) for path, importer in work if importer.name != markdown_importer.NAME]
    source = prepared.items(logs, project, settings)
    read = 0  # bytes of the files read
    try:
        for index, (path, importer) in enumerate(work, start=1):
            if cancelled():
                break
            summary.files += 1
            if importer.name == markdown_importer.NAME:
                if markdown_files is not None:
                    markdown_files.append(path)
            else:
                _admit_file(admission, source, str(path), settings, summary, emit, cancelled)
            emit({"type": "progress", "file": str(path), "files": index, "total": total})
            read += _size(path)
    finally:
        close = getattr(source, "close", None)
        if close is not None:
            close()  # a cancelled import stops the reading process
    if read >= streaming.RELEASE_AFTER_BYTES:
        streaming.release_freed_memory()  # the chunks are gone; give their heap back
    return summary


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _surrogates_notice(path: str, replaced: int, summary: ImportSummary, emit: Emit) -> None:
    """Say (once a file) how many lone surrogates of ``path`` were shown as U+FFFD."""
    if not replaced:
        return
    note = (
        f"{path}: {replaced} lone surrogate(s) (text that is not valid Unicode) shown as "
        "U+FFFD; the source lines are kept as they are"
    )
    summary.notice(note)
    emit({"type": "notice", "message": note})


def _admit_file(
    admission: Admission,
    source: Iterator[prepared.Item],
    path: str,
    settings: Settings,
    summary: ImportSummary,
    emit: Emit,
    cancelled: Callable[[], bool],
) -> None:
    """Admit one file's items from ``source``, up to its :class:`~prepared.FileDone`, or
    until the import is cancelled. A streamed session whose first chunk was not admitted is
    not admitted in part either."""
    refused: set[str] = set()  # streamed sessions whose first chunk was not admitted
    for item in source:
        if isinstance(item, prepared.FileDone):
            _surrogates_notice(path, item.replaced, summary, emit)
            return
        if isinstance(item, LineProblem):
            summary.error(path, item.line, item.reason)
        elif isinstance(item, (prepared.FileFailure, prepared.SessionFailure)):
            summary.error(path, None, item.reason)
        elif item.chunked and item.parsed.session_id in refused:
            continue
        else:
            if cancelled():
                return
            native = item.parsed.session_id
            try:
                ok = admit_parsed(
                    admission,
                    item.parsed,
                    settings,
                    summary,
                    path,
                    emit,
                    messages=item.messages,
                    first=item.index == 0,
                    title=item.title if item.chunked else _DERIVE,
                    documents=item.documents,
                )
            except Exception as exc:  # one session must never stop the import of the others
                summary.error(path, None, prepared.session_failure(native, exc))
                ok = False
            if not ok and item.chunked and item.index == 0:
                refused.add(native)


_DERIVE = object()


def admit_parsed(
    admission: Admission,
    parsed: ParsedSession,
    settings: Settings,
    summary: ImportSummary,
    path: str,
    emit: Emit,
    *,
    messages: int | None = None,
    first: bool = True,
    title: str | object | None = _DERIVE,
    documents: Sequence[DocumentSpec] | None = None,
) -> bool:
    """Admit one parsed session, or one chunk of a streamed session: ``messages`` is then the
    whole session's message count, ``first`` says whether this is its first chunk (the one that
    counts it and says what is said once) and ``title`` its whole title. Returns False when the
    session was not admitted (no messages, or admission refused it). ``documents``: the
    session cut under its own identity (:mod:`cwcore.importers.prepared`), used unless it is
    stored under another id or project here."""
    if messages is None:
        messages = session_counts(parsed)["messages"]
    if not messages:
        # A header-only run, a file of metadata, a format whose conversation cw cannot read:
        # nothing to list as a session, and the user hears why.
        note = f"{path}: session {parsed.session_id} ({parsed.agent}) has no messages; not imported"
        summary.notice(note)
        summary.empty += 1
        emit({"type": "notice", "message": note})
        return False
    given = parsed
    parsed, native = _identify(admission, parsed)
    raw = admission.store.get("scopes", keys.SESSION.encode(parsed.session_id))
    if raw is not None:
        parsed = _keep_project(
            decode_session(raw, "session"), parsed, path, summary, emit, quiet=not first
        )
    if documents is not None and parsed is given:
        docs = list(documents)
    else:  # ids and projects are part of each document: cut again under the stored ones
        docs = build_documents(parsed, segment_bytes=settings.segment_bytes)
    spec = session_spec(parsed)
    if title is not _DERIVE:
        spec = dataclasses.replace(spec, title=title if isinstance(title, str) else None)
    if native != parsed.session_id:
        spec = dataclasses.replace(spec, native_id=native)
        if raw is None:  # said once, when the session is first stored
            note = (
                f"{path}: another agent's session is {native}: this {parsed.agent} session is "
                f"{parsed.session_id}"
            )
            summary.notice(note)
            emit({"type": "notice", "message": note})
    events = parsed.events
    del parsed  # the documents hold what admission needs: a chunk's messages go with them
    for start in range(0, max(len(docs), 1), BATCH_DOCUMENTS):
        group = docs[start : start + BATCH_DOCUMENTS]
        try:
            result = admission.admit(spec, events, group)
        except CwError as exc:
            summary.error(path, None, f"session {spec.session_id}: {exc.message}")
            return False
        if start == 0 and first:  # counted once the session is in the store, not when refused
            summary.sessions += 1
            summary.messages += messages
        events = ()
        for rejected in result.rejected:
            summary.error(path, None, rejected.error.message)
        for ack in result.acks:
            if ack.new:
                summary.imported += 1
                emit({"type": "ack", **ack.to_json()})
            else:
                summary.skipped += 1
    return True


def _keep_project(
    record: SessionRecord,
    parsed: ParsedSession,
    path: str,
    summary: ImportSummary,
    emit: Emit,
    *,
    quiet: bool = False,
) -> ParsedSession:
    """``parsed`` in the project its stored session (``record``) belongs to: membership is
    decided once (spec 003), so turns that arrive under another project (``--project``,
    another ``cwd``) join the session where it is, and the import says so."""
    project = str(record["project"])
    if project == parsed.project:
        return parsed
    if quiet:  # a later chunk of a streamed session: said with its first
        return dataclasses.replace(parsed, project=project)
    note = (
        f"{path}: session {parsed.session_id} belongs to project {project}; its new turns stay "
        f"there (this import named {parsed.project})"
    )
    summary.notice(note)
    emit({"type": "notice", "message": note})
    return dataclasses.replace(parsed, project=project)


def _identify(admission: Admission, parsed: ParsedSession) -> tuple[ParsedSession, str]:
    """``parsed`` under its store id (:func:`cwcore.store.identity.session_key`: its agent's and
    native id's), with the ancestors it names mapped the same way; and its native id."""
    store = admission.store
    native = parsed.session_id
    key = identity.session_key(store, native, parsed.agent)
    lineage = tuple(identity.session_key(store, s, parsed.agent) for s in parsed.lineage)
    parent = parsed.parent_session
    if parent is not None:
        parent = identity.session_key(store, parent, parsed.agent)
    if key == native and lineage == parsed.lineage and parent == parsed.parent_session:
        return parsed, native
    return dataclasses.replace(
        parsed, session_id=key, lineage=lineage, parent_session=parent
    ), native


def check_format(fmt: str) -> None:
    if fmt != "auto" and fmt not in base.formats():
        raise UnknownFormat(
            f"unknown format {excerpt(fmt)}; known: auto, {', '.join(base.formats())}"
        )

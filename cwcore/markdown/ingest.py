"""Markdown files and folders -> ``markdown`` documents, admitted like every other document.

One **root** per imported folder (a file named on its own belongs to the nearest folder already
imported as a root that contains it, else to its own folder). A root is one synthetic session,
``md-<digest of the root path>``, agent ``markdown``, project ``--project`` or the folder's name
(fixed by the first import: membership is immutable). Each ``.md``/``.markdown`` file under it is
one document, ``m-<digest of root and relative path>``, of kind ``markdown``: ONE part, role
``system``, kind ``text``, message id = the relative path (percent-encoded separators), text =
the file's text exactly (CRLF and a BOM kept; secrets scrubbed when ``scrubSecrets`` is on, the
count in ``metadata.markdown.redactions``). One part keeps the document text equal to the file
text — several parts would be joined by a separator that is not in the file — so character
offsets into the document ARE offsets into the file; headings live in metadata instead.

Per root the work runs under an exclusive file lock (``CW_HOME/locks/<session>.lock``): two
imports of one folder never prepare it at the same time. Per file:

1. read the bytes, hash them, compute the fingerprint (:mod:`cwcore.markdown.fingerprint`);
   an unchanged file is skipped here, before parsing, and nothing is written;
2. otherwise parse it (:mod:`cwcore.markdown.parse`) and admit the document; a changed file
   becomes a new version of the same document id, superseding the old one (reason
   ``changed``), which stays readable with ``show_document(..., include_superseded=True)``;
3. compute the lexical evidence units (:mod:`cwcore.markdown.evidence`) and write them with the
   fingerprint record in one batch.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cwcore import clock
from cwcore.config import Settings
from cwcore.errors import CwError
from cwcore.importers.pipeline import ImportSummary
from cwcore.markdown import evidence
from cwcore.markdown import fingerprint as fp
from cwcore.markdown.parse import Structure, analyze
from cwcore.model import DocumentPart, DocumentSpec, SessionSpec
from cwcore.store import codec, keys
from cwcore.store.admission import Admission
from cwcore.store.limits import MAX_METADATA_BYTES, MAX_SOURCE_BYTES
from cwcore.store.records import decode_head
from cwcore.store.rocks import Store

Emit = Callable[[dict[str, Any]], None]

SUFFIXES = (".md", ".markdown")
AGENT = "markdown"
DEFAULT_PROJECT = "default"
#: Line-index entries kept in metadata; longer files keep every k-th line start.
MAX_LINE_INDEX = 4_096
#: Sections kept in metadata; later ones have no recorded heading path (never a wrong one).
MAX_SECTIONS = 2_048
_SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv"}


def is_markdown(path: Path) -> bool:
    return path.suffix.lower() in SUFFIXES


@dataclass
class Context:
    """What an import needs from the engine."""

    home: Path
    store: Store
    admission: Admission
    settings: Settings
    emit: Emit = lambda event: None
    cancelled: Callable[[], bool] = lambda: False


@dataclass
class Root:
    path: Path
    files: list[Path] = field(default_factory=list)


def walk(path: Path) -> Iterator[Path]:
    """Files under ``path`` in sorted order, skipping hidden and tool folders (as the pipeline)."""
    for child in sorted(path.iterdir()):
        if child.name in _SKIP_DIRS or child.name.startswith("."):
            continue
        if child.is_dir() and not child.is_symlink():
            yield from walk(child)
        elif child.is_file():
            yield child


@contextmanager
def folder_lock(home: Path, session: str) -> Iterator[None]:
    """An exclusive lock on one root's preparation (``flock``; a no-op where unavailable)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    directory = home / "locks"
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / f"{session}.lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def known_root(store: Store, file: Path) -> Path | None:
    """The deepest folder already imported as a root that contains ``file``."""
    best: Path | None = None
    for record in fp.roots(store):
        root = Path(record["root"])
        if file.is_relative_to(root) and (best is None or len(root.parts) > len(best.parts)):
            best = root
    return best


def plan_roots(
    store: Store,
    files: Sequence[Path],
    folders: Sequence[Path],
) -> list[Root]:
    """Group files by root: the deepest of ``folders`` holding a file, else a known root, else
    the file's own folder. Roots keep the order of their first file."""
    roots: dict[Path, Root] = {}
    ordered = sorted(folders, key=lambda p: len(p.parts), reverse=True)
    for file in files:
        root = next((f for f in ordered if file.is_relative_to(f)), None)
        root = root or known_root(store, file) or file.parent
        roots.setdefault(root, Root(root)).files.append(file)
    return list(roots.values())


def _iso_mtime(path: Path) -> str | None:
    try:
        return clock.iso(datetime.fromtimestamp(path.stat().st_mtime, UTC))
    except OSError:
        return None


def _byte_offsets(text: str, positions: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    size = last = 0
    for pos in sorted(set(positions)):
        size += len(text[last:pos].encode("utf-8", "surrogatepass"))
        last = pos
        out[pos] = size
    return out


def line_ending(text: str) -> str:
    crlf = text.count("\r\n")
    lf = text.count("\n") - crlf
    if crlf and lf:
        return "mixed"
    return "crlf" if crlf else ("lf" if lf else "none")


def metadata(structure: Structure, info: dict[str, Any]) -> dict[str, Any]:
    """``markdown`` (file facts), ``sections`` (heading path, character and byte range, lines)
    and ``lineIndex`` (line starts, every ``stride``-th when the file is long)."""
    text = structure.text
    stride = max(1, -(-structure.lines // MAX_LINE_INDEX))
    index_starts = structure.line_starts[::stride]
    sections = structure.sections[:MAX_SECTIONS]
    byte_at = _byte_offsets(text, index_starts + [p for s in sections for p in (s.start, s.end)])
    meta: dict[str, Any] = {
        "markdown": {**info, "lines": structure.lines, "characters": len(text)},
        "sections": [
            {
                "headingPath": list(s.path),
                "start": s.start,
                "end": s.end,
                "byteStart": byte_at[s.start],
                "byteEnd": byte_at[s.end],
                "line": s.line,
                "lineEnd": structure.last_line(s.start, s.end) if s.end > s.start else s.line,
            }
            for s in sections
        ],
        "lineIndex": {
            "stride": stride,
            "start": index_starts,
            "byteStart": [byte_at[p] for p in index_starts],
        },
    }
    if len(structure.sections) > MAX_SECTIONS:
        meta["markdown"]["sectionsTruncated"] = True
    if len(codec.dumps(meta)) > MAX_METADATA_BYTES // 2:  # pathological: keep it admissible
        meta["lineIndex"] = {"stride": stride, "start": [], "byteStart": []}
        if len(codec.dumps(meta)) > MAX_METADATA_BYTES // 2:
            meta["sections"] = []
            meta["markdown"]["sectionsTruncated"] = True
    return meta


def build_document(
    *,
    root: Path,
    relative: str,
    path: Path,
    text: str,
    sha256: str,
    project: str,
    redactions: int = 0,
) -> tuple[DocumentSpec, Structure]:
    structure = analyze(text)
    stamp = _iso_mtime(path)
    info = {
        "path": str(path),
        "root": str(root),
        "relativePath": relative,
        "sha256": sha256,
        "implementation": fp.IMPLEMENTATION,
        "lineEnding": line_ending(text),
        "redactions": redactions,
    }
    title = next((h.title for h in structure.headings if h.title), None) or path.name
    spec = DocumentSpec(
        document_id=fp.document_id(root, relative),
        kind="markdown",
        session_id=fp.session_id(root),
        project=project,
        agent=AGENT,
        parts=(
            DocumentPart(
                message_key=f"system:{fp.message_id(relative)}",
                role="system",
                kind="text",
                text=text,
                timestamp=stamp,
            ),
        ),
        created=stamp,
        title=title,
        metadata=metadata(structure, info),
        supersede_reason="changed",
    )
    return spec, structure


def _scrub(text: str, settings: Settings) -> tuple[str, int]:
    if not settings.scrub_secrets:
        return text, 0
    from cwcore.importers import scrub

    clean = scrub.scrub_text(text)
    if clean == text:
        return text, 0
    return clean, clean.count("[REDACTED:") - text.count("[REDACTED:")


def import_root(
    ctx: Context, root: Root, project: str | None, summary: ImportSummary, *, count_files: bool
) -> int:
    """Import one root's files; returns the number of new document versions."""
    session = fp.session_id(root.path)
    imported = 0
    with folder_lock(ctx.home, session):
        record = fp.get(ctx.store, fp.MD_ROOT, session)
        name = project or root.path.name or DEFAULT_PROJECT
        if record is not None:
            if project and project != record["project"]:
                note = (
                    f"{root.path}: already imported as project {record['project']!r}; "
                    f"--project {project!r} ignored"
                )
                summary.notice(note)
                ctx.emit({"type": "notice", "message": note})
            name = record["project"]
        spec = SessionSpec(
            session_id=session,
            project=name,
            agent=AGENT,
            title=root.path.name or str(root.path),
            cwd=str(root.path),
            source_path=str(root.path),
        )
        unchanged = summary.skipped
        for file in root.files:
            if ctx.cancelled():
                break
            if count_files:
                summary.files += 1
            try:
                imported += _import_file(ctx, root.path, file, spec, record, summary)
            except CwError as exc:
                summary.error(str(file), None, exc.message)
            except OSError as exc:
                summary.error(str(file), None, f"cannot read: {exc.strerror or exc}")
            record = record or fp.get(ctx.store, fp.MD_ROOT, session)
        if imported or summary.skipped > unchanged:
            summary.sessions += 1  # a root counts once one of its files is in the archive
    return imported


def _import_file(
    ctx: Context,
    root: Path,
    file: Path,
    session: SessionSpec,
    root_record: dict[str, Any] | None,
    summary: ImportSummary,
) -> int:
    relative = file.relative_to(root).as_posix()
    try:
        relative.encode("utf-8")
        str(file).encode("utf-8")
    except UnicodeEncodeError:
        summary.error(str(file), None, "the path is not valid UTF-8")
        return 0
    document = fp.document_id(root, relative)
    # One byte past the limit is enough to refuse: an oversized file is never read whole.
    with file.open("rb") as fh:
        raw = fh.read(MAX_SOURCE_BYTES + 1)
    if len(raw) > MAX_SOURCE_BYTES:
        size = max(file.stat().st_size, len(raw))
        summary.error(str(file), None, f"{size} bytes; a document holds at most {MAX_SOURCE_BYTES}")
        return 0
    sha = fp.raw_hash(raw)
    print_ = fp.fingerprint(sha, document, session.project, ctx.settings)
    if fp.unchanged(ctx.store, document, print_):
        summary.skipped += 1  # before parsing: nothing read beyond the bytes, nothing written
        return 0
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        summary.error(str(file), None, f"not UTF-8 text (byte {exc.start})")
        return 0
    text, redactions = _scrub(text, ctx.settings)
    spec, structure = build_document(
        root=root,
        relative=relative,
        path=file,
        text=text,
        sha256=sha,
        project=session.project,
        redactions=redactions,
    )
    summary.messages += 1
    result = ctx.admission.admit(session, (), [spec])
    for rejected in result.rejected:
        summary.error(str(file), None, rejected.error.message)
    if not result.acks:
        return 0
    ack = result.acks[0]
    if ack.new:
        ctx.emit({"type": "ack", **ack.to_json()})
    else:
        summary.skipped += 1
    coverage = evidence.uncovered_units(
        text,
        structure.blocks,
        window_tokens=ctx.settings.window_tokens,
        window_overlap=ctx.settings.window_overlap,
    )
    with ctx.store.lock:
        head = ctx.store.get("documents", keys.DOC_HEAD.encode(document))
        digest = decode_head(head)["digest"] if head else None
        batch = ctx.store.batch()
        totals = evidence.stats(ctx.store)
        evidence.replace_units(ctx.store, batch, document, ack.version, coverage.units, totals)
        batch.put(
            fp.FAMILY,
            fp.MD_FILE.encode(document),
            codec.encode_record(
                {
                    "documentId": document,
                    "version": ack.version,
                    "digest": digest,
                    "fingerprint": print_,
                    "sha256": sha,
                    "implementation": fp.IMPLEMENTATION,
                    "path": str(file),
                    "root": str(root),
                    "relativePath": relative,
                    "session": session.session_id,
                    "evidence": coverage.to_json(),
                }
            ),
        )
        if root_record is None:
            batch.put(
                fp.FAMILY,
                fp.MD_ROOT.encode(session.session_id),
                codec.encode_record(
                    {
                        "root": str(root),
                        "sessionId": session.session_id,
                        "project": session.project,
                        "prepared": clock.iso(clock.now()),
                    }
                ),
            )
        ctx.store.commit(batch)
    return 1 if ack.new else 0


def _resolve(raw: str) -> Path:
    return Path(os.path.abspath(Path(raw).expanduser()))


def import_markdown(ctx: Context, paths: Sequence[str], project: str | None) -> ImportSummary:
    """``cw import --format markdown``: folders (their ``.md``/``.markdown`` files) and files
    (any text file named explicitly is read as Markdown)."""
    summary = ImportSummary()
    files: list[Path] = []
    folders: list[Path] = []
    for raw in paths:
        path = _resolve(raw)
        if path.is_dir():
            folders.append(path)
            for file in walk(path):
                if is_markdown(file):
                    files.append(file)
                else:
                    note = f"skipped {file}: not a Markdown file"
                    summary.notice(note)
                    ctx.emit({"type": "notice", "message": note})
        elif path.is_file():
            files.append(path)
        else:
            summary.error(str(path), None, "no such file or directory")
    files = list(dict.fromkeys(files))
    total = len(files)
    done = 0
    imported = 0
    for root in plan_roots(ctx.store, files, folders):
        if ctx.cancelled():
            break
        imported += import_root(ctx, root, project, summary, count_files=True)
        for file in root.files:
            done += 1
            ctx.emit({"type": "progress", "file": str(file), "files": done, "total": total})
    summary.imported += imported
    return summary


def import_deferred(
    ctx: Context,
    paths: Sequence[str],
    files: Sequence[Path],
    project: str | None,
) -> ImportSummary:
    """The Markdown files an ``--format auto`` import detected (the pipeline already counted
    them as files): rooted at the deepest requested folder holding each."""
    summary = ImportSummary()
    folders = [p for p in (_resolve(raw) for raw in paths) if p.is_dir()]
    resolved = list(dict.fromkeys(_resolve(str(f)) for f in files))
    for root in plan_roots(ctx.store, resolved, folders):
        if ctx.cancelled():
            break
        summary.imported += import_root(ctx, root, project, summary, count_files=False)
    return summary

"""The reading side of an import, in this process or in a second one.

Admission is a single writer and stays in the process that holds the store. Everything before it
depends only on the files and the settings: reading and decoding the source lines, replacing lone
surrogates, scrubbing secrets, a streamed session's title, and cutting each session into documents
with their structural cues — about half of an import's CPU on the dev corpus (pyinstrument:
reading 14 %, scrubbing 14 %, documents and cues 20 %). :func:`produce` yields that work as
:data:`Item` values, file by file; :func:`items` runs it here or, when the files are large
enough and the machine has a second core, in a child process (:func:`_serve`, run by
``python -c``) whose items arrive pickled through a pipe. Either way the caller
admits the same items in the same order, so an import stores the same records.

The child is a plain subprocess, not :mod:`multiprocessing`: it inherits none of the store's
handles or the daemon's threads, and it never imports a parent's ``__main__``. The pipe is the
backpressure: the child blocks once the parent is a pipe buffer behind, so memory stays bounded
by a batch of items, not the file. A child that dies or sends garbage costs the file it was
reading a one-line error; the files after it are read in this process.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import struct
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from cwcore.config import Settings
from cwcore.errors import CwError
from cwcore.importers import base
from cwcore.importers.documents import build_documents, session_title
from cwcore.importers.streaming import LineProblem, SessionChunk
from cwcore.importers.surrogates import replace_lone_surrogates
from cwcore.model import DocumentSpec, ParsedSession

#: Bytes of session files (Markdown aside) from which an import reads in a child process: below
#: it the child's start (about 0.3 s of imports) costs more than the second core saves.
PARALLEL_MIN_BYTES = 8 * 1024 * 1024
_LEN = struct.Struct(">I")
#: The child's program: the items' classes must pickle under this module's name, not __main__.
_CHILD = (
    "import sys; from cwcore.importers.prepared import _serve; "
    "_serve(sys.stdin.buffer, sys.stdout.buffer)"
)


@dataclass(frozen=True)
class Prepared:
    """One session, or one chunk of a streamed session, ready for admission: surrogates
    replaced, secrets scrubbed, cut into ``documents`` under its own (native) identity.

    ``chunked``: from a streaming importer, so ``index`` (0 for a session's first chunk),
    ``messages`` (the whole session's count) and ``title`` describe the whole session;
    otherwise the admission derives them from ``parsed``. ``replaced``: lone surrogates."""

    parsed: ParsedSession
    documents: tuple[DocumentSpec, ...]
    replaced: int
    chunked: bool = False
    index: int = 0
    messages: int | None = None
    title: str | None = None


@dataclass(frozen=True)
class SessionFailure:
    """A session that could not be prepared: the import's one-line error for it."""

    reason: str


@dataclass(frozen=True)
class FileFailure:
    """A file its importer could not read (the sessions before the failure still come)."""

    reason: str


@dataclass(frozen=True)
class FileDone:
    """The end of one file's items; ``replaced``: its lone surrogates shown as U+FFFD."""

    replaced: int


Item = Prepared | SessionFailure | FileFailure | FileDone | LineProblem


def file_failure(exc: Exception) -> str:
    """The one-line problem of a file its importer could not read: cw's own message, an OS or
    decoding failure, or any other exception by its type (never a traceback)."""
    if isinstance(exc, CwError):
        return exc.message
    if isinstance(exc, (OSError, UnicodeDecodeError)):
        return f"cannot read: {exc}"
    return f"cannot import: {type(exc).__name__}: {exc}"


def session_failure(session_id: str, exc: Exception) -> str:
    """The one-line problem of a session that could not be prepared or admitted."""
    if isinstance(exc, CwError):
        return f"session {session_id}: {exc.message}"
    return f"cannot import session: {type(exc).__name__}: {exc}"


def scrubbed(parsed: ParsedSession, settings: Settings) -> ParsedSession:
    if not settings.scrub_secrets:
        return parsed
    from cwcore.importers import scrub

    return scrub.scrub_session(parsed)


def _prepare(parsed: ParsedSession, settings: Settings, **chunk: Any) -> Prepared:
    parsed, replaced = replace_lone_surrogates(parsed)
    parsed = scrubbed(parsed, settings)
    documents = tuple(build_documents(parsed, segment_bytes=settings.segment_bytes))
    return Prepared(parsed, documents, replaced, **chunk)


def produce_file(
    importer: base.Importer, path: Path, project: str | None, settings: Settings
) -> Iterator[Item]:
    """One file's items, in file order, ending with :class:`FileDone`. Never raises for the
    file's content: an unreadable file is a :class:`FileFailure`, a session that cannot be cut
    into documents a :class:`SessionFailure`."""
    replaced = 0
    stream = getattr(importer, "stream", None)
    if stream is None:
        try:
            parsed_file = importer.parse(path, project=project)
        except Exception as exc:  # one hostile file must not stop the import of the others
            yield FileFailure(file_failure(exc))
            yield FileDone(0)
            return
        for line, reason in parsed_file.problems:
            yield LineProblem(line, reason)
        for parsed in parsed_file.sessions:
            try:
                prepared = _prepare(parsed, settings)
            except Exception as exc:  # one session must never stop the import of the others
                yield SessionFailure(session_failure(parsed.session_id, exc))
                continue
            replaced += prepared.replaced
            yield prepared
        yield FileDone(replaced)
        return
    titles: dict[str, str | None] = {}  # session -> its whole title, derived once
    chunks: Iterator[SessionChunk | LineProblem] = stream(path, project=project)
    while True:
        try:
            item = next(chunks, None)
        except Exception as exc:  # the chunks before the failure stay
            yield FileFailure(file_failure(exc))
            break
        if item is None:
            break
        if isinstance(item, LineProblem):
            yield item
            continue
        native = item.session.session_id
        try:
            if native not in titles:
                probe = dataclasses.replace(item.session, messages=item.title_messages, events=())
                probe, _ = replace_lone_surrogates(probe)
                titles[native] = session_title(scrubbed(probe, settings))
            prepared = _prepare(
                item.session,
                settings,
                chunked=True,
                index=item.index,
                messages=item.messages,
                title=titles[native],
            )
        except Exception as exc:
            yield SessionFailure(session_failure(native, exc))
            continue
        replaced += prepared.replaced
        yield prepared
    yield FileDone(replaced)


def produce(
    work: Sequence[tuple[Path, base.Importer]], project: str | None, settings: Settings
) -> Iterator[Item]:
    """The items of every file of ``work`` in order, each file's closed by :class:`FileDone`."""
    for path, importer in work:
        yield from produce_file(importer, path, project, settings)


def items(
    work: Sequence[tuple[Path, base.Importer]], project: str | None, settings: Settings
) -> Iterator[Item]:
    """:func:`produce`, in a child process when ``work`` holds at least
    :data:`PARALLEL_MIN_BYTES` and this process may run on more than one core. Closing the
    iterator early (a cancelled import) stops the child."""
    if len(work) == 0 or not _worth_a_child(work):
        return produce(work, project, settings)
    return _from_child(work, project, settings)


def _worth_a_child(work: Sequence[tuple[Path, base.Importer]]) -> bool:
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    if cores < 2:
        return False
    total = 0
    for path, _ in work:
        try:
            total += path.stat().st_size
        except OSError:
            continue
    return total >= PARALLEL_MIN_BYTES


def _from_child(
    work: Sequence[tuple[Path, base.Importer]], project: str | None, settings: Settings
) -> Iterator[Item]:
    job = ([(str(path), importer.name) for path, importer in work], project, settings)
    package_root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
    done = 0  # files whose FileDone arrived
    with tempfile.TemporaryFile() as errors:
        child = subprocess.Popen(
            [sys.executable, "-c", _CHILD],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=env,
        )
        try:
            assert child.stdin is not None and child.stdout is not None
            try:
                pickle.dump(job, child.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                child.stdin.close()
                for item in _frames(child.stdout):
                    if isinstance(item, FileDone):
                        done += 1
                    yield item
            except (OSError, EOFError, pickle.UnpicklingError, struct.error):
                pass  # the child died or wrote garbage: said below, the rest read here
            if done < len(work):
                child.kill()
                child.wait()
                errors.seek(0)
                last = errors.read().decode("utf-8", "replace").strip().splitlines()[-1:]
                why = f": {last[0][:200]}" if last else ""
                yield FileFailure(
                    f"cannot import: the reading process ended (exit {child.returncode}){why}"
                )
                yield FileDone(0)
                yield from produce(work[done + 1 :], project, settings)
        finally:
            if child.poll() is None:
                child.kill()
            child.wait()


def _frames(stream: IO[bytes]) -> Iterator[Item]:
    while True:
        head = stream.read(_LEN.size)
        if not head:
            return
        (size,) = _LEN.unpack(head)
        body = stream.read(size)
        if len(body) != size:
            raise EOFError("a frame was cut short")
        yield pickle.loads(body)


def _serve(source: IO[bytes], sink: IO[bytes]) -> None:
    """The child's side: read the job, write each item as a frame (its length, then its
    pickle). One item a frame: a streamed chunk holds up to ``CHUNK_BYTES`` of source, so
    batching items would multiply what either side holds at once."""
    names, project, settings = pickle.load(source)
    work = [(Path(path), base.get(name)) for path, name in names]
    for item in produce(work, project, settings):
        body = pickle.dumps(item, protocol=pickle.HIGHEST_PROTOCOL)
        sink.write(_LEN.pack(len(body)))
        sink.write(body)
        if isinstance(item, FileDone):
            sink.flush()
    sink.flush()

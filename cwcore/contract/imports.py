"""The ``import`` and ``sync`` methods' requests and their answer, :class:`ImportReport`: the
counts, and the problems, notices and (for a sync) per-file outcomes an import met, bounded.

:class:`cwcore.importers.summary.ImportSummary` accumulates them while an import runs (bounding
the lists) and freezes them into the report the faces receive (``cw import --json``, ``cw sync
--json``). The JSON is derived from the fields (:mod:`cwcore.contract.codec`).
"""

from __future__ import annotations

from typing import Any

from cwcore.clock import parse_time
from cwcore.contract.codec import Record, field, fields_json
from cwcore.errors import InvalidInput


class ImportRequest(Record):
    """``import``: the files and folders (absolute ``paths``, at least one), the ``format``
    (``auto`` detects each file's; ``markdown`` imports Markdown documents; any other is one
    importer's name, which the engine checks against its registry) and the ``project`` every
    session is filed under (absent: each file's own)."""

    paths: tuple[str, ...]
    format: str = "auto"
    project: str | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not self.paths:
            raise InvalidInput("paths must be a non-empty list of strings")
        if self.project is not None and not self.project.strip():
            # An empty name fell back to the file's project: the caller asked for one and got
            # another.
            raise InvalidInput("project name is empty")
        if self.project is not None:
            try:
                self.project.encode("utf-8")
            except UnicodeEncodeError:
                # A lone surrogate (JSON can spell one) cannot be stored as given: imported text
                # has it replaced, but a name the caller chose is kept exactly or refused.
                raise InvalidInput("project name is not valid Unicode text") from None


class SyncRequest(Record):
    """``sync``: only files modified on or after ``since`` (an ISO-8601 time or date), under
    ``home`` instead of the user's home folder (tests, a second machine's layout); each absent
    from the JSON when not set."""

    since: str | None = field(default=None, omit_none=True)
    home: str | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if self.since:
            parse_time(self.since)


class ImportProblem(Record):
    """A rejected line (``line`` 1-based) or file (``line`` None) and why."""

    path: str
    line: int | None
    reason: str


#: What a sync did with one file (:class:`FileOutcome`).
OUTCOMES = ("imported", "unchanged", "skipped", "failed")


class FileOutcome(Record):
    """What a sync did with one file: ``outcome`` is ``imported`` (read, something new
    admitted), ``unchanged`` (its signature matched the last sync, or reading it found nothing
    new), ``skipped`` (not read: not a log of its location's format, unreadable during the
    walk, modified before ``--since``, or a session without messages) or ``failed`` (read, and
    the file was rejected). ``format`` is the importer that read (or would read) it;
    ``messages`` the messages of its sessions (remembered from the last sync when unchanged);
    ``problem`` the one-line reason for a skip or failure, or how many lines were rejected."""

    path: str
    format: str
    outcome: str
    messages: int = 0
    problem: str | None = None


def _problems(body: list[Any]) -> list[ImportProblem]:
    return [ImportProblem.from_json(item) for item in body]


def _outcomes(body: list[Any]) -> list[FileOutcome]:
    return [FileOutcome.from_json(item) for item in body]


class ImportReport(Record, keys="snake"):
    """What ``import`` and ``sync`` answer: files read, documents imported and skipped
    (unchanged), sessions and messages, sessions without a message (``empty``, each also a
    notice), files read with another file's session (``companions``), the problems and notices
    listed and how many more were only counted (``*_truncated``), and for a sync what it did
    with each file (``file_outcomes`` and ``file_outcomes_truncated``: both absent from the JSON
    when none was recorded, so an import's answer keeps exactly its keys). The lists are lists,
    as the summary that accumulated them holds them."""

    files: int = 0
    imported: int = 0
    skipped: int = 0
    sessions: int = 0
    messages: int = 0
    empty: int = 0
    companions: int = 0
    errors: list[ImportProblem] = field(default_factory=list, decode=_problems)
    errors_truncated: int = 0
    notices: list[str] = field(default_factory=list, decode=list)
    notices_truncated: int = 0
    file_outcomes: list[FileOutcome] = field(default_factory=list, decode=_outcomes)
    file_outcomes_truncated: int = 0

    @property
    def error_count(self) -> int:
        """Every problem met, listed or not."""
        return len(self.errors) + self.errors_truncated

    @property
    def file_errors(self) -> int:
        """The listed problems with a whole file (``line`` None)."""
        return sum(1 for problem in self.errors if problem.line is None)

    def to_json(self) -> dict[str, Any]:
        body = fields_json(self)
        if not self.file_outcomes and not self.file_outcomes_truncated:
            del body["file_outcomes"], body["file_outcomes_truncated"]
        return body

"""The summary an import accumulates: counts, and the problems and notices it met, bounded
(frozen into the :class:`~cwcore.contract.imports.ImportReport` the faces receive).

An import of hostile input can meet millions of bad lines. The summary must still reach the user
in one response (the daemon's import result is at most 1 MiB), so it lists at most
:data:`MAX_LISTED` errors and notices each, within :data:`MAX_LISTED_BYTES` of text each, and
counts the rest (``errors_truncated``, ``notices_truncated``). A reason is cut to
:data:`MAX_REASON_CHARS`, so a reason never echoes a whole hostile value.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from cwcore.contract.imports import FileOutcome, ImportProblem, ImportReport

#: Errors (and, separately, notices) listed in a summary; the rest are only counted.
MAX_LISTED = 1000
#: Text (paths, reasons, notices) listed per list, in characters.
MAX_LISTED_BYTES = 256 * 1024
#: Longest reason or notice kept, in characters.
MAX_REASON_CHARS = 500


def _cap(text: str) -> str:
    if len(text) <= MAX_REASON_CHARS:
        return text
    return text[: MAX_REASON_CHARS - 1] + "…"


@dataclass
class ImportSummary:
    """The public summary object: files read, documents imported / skipped (unchanged), errors.

    Add problems with :meth:`error` and notices with :meth:`notice`; ``errors`` and ``notices``
    hold the listed ones, ``errors_truncated`` / ``notices_truncated`` count the others. A sync
    also lists what it did with each file (:meth:`file_outcome`, bounded the same way); the
    JSON carries ``file_outcomes`` and ``file_outcomes_truncated`` only when some were
    recorded, so an import's summary keeps exactly its fields.
    """

    files: int = 0
    imported: int = 0
    skipped: int = 0
    sessions: int = 0
    messages: int = 0
    #: Sessions read but not imported because they hold no message (each also a notice).
    empty: int = 0
    #: Files of a folder walk that belong to a multi-file session (sidecars, a JSON tree):
    #: read with their session's own file, counted here and not listed.
    companions: int = 0
    errors: list[ImportProblem] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    errors_truncated: int = 0
    notices_truncated: int = 0
    file_outcomes: list[FileOutcome] = field(default_factory=list)
    file_outcomes_truncated: int = 0
    _file_errors: int = field(default=0, repr=False, compare=False)
    _error_chars: int = field(default=0, repr=False, compare=False)
    _notice_chars: int = field(default=0, repr=False, compare=False)
    _outcome_chars: int = field(default=0, repr=False, compare=False)

    @property
    def error_count(self) -> int:
        """Every problem met, listed or not."""
        return len(self.errors) + self.errors_truncated

    @property
    def file_errors(self) -> int:
        """Problems with a whole file (``line`` None), listed or not, met by this summary."""
        return self._file_errors

    def error(self, path: str, line: int | None, reason: str) -> None:
        if line is None:
            self._file_errors += 1
        problem = ImportProblem(path, line, _cap(reason))
        size = len(problem.path) + len(problem.reason)
        if len(self.errors) < MAX_LISTED and self._error_chars + size <= MAX_LISTED_BYTES:
            self.errors.append(problem)
            self._error_chars += size
        else:
            self.errors_truncated += 1

    def notice(self, message: str) -> None:
        message = _cap(message)
        if len(self.notices) < MAX_LISTED and self._notice_chars + len(message) <= MAX_LISTED_BYTES:
            self.notices.append(message)
            self._notice_chars += len(message)
        else:
            self.notices_truncated += 1

    def file_outcome(self, outcome: FileOutcome) -> None:
        """List what a sync did with one file (the first :data:`MAX_LISTED`, within
        :data:`MAX_LISTED_BYTES`; the rest counted in ``file_outcomes_truncated``)."""
        if outcome.problem is not None:
            outcome = FileOutcome(
                outcome.path,
                outcome.format,
                outcome.outcome,
                outcome.messages,
                _cap(outcome.problem),
            )
        size = len(outcome.path) + len(outcome.problem or "")
        if len(self.file_outcomes) < MAX_LISTED and self._outcome_chars + size <= MAX_LISTED_BYTES:
            self.file_outcomes.append(outcome)
            self._outcome_chars += size
        else:
            self.file_outcomes_truncated += 1

    def absorb(self, other: ImportSummary) -> None:
        """Add ``other``'s counts, problems and notices to this summary (still bounded)."""
        for name in ("files", "imported", "skipped", "sessions", "messages", "empty", "companions"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for problem in other.errors:
            self.error(problem.path, problem.line, problem.reason)
        self.errors_truncated += other.errors_truncated
        for note in other.notices:
            self.notice(note)
        self.notices_truncated += other.notices_truncated
        for outcome in other.file_outcomes:
            self.file_outcome(outcome)
        self.file_outcomes_truncated += other.file_outcomes_truncated

    def report(self) -> ImportReport:
        """The frozen form the faces receive: every field the report declares, the lists
        copied as they stand (already bounded)."""
        values: dict[str, Any] = {}
        for name in (f.name for f in fields(ImportReport)):
            value = getattr(self, name)
            values[name] = list(value) if isinstance(value, list) else value
        return ImportReport(**values)

    def to_json(self) -> dict[str, Any]:
        return self.report().to_json()

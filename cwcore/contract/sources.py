"""The ``sources`` method's request and answer: per registered location, what the last sync found
there (:func:`cwcore.importers.sources.report` builds it)."""

from __future__ import annotations

from cwcore.contract.codec import Record, field, pairs


class SourcesRequest(Record):
    """``home``: list the locations under this home folder instead of the user's (tests, a
    second machine's layout); absent from the JSON when not set."""

    home: str | None = field(default=None, omit_none=True)


class SkippedFile(Record):
    """A file a sync skipped, and why."""

    path: str
    reason: str


class SourceRow(Record):
    """``cw sources``: one registered location (``format``, the registry's ``location`` label,
    the folder ``path`` here, whether it exists) and what the last sync recorded there: files
    seen, sessions and messages they imported, files skipped (counted per reason, the first
    :data:`cwcore.importers.sources.MAX_SKIPPED_LISTED` named; a file whose sessions hold no
    message is skipped with reason ``no messages``), ``companions`` (files read with another
    file's session, not counted in ``files``) and when (``last_sync`` None when never
    synced)."""

    format: str
    location: str
    path: str
    found: bool
    files: int = 0
    sessions: int = 0
    messages: int = 0
    skipped: int = 0
    skipped_reasons: tuple[tuple[str, int], ...] = pairs(default=())
    skipped_files: tuple[SkippedFile, ...] = ()
    last_sync: str | None = None
    companions: int = 0


class SourcesSummary(Record):
    """The coverage in one line (the TUI's index view): locations registered and found, files,
    sessions, messages and skipped files over all of them, and the latest sync."""

    locations: int
    found: int
    files: int
    sessions: int
    messages: int
    skipped: int
    last_sync: str | None


class SourcesReport(Record):
    """What ``sources`` answers: a row per registered location, in registry order, and their
    summary (``cw sources --json``; the JSON derived from the fields)."""

    sources: tuple[SourceRow, ...]
    summary: SourcesSummary

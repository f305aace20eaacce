"""What ``index.status``, ``index.run``, ``index.rebuild``, ``index.verify`` and ``index.partial``
answer: the records of the index methods' contract.

:func:`cwcore.index.maintenance.status` builds the lexical part and
:func:`cwcore.semantic.index.status` the semantic handler's progress; the index method handlers
join them and serialize once with ``to_json()`` (``cw index status --json`` and the daemon
protocol carry that JSON), and :class:`cwcore.api.Archive` turns it back into these with
``from_json()``. The JSON is derived from the fields (:mod:`cwcore.contract.codec`): the keys and
values the engine has always answered, ``from_json(x).to_json() == x`` as parsed JSON.

:class:`SemanticProgress` lives here rather than beside the semantic index that computes it: the
index status carries it, and every layer that builds or reads it can import the contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from cwcore.contract.codec import Record, field, fields_from_json, fields_json, pairs


class HandlerCounts(Record):
    """One lexical handler's outcomes over the published documents: fully indexed, cut by a
    limit (``partial``), or not indexed by it at all (``skipped``)."""

    name: str = field(skip=True)
    complete: int
    partial: int
    skipped: int

    @classmethod
    def named(cls, name: str, body: Mapping[str, Any]) -> Self:
        """The counts ``body`` holds for handler ``name`` (the JSON keys them by name)."""
        return cls(name, **fields_from_json(cls, body))


def _write_handlers(handlers: tuple[HandlerCounts, ...]) -> dict[str, Any]:
    return {h.name: h.to_json() for h in handlers}


def _read_handlers(body: Mapping[str, Any]) -> tuple[HandlerCounts, ...]:
    return tuple(HandlerCounts.named(n, c) for n, c in body.items())


class RebuildProgress(Record):
    """A rebuild still publishing: documents it queued, how many are published, its start."""

    queued: int
    done: int
    started: str | None


class IndexFault(Record):
    """An internal fault the index worker recorded (it retries the page): when, and the error."""

    at: str
    error: str


class DocumentIndexState(Record):
    """One document's place in the index: its head version and state, whether its current
    version is indexed, in which generation, over how many windows, and each handler's outcome
    (``complete``, ``partial`` or ``skipped``; empty until it is indexed)."""

    document_id: str
    version: int
    state: str
    indexed: bool
    generation: int | None
    windows: int
    handlers: tuple[tuple[str, str], ...] = pairs()


class SemanticProgress(Record):
    """The semantic handler's progress over the published windows.

    ``state`` is ``disabled``, ``waiting`` (nothing embedded yet), ``embedding`` (search uses
    the vectors so far), ``complete`` or ``revalidating`` (a rebuild renumbered the windows
    since these vectors were made). ``progress`` is the share of windows the handler has passed
    (0..1, four decimals); ``embedded`` never exceeds ``total``; ``rows`` counts stored vectors
    (several per window in some modes); ``cursor`` counts the windows passed (the handler works
    newest first), ``max_wid`` is the highest published window (``total`` repeats it).
    ``rate`` is the handler's smoothed pace while it runs (windows/s) and ``eta_s`` the seconds
    left at that pace (both None until known; None from a daemon of an older build)."""

    embedded: int
    rows: int
    pending: int
    cursor: int
    max_wid: int
    total: int
    progress: float
    state: str
    partial: bool
    model: str | None
    mode: str
    rate: float | None = None
    eta_s: float | None = field(default=None, name="eta_s")


class IndexStatus(Record):
    """The index: outbox depth and lag (seconds, three decimals), the published generation,
    whether it holds every document's complete handler results (false while a rebuild is
    publishing or a limit cut a document), documents and windows published, each handler's
    outcomes (in handler order), the last recorded faults, and when asked one document's
    state. ``semantic`` is the semantic handler's progress (None only from a lexical-only
    status that has not been joined with it)."""

    outbox_depth: int = field(skip=True)
    outbox_lag_s: float = field(skip=True)
    generation: int
    complete: bool
    rebuild: RebuildProgress | None
    published: str | None
    documents: int
    windows: int
    handlers: tuple[HandlerCounts, ...] = field(encode=_write_handlers, decode=_read_handlers)
    faults: tuple[IndexFault, ...]
    document: DocumentIndexState | None = field(default=None, omit_none=True)
    semantic: SemanticProgress | None = field(default=None, omit_none=True)
    #: Documents ``index.rebuild`` queued (None for the other methods).
    queued: int | None = field(default=None, omit_none=True)
    #: Whether every window has its prose words' stem terms (an index built from empty by a cw
    #: that writes them; an older one gains them with ``cw index rebuild``).
    word_stems: bool = False

    def handler(self, name: str) -> HandlerCounts:
        """The outcomes of handler ``name`` (KeyError for a name the index does not have)."""
        for counts in self.handlers:
            if counts.name == name:
                return counts
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        outbox = {"depth": self.outbox_depth, "lag_s": self.outbox_lag_s}
        return {"outbox": outbox, **fields_json(self)}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        outbox = body["outbox"]
        return cls(
            outbox_depth=outbox["depth"],
            outbox_lag_s=outbox["lag_s"],
            **fields_from_json(cls, body),
        )


class IndexVerification(Record):
    """``index.verify``: the derived view compared with the canonical records — ordinals
    checked, every inconsistency found (up to a cap, as sentences) and the published
    generation; ``ok`` when there is none."""

    ok: bool
    checked: int
    problems: tuple[str, ...]
    generation: int


class PartialDocument(Record):
    """One indexed document with a ``partial`` or ``skipped`` handler outcome: its ordinal, id
    and indexed version, kind, session and project (None when its head lacks them), ``state``
    (its head state, or ``replaced`` when a newer version exists), windows, the generation
    that indexed it, each handler's outcome and, per handler not ``complete``, the limit it hit
    (``caps``, a sentence: the one the indexer recorded, or for a marker written before it
    recorded them, every limit of that handler). ``path`` is a Markdown document's file
    (None for other kinds; absent from the JSON then)."""

    ordinal: int
    document_id: str
    version: int
    kind: str | None
    session: str | None
    project: str | None
    state: str
    windows: int
    generation: int | None
    outcomes: tuple[tuple[str, str], ...] = pairs()
    caps: tuple[tuple[str, str], ...] = pairs()
    path: str | None = field(default=None, omit_none=True)


def _write_caps(caps: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]) -> dict[str, Any]:
    return {handler: dict(limits) for handler, limits in caps}


def _read_caps(body: Mapping[str, Any]) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    return tuple((handler, tuple(limits.items())) for handler, limits in body.items())


class PartialDocuments(Record):
    """``index.partial``: a page of :class:`PartialDocument` in ordinal order; ``next`` is the
    ``after`` of the following page (None at the end), ``scanned`` the markers read for this
    one, and ``caps`` every handler's limits (handler, then outcome, then the sentence)."""

    documents: tuple[PartialDocument, ...]
    next: int | None
    scanned: int
    caps: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = field(
        encode=_write_caps, decode=_read_caps
    )


class IndexStatusRequest(Record):
    """``index.status``: ``document`` adds that document's state to the answer."""

    document: str | None = field(default=None, omit_none=True)


class PartialRequest(Record):
    """``index.partial``: a page of at most ``limit`` documents after ordinal ``after``."""

    limit: int = 100
    after: int = 0


class VerifyRequest(Record):
    """``index.verify`` takes no parameters."""


class IndexRunRequest(Record):
    """``index.run``: publish pending work now; with ``wait``, until the outbox is drained."""

    wait: bool = False


class RebuildRequest(Record):
    """``index.rebuild``: rebuild the derived index; with ``wait`` (or an engine without
    background workers) the answer comes once every queued document is published."""

    wait: bool = False

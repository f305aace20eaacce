"""What ``index.status``, ``index.run`` and ``index.rebuild`` answer, as frozen dataclasses.

:func:`cwcore.index.maintenance.status` builds the lexical part and
:func:`cwcore.semantic.index.status` the semantic handler's progress; the index method handlers
join them and serialize once with ``to_json()`` (``cw index status --json`` and the daemon
protocol carry that JSON), and :class:`cwcore.api.Archive` turns it back into these with
``from_json()``. ``to_json()`` keeps exactly the keys, order and values the engine has always
answered, and ``from_json(x).to_json() == x``.

:class:`SemanticProgress` lives here rather than beside the semantic index that computes it: the
index status carries it, and the semantic package sits above this one, so only this layer can
hold a record both of them use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HandlerCounts:
    """One lexical handler's outcomes over the published documents: fully indexed, cut by a
    limit (``partial``), or not indexed by it at all (``skipped``)."""

    name: str
    complete: int
    partial: int
    skipped: int

    def to_json(self) -> dict[str, Any]:
        return {"complete": self.complete, "partial": self.partial, "skipped": self.skipped}

    @classmethod
    def from_json(cls, name: str, body: Mapping[str, Any]) -> HandlerCounts:
        return cls(name, body["complete"], body["partial"], body["skipped"])


@dataclass(frozen=True)
class RebuildProgress:
    """A rebuild still publishing: documents it queued, how many are published, its start."""

    queued: int
    done: int
    started: str | None

    def to_json(self) -> dict[str, Any]:
        return {"queued": self.queued, "done": self.done, "started": self.started}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> RebuildProgress:
        return cls(body["queued"], body["done"], body["started"])


@dataclass(frozen=True)
class IndexFault:
    """An internal fault the index worker recorded (it retries the page): when, and the error."""

    at: str
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "error": self.error}

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> IndexFault:
        return cls(body["at"], body["error"])


@dataclass(frozen=True)
class DocumentIndexState:
    """One document's place in the index: its head version and state, whether its current
    version is indexed, in which generation, over how many windows, and each handler's outcome
    (``complete``, ``partial`` or ``skipped``; empty until it is indexed)."""

    document_id: str
    version: int
    state: str
    indexed: bool
    generation: int | None
    windows: int
    handlers: tuple[tuple[str, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "version": self.version,
            "state": self.state,
            "indexed": self.indexed,
            "generation": self.generation,
            "windows": self.windows,
            "handlers": dict(self.handlers),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DocumentIndexState:
        return cls(
            document_id=body["documentId"],
            version=body["version"],
            state=body["state"],
            indexed=body["indexed"],
            generation=body["generation"],
            windows=body["windows"],
            handlers=tuple(body["handlers"].items()),
        )


@dataclass(frozen=True)
class SemanticProgress:
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
    eta_s: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "embedded": self.embedded,
            "rows": self.rows,
            "pending": self.pending,
            "cursor": self.cursor,
            "maxWid": self.max_wid,
            "total": self.total,
            "progress": self.progress,
            "state": self.state,
            "partial": self.partial,
            "model": self.model,
            "mode": self.mode,
            "rate": self.rate,
            "eta_s": self.eta_s,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SemanticProgress:
        return cls(
            embedded=body["embedded"],
            rows=body["rows"],
            pending=body["pending"],
            cursor=body["cursor"],
            max_wid=body["maxWid"],
            total=body["total"],
            progress=body["progress"],
            state=body["state"],
            partial=body["partial"],
            model=body["model"],
            mode=body["mode"],
            rate=body.get("rate"),
            eta_s=body.get("eta_s"),
        )


@dataclass(frozen=True)
class IndexStatus:
    """The index: outbox depth and lag (seconds, three decimals), the published generation,
    whether it holds every document's complete handler results (false while a rebuild is
    publishing or a limit cut a document), documents and windows published, each handler's
    outcomes (in handler order), the last recorded faults, and when asked one document's
    state. ``semantic`` is the semantic handler's progress (None only from a lexical-only
    status that has not been joined with it)."""

    outbox_depth: int
    outbox_lag_s: float
    generation: int
    complete: bool
    rebuild: RebuildProgress | None
    published: str | None
    documents: int
    windows: int
    handlers: tuple[HandlerCounts, ...]
    faults: tuple[IndexFault, ...]
    document: DocumentIndexState | None = None
    semantic: SemanticProgress | None = None
    #: Documents ``index.rebuild`` queued (None for the other methods): it leads the JSON.
    queued: int | None = None

    def handler(self, name: str) -> HandlerCounts:
        """The outcomes of handler ``name`` (KeyError for a name the index does not have)."""
        for counts in self.handlers:
            if counts.name == name:
                return counts
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {} if self.queued is None else {"queued": self.queued}
        body.update(
            {
                "outbox": {"depth": self.outbox_depth, "lag_s": self.outbox_lag_s},
                "generation": self.generation,
                "complete": self.complete,
                "rebuild": None if self.rebuild is None else self.rebuild.to_json(),
                "published": self.published,
                "documents": self.documents,
                "windows": self.windows,
                "handlers": {h.name: h.to_json() for h in self.handlers},
                "faults": [f.to_json() for f in self.faults],
            }
        )
        if self.document is not None:
            body["document"] = self.document.to_json()
        if self.semantic is not None:
            body["semantic"] = self.semantic.to_json()
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> IndexStatus:
        rebuild, document, semantic = body["rebuild"], body.get("document"), body.get("semantic")
        return cls(
            outbox_depth=body["outbox"]["depth"],
            outbox_lag_s=body["outbox"]["lag_s"],
            generation=body["generation"],
            complete=body["complete"],
            rebuild=None if rebuild is None else RebuildProgress.from_json(rebuild),
            published=body["published"],
            documents=body["documents"],
            windows=body["windows"],
            handlers=tuple(HandlerCounts.from_json(n, c) for n, c in body["handlers"].items()),
            faults=tuple(IndexFault.from_json(f) for f in body["faults"]),
            document=None if document is None else DocumentIndexState.from_json(document),
            semantic=None if semantic is None else SemanticProgress.from_json(semantic),
            queued=body.get("queued"),
        )


@dataclass(frozen=True)
class IndexVerification:
    """``index.verify``: the derived view compared with the canonical records — ordinals
    checked, every inconsistency found (up to a cap, as sentences) and the published
    generation; ``ok`` when there is none."""

    ok: bool
    checked: int
    problems: tuple[str, ...]
    generation: int

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "checked": self.checked,
            "problems": list(self.problems),
            "generation": self.generation,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> IndexVerification:
        return cls(body["ok"], body["checked"], tuple(body["problems"]), body["generation"])


@dataclass(frozen=True)
class PartialDocument:
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
    outcomes: tuple[tuple[str, str], ...]
    caps: tuple[tuple[str, str], ...]
    path: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "ordinal": self.ordinal,
            "documentId": self.document_id,
            "version": self.version,
            "kind": self.kind,
            "session": self.session,
            "project": self.project,
            "state": self.state,
            "windows": self.windows,
            "generation": self.generation,
            "outcomes": dict(self.outcomes),
            "caps": dict(self.caps),
        }
        if self.path is not None:
            body["path"] = self.path
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> PartialDocument:
        return cls(
            ordinal=body["ordinal"],
            document_id=body["documentId"],
            version=body["version"],
            kind=body["kind"],
            session=body["session"],
            project=body["project"],
            state=body["state"],
            windows=body["windows"],
            generation=body["generation"],
            outcomes=tuple(body["outcomes"].items()),
            caps=tuple(body["caps"].items()),
            path=body.get("path"),
        )


@dataclass(frozen=True)
class PartialDocuments:
    """``index.partial``: a page of :class:`PartialDocument` in ordinal order; ``next`` is the
    ``after`` of the following page (None at the end), ``scanned`` the markers read for this
    one, and ``caps`` every handler's limits (handler, then outcome, then the sentence)."""

    documents: tuple[PartialDocument, ...]
    next: int | None
    scanned: int
    caps: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "documents": [d.to_json() for d in self.documents],
            "next": self.next,
            "scanned": self.scanned,
            "caps": {handler: dict(limits) for handler, limits in self.caps},
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> PartialDocuments:
        return cls(
            documents=tuple(PartialDocument.from_json(d) for d in body["documents"]),
            next=body["next"],
            scanned=body["scanned"],
            caps=tuple((h, tuple(limits.items())) for h, limits in body["caps"].items()),
        )

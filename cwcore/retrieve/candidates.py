"""What every retrieval mode produces and filters through: :class:`Candidate` (one window's
evidence in one mode) and :class:`Visible` (generation visibility, tombstones and scope, with
the window records loaded once per search)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cwcore.errors import CorruptRecord
from cwcore.index import derived
from cwcore.index.derived import StoredWindow
from cwcore.retrieve.scope import Scope
from cwcore.store import keys
from cwcore.store.admission import project_digest
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.store.rocks import Store


@dataclass
class Candidate:
    """One window's evidence in one mode."""

    wid: int
    mode: str  # "exact" | "structural" | "lexical"
    score: float  # calibrated, [0, 1]
    raw: float  # the mode's own raw score
    match_type: str
    matched_terms: list[str] = field(default_factory=list)
    expanded_terms: list[str] = field(default_factory=list)
    literals: list[str] = field(default_factory=list)  # exact values to highlight
    spans: list[tuple[int, int]] = field(default_factory=list)  # char spans (relations)
    reranked: bool = False  # the cross-encoder scored it (not necessarily moved it)
    window: dict[str, Any] | None = None
    order: tuple[float, ...] = ()  # the key the candidate's tier sorts by (higher first)
    blend: float | None = None  # the score fusion blends with its rank, when not ``score``


class Visible:
    """Loads window records once and applies generation visibility, tombstones and scope; reads
    each window's text at most once per search (:meth:`text`)."""

    def __init__(self, store: Store, reader: Reader, scope: Scope, max_wid: int) -> None:
        self.store, self.reader, self.scope, self.max_wid = store, reader, scope, max_wid
        self.records: dict[int, StoredWindow | None] = {}
        self._texts: dict[int, tuple[Manifest, str]] = {}

    def record(self, wid: int) -> StoredWindow:
        """The record of a window :meth:`filter` admitted (every candidate a search ranks
        passed it, so its record is loaded; another wid is a broken invariant, not a miss)."""
        record = self.records.get(wid)
        if record is None:
            raise CorruptRecord(f"window {wid} was ranked without a visible record")
        return record

    def text(self, wid: int) -> tuple[Manifest, str]:
        """The manifest of a loaded window's document version and the window's text. The
        expansion, the verbatim check, the reranker and the page's snippets all read the same
        few windows: one read and one decode each."""
        found = self._texts.get(wid)
        if found is None:
            self.prefetch([wid])
            found = self._texts[wid]
        return found

    def prefetch(self, wids: Iterable[int]) -> None:
        """Read the texts of loaded windows not read yet, all in two store reads (their
        manifests, then their chunks), so a page or a feedback set costs two reads, not two
        per window."""
        missing = [w for w in dict.fromkeys(wids) if w not in self._texts]
        if not missing:
            return
        records = []
        for wid in missing:
            record = self.records[wid]
            assert record is not None, "text() of a window that did not pass filter()"
            records.append(record)
        manifests = self.reader.manifests([(r["documentId"], int(r["version"])) for r in records])
        datas = self.reader.read_ranges(
            [(m, r["byteStart"], r["byteEnd"]) for m, r in zip(manifests, records, strict=True)]
        )
        for wid, manifest, data in zip(missing, manifests, datas, strict=True):
            self._texts[wid] = (manifest, data.decode("utf-8", "surrogatepass"))

    def filter(self, wids: Iterable[int]) -> list[int]:
        wanted = [w for w in dict.fromkeys(wids) if 0 < w <= self.max_wid]
        missing = [w for w in wanted if w not in self.records]
        if missing:
            for wid, record in zip(
                missing, derived.window_records(self.store, missing), strict=True
            ):
                self.records[wid] = record
            ordinals = sorted({r["ordinal"] for w in missing if (r := self.records[w])})
            found = self.store.get_many("ordinals", derived.u32_keys(keys.TOMBSTONE, ordinals))
            dead = {o for o, t in zip(ordinals, found, strict=True) if t is not None}
            for wid in missing:
                record = self.records[wid]
                if record is not None and record["ordinal"] in dead:
                    self.records[wid] = None
        return [w for w in wanted if (r := self.records[w]) is not None and self.scope.admits(r)]


#: A scope of more sessions than this is filtered per candidate instead of by window ids.
MAX_SCOPE_SESSIONS = 2_000


def scope_wids(store: Store, scope: Scope) -> np.ndarray | None:
    """Sorted window ids of a narrow scope (named sessions and their lineage, or one project of
    at most :data:`MAX_SCOPE_SESSIONS` sessions), so every mode scores only them: branch
    isolation and scope apply before any top-k limit. None when the scope is wider."""
    sessions = scope.sessions
    if sessions is None and scope.project is not None:
        prefix = keys.PROJECT_SESSION.prefix(project_digest(scope.project))
        found = store.scan("scopes", prefix, limit=MAX_SCOPE_SESSIONS + 1)
        sessions = frozenset(str(keys.PROJECT_SESSION.decode(k)[1]) for k, _ in found)
    if sessions is None or len(sessions) > MAX_SCOPE_SESSIONS:
        return None
    ranges = derived.sessions_wid_ranges(store, sorted(sessions))
    if not ranges:
        return np.empty(0, dtype=np.uint32)
    # Every range expanded at once: each wid is its range's first wid plus its offset in it.
    firsts, counts = np.array(ranges, dtype=np.int64).T
    ends = np.cumsum(counts)
    offsets = np.arange(int(ends[-1]), dtype=np.int64) - np.repeat(ends - counts, counts)
    return np.unique((np.repeat(firsts, counts) + offsets).astype(np.uint32))

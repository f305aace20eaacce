"""The indexing worker: outbox -> per-document tablets -> BM25 segment -> generation publish.

Indexes lag canonical writes, never the reverse. The worker pages outbox entries in commit order.
For each ``index`` entry it prepares the document (:mod:`cwcore.index.prepare`) and stages its
tablet in one WriteBatch: window records, exact and relation postings, the importance prior, and the
document's applied marker (its wids and handler outcomes). BM25 terms go to a
:class:`~cwcore.index.postings.PostingWriter` that flushes segments. When a page is done, one batch
publishes the next generation (cursor, ``maxWid``, outcome counts) and deletes the applied outbox
entries. Until then nothing of the page is visible: searches only see wids up to the published
``maxWid``, and the previous generation stays readable.

Replay after a crash is idempotent: a document with an applied marker reuses its wids, its keys
are rewritten with the same values, and the posting writer skips ordinals already indexed.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from cwcore import clock
from cwcore.config import Settings
from cwcore.errors import CorruptRecord, CwError, NotFound
from cwcore.index import derived
from cwcore.index.derived import (
    DOC_WINDOWS,
    EXACT,
    HANDLERS,
    IMPORTANCE,
    RELATION,
    WINDOW,
    Generation,
)
from cwcore.index.postings import PostingIndex
from cwcore.index.prepare import Prepared, prepare
from cwcore.store import codec, keys
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.store.rocks import Batch, Store

log = logging.getLogger("cw.index")

PAGE_ENTRIES = 2_000
#: Posting-writer limits for one page: a page flushes once, into its publication batch; only a
#: page past these (very large documents) flushes early.
PAGE_WRITER_DOCS = 1 << 20
PAGE_WRITER_POSTINGS = 4_000_000
#: Foreground publication (right after an admission, before the worker's turn) is offered only
#: to small documents and a few entries, so an admission never waits on bulk indexing.
FOREGROUND_MAX_BYTES = 64 * 1024
FOREGROUND_MAX_ENTRIES = 8
BACKOFF_MIN_S = 0.05
BACKOFF_MAX_S = 5.0
#: Seconds without indexing work before the quiet-time segment merge (the daemon also waits for
#: a lull between requests, ``engine.MERGE_QUIET_S``, not for them to stop).
IDLE_MERGE_S = 30.0


def _zero_counts() -> dict[str, dict[str, int]]:
    return {h: {"complete": 0, "partial": 0, "skipped": 0} for h in HANDLERS}


class IndexWorker:
    """Owns the derived indexes of one store. Thread-safe: one page runs at a time."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self.store = store
        self.settings = settings
        self.reader = Reader(store)
        self.bm25 = PostingIndex(store)
        self.bm25.recover()
        self._page_lock = threading.RLock()
        self.faults: list[dict[str, Any]] = []  # recorded internal faults (bounded)
        self.backoff = 0.0

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Hold off indexing pages (maintenance that rewrites the derived view runs inside)."""
        with self._page_lock:
            yield

    def reset(self) -> None:
        """Forget cached posting state after the derived namespaces were rebuilt."""
        with self._page_lock:
            self.bm25 = PostingIndex(self.store)

    # -- status -------------------------------------------------------------------------------

    def depth(self) -> int:
        counters = self.store.meta_get("counters") or {}
        return max(
            0, int(counters.get("outbox", 0)) - int(derived.generation(self.store)["cursor"])
        )

    def lag_seconds(self) -> float:
        for _, entry in self.reader.outbox(
            after=int(derived.generation(self.store)["cursor"]), limit=1
        ):
            return max(0.0, (clock.now() - clock.parse_time(entry["at"])).total_seconds())
        return 0.0

    # -- the loop -----------------------------------------------------------------------------

    def run_once(self, max_entries: int | None = None) -> int:
        """Process one page of outbox entries (at most ``max_entries``, default
        :data:`PAGE_ENTRIES`) and publish a generation; returns entries done."""
        max_entries = PAGE_ENTRIES if max_entries is None else max_entries
        with self._page_lock:
            gen = derived.generation(self.store)
            cursor = int(gen["cursor"])
            entries = list(self.reader.outbox(after=cursor, limit=max_entries))
            if not entries:
                return 0
            state = self.store.meta_get("index-state") or {"nextWid": 1}
            if int(state.get("nextWid", 1)) == 1:
                # An empty index (a new archive, or one `cw index rebuild` cleared) gets stem
                # terms from its first window on; an index begun without them never mixes
                # windows with and without (derived.stems_indexed).
                state.setdefault(derived.STEMS_KEY, True)
            state["publishedN"] = int(gen["n"])
            state["pageMaxWid"] = int(gen.get("maxWid", 0))
            counts = gen.get("handlers") or _zero_counts()
            page_complete = True
            # A page's postings stay buffered until publication (limits sized for a page), so
            # the BM25 statistics of the published view never move with unpublished work.
            writer = self.bm25.writer(max_docs=PAGE_WRITER_DOCS, max_postings=PAGE_WRITER_POSTINGS)
            for _, entry in entries:
                if entry.get("op") == "index":
                    outcome = self._index(entry, writer, state, counts)
                    page_complete = page_complete and outcome
                elif entry.get("op") == "retire":
                    self._retire(entry, counts, int(state["publishedN"]))
            batch = self.store.batch()
            writer.flush(batch)
            self._publish(batch, gen, entries, state, counts, page_complete)
            return len(entries)

    def foreground(self) -> int:
        """A bounded publication opportunity right after an admission: one page, only when at
        most :data:`FOREGROUND_MAX_ENTRIES` entries are pending and every document among them
        is at most :data:`FOREGROUND_MAX_BYTES` of text. Otherwise nothing runs here and the
        entries stay at the outbox head for the background worker. Returns entries done."""
        with self._page_lock:
            cursor = int(derived.generation(self.store)["cursor"])
            pending = list(self.reader.outbox(after=cursor, limit=FOREGROUND_MAX_ENTRIES + 1))
            if not pending or len(pending) > FOREGROUND_MAX_ENTRIES:
                return 0
            for _, entry in pending:
                if entry.get("op") != "index":
                    continue
                try:
                    manifest = self.reader.manifest(entry["documentId"], int(entry["version"]))
                except (NotFound, CorruptRecord):
                    continue  # the page records the fault
                if int(manifest.get("bytes", 0)) > FOREGROUND_MAX_BYTES:
                    return 0
            return self.run_once(max_entries=FOREGROUND_MAX_ENTRIES)

    def run_page(self) -> int:
        """One page (:meth:`run_once`), then one tiered merge if the page filled a tier.

        Bulk indexing publishes a segment per page; merging as it goes keeps the index to at
        most ``MERGE_FACTOR - 1`` segments a tier while it grows, so a search during or right
        after a large import looks each term up a few times, not once per page (190k messages
        left 41 segments when merges waited for the drain to end). A page adds one segment and
        a merge removes ``MERGE_FACTOR - 1``, so one merge a page is enough to keep up."""
        n = self.run_once()
        if n:
            self.bm25.merge()
        return n

    def drain(self, deadline: float | None = None) -> int:
        """Run pages until the outbox is empty (or ``deadline``, a ``time.monotonic`` value)."""
        done = 0
        while deadline is None or time.monotonic() < deadline:
            n = self.run_page()
            if n == 0:
                break
            done += n
        if done:
            while self.merge() and (deadline is None or time.monotonic() < deadline):
                pass
        return done

    def step(self) -> int:
        """One worker step with backoff: retryable failures wait 50 ms doubling to 5 s."""
        try:
            n = self.run_page()
            self.backoff = 0.0
            return n
        except CwError as exc:
            self._fault(exc)
            self.backoff = min(BACKOFF_MAX_S, max(BACKOFF_MIN_S, self.backoff * 2))
            return 0

    def _fault(self, exc: Exception) -> None:
        self.faults = [*self.faults[-49:], {"at": clock.iso(clock.now()), "error": str(exc)}]
        log.warning("indexing fault: %s", exc)

    # -- index and retire ---------------------------------------------------------------------

    def _index(
        self, entry: dict[str, Any], writer: Any, state: dict[str, Any], counts: dict[str, Any]
    ) -> bool:
        """Stage one document's tablet; returns True when every handler completed."""
        ordinal = int(entry["ordinal"])
        if self.reader.tombstone(ordinal) is not None:
            return True  # retired before it was indexed: nothing to publish
        try:
            manifest = self.reader.manifest(entry["documentId"], int(entry["version"]))
        except (NotFound, CorruptRecord) as exc:
            self._fault(exc)
            return False
        prior = derived.marker(self.store, ordinal)
        prepared = prepare(
            self.reader,
            manifest,
            window_tokens=self.settings.window_tokens,
            window_overlap=self.settings.window_overlap,
            chain_depth=self._chain_depth(manifest),
            stems=bool(state.get(derived.STEMS_KEY)),
        )
        if prior is not None and prior.get("windows") == len(prepared.windows):
            first = int(prior["firstWid"])
        else:
            first = int(state["nextWid"])
            state["nextWid"] = first + len(prepared.windows)
        if prepared.windows:
            state["pageMaxWid"] = max(int(state["pageMaxWid"]), first + len(prepared.windows) - 1)
        batch = self.store.batch()
        self._stage(batch, manifest, ordinal, first, prepared, int(state["publishedN"]) + 1)
        # Outcomes count once, in the generation that publishes them: a marker left by a page
        # that crashed before publication (its generation is newer than the published one)
        # has not been counted yet.
        if prior is None or int(prior.get("generation", 0)) > int(state["publishedN"]):
            for handler, outcome in prepared.outcomes.items():
                counts.setdefault(handler, {"complete": 0, "partial": 0, "skipped": 0})
                counts[handler][outcome] += 1
        self.store.meta_put(batch, "index-state", state)
        self.store.commit(batch)
        for window, terms in zip(prepared.windows, prepared.terms, strict=True):
            wid = first + window.index
            if terms.tfs or terms.length >= 0:
                try:
                    writer.add(wid, terms.tfs, terms.length if terms.tfs else 0.0)
                except ValueError:
                    pass  # already buffered on replay
        return all(o == "complete" for o in prepared.outcomes.values())

    def _stage(
        self,
        batch: Batch,
        manifest: Manifest,
        ordinal: int,
        first: int,
        prepared: Prepared,
        generation: int,
    ) -> None:
        """Stage one document's tablet; ``generation`` is the one that will publish it (the page
        reads the published generation once: nothing else publishes while it holds the lock)."""
        doc_id, version = manifest["documentId"], int(manifest["version"])
        metadata = manifest.get("metadata") or {}
        continues = metadata.get("continues")
        turn_id = (
            manifest.get("parent") if manifest["kind"] == "tool-result" else continues
        ) or doc_id
        # Before turns were cut into small documents (layout 2), a large tool output was kept
        # in its turn's text as well as in its own tool-result document: such a document is an
        # alias of part of its turn, and search shows one of the two.
        alias = manifest["kind"] == "tool-result" and not metadata.get("layout")
        digests = prepared.text_digests or [""] * len(prepared.windows)
        for window, keys_, digest in zip(
            prepared.windows, prepared.window_keys, digests, strict=True
        ):
            batch.put(
                "windows",
                WINDOW.encode(first + window.index),
                codec.encode_record(
                    {
                        "ordinal": ordinal,
                        "documentId": doc_id,
                        "version": version,
                        "index": window.index,
                        "start": window.start,
                        "end": window.end,
                        "byteStart": window.byte_start,
                        "byteEnd": window.byte_end,
                        "keys": keys_,
                        # Filter fields, so a search filters candidates without manifests.
                        "session": manifest["session"],
                        "project": manifest["project"],
                        "agent": manifest["agent"],
                        "kind": manifest["kind"],
                        "created": manifest["created"],
                        "turn": turn_id,
                        "textDigest": digest,
                        **({"alias": True} if alias else {}),
                    }
                ),
            )
        exact_keys = []
        for p in prepared.exact:
            key = EXACT.encode(derived.anchor_digest(p.value), first + p.window, p.start)
            exact_keys.append(key.hex())
            batch.put(
                "exact", key, derived.pack_span(p.kind, p.start, p.end, p.byte_start, p.byte_end)
            )
        relation_keys = []
        for r in prepared.relations:
            key = RELATION.encode(r.relation, first + r.window, r.start)
            relation_keys.append(key.hex())
            batch.put(
                "relations",
                key,
                codec.encode_record(
                    {
                        "start": r.start,
                        "end": r.end,
                        "byteStart": r.byte_start,
                        "byteEnd": r.byte_end,
                        "messageKey": r.message_key,
                    }
                ),
            )
        batch.put(
            "importance",
            IMPORTANCE.encode(derived.IMPORTANCE_NAMESPACE, ordinal),
            derived.pack_float(prepared.importance),
        )
        if prepared.windows:
            batch.put(
                "windows",
                derived.SESSION_WIDS.encode(manifest["session"], first),
                derived.pack_count(len(prepared.windows)),
            )
        marker: dict[str, Any] = {
            "documentId": doc_id,
            "version": version,
            "firstWid": first,
            "windows": len(prepared.windows),
            "outcomes": prepared.outcomes,
            "exactKeys": exact_keys,
            "relationKeys": relation_keys,
            "generation": generation,
        }
        if prepared.limits:  # which limit each capped handler hit (cw index partial)
            marker["limits"] = prepared.limits
        batch.put("windows", DOC_WINDOWS.encode(ordinal), codec.encode_record(marker))

    def _marker_session(self, first_wid: int) -> str | None:
        record = derived.window_record(self.store, first_wid)
        return None if record is None else str(record["session"])

    def _chain_depth(self, manifest: Manifest) -> int:
        depth, current = 0, manifest.get("supersedes")
        while current and depth < 8:
            depth += 1
            try:
                current = self.reader.manifest(current).get("supersedes")
            except (NotFound, CwError):
                break
        return depth + max(0, int(manifest["version"]) - 1)

    def _retire(self, entry: dict[str, Any], counts: dict[str, Any], published_n: int) -> None:
        ordinal = int(entry["ordinal"])
        mark = derived.marker(self.store, ordinal)
        if mark is None:
            return
        first, n = int(mark["firstWid"]), int(mark["windows"])
        self.bm25.retire(range(first, first + n))
        if entry.get("reason") != "forgotten":
            return
        if mark.get("forgotten"):
            # Replayed after a crash: the decrement counts only if no generation published it.
            if int(mark.get("forgottenIn", 0)) > published_n:
                self._uncount(mark, counts)
            return
        # A forgotten document loses its derived entries too, not only its visibility.
        batch = self.store.batch()
        for wid in range(first, first + n):
            batch.delete("windows", WINDOW.encode(wid))
        session = entry.get("session") or self._marker_session(first)
        if session:
            batch.delete("windows", derived.SESSION_WIDS.encode(session, first))
        for hexkey in mark.get("exactKeys", []):
            batch.delete("exact", bytes.fromhex(hexkey))
        for hexkey in mark.get("relationKeys", []):
            batch.delete("relations", bytes.fromhex(hexkey))
        batch.delete("importance", IMPORTANCE.encode(derived.IMPORTANCE_NAMESPACE, ordinal))
        self._uncount(mark, counts)
        forgotten = {**mark, "forgotten": True, "forgottenIn": published_n + 1}
        forgotten.update(exactKeys=[], relationKeys=[])
        batch.put("windows", DOC_WINDOWS.encode(ordinal), codec.encode_record(forgotten))
        self.store.commit(batch)

    @staticmethod
    def _uncount(mark: dict[str, Any], counts: dict[str, Any]) -> None:
        for handler, outcome in (mark.get("outcomes") or {}).items():
            if handler in counts and counts[handler].get(outcome, 0) > 0:
                counts[handler][outcome] -= 1

    # -- publication --------------------------------------------------------------------------

    def _publish(
        self,
        batch: Batch,
        gen: Generation,
        entries: list[tuple[int, dict[str, Any]]],
        state: dict[str, Any],
        counts: dict[str, Any],
        page_complete: bool,
    ) -> None:
        last = entries[-1][0]
        published = {
            "n": int(gen["n"]) + 1,
            "cursor": last,
            # Only this page's windows become visible: tablets an earlier crashed page staged
            # beyond it stay hidden until their own entries are published.
            "maxWid": int(state["pageMaxWid"]),
            # Complete only when no live document carries a partial or skipped outcome: the
            # label describes the whole published view, not just this page.
            "complete": page_complete
            and all(not c.get("partial") and not c.get("skipped") for c in counts.values()),
            "published": clock.iso(clock.now()),
            "handlers": counts,
            "documents": int(gen.get("documents", 0))
            + sum(1 for _, e in entries if e.get("op") == "index"),
        }
        self.store.meta_put(batch, "index-generation", published)
        for seq, _ in entries:
            batch.delete("outbox", keys.OUTBOX.encode(seq))
        self.store.commit(batch)

    # -- maintenance --------------------------------------------------------------------------

    def merge(self, idle_s: float = 0.0, pause: Callable[[], object] | None = None) -> bool:
        """One background merge of BM25 segments: a tiered one if a tier is full, else — once
        ``idle_s`` (the caller's measure of settled indexing) ≥ :data:`IDLE_MERGE_S` — the
        quiet-time merge (:meth:`PostingIndex.idle_merge`). ``pause`` is called every few
        milliseconds of merging (the daemon waits there while a request runs). True if a merge
        ran."""
        if self.bm25.merge(pause) is not None:
            return True
        return idle_s >= IDLE_MERGE_S and self.bm25.idle_merge(pause) is not None

"""Index status, ``verifyDerivedView`` and rebuild.

``verify`` checks that the derived view agrees with canonical records: forward and reverse ordinal
mappings, session memberships, retirement state, and every applied marker's windows. ``rebuild``
deletes every derived namespace and re-enqueues each live document version from canonical records
(canonical records are never repaired from derived ones).
"""

from __future__ import annotations

from typing import Any

from cwcore import clock
from cwcore.contract.index import (
    DocumentIndexState,
    HandlerCounts,
    IndexFault,
    IndexStatus,
    IndexVerification,
    PartialDocument,
    PartialDocuments,
    RebuildProgress,
)
from cwcore.errors import CorruptRecord, CwError, InvalidInput, NotFound
from cwcore.index import derived
from cwcore.index.derived import Generation
from cwcore.index.worker import IndexWorker
from cwcore.store import codec, keys
from cwcore.store.reader import Reader
from cwcore.store.records import decode_head
from cwcore.store.rocks import Store

DERIVED = ("windows", "exact", "relations", "importance", "postings", "stats")
MAX_PROBLEMS = 200


def rebuild_progress(store: Store, gen: Generation) -> RebuildProgress | None:
    """How far a rebuild got while the documents it queued are still being published (None
    otherwise): the published generation then holds only some of them."""
    marker = store.meta_get("index-rebuild")
    if not marker:
        return None
    through, queued = int(marker["through"]), int(marker["queued"])
    cursor = int(gen.get("cursor", 0))
    if cursor >= through:
        return None
    done = min(queued, max(0, cursor - (through - queued)))
    return RebuildProgress(queued, done, marker.get("started"))


def status(store: Store, worker: IndexWorker, document: str | None = None) -> IndexStatus:
    """The lexical part of ``cw index status --json``: outbox, generation, handler outcomes
    (the engine adds the semantic handler's progress, which lives above this layer).

    While a rebuild's documents are still being published, ``rebuild`` says how far it got
    and ``complete`` is false: the generation holds only part of the archive's handler results
    (not a limit hit, as ``partial`` otherwise means, but not complete either)."""
    gen = derived.generation(store)
    handlers = gen.get("handlers") or {}
    rebuilding = rebuild_progress(store, gen)
    state: DocumentIndexState | None = None
    if document is not None:
        reader = Reader(store)
        head = reader.head(document)
        mark = derived.marker(store, int(head["ordinal"]))
        state = DocumentIndexState(
            document_id=document,
            version=head["version"],
            state=head.get("state", "live"),
            indexed=mark is not None,
            generation=mark.get("generation") if mark else None,
            # Every marker the worker writes carries its window count and handler outcomes.
            windows=int(mark["windows"]) if mark else 0,
            handlers=tuple(mark["outcomes"].items()) if mark else (),
        )
    none = {"complete": 0, "partial": 0, "skipped": 0}
    return IndexStatus(
        outbox_depth=worker.depth(),
        outbox_lag_s=round(worker.lag_seconds(), 3),
        generation=int(gen["n"]),
        complete=bool(gen.get("complete", True)) and rebuilding is None,
        rebuild=rebuilding,
        published=gen.get("published"),
        documents=int(gen.get("documents", 0)),
        windows=int(gen.get("maxWid", 0)),
        handlers=tuple(HandlerCounts.named(h, handlers.get(h, none)) for h in derived.HANDLERS),
        faults=tuple(IndexFault.from_json(f) for f in worker.faults[-5:]),
        document=state,
        word_stems=derived.stems_indexed(store),
    )


def verify(store: Store) -> IndexVerification:
    """Compare the derived view with canonical records; list every inconsistency found (the
    first :data:`MAX_PROBLEMS`)."""
    reader = Reader(store)
    problems: list[str] = []

    def problem(text: str) -> None:
        if len(problems) < MAX_PROBLEMS:
            problems.append(text)

    checked = 0
    gen = derived.generation(store)
    for key, value in store.scan("ordinals", keys.ORDINAL.prefix()):
        ordinal = int(keys.ORDINAL.decode(key)[0])
        ref = codec.decode_record(value, "ordinal")
        checked += 1
        try:
            manifest = reader.manifest(ref["documentId"], int(ref["version"]))
        except (NotFound, CwError) as exc:
            problem(f"ordinal {ordinal}: {exc}")
            continue
        if int(manifest["ordinal"]) != ordinal:
            stone = reader.tombstone(ordinal)
            if stone is not None and stone.get("retired") == OVERWRITTEN:
                continue  # a repaired orphan (see retire_orphans): retired, nothing to index
            problem(
                f"ordinal {ordinal}: manifest of {ref['documentId']} says {manifest['ordinal']}"
                " (overwritten; cw doctor --repair retires it)"
            )
        if store.get("scopes", keys.SESSION_DOC.encode(manifest["session"], ordinal)) is None:
            problem(f"ordinal {ordinal}: no membership in session {manifest['session']}")
        head = reader.head(ref["documentId"])
        retired = reader.tombstone(ordinal) is not None
        if head["version"] == int(ref["version"]) and head.get("state") == "live" and retired:
            problem(f"ordinal {ordinal}: live head but tombstoned")
        if head["version"] != int(ref["version"]) and not retired:
            problem(f"ordinal {ordinal}: replaced version without a tombstone")
        mark = derived.marker(store, ordinal)
        if mark is None:
            continue
        first, n = int(mark["firstWid"]), int(mark["windows"])
        if mark.get("forgotten"):
            continue
        for wid, record in zip(
            range(first, first + n),
            derived.window_records(store, list(range(first, first + n))),
            strict=True,
        ):
            if record is None:
                problem(f"ordinal {ordinal}: window {wid} is missing")
            elif int(record["ordinal"]) != ordinal:
                problem(
                    f"window {wid}: points at ordinal {record['ordinal']}, marker says {ordinal}"
                )
        if first + n - 1 > int(gen.get("maxWid", 0)) and int(gen.get("cursor", 0)) > 0:
            problem(f"ordinal {ordinal}: windows beyond the published generation")
    return IndexVerification(not problems, checked, tuple(problems), int(gen["n"]))


#: Tombstone reason of an ordinal whose document version was written twice in one batch (the
#: split of a message over 8 MiB before it had distinct ids): its own manifest is gone.
OVERWRITTEN = "overwritten"


def orphaned_ordinals(store: Store) -> list[tuple[int, dict[str, Any]]]:
    """Ordinals whose ``(document, version)`` manifest names another ordinal: the version was
    admitted twice in one batch and the second manifest replaced the first. Canonical text of
    the first is gone (re-importing its source restores the message); the ordinal is a dangling
    identity that only a retirement can make consistent again."""
    reader = Reader(store)
    found = []
    for key, value in store.scan("ordinals", keys.ORDINAL.prefix()):
        ordinal = int(keys.ORDINAL.decode(key)[0])
        ref = codec.decode_record(value, "ordinal")
        try:
            manifest = reader.manifest(ref["documentId"], int(ref["version"]))
        except CwError:
            continue
        if int(manifest["ordinal"]) == ordinal:
            continue
        stone = reader.tombstone(ordinal)
        if stone is None or stone.get("retired") != OVERWRITTEN:
            found.append((ordinal, ref))
    return found


def retire_orphans(store: Store) -> int:
    """Tombstone every orphaned ordinal (``retired: "overwritten"``) and queue its retirement
    for the indexer, in one batch; returns how many. Ordinals are never reused, so the identity
    stays retired; nothing canonical is rewritten."""
    with store.lock:
        orphans = orphaned_ordinals(store)
        if not orphans:
            return 0
        now = clock.iso(clock.now())
        counters = store.meta_get("counters") or {"ordinal": 0, "outbox": 0}
        batch = store.batch()
        for ordinal, ref in orphans:
            record = {**ref, "retired": OVERWRITTEN, "at": now}
            batch.put("ordinals", keys.TOMBSTONE.encode(ordinal), codec.encode_record(record))
            counters["outbox"] = int(counters["outbox"]) + 1
            entry = {"op": "retire", "ordinal": ordinal, "reason": OVERWRITTEN, "at": now, **ref}
            batch.put("outbox", keys.OUTBOX.encode(counters["outbox"]), codec.encode_record(entry))
        store.meta_put(batch, "counters", counters)
        store.commit(batch)
    return len(orphans)


def rebuild(store: Store, worker: IndexWorker) -> int:
    """Delete derived namespaces and re-enqueue every live document version; returns how many
    were queued. Runs with the worker paused, so no page in flight publishes a stale generation
    over the rebuild's."""
    with worker.paused(), store.lock:
        for family in DERIVED:
            batch = store.batch()
            for key, _ in store.scan(family, b""):
                batch.delete(family, key)
                if batch.mutations >= 10_000:
                    store.commit(batch)
                    batch = store.batch()
            store.commit(batch)
        counters = store.meta_get("counters") or {"ordinal": 0, "outbox": 0}
        batch = store.batch()
        # Entries still pending are superseded by the fresh ones below.
        for key, _ in store.scan("outbox", keys.OUTBOX.prefix()):
            batch.delete("outbox", key)
        queued = 0
        now = clock.iso(clock.now())
        for _, value in store.scan("documents", keys.DOC_HEAD.prefix()):
            head = decode_head(value, "head")
            if head.get("state") != "live":
                continue
            counters["outbox"] = int(counters["outbox"]) + 1
            batch.put(
                "outbox",
                keys.OUTBOX.encode(counters["outbox"]),
                codec.encode_record(
                    {
                        "op": "index",
                        "documentId": head["documentId"],
                        "version": head["version"],
                        "ordinal": head["ordinal"],
                        "at": now,
                        "reason": "rebuild",
                    }
                ),
            )
            queued += 1
        store.meta_put(batch, "counters", counters)
        store.meta_put(
            batch,
            "index-generation",
            {
                **derived.generation(store),
                "cursor": int(counters["outbox"]) - queued,
                "maxWid": 0,
                "handlers": None,
                "documents": 0,
                "complete": True,
            },
        )
        store.meta_put(batch, "index-state", {"nextWid": 1})
        # Until the cursor passes the last entry queued here, status reports the rebuild.
        store.meta_put(
            batch,
            "index-rebuild",
            {"through": int(counters["outbox"]), "queued": queued, "started": now},
        )
        store.commit(batch)
    worker.reset()
    return queued


#: The limits behind each handler outcome other than ``complete`` (what a partial or skipped
#: marker means; the marker records the outcome, not which of its handler's limits was hit).
CAPS: dict[str, dict[str, str]] = {
    "bm25": {
        "partial": "BM25 analyzed at most 16,000 token occurrences, 256 unique terms or 1,024 "
        "term-window pairs of a window, or the document needed more than 4,096 windows",
    },
    "exact": {
        "partial": "more than 8,000 anchors ranked or 1,000 exact postings, or over 4,500 "
        "staged mutations: the lowest-ranked anchors were left out",
        "skipped": "the staged exact postings were over 8 MiB",
    },
    "structural": {
        "skipped": "an annotation did not resolve inside the text, or the staging budget "
        "(4,500 mutations) left no room for relations",
    },
}
#: Markers read per ``partial_documents`` call at most (the scan resumes from ``next``).
MAX_PARTIAL_SCAN = 100_000
MAX_PARTIAL_LIMIT = 1_000


def _markdown_path(reader: Reader, mark: dict[str, Any]) -> str | None:
    """A Markdown document's file (its indexed version's), or None when unreadable."""
    try:
        manifest = reader.manifest(str(mark["documentId"]), int(mark["version"]))
    except (NotFound, CorruptRecord):
        return None
    info = (manifest.get("metadata") or {}).get("markdown") or {}
    path = info.get("path") or info.get("relativePath")
    return str(path) if path else None


def partial_documents(
    store: Store, *, limit: int = 100, after: int = 0, max_scan: int = MAX_PARTIAL_SCAN
) -> PartialDocuments:
    """The indexed documents with a ``partial`` or ``skipped`` handler outcome, in ordinal
    order after ``after``. At most ``limit`` documents and ``max_scan`` applied markers per call;
    ``next`` is the ``after`` of the following call (None at the end). Superseded documents are
    listed too (``state``): the handler counts of the generation include them."""
    if not 1 <= limit <= MAX_PARTIAL_LIMIT:
        raise InvalidInput(f"limit must be from 1 to {MAX_PARTIAL_LIMIT}")
    if after < 0:
        raise InvalidInput("after must be an ordinal (0 or more)")
    reader = Reader(store)
    found: list[PartialDocument] = []
    scanned, last = 0, after
    start = derived.DOC_WINDOWS.encode(after + 1) if after < (1 << 32) - 1 else None
    more = False
    for key, value in store.scan("windows", derived.DOC_WINDOWS.prefix(), start=start):
        if scanned >= max_scan or len(found) >= limit:
            more = True
            break
        scanned += 1
        last = int(derived.DOC_WINDOWS.decode(key)[0])
        mark = codec.decode_record(value, "doc-windows")
        outcomes = mark.get("outcomes") or {}
        if mark.get("forgotten") or all(o == "complete" for o in outcomes.values()):
            continue
        try:
            head = reader.head(str(mark["documentId"]))
        except NotFound:
            continue
        current = int(head["version"]) == int(mark["version"])
        hit = mark.get("limits") or {}  # markers written before the indexer recorded them: none
        found.append(
            PartialDocument(
                ordinal=last,
                document_id=mark["documentId"],
                version=int(mark["version"]),
                kind=head.get("kind"),
                session=head.get("session"),
                project=head.get("project"),
                state=head.get("state", "live") if current else "replaced",
                windows=int(mark.get("windows", 0)),
                generation=mark.get("generation"),
                outcomes=tuple(outcomes.items()),
                caps=tuple(
                    (h, hit.get(h) or CAPS.get(h, {}).get(o, o))
                    for h, o in outcomes.items()
                    if o != "complete"
                ),
                path=_markdown_path(reader, mark) if head.get("kind") == "markdown" else None,
            )
        )
    caps = tuple((handler, tuple(limits.items())) for handler, limits in CAPS.items())
    return PartialDocuments(tuple(found), last if more else None, scanned, caps)

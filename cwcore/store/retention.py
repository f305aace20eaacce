"""Retention: forgetting sessions and documents, and expiry by archive kind.

``forget`` removes canonical records for good: every version's manifest, the head, message and
membership entries, events (for a session), supersession records, and each chunk whose last owner
goes. Ordinals are never reused: each forgotten ordinal keeps a tombstone (reason ``forgotten``)
and gets a ``retire`` outbox entry so the indexer drops its derived entries. Work is committed
one document per batch, so memory stays bounded and an interrupted forget can simply be re-run.

A session whose own record does not decode can still be forgotten by its exact id: it is the
user's way out of a damaged record short of restoring a backup. Its documents go as usual (their
manifests say everything needed); what the record would have said (its project, its time
buckets, its place in the session order) is found by scanning those indexes for the id.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from cwcore import clock
from cwcore.config import Settings
from cwcore.contract.retention import ForgetTarget, Forgotten
from cwcore.errors import CorruptRecord, NotFound, excerpt
from cwcore.store import codec, identity, keys, request_ids, session_order
from cwcore.store.admission import day_bucket, project_digest
from cwcore.store.reader import Reader
from cwcore.store.records import DocumentHead, Manifest, SessionRecord
from cwcore.store.rocks import Batch, Store

#: The agent of Markdown roots' synthetic sessions (``cwcore.markdown.ingest.AGENT``): their
#: documents expire by ``retentionMarkdownDays``, never by the session age.
MARKDOWN_AGENT = "markdown"

#: Stages something in the last batch of a forget, with the report as it will be answered.
BeforeCommit = Callable[[Batch, "ForgetReport"], None]


@dataclass
class ForgetReport:
    """What a forget removed, accumulated while it runs (a retention pass adds one report per
    session into another, so this one is mutable; :meth:`result` freezes it).
    ``tombstoned`` counts ordinals retired (one per version)."""

    sessions: int = 0
    documents: int = 0
    versions: int = 0
    events: int = 0
    chunks: int = 0
    tombstoned: int = 0
    skipped_pinned: list[str] = field(default_factory=list)
    target: ForgetTarget | None = None
    skipped_leased: list[str] = field(default_factory=list)

    def add(self, other: ForgetReport) -> None:
        self.sessions += other.sessions
        self.documents += other.documents
        self.versions += other.versions
        self.events += other.events
        self.chunks += other.chunks
        self.tombstoned += other.tombstoned
        self.skipped_pinned += other.skipped_pinned
        self.skipped_leased += other.skipped_leased

    def result(self) -> Forgotten:
        return Forgotten(
            self.target,
            self.sessions,
            self.documents,
            self.versions,
            self.events,
            self.chunks,
            self.tombstoned,
            tuple(self.skipped_pinned),
            tuple(self.skipped_leased),
        )

    def to_json(self) -> dict[str, Any]:
        return self.result().to_json()


class Retention:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.reader = Reader(store)

    def resolve(self, target: str, *, prefix: bool = False) -> ForgetTarget:
        """The session or document ``target`` names: an exact document id or session id, or —
        only with ``prefix`` — a unique session id prefix of at least four characters. Raises
        :class:`NotFound` otherwise; without ``prefix`` the message says when a prefix would
        have matched, so a second forget of an id never reaches a longer one."""
        try:
            head = self.reader.head(target)
        except NotFound:
            head = None
        if head is not None:
            manifest = self.reader.manifest(target, int(head["version"]))
            parts = manifest.get("parts") or ()
            return ForgetTarget(
                "document", target, manifest["project"], manifest["session"], 1, len(parts)
            )
        try:
            # ``<agent>:<id>`` is exact too; a native id two agents' sessions have (and no
            # session has as its id) names neither: NotFound naming both.
            record = self.reader.session(identity.resolve(self.store, target) or target)
        except NotFound:
            if prefix:
                record = self.reader.find_session(target)
            else:
                raise NotFound(self._missing(target)) from None
        except CorruptRecord:
            return self._damaged(target)
        return ForgetTarget(
            "session",
            record["id"],
            record["project"],
            record["id"],
            int(record.get("documents", 0)),
            int(record.get("messages", 0)),
        )

    def _damaged(self, session_id: str) -> ForgetTarget:
        """The target of a session whose record does not decode, from its documents."""
        documents = {ref["documentId"] for ref in self.reader.session_document_refs(session_id)}
        project = next(iter(self._projects_of(session_id)), "")
        return ForgetTarget(
            "session",
            session_id,
            project,
            session_id,
            len(documents),
            self._message_count(session_id),
            corrupt=True,
        )

    def _message_count(self, session_id: str) -> int:
        return sum(1 for _ in self.store.scan("documents", keys.MESSAGE_DOC.prefix(session_id)))

    def _projects_of(self, session_id: str) -> list[str]:
        """The projects whose membership lists ``session_id`` (by scanning the memberships)."""
        names = []
        for key, _ in self.store.scan("scopes", keys.PROJECT_SESSION.prefix()):
            digest, member = keys.PROJECT_SESSION.decode(key)
            if member == session_id:
                raw = self.store.get("scopes", keys.PROJECT.encode(digest))
                names.append(codec.decode_record(raw, "project")["name"] if raw else "")
        return names

    def _missing(self, target: str) -> str:
        message = f"no session or document {excerpt(target)}"
        try:
            longer = self.reader.find_session(target)["id"]
        except NotFound:
            return message
        return f"{message} ({excerpt(longer)} starts with it: give the full id to forget that one)"

    def forget(self, target: str, *, request_id: str | None = None) -> Forgotten:
        """Forget the session or document whose id is exactly ``target`` (never a prefix:
        :meth:`resolve` first). Raises :class:`NotFound` when there is none.

        ``request_id`` (the daemon request's) makes a retry idempotent across a daemon restart:
        the answer is recorded in the forget's last batch (the one that removes the document,
        or the session record), and a request id seen before gets that answer again instead of
        ``not-found``. A forget interrupted before that batch recorded nothing: its retry
        forgets what is left and answers for that."""
        with self.store.lock:
            answered = request_ids.answered(self.store, request_id, "forget")
            if answered is not None:
                return Forgotten.from_json(answered)
            found = self.resolve(target)

            def answer(batch: Batch, report: ForgetReport) -> None:
                report.target = found
                request_ids.record(batch, request_id, "forget", None, report.to_json())

            if found.kind == "document":
                report = ForgetReport()
                try:
                    head = self.reader.head(found.id)
                except NotFound:
                    raise NotFound(self._missing(target)) from None
                self._forget_document(head, report, before_commit=answer)
            else:
                report = self.forget_session(found.id, before_commit=answer)
        report.target = found
        return report.result()

    def forget_session(
        self,
        session_id: str,
        *,
        keep_pinned: bool = False,
        protected: frozenset[str] = frozenset(),
        before_commit: BeforeCommit | None = None,
    ) -> ForgetReport:
        """Forget a session and its documents. With ``keep_pinned``, pinned documents stay;
        documents in ``protected`` (named by a live search lease) stay too. A session keeping
        any document is itself kept. ``before_commit`` stages more in the batch that removes
        the session record, with the final report (not called when the session is kept)."""
        report = ForgetReport()
        with self.store.lock:
            try:
                record: SessionRecord | None = self.reader.session(session_id)
            except CorruptRecord:
                if keep_pinned or protected:
                    raise  # retention never decides about a record it cannot read
                record = None
                messages = self._message_count(session_id)
            seen: set[str] = set()
            for ref in self.reader.session_document_refs(session_id):
                doc_id = ref["documentId"]
                if doc_id in seen:
                    continue
                seen.add(doc_id)
                try:
                    head = self.reader.head(doc_id)
                except NotFound:
                    continue
                if doc_id in protected:
                    report.skipped_leased.append(doc_id)
                    continue
                if keep_pinned and self._pinned(head):
                    report.skipped_pinned.append(doc_id)
                    continue
                self._forget_document(head, report)
            if report.skipped_pinned or report.skipped_leased:
                return report
            batch = self.store.batch()
            for key, _ in self.store.scan("events", keys.EVENT.prefix(session_id)):
                batch.delete("events", key)
                report.events += 1
                if batch.mutations >= 4096:
                    self.store.commit(batch)
                    batch = self.store.batch()
            for key, _ in self.store.scan("events", keys.EVENT_SOURCE.prefix(session_id)):
                batch.delete("events", key)
            batch.delete("scopes", keys.SESSION.encode(session_id))
            if record is not None:
                pd = project_digest(record["project"])
                batch.delete("scopes", keys.PROJECT_SESSION.encode(pd, session_id))
                if record.get("agent"):
                    native = str(record.get("nativeId") or session_id)
                    batch.delete("scopes", keys.SESSION_NATIVE.encode(native, record["agent"]))
                session_order.delete(batch, record)
                for stamp in {record.get("started"), record.get("ended"), record.get("created")}:
                    if stamp:
                        bucket = day_bucket(stamp, clock.now())
                        batch.delete("scopes", keys.BUCKET_SESSION.encode(bucket, session_id))
                messages = int(record.get("messages", 0))
            else:
                self._delete_index_entries(batch, session_id)
            counts = self.store.meta_get("counts") or {}
            counts["sessions"] = max(0, int(counts.get("sessions", 0)) - 1)
            counts["events"] = max(0, int(counts.get("events", 0)) - report.events)
            counts["messages"] = max(0, int(counts.get("messages", 0)) - messages)
            self.store.meta_put(batch, "counts", counts)
            report.sessions = 1
            if before_commit is not None:
                before_commit(batch, report)
            self.store.commit(batch)
        return report

    def _delete_index_entries(self, batch: Batch, session_id: str) -> None:
        """Stage the removal of every scope entry naming ``session_id`` that its record would
        have located (project membership, day buckets, session order), found by scanning."""
        layouts = (
            keys.PROJECT_SESSION,
            keys.BUCKET_SESSION,
            keys.SESSION_ORDER,
            keys.PROJECT_SESSION_ORDER,
        )
        for layout in layouts:  # the session id is the last field of each
            for key, _ in self.store.scan("scopes", layout.prefix()):
                if layout.decode(key)[-1] == session_id:
                    batch.delete("scopes", key)
        wanted = session_id.encode("utf-8")
        for key, value in self.store.scan("scopes", keys.SESSION_NATIVE.prefix()):
            if value == wanted:
                batch.delete("scopes", key)

    def _pinned(self, head: DocumentHead) -> bool:
        return bool(self.reader.manifest(head["documentId"], head["version"]).get("pinned"))

    def _forget_document(
        self,
        head: DocumentHead,
        report: ForgetReport,
        *,
        before_commit: BeforeCommit | None = None,
    ) -> None:
        doc_id = head["documentId"]
        now = clock.now()
        batch = self.store.batch()
        counters = self.store.meta_get("counters") or {"ordinal": 0, "outbox": 0}
        counts = self.store.meta_get("counts") or {}
        released: set[bytes] = set()
        touched: set[bytes] = set()
        for version in self.reader.versions(doc_id):
            manifest = self.reader.manifest(doc_id, version)
            ordinal = int(manifest["ordinal"])
            touched |= self._release_chunks(batch, manifest, ordinal, released)
            batch.delete("documents", keys.DOC_VERSION.encode(doc_id, version))
            batch.delete("ordinals", keys.ORDINAL.encode(ordinal))
            batch.put(
                "ordinals",
                keys.TOMBSTONE.encode(ordinal),
                codec.encode_record(
                    {
                        "retired": "forgotten",
                        "documentId": doc_id,
                        "version": version,
                        "at": clock.iso(now),
                    }
                ),
            )
            batch.delete("scopes", keys.SESSION_DOC.encode(manifest["session"], ordinal))
            batch.delete("supersession", keys.SUPERSESSION.encode(doc_id, version))
            batch.delete("supersession", keys.UNSUPERSESSION.encode(doc_id, version))
            for part in manifest["parts"]:
                mkey = keys.MESSAGE_DOC.encode(manifest["session"], part["key"])
                owner = self.store.get("documents", mkey)
                if owner is not None and codec.decode_record(owner)["documentId"] == doc_id:
                    batch.delete("documents", mkey)
            if subject := manifest.get("subjectKey"):
                skey = keys.SUBJECT_LIVE.encode(project_digest(manifest["project"]), subject)
                holder = self.store.get("scopes", skey)
                if holder is not None and codec.decode_record(holder)["documentId"] == doc_id:
                    batch.delete("scopes", skey)
            counters["outbox"] = int(counters["outbox"]) + 1
            batch.put(
                "outbox",
                keys.OUTBOX.encode(counters["outbox"]),
                codec.encode_record(
                    {
                        "op": "retire",
                        "documentId": doc_id,
                        "version": version,
                        "ordinal": ordinal,
                        "reason": "forgotten",
                        "at": clock.iso(now),
                    }
                ),
            )
            report.versions += 1
            report.tombstoned += 1
        chunks = self._drop_orphans(batch, touched, released)
        report.chunks += chunks
        batch.delete("documents", keys.DOC_HEAD.encode(doc_id))
        counts["documents"] = max(0, int(counts.get("documents", 0)) - 1)
        counts["chunks"] = max(0, int(counts.get("chunks", 0)) - chunks)
        self.store.meta_put(batch, "counters", counters)
        self.store.meta_put(batch, "counts", counts)
        report.documents += 1
        if before_commit is not None:
            before_commit(batch, report)
        self.store.commit(batch)

    def _release_chunks(
        self, batch: Batch, manifest: Manifest, ordinal: int, released: set[bytes]
    ) -> set[bytes]:
        """Stage deletion of this version's owner references; return the digests it touched."""
        touched: set[bytes] = set()
        for part in [*manifest["parts"], *(manifest.get("asides") or [])]:
            for digest_hex, _, _ in part["chunks"]:
                digest = bytes.fromhex(digest_hex)
                owner_key = keys.CHUNK_OWNER.encode(digest, ordinal)
                if owner_key not in released:
                    batch.delete("chunks", owner_key)
                    released.add(owner_key)
                touched.add(digest)
        return touched

    def _drop_orphans(self, batch: Batch, digests: set[bytes], released: set[bytes]) -> int:
        """Delete each chunk none of whose owners survives this batch."""
        dropped = 0
        for digest in sorted(digests):
            survivors = any(
                key not in released
                for key, _ in self.store.scan(
                    "chunks", keys.CHUNK_OWNER.prefix(digest), limit=len(released) + 1
                )
            )
            if not survivors:
                batch.delete("chunks", keys.CHUNK.encode(digest))
                dropped += 1
        return dropped

    def expire(
        self,
        settings: Settings,
        now: datetime | None = None,
        *,
        protected: frozenset[str] = frozenset(),
    ) -> ForgetReport:
        """Retention by archive kind; a setting of 0 days keeps that kind forever.

        * Agent sessions: a session whose last activity is older than ``retentionSessionDays``
          is forgotten with its documents. Markdown roots are not agent sessions: they never
          expire by this age.
        * Markdown documents: a document whose current version was imported more than
          ``retentionMarkdownDays`` ago is forgotten (an unchanged re-import writes nothing, so
          it does not renew the age; a changed file does, and an import after the expiry
          brings the file back). The root's session stays.

        Pinned documents are kept, and so are documents in ``protected`` — those a live search
        lease names, so a locator still valid between search and recall never resolves to
        ``expired`` because retention ran in between. A session keeping one is kept too, and so
        is a session whose record does not decode (its age is unknown).

        Answers recorded by request id past their bound go too (:func:`request_ids.expire`)."""
        total = ForgetReport()
        now = now or clock.now()
        request_ids.expire(self.store, now)
        session_days = settings.retention_session_days
        markdown_days = settings.retention_markdown_days
        if session_days <= 0 and markdown_days <= 0:
            return total
        session_cutoff = now - timedelta(days=session_days)
        markdown_cutoff = now - timedelta(days=markdown_days)
        for session_id in list(self.reader.session_ids()):
            try:
                record = self.reader.session(session_id)
            except CorruptRecord:
                continue  # its age is unknown: it stays (cw doctor names it)
            if record.get("agent") == MARKDOWN_AGENT:
                if markdown_days > 0:
                    total.add(self._expire_markdown(record["id"], markdown_cutoff, protected))
                continue
            if session_days <= 0:
                continue
            last = record.get("ended") or record.get("started") or record.get("created")
            if not last or clock.parse_time(last) >= session_cutoff:
                continue
            total.add(self.forget_session(record["id"], keep_pinned=True, protected=protected))
        return total

    def _expire_markdown(
        self, session_id: str, cutoff: datetime, protected: frozenset[str]
    ) -> ForgetReport:
        """Forget the Markdown documents of one root imported before ``cutoff``."""
        report = ForgetReport()
        with self.store.lock:
            for head in self.reader.session_heads(session_id, include_superseded=True):
                manifest = self.reader.manifest(head["documentId"], int(head["version"]))
                imported = manifest.get("admitted") or manifest.get("created")
                if not imported or clock.parse_time(imported) >= cutoff:
                    continue
                if head["documentId"] in protected:
                    report.skipped_leased.append(head["documentId"])
                    continue
                if manifest.get("pinned"):
                    report.skipped_pinned.append(head["documentId"])
                    continue
                self._forget_document(head, report)
        return report

"""Admission: events, manifests, chunks, ordinals, memberships and the outbox in one WriteBatch.

Admission assigns the session sequence and source keys, splits payloads into chunks, and commits
events, manifests, chunk references, the ordinal, memberships and the outbox entry in one batch; a
document is acknowledged only after that batch commits. Re-admitting the same content is a no-op
(idempotent by document id and content digest, or by request id); a changed document becomes a new
version that supersedes the old one (reason ``extended`` when the old messages are a prefix of the
new ones).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, cast

from cwcore import clock
from cwcore.contract.supersession import Restored, Superseded
from cwcore.errors import Conflict, CwError, InvalidInput, NotFound, excerpt
from cwcore.model import ROLES, DocumentPart, DocumentSpec, SessionSpec, SourceEvent, Usage
from cwcore.store import codec, keys, request_ids, session_order
from cwcore.store.limits import CHUNK_BYTES, PART_SEPARATOR, check_document
from cwcore.store.parts import extra_fields, models_of, usage_total
from cwcore.store.records import (
    DocumentHead,
    Manifest,
    SessionRecord,
    decode_head,
    decode_session,
)
from cwcore.store.rocks import Batch, Store

MAX_ORDINAL = (1 << 32) - 1
#: Document kinds whose parts are conversation messages (their usage sums into the session).
MESSAGE_KINDS = ("turn", "tool-result")
#: The session keys a later admission fills in when the first left them empty.
_SourceKey = Literal["cwd", "resume", "source", "parentToolCall"]


@dataclass(frozen=True)
class Ack:
    """One acknowledged document version. ``new`` is False when admission was a no-op."""

    document_id: str
    version: int
    session_id: str
    kind: str
    ordinal: int
    new: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "version": self.version,
            "sessionId": self.session_id,
            "kind": self.kind,
        }


@dataclass(frozen=True)
class Rejected:
    """A document admission refused before any write, with the reason."""

    document_id: str
    error: CwError


@dataclass
class AdmitResult:
    acks: list[Ack] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    new_events: int = 0


def split_chunks(data: bytes, limit: int = CHUNK_BYTES) -> list[bytes]:
    """Split UTF-8 bytes into pieces of at most ``limit`` bytes, at line ends when possible.

    A piece ends after a newline when one exists in its second half; otherwise at a UTF-8
    character boundary, so every chunk is valid UTF-8 on its own.
    """
    pieces: list[bytes] = []
    pos = 0
    while len(data) - pos > limit:
        end = pos + limit
        newline = data.rfind(b"\n", pos + limit // 2, end)
        if newline != -1:
            end = newline + 1
        else:
            while end > pos and (data[end] & 0xC0) == 0x80:
                end -= 1
        pieces.append(data[pos:end])
        pos = end
    if pos < len(data) or not pieces:
        pieces.append(data[pos:])
    return pieces


def content_digest(spec: DocumentSpec) -> bytes:
    """Identity of a document's content: kind, parts (key, role, kind, text and the optional
    fields of :mod:`cwcore.store.parts`), annotations, asides and metadata. Optional fields and
    asides join the digest only when present, so documents without them keep their digests."""
    parts: list[str | bytes] = [spec.kind, codec.dumps(spec.metadata)]
    for p in spec.parts:
        parts += [p.message_key, p.role, p.kind, p.text]
        extra = extra_fields(p)
        if extra:
            parts += ["fields", codec.dumps(extra)]
    for a in spec.annotations:
        parts += [a.relation, struct.pack(">II", a.start, a.end), a.message_key]
    for aside in spec.asides:
        p = aside.part
        parts += ["aside", struct.pack(">i", aside.after), p.message_key, p.role, p.kind, p.text]
        extra = extra_fields(p)
        if extra:
            parts += ["fields", codec.dumps(extra)]
    return keys.digest16(*parts)


def _check_part(spec: DocumentSpec, part: DocumentPart) -> None:
    if part.role not in ROLES:
        raise InvalidInput(f"document {spec.document_id}: unknown role {excerpt(part.role)}")
    role, _, mid = part.message_key.partition(":")
    if role != part.role:
        raise InvalidInput(f"messageKey {excerpt(part.message_key)} does not start with its role")
    keys.check_id(mid, "source message id")
    keys.check_id(part.message_key, "messageKey", keys.MAX_MESSAGE_KEY_BYTES)


def _entry_fields(part: DocumentPart) -> dict[str, Any]:
    """A manifest entry's optional fields: time, tool, lines, piece, then those of
    :func:`~cwcore.store.parts.extra_fields`."""
    entry: dict[str, Any] = {}
    if part.timestamp:
        entry["ts"] = part.timestamp
    if part.tool_name:
        entry["tool"] = part.tool_name
    if part.lines:
        entry["lines"] = list(part.lines)
    if part.piece is not None:
        entry["piece"] = list(part.piece)
    return {**entry, **extra_fields(part)}


def _add_usage(session: SessionRecord, delta: Usage, models: list[str]) -> None:
    """Move the session's token sums by ``delta`` (a new version minus the one it replaces)
    and add ``models`` to the models it used."""
    if delta:
        total = Usage.from_json(session.get("tokens")) or Usage()
        session["tokens"] = (total + delta).to_json()
    known = list(session.get("models") or [])
    for model in models:
        if model not in known:
            known.append(model)
    if known:
        session["models"] = known


def day_bucket(timestamp: str | None, fallback: datetime) -> int:
    moment = clock.parse_time(timestamp) if timestamp else fallback
    return max(0, int(moment.timestamp() // 86400))


def project_digest(project: str) -> bytes:
    return keys.digest16("project", project)


class Admission:
    """The single writer of canonical records. Callers hold no RocksDB state of their own."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- validation ---------------------------------------------------------------------------

    @staticmethod
    def validate(spec: DocumentSpec) -> None:
        """Every check that can refuse a document, done before any write."""
        keys.check_id(spec.document_id, "document id")
        keys.check_id(spec.session_id, "session id")
        if not spec.project:
            raise InvalidInput(f"document {spec.document_id}: project is empty")
        keys.check_id(spec.project, "project name")
        if spec.kind not in ("turn", "tool-result", "decision", "markdown", "note"):
            raise InvalidInput(f"document {spec.document_id}: unknown kind {excerpt(spec.kind)}")
        for part in spec.parts:
            _check_part(spec, part)
        for aside in spec.asides:
            _check_part(spec, aside.part)
            if not -1 <= aside.after < len(spec.parts):
                raise InvalidInput(f"document {spec.document_id}: aside after a missing part")
        if spec.subject_key is not None:
            keys.check_id(spec.subject_key, "subjectKey")
        if spec.supersedes is not None:
            keys.check_id(spec.supersedes, "supersedes")
        if spec.request_id is not None:
            keys.check_id(spec.request_id, "request id")
        check_document(spec)

    # -- admission ----------------------------------------------------------------------------

    def admit(
        self,
        session: SessionSpec,
        events: Sequence[SourceEvent],
        documents: Sequence[DocumentSpec],
    ) -> AdmitResult:
        """Admit a session's new events and documents in one atomic batch.

        Documents that fail validation are returned in ``rejected`` and not written; everything
        else commits together. Raises only for problems with the session itself.
        """
        keys.check_id(session.session_id, "session id")
        if not session.project:
            raise InvalidInput(f"session {session.session_id}: project is empty")
        keys.check_id(session.project, "project name")  # no NUL, valid Unicode, <= 512 bytes
        result = AdmitResult()
        valid: list[DocumentSpec] = []
        ids: set[str] = set()
        for spec in documents:
            try:
                self.validate(spec)
                if spec.session_id != session.session_id:
                    raise InvalidInput(f"document {spec.document_id} belongs to another session")
                if spec.document_id in ids:
                    # Both would get the same version and the second manifest would replace
                    # the first inside the batch: refuse the second instead of losing the first.
                    raise InvalidInput(f"document {spec.document_id} appears twice in one batch")
                ids.add(spec.document_id)
            except CwError as exc:
                result.rejected.append(Rejected(spec.document_id, exc))
                continue
            valid.append(spec)

        with self.store.lock:
            batch = self.store.batch()
            now = clock.now()
            counters = self.store.meta_get("counters") or {"ordinal": 0, "outbox": 0}
            counts = self.store.meta_get("counts") or {
                "sessions": 0,
                "documents": 0,
                "messages": 0,
                "chunks": 0,
                "events": 0,
            }
            record, is_new_session = self._session_record(session, now)
            previous = None if is_new_session else record.copy()
            if is_new_session:
                counts["sessions"] += 1
                self._put_membership(batch, session)
            result.new_events = self._put_events(batch, session.session_id, record, events)
            counts["events"] += result.new_events
            seen_chunks: set[bytes] = set()
            seen_messages: set[str] = set()
            for spec in valid:
                try:
                    ack = self._put_document(
                        batch, spec, record, counters, counts, seen_chunks, seen_messages, now
                    )
                except CwError as exc:
                    result.rejected.append(Rejected(spec.document_id, exc))
                    continue
                result.acks.append(ack)
            if (
                not any(a.new for a in result.acks)
                and result.new_events == 0
                and not is_new_session
            ):
                return result  # nothing changed: write nothing
            if not result.acks and result.new_events == 0:
                return result  # every document was refused: the session is not created either
            record["updated"] = clock.iso(now)
            batch.put(
                "scopes", keys.SESSION.encode(session.session_id), codec.encode_record(record)
            )
            session_order.put(batch, record, previous)
            self.store.meta_put(batch, "counters", counters)
            self.store.meta_put(batch, "counts", counts)
            self.store.commit(batch)
        return result

    def admit_one(self, session: SessionSpec, spec: DocumentSpec) -> Ack:
        """Admit a single document; raise its error instead of returning it."""
        result = self.admit(session, (), [spec])
        if result.rejected:
            raise result.rejected[0].error
        return result.acks[0]

    def supersede(
        self,
        document_id: str,
        *,
        by: str | None = None,
        reason: str | None = None,
        subject_key: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> Superseded:
        """Retire a live document from search, keeping it auditable until retention
        removes it (an explicit correction leaves every candidate generator at once): an
        append-only record, a tombstone on its ordinal, its head marked
        ``superseded``, and a ``retire`` outbox entry. ``by`` names the replacement.

        ``project`` is the caller's authenticated project (None: any). A document or
        replacement of another project raises the same :class:`NotFound` as a missing one,
        before its state is looked at. ``request_id`` (the daemon request's) makes a retry
        idempotent across a daemon restart: the answer is recorded in the same batch, and a
        request id seen before gets that answer again instead of ``conflict``."""
        keys.check_id(document_id, "document id")
        if subject_key is not None:
            keys.check_id(subject_key, "subjectKey")
        with self.store.lock:
            answered = self._answered(request_id, "supersede", project)
            if answered is not None:
                return Superseded.from_json(answered)
            raw = self.store.get("documents", keys.DOC_HEAD.encode(document_id))
            head = decode_head(raw) if raw is not None else None
            if head is None or (project is not None and head.get("project") != project):
                raise NotFound(f"no document {excerpt(document_id)}")
            if head.get("state") != "live":
                raise Conflict(f"{document_id} is already {head.get('state')}")
            by_version = 0
            if by is not None:
                keys.check_id(by, "replacement document id")
                if by == document_id:
                    raise InvalidInput("a document cannot supersede itself")
                by_raw = self.store.get("documents", keys.DOC_HEAD.encode(by))
                by_head = decode_head(by_raw) if by_raw else None
                if by_head is None or (project is not None and by_head.get("project") != project):
                    raise NotFound(f"no replacement document {excerpt(by)}")
                if by_head.get("state") != "live":
                    raise Conflict(f"the replacement {by} is not live ({by_head.get('state')})")
                by_version = int(by_head["version"])
            now = clock.now()
            batch = self.store.batch()
            self._retire(batch, head, by or "", by_version, reason or "superseded", now)
            head["state"] = "superseded"
            head["supersededBy"] = by
            head["supersededAt"] = clock.iso(now)
            head["reason"] = reason
            batch.put("documents", keys.DOC_HEAD.encode(document_id), codec.encode_record(head))
            pd = project_digest(head["project"])
            if subject_key is not None:
                if by is not None:
                    batch.put(
                        "scopes",
                        keys.SUBJECT_LIVE.encode(pd, subject_key),
                        codec.encode_record({"documentId": by}),
                    )
                else:
                    batch.delete("scopes", keys.SUBJECT_LIVE.encode(pd, subject_key))
            counters = self.store.meta_get("counters") or {"ordinal": 0, "outbox": 0}
            counters["outbox"] = int(counters["outbox"]) + 1
            batch.put(
                "outbox",
                keys.OUTBOX.encode(counters["outbox"]),
                codec.encode_record(
                    {
                        "op": "retire",
                        "documentId": document_id,
                        "version": head["version"],
                        "ordinal": head["ordinal"],
                        "reason": "superseded",
                        "at": clock.iso(now),
                    }
                ),
            )
            self.store.meta_put(batch, "counters", counters)
            result = Superseded(
                document_id, int(head["version"]), by, reason or "superseded", head["supersededAt"]
            )
            self._record_answer(batch, request_id, "supersede", project, result.to_json())
            self.store.commit(batch)
        return result

    def _answered(
        self, request_id: str | None, op: str, project: str | None
    ) -> dict[str, Any] | None:
        """The answer recorded for ``request_id`` by an earlier ``op`` (None: none yet)."""
        return request_ids.answered(self.store, request_id, op, project)

    def _record_answer(
        self,
        batch: Batch,
        request_id: str | None,
        op: str,
        project: str | None,
        answer: dict[str, Any],
    ) -> None:
        request_ids.record(batch, request_id, op, project, answer)

    def unsupersede(
        self,
        document_id: str,
        *,
        reason: str | None = None,
        project: str | None = None,
        request_id: str | None = None,
    ) -> Restored:
        """Undo the supersession of a document: it becomes live and searchable again.

        Append-only: the supersession record of the retired version stays as it is, and an
        *unsupersession* record (reason, time, the restored version) is added beside it. The
        retired version keeps its tombstone, so a locator made before the supersede still
        answers ``superseded``; the document comes back as a new version (the same content,
        parts and chunks, a new ordinal) that is indexed like any admission. A ``subjectKey``
        the document held returns to it unless another live document holds it now
        (:class:`Conflict`). ``project`` and ``request_id`` as in :meth:`supersede`."""
        keys.check_id(document_id, "document id")
        with self.store.lock:
            answered = self._answered(request_id, "supersede.undo", project)
            if answered is not None:
                return Restored.from_json(answered)
            raw = self.store.get("documents", keys.DOC_HEAD.encode(document_id))
            head = decode_head(raw) if raw is not None else None
            if head is None or (project is not None and head.get("project") != project):
                raise NotFound(f"no document {excerpt(document_id)}")
            if head.get("state") != "superseded":
                raise Conflict(
                    f"{document_id} is {head.get('state', 'live')}: there is no supersession "
                    "to undo"
                )
            old_version = int(head["version"])
            manifest = self._load_manifest(document_id, old_version)
            pd = project_digest(head["project"])
            subject = manifest.get("subjectKey")
            if subject:
                raw_holder = self.store.get("scopes", keys.SUBJECT_LIVE.encode(pd, subject))
                holder = codec.decode_record(raw_holder, "subject") if raw_holder else None
                if holder is not None and holder["documentId"] != document_id:
                    held = self.store.get("documents", keys.DOC_HEAD.encode(holder["documentId"]))
                    if held is not None and decode_head(held, "record").get("state") == "live":
                        raise Conflict(
                            f"subjectKey {excerpt(subject)} is held by {holder['documentId']} "
                            "now; supersede it first"
                        )
            counters = self.store.meta_get("counters") or {"ordinal": 0, "outbox": 0}
            if counters["ordinal"] >= MAX_ORDINAL:
                raise Conflict("the store has used every document ordinal")
            ordinal = counters["ordinal"] = int(counters["ordinal"]) + 1
            version = old_version + 1
            now = clock.now()
            at = clock.iso(now)
            batch = self.store.batch()
            restored = {
                **manifest,
                "version": version,
                "ordinal": ordinal,
                "admitted": at,
                "restores": {"version": old_version, "reason": reason, "at": at},
            }
            batch.put(
                "documents",
                keys.DOC_VERSION.encode(document_id, version),
                codec.encode_record(restored),
            )
            batch.put(
                "ordinals",
                keys.ORDINAL.encode(ordinal),
                codec.encode_record({"documentId": document_id, "version": version}),
            )
            batch.put(
                "scopes",
                keys.SESSION_DOC.encode(head["session"], ordinal),
                codec.encode_record(
                    {"documentId": document_id, "version": version, "kind": head["kind"]}
                ),
            )
            for part in manifest["parts"]:
                for digest_hex, _, _ in part["chunks"]:
                    owner = keys.CHUNK_OWNER.encode(bytes.fromhex(digest_hex), ordinal)
                    batch.put("chunks", owner, b"")
            record = {
                "documentId": document_id,
                "version": old_version,
                "restoredVersion": version,
                "reason": reason or "unsuperseded",
                "at": at,
            }
            batch.put(
                "supersession",
                keys.UNSUPERSESSION.encode(document_id, old_version),
                codec.encode_record(record),
            )
            # The restored head drops the supersession's keys (its record keeps them).
            new_head = head.copy()
            new_head.pop("supersededBy", None)
            new_head.pop("supersededAt", None)
            new_head.pop("reason", None)
            new_head["state"] = "live"
            new_head["version"] = version
            new_head["ordinal"] = ordinal
            new_head["restoredAt"] = at
            batch.put("documents", keys.DOC_HEAD.encode(document_id), codec.encode_record(new_head))
            if subject:
                batch.put(
                    "scopes",
                    keys.SUBJECT_LIVE.encode(pd, subject),
                    codec.encode_record({"documentId": document_id}),
                )
            counters["outbox"] = int(counters["outbox"]) + 1
            batch.put(
                "outbox",
                keys.OUTBOX.encode(counters["outbox"]),
                codec.encode_record(
                    {
                        "op": "index",
                        "documentId": document_id,
                        "version": version,
                        "ordinal": ordinal,
                        "at": at,
                        "reason": "unsuperseded",
                    }
                ),
            )
            self.store.meta_put(batch, "counters", counters)
            restored_as = Restored(document_id, version, old_version, str(record["reason"]), at)
            answer = restored_as.to_json()
            self._record_answer(batch, request_id, "supersede.undo", project, answer)
            self.store.commit(batch)
        return restored_as

    def _session_record(self, session: SessionSpec, now: datetime) -> tuple[SessionRecord, bool]:
        raw = self.store.get("scopes", keys.SESSION.encode(session.session_id))
        if raw is not None:
            record = decode_session(raw, "session")
            if record.get("project") and record["project"] != session.project:
                # Membership is decided once (spec 003): the import pipeline keeps later turns
                # in the session's project; a caller that does not is refused, never split.
                raise InvalidInput(
                    f"session {excerpt(session.session_id)} belongs to project "
                    f"{excerpt(record['project'])}, not {excerpt(session.project)}"
                )
            if record.get("agent") and record["agent"] != session.agent:
                # Another agent's session with this id: identity.session_key gives it its own.
                raise InvalidInput(
                    f"session {excerpt(session.session_id)} belongs to {record['agent']}, "
                    f"not {excerpt(session.agent)}"
                )
            # Membership is immutable: the first admission's project and agent stay.
            sources: tuple[tuple[_SourceKey, str | None], ...] = (
                ("cwd", session.cwd),
                ("resume", session.resume_command),
                ("source", session.source_path),
                ("parentToolCall", session.parent_tool_call),
            )
            for name, value in sources:
                if value and not record.get(name):
                    record[name] = value
            # The title follows the source: a later summary or rename replaces a derived title.
            if session.title:
                record["title"] = session.title
            if session.lineage and not record.get("lineage"):
                record["lineage"] = list(session.lineage)
                record["parent"] = session.parent_session
            return record, False
        fresh: SessionRecord = {
            "id": session.session_id,
            "project": session.project,
            "agent": session.agent,
            "started": session.started,
            "ended": session.started,
            "title": session.title,
            "cwd": session.cwd,
            "parent": session.parent_session,
            "lineage": list(session.lineage),
            "source": session.source_path,
            "resume": session.resume_command,
            "parentToolCall": session.parent_tool_call,
            "created": clock.iso(now),
            "nextSeq": 1,
            "messages": 0,
            "turns": 0,
            "toolCalls": 0,
            "documents": 0,
        }
        if session.native_id and session.native_id != session.session_id:
            fresh["nativeId"] = session.native_id
        return fresh, True

    def _put_membership(self, batch: Batch, session: SessionSpec) -> None:
        pd = project_digest(session.project)
        batch.put("scopes", keys.PROJECT.encode(pd), codec.encode_record({"name": session.project}))
        batch.put("scopes", keys.PROJECT_SESSION.encode(pd, session.session_id), b"")
        batch.put(
            "scopes",
            keys.SESSION_NATIVE.encode(session.native_id or session.session_id, session.agent),
            session.session_id.encode("utf-8"),
        )

    def _put_events(
        self, batch: Batch, session_id: str, record: SessionRecord, events: Sequence[SourceEvent]
    ) -> int:
        if not events:
            return 0
        # Identical lines in one file are told apart by their occurrence index, so a file and a
        # copy of it with lines appended share every digest of the common prefix.
        occurrences: dict[bytes, int] = {}
        digests: list[bytes] = []
        for event in events:
            base = keys.digest16(event.raw)
            n = occurrences.get(base, 0)
            occurrences[base] = n + 1
            digests.append(keys.digest16(base, struct.pack(">I", n)))
        existing = self.store.get_many(
            "events", [keys.EVENT_SOURCE.encode(session_id, d) for d in digests]
        )
        added = 0
        for event, digest, found in zip(events, digests, existing, strict=True):
            if found is not None:
                continue
            seq = int(record["nextSeq"])
            record["nextSeq"] = seq + 1
            batch.put(
                "events",
                keys.EVENT.encode(session_id, seq),
                codec.encode_event(event.line, event.conversational, event.type, event.raw),
            )
            batch.put(
                "events", keys.EVENT_SOURCE.encode(session_id, digest), struct.pack(">Q", seq)
            )
            added += 1
        return added

    def _put_document(
        self,
        batch: Batch,
        spec: DocumentSpec,
        session: SessionRecord,
        counters: dict[str, Any],
        counts: dict[str, Any],
        seen_chunks: set[bytes],
        seen_messages: set[str],
        now: datetime,
    ) -> Ack:
        digest = content_digest(spec)
        if spec.request_id is not None:
            done = self.store.get("requests", keys.REQUEST.encode(spec.request_id))
            if done is not None:
                body = codec.decode_record(done, "request")
                return Ack(
                    body["documentId"],
                    body["version"],
                    body["sessionId"],
                    body["kind"],
                    body["ordinal"],
                    False,
                )
        head_raw = self.store.get("documents", keys.DOC_HEAD.encode(spec.document_id))
        head = decode_head(head_raw) if head_raw else None
        if head is not None and head.get("digest") == digest.hex():
            return Ack(
                spec.document_id,
                head["version"],
                head["session"],
                head["kind"],
                head["ordinal"],
                False,
            )
        if head is not None and head["session"] != spec.session_id:
            raise Conflict(
                f"document {spec.document_id} already belongs to session {head['session']}"
            )
        pd = project_digest(spec.project)
        subject_holder: str | None = None
        if spec.subject_key is not None:
            raw = self.store.get("scopes", keys.SUBJECT_LIVE.encode(pd, spec.subject_key))
            if raw is not None:
                subject_holder = codec.decode_record(raw, "subject")["documentId"]
                if subject_holder not in (spec.document_id, spec.supersedes):
                    raise Conflict(
                        f"subjectKey {excerpt(spec.subject_key)} is held by {subject_holder}; "
                        f"admit with supersedes={subject_holder} to replace it"
                    )
        target: DocumentHead | None = None
        if spec.supersedes is not None and spec.supersedes != spec.document_id:
            target_raw = self.store.get("documents", keys.DOC_HEAD.encode(spec.supersedes))
            if target_raw is None:
                raise NotFound(f"supersedes: no document {spec.supersedes}")
            target = decode_head(target_raw)
        if counters["ordinal"] >= MAX_ORDINAL:
            raise Conflict("the store has used every document ordinal")
        ordinal = counters["ordinal"] = counters["ordinal"] + 1
        version = 1 if head is None else int(head["version"]) + 1

        manifest = self._manifest(spec, version, ordinal, digest, batch, seen_chunks, counts, now)
        batch.put(
            "documents",
            keys.DOC_VERSION.encode(spec.document_id, version),
            codec.encode_record(manifest),
        )
        batch.put(
            "ordinals",
            keys.ORDINAL.encode(ordinal),
            codec.encode_record({"documentId": spec.document_id, "version": version}),
        )
        batch.put(
            "scopes",
            keys.SESSION_DOC.encode(spec.session_id, ordinal),
            codec.encode_record(
                {"documentId": spec.document_id, "version": version, "kind": spec.kind}
            ),
        )
        bucket = day_bucket(spec.created, now)
        batch.put("scopes", keys.BUCKET_SESSION.encode(bucket, spec.session_id), b"")
        new_head: DocumentHead = {
            "documentId": spec.document_id,
            "version": version,
            "ordinal": ordinal,
            "session": spec.session_id,
            "project": spec.project,
            "kind": spec.kind,
            "digest": digest.hex(),
            "state": "live",
            "created": manifest["created"],
        }
        outbox: list[dict[str, Any]] = [
            {"op": "index", "documentId": spec.document_id, "version": version, "ordinal": ordinal}
        ]
        old_usage = Usage()
        if head is not None:
            old_parts = self._load_manifest(spec.document_id, head["version"])["parts"]
            old_usage = usage_total(old_parts)
            old_keys = [p["key"] for p in old_parts]
            new_keys = [p.message_key for p in spec.parts]
            reason = "extended" if new_keys[: len(old_keys)] == old_keys else "changed"
            self._retire(
                batch, head, spec.document_id, version, spec.supersede_reason or reason, now
            )
            outbox.append(
                {
                    "op": "retire",
                    "documentId": spec.document_id,
                    "version": head["version"],
                    "ordinal": head["ordinal"],
                }
            )
        else:
            counts["documents"] += 1
            session["documents"] = int(session.get("documents", 0)) + 1
            if spec.starts_turn:
                session["turns"] = int(session.get("turns", 0)) + 1
        if target is not None and target.get("state") == "live":
            self._retire(
                batch, target, spec.document_id, version, spec.supersede_reason or "superseded", now
            )
            target["state"] = "superseded"
            target["supersededBy"] = spec.document_id
            batch.put(
                "documents", keys.DOC_HEAD.encode(target["documentId"]), codec.encode_record(target)
            )
            outbox.append(
                {
                    "op": "retire",
                    "documentId": spec.supersedes,
                    "version": target["version"],
                    "ordinal": target["ordinal"],
                }
            )
        if spec.subject_key is not None:
            batch.put(
                "scopes",
                keys.SUBJECT_LIVE.encode(pd, spec.subject_key),
                codec.encode_record({"documentId": spec.document_id}),
            )
        batch.put(
            "documents", keys.DOC_HEAD.encode(spec.document_id), codec.encode_record(new_head)
        )
        for part in spec.parts:
            if part.piece is not None and part.piece[0] > 0:
                continue  # a cut message is found at, and counted with, its first piece
            mkey = keys.MESSAGE_DOC.encode(spec.session_id, part.message_key)
            first = (
                part.message_key not in seen_messages and self.store.get("documents", mkey) is None
            )
            if spec.kind == "turn" or first:
                batch.put("documents", mkey, codec.encode_record({"documentId": spec.document_id}))
            # Each message is counted once, in the first document that holds it: a turn or, in
            # the small-document layout, a tool-result document of its own. (An old-layout
            # tool-result document repeats a message its turn already counted.)
            if first:
                seen_messages.add(part.message_key)
                counts["messages"] += 1
                session["messages"] = int(session.get("messages", 0)) + 1
                if part.kind == "tool-call":
                    session["toolCalls"] = int(session.get("toolCalls", 0)) + 1
        for entry in outbox:
            seq = counters["outbox"] = counters["outbox"] + 1
            entry["at"] = clock.iso(now)
            batch.put("outbox", keys.OUTBOX.encode(seq), codec.encode_record(entry))
        if spec.kind in MESSAGE_KINDS:
            entries = manifest["parts"]
            _add_usage(session, usage_total(entries) - old_usage, models_of(entries))
        ts = [p.timestamp for p in spec.parts if p.timestamp]
        if ts:
            started, ended = session.get("started"), session.get("ended")
            if not started or min(ts) < started:
                session["started"] = min(ts)
            if not ended or max(ts) > ended:
                session["ended"] = max(ts)
        ack = Ack(spec.document_id, version, spec.session_id, spec.kind, ordinal, True)
        if spec.request_id is not None:
            batch.put(
                "requests",
                keys.REQUEST.encode(spec.request_id),
                codec.encode_record({**ack.to_json(), "ordinal": ordinal}),
            )
        return ack

    def _manifest(
        self,
        spec: DocumentSpec,
        version: int,
        ordinal: int,
        digest: bytes,
        batch: Batch,
        seen_chunks: set[bytes],
        counts: dict[str, Any],
        now: datetime,
    ) -> Manifest:
        """Build the manifest and stage each part's chunks (content-addressed, stored once)."""
        parts: list[dict[str, Any]] = []
        offset = 0
        sep = len(PART_SEPARATOR.encode())
        new_chunks: list[tuple[bytes, bytes]] = []

        def stage(data: bytes, start: int) -> list[list[Any]]:
            chunks = []
            pos = start
            for piece in split_chunks(data):
                h = keys.digest16(piece)
                chunks.append([h.hex(), pos, len(piece)])
                # Owner references let retention delete a shared chunk only with its last owner.
                batch.put("chunks", keys.CHUNK_OWNER.encode(h, ordinal), b"")
                pos += len(piece)
                if h not in seen_chunks:
                    seen_chunks.add(h)
                    new_chunks.append((h, piece))
            return chunks

        for index, part in enumerate(spec.parts):
            if index:
                offset += sep
            data = part.text.encode("utf-8", "surrogatepass")
            entry: dict[str, Any] = {
                "key": part.message_key,
                "role": part.role,
                "kind": part.kind,
                "start": offset,
                "end": offset + len(data),
                "chunks": stage(data, offset),
                **_entry_fields(part),
            }
            parts.append(entry)
            offset += len(data)
        asides: list[dict[str, Any]] = []
        for aside in spec.asides:
            # An aside's chunk offsets count from its own start: it is not in the text.
            data = aside.part.text.encode("utf-8", "surrogatepass")
            asides.append(
                {
                    "key": aside.part.message_key,
                    "role": aside.part.role,
                    "kind": aside.part.kind,
                    "after": aside.after,
                    "bytes": len(data),
                    "chunks": stage(data, 0),
                    **_entry_fields(aside.part),
                }
            )
        if new_chunks:
            found = self.store.get_many("chunks", [keys.CHUNK.encode(h) for h, _ in new_chunks])
            for (h, piece), hit in zip(new_chunks, found, strict=True):
                if hit is None:
                    batch.put("chunks", keys.CHUNK.encode(h), piece)
                    counts["chunks"] += 1
        created = spec.created or next((p.timestamp for p in spec.parts if p.timestamp), None)
        manifest: Manifest = {
            "documentId": spec.document_id,
            "version": version,
            "ordinal": ordinal,
            "kind": spec.kind,
            "session": spec.session_id,
            "project": spec.project,
            "agent": spec.agent,
            "created": created or clock.iso(now),
            "admitted": clock.iso(now),
            "title": spec.title,
            "parent": spec.parent_document,
            "bytes": offset,
            "digest": digest.hex(),
            "parts": parts,
            "metadata": spec.metadata,
            "annotations": [[a.relation, a.start, a.end, a.message_key] for a in spec.annotations],
            "supersedes": spec.supersedes,
            "subjectKey": spec.subject_key,
            "pinned": spec.pinned,
            "startsTurn": spec.starts_turn,
        }
        if asides:
            manifest["asides"] = asides
        return manifest

    def _load_manifest(self, document_id: str, version: int) -> Manifest:
        raw = self.store.get("documents", keys.DOC_VERSION.encode(document_id, version))
        if raw is None:
            raise NotFound(f"document {document_id} v{version} is missing")
        return cast(Manifest, codec.decode_record(raw, "manifest"))

    def _retire(
        self,
        batch: Batch,
        head: DocumentHead,
        by: str,
        by_version: int,
        reason: str,
        now: datetime,
    ) -> None:
        """Append a supersession record and tombstone the old version's ordinal."""
        record = {
            "documentId": head["documentId"],
            "version": head["version"],
            "by": by,
            "byVersion": by_version,
            "reason": reason,
            "at": clock.iso(now),
        }
        batch.put(
            "supersession",
            keys.SUPERSESSION.encode(head["documentId"], head["version"]),
            codec.encode_record(record),
        )
        batch.put(
            "ordinals",
            keys.TOMBSTONE.encode(head["ordinal"]),
            codec.encode_record({**record, "retired": "superseded"}),
        )

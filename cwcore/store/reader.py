"""Read paths over canonical records: sessions, manifests, document text, events.

Readers never load the archive as a whole: session listings walk the ``session-order`` index
(:mod:`cwcore.store.session_order`) and read only the records of a page; document text is
reassembled from the chunks a byte range intersects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

from cwcore.errors import CorruptRecord, NotFound, excerpt
from cwcore.store import codec, identity, keys
from cwcore.store.identity import session_what
from cwcore.store.limits import PART_SEPARATOR
from cwcore.store.records import DocumentHead, Manifest, SessionRecord, decode_head, decode_session
from cwcore.store.rocks import Store

_SEP = PART_SEPARATOR.encode()


@dataclass(frozen=True)
class EventRecord:
    """One stored source line: its session sequence number and verbatim bytes."""

    seq: int
    line: int
    conversational: bool
    type: str
    raw: bytes


class Reader:
    def __init__(self, store: Store) -> None:
        self.store = store

    # -- sessions -----------------------------------------------------------------------------

    def session(self, session_id: str) -> SessionRecord:
        keys.check_id(session_id, "session id")
        raw = self.store.get("scopes", keys.SESSION.encode(session_id))
        if raw is None:
            raise NotFound(f"no session {excerpt(session_id)}")
        return decode_session(raw, session_what(session_id))

    def find_session(self, prefix: str) -> SessionRecord:
        """A session by id or unique id prefix (at least 4 characters). Prefixes are matched on
        the keys, so only the matching record is decoded (a corrupt record elsewhere does not
        stand in the way). ``<agent>:<id>`` names that agent's session; a native id that is no
        session id and that two agents' sessions have is :class:`NotFound` naming both
        (:func:`cwcore.store.identity.resolve`). The short form tables show for a sub-agent
        (``170cebcc…/agent-a325871``, or ``...`` typed) names it too."""
        exact = identity.resolve(self.store, prefix)
        if exact is not None:
            return self.session(exact)
        shortened = _shortened(prefix)
        if shortened is not None:
            # The short form tables show for a sub-agent (``170cebcc…/agent-a325871``): its
            # parent's prefix and its own part, one session or NotFound.
            head, tail = shortened
            found = [s for s in self.session_ids() if s.startswith(head) and s.endswith(tail)]
            found = [s for s in found if len(s) >= len(head) + len(tail)]
            if len(found) == 1:
                return self.session(found[0])
            if not found:
                raise NotFound(f"no session {excerpt(prefix)}")
            ids = ", ".join(sorted(found)[:5])
            raise NotFound(f"session {excerpt(prefix)} is ambiguous: {ids}")
        if len(prefix) < 4:
            self.session(prefix)  # raises NotFound
        matches = [sid for sid in self.session_ids() if sid.startswith(prefix)]
        if len(matches) == 1:
            return self.session(matches[0])
        # A sub-agent's id extends its parent's (``<parent>/agent-<id>``): a prefix that names
        # a session names it, not the sub-agents that share its prefix.
        roots = [m for m in matches if all(o.startswith(m) for o in matches)]
        if len(roots) == 1:
            return self.session(roots[0])
        if not matches:
            raise NotFound(f"no session {excerpt(prefix)}")
        ids = ", ".join(sorted(matches)[:5])
        raise NotFound(f"session prefix {excerpt(prefix)} is ambiguous: {ids}")

    def session_ids(self) -> Iterator[str]:
        """Every session id with a record, from the keys alone."""
        for key, _ in self.store.scan("scopes", keys.SESSION.prefix()):
            yield str(keys.SESSION.decode(key)[0])

    def sessions(self) -> Iterator[SessionRecord]:
        for key, value in self.store.scan("scopes", keys.SESSION.prefix()):
            what = session_what(str(keys.SESSION.decode(key)[0]))
            yield decode_session(value, what)

    def sessions_by_id(self, session_ids: list[str]) -> list[SessionRecord]:
        """Session records in the order given (one multi-get); a missing one is corrupt."""
        raws = self.store.get_many("scopes", [keys.SESSION.encode(s) for s in session_ids])
        out: list[SessionRecord] = []
        for session_id, raw in zip(session_ids, raws, strict=True):
            if raw is None:
                raise CorruptRecord(f"session {excerpt(session_id)} is indexed but has no record")
            out.append(decode_session(raw, session_what(session_id)))
        return out

    def projects(self) -> list[str]:
        return [
            codec.decode_record(value, "project")["name"]
            for _, value in self.store.scan("scopes", keys.PROJECT.prefix())
        ]

    def session_document_refs(self, session_id: str) -> list[dict[str, Any]]:
        """Every document version admitted for a session, in admission (ordinal) order."""
        out = []
        for key, value in self.store.scan("scopes", keys.SESSION_DOC.prefix(session_id)):
            ordinal = keys.SESSION_DOC.decode(key)[1]
            ref = codec.decode_record(value, "session document")
            ref["ordinal"] = ordinal
            out.append(ref)
        return out

    def session_heads(
        self, session_id: str, *, include_superseded: bool = False
    ) -> list[DocumentHead]:
        """The current head of each document of a session, in order of first admission."""
        seen: dict[str, DocumentHead] = {}
        for ref in self.session_document_refs(session_id):
            if ref["documentId"] in seen:
                continue
            head = self.head(ref["documentId"])
            if head.get("state") == "forgotten":
                continue
            if head.get("state") != "live" and not include_superseded:
                continue
            seen[ref["documentId"]] = head
        return list(seen.values())

    # -- documents ----------------------------------------------------------------------------

    def head(self, document_id: str) -> DocumentHead:
        keys.check_id(document_id, "document id")
        raw = self.store.get("documents", keys.DOC_HEAD.encode(document_id))
        if raw is None:
            raise NotFound(f"no document {excerpt(document_id)}")
        return decode_head(raw, f"document head of {excerpt(document_id)}")

    def manifest(self, document_id: str, version: int | None = None) -> Manifest:
        if version is None:
            version = int(self.head(document_id)["version"])
        raw = self.store.get("documents", keys.DOC_VERSION.encode(document_id, version))
        if raw is None:
            raise NotFound(f"no document {excerpt(document_id)} version {version}")
        what = f"manifest of {excerpt(document_id)} version {version}"
        return cast(Manifest, codec.decode_record(raw, what))

    def manifests(self, versions: list[tuple[str, int]]) -> list[Manifest]:
        """The manifests of ``(document id, version)`` pairs, in order, in one store read."""
        raws = self.store.get_many(
            "documents", [keys.DOC_VERSION.encode(d, int(v)) for d, v in versions]
        )
        out: list[Manifest] = []
        for (document_id, version), raw in zip(versions, raws, strict=True):
            if raw is None:
                raise NotFound(f"no document {excerpt(document_id)} version {version}")
            what = f"manifest of {excerpt(document_id)} version {version}"
            out.append(cast(Manifest, codec.decode_record(raw, what)))
        return out

    def versions(self, document_id: str) -> list[int]:
        return [
            int(keys.DOC_VERSION.decode(key)[1])
            for key, _ in self.store.scan("documents", keys.DOC_VERSION.prefix(document_id))
        ]

    def read_bytes(self, manifest: Manifest, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of a document's text, fetching only intersecting chunks."""
        return self.read_ranges([(manifest, start, end)])[0]

    def read_ranges(self, ranges: list[tuple[Manifest, int, int | None]]) -> list[bytes]:
        """:meth:`read_bytes` of each ``(manifest, start, end)``, every chunk they need fetched
        in one store read (a page of hits, a search's feedback windows)."""
        spans = []
        wanted: list[tuple[str, int, int]] = []
        for manifest, start, end in ranges:
            total = int(manifest["bytes"])
            end = total if end is None else min(end, total)
            start = max(0, start)
            chunks = _chunks_between(manifest, start, end) if start < end else []
            spans.append((manifest, start, end, len(wanted), len(wanted) + len(chunks)))
            wanted += chunks
        payloads = self.store.get_many(
            "chunks", [keys.CHUNK.encode(bytes.fromhex(d)) for d, _, _ in wanted]
        )
        return [
            _assemble(manifest, start, end, wanted[lo:hi], payloads[lo:hi]) if start < end else b""
            for manifest, start, end, lo, hi in spans
        ]

    def text(self, manifest: Manifest) -> str:
        return self.read_bytes(manifest).decode("utf-8", "surrogatepass")

    def part_texts(self, manifest: Manifest) -> list[tuple[dict[str, Any], str]]:
        data = self.read_bytes(manifest)
        return [
            (part, data[part["start"] : part["end"]].decode("utf-8", "surrogatepass"))
            for part in manifest["parts"]
        ]

    def aside_texts(self, manifest: Manifest) -> list[tuple[dict[str, Any], str]]:
        """The messages kept with a document outside its text (thinking), each with its text."""
        asides = manifest.get("asides") or []
        if not asides:
            return []
        wanted = [bytes.fromhex(d) for a in asides for d, _, _ in a["chunks"]]
        payloads = iter(self.store.get_many("chunks", [keys.CHUNK.encode(h) for h in wanted]))
        out = []
        for aside in asides:
            data = bytearray()
            for digest, _, length in aside["chunks"]:
                payload = next(payloads)
                if payload is None or len(payload) != length:
                    raise CorruptRecord(f"chunk {digest} of {manifest['documentId']} is missing")
                data += payload
            out.append((aside, bytes(data).decode("utf-8", "surrogatepass")))
        return out

    # -- events -------------------------------------------------------------------------------

    def events(self, session_id: str) -> Iterator[EventRecord]:
        for key, value in self.store.scan("events", keys.EVENT.prefix(session_id)):
            seq = int(keys.EVENT.decode(key)[1])
            line, conversational, type_, raw = codec.decode_event(
                value, f"event {seq} of session {excerpt(session_id)}"
            )
            yield EventRecord(seq, line, conversational, type_, raw)

    # -- outbox -------------------------------------------------------------------------------

    def outbox(
        self, after: int = 0, limit: int | None = None
    ) -> Iterator[tuple[int, dict[str, Any]]]:
        start = keys.OUTBOX.encode(after + 1) if after else None
        for key, value in self.store.scan("outbox", keys.OUTBOX.prefix(), start=start, limit=limit):
            yield int(keys.OUTBOX.decode(key)[0]), codec.decode_record(value, "outbox")

    def ordinal(self, ordinal: int) -> dict[str, Any] | None:
        raw = self.store.get("ordinals", keys.ORDINAL.encode(ordinal))
        return None if raw is None else codec.decode_record(raw, "ordinal")

    def tombstone(self, ordinal: int) -> dict[str, Any] | None:
        raw = self.store.get("ordinals", keys.TOMBSTONE.encode(ordinal))
        return None if raw is None else codec.decode_record(raw, "tombstone")


def _chunks_between(manifest: Manifest, start: int, end: int) -> list[tuple[str, int, int]]:
    """``(digest, offset, length)`` of each chunk of ``manifest`` intersecting ``[start, end)``."""
    wanted: list[tuple[str, int, int]] = []
    for part in manifest["parts"]:
        if part["end"] <= start or part["start"] >= end:
            continue
        for digest, offset, length in part["chunks"]:
            if offset + length > start and offset < end:
                wanted.append((digest, offset, length))
    return wanted


def _assemble(
    manifest: Manifest,
    start: int,
    end: int,
    wanted: list[tuple[str, int, int]],
    payloads: list[bytes | None],
) -> bytes:
    """Bytes ``[start, end)`` from the chunks that cover them; the gaps between parts are the
    separator, which is not stored as a chunk."""
    buffer = bytearray()
    cursor = start
    for (digest, offset, length), payload in zip(wanted, payloads, strict=True):
        if payload is None or len(payload) != length:
            raise CorruptRecord(f"chunk {digest} of {manifest['documentId']} is missing")
        if offset > cursor:
            buffer += (_SEP * ((offset - cursor) // len(_SEP) + 1))[: offset - cursor]
            cursor = offset
        lo = max(start, offset) - offset
        hi = min(end, offset + length) - offset
        buffer += payload[lo:hi]
        cursor = offset + hi
    if cursor < end:
        buffer += (_SEP * ((end - cursor) // len(_SEP) + 1))[: end - cursor]
    return bytes(buffer)


def _shortened(wanted: str) -> tuple[str, str] | None:
    """``(head, tail)`` of a shortened sub-agent id as tables show it (``<4+ chars>…/<part>``,
    or ``...`` for the ellipsis as typed), else None."""
    for mark in ("…", "..."):
        head, sep, tail = wanted.partition(mark)
        if sep and len(head) >= 4 and tail.startswith("/") and len(tail) > 1:
            return head, tail
    return None

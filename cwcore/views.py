"""What ``show`` and ``show.document`` answer, as frozen dataclasses: a session's transcript
(:class:`Transcript`) and one document's versions with their text and provenance
(:class:`DocumentView`).

:func:`cwcore.browse.transcript` and :func:`cwcore.browse.show_document` build them; the method
handlers serialize them once with ``to_json()`` and :class:`cwcore.api.Archive` rebuilds them
with ``from_json()``. ``to_json()`` keeps exactly the keys, order and values the engine has
always answered (a message's optional fields only when set), and ``from_json(x).to_json() == x``.

The supersession, unsupersession and restore records a document version carries are the store's
own records, passed on as the store keeps them (their keys sorted): their fields belong to the
store's record formats, which this view does not restate. A piece of a cut message says where
the others are with recall's :class:`~cwcore.recall.results.Split`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cwcore.recall.results import Split
from cwcore.session_info import SessionInfo


def _copy(record: Mapping[str, Any] | None) -> dict[str, Any] | None:
    return dict(record) if record is not None else None


@dataclass(frozen=True)
class DocumentVersion:
    """One version of a document: its number, whether it is the head's (``current``), its
    supersession record and the record that undid it (None when there is none), its kind,
    creation time (ISO-8601 UTC), the message keys of its parts in order and its text.
    ``restores`` is set on a version an undone supersession brought back (which version, when,
    why); ``split`` on a version that holds a piece of a cut message (its message key, the
    piece, the count, every piece's document in order)."""

    version: int
    current: bool
    superseded: Mapping[str, Any] | None
    unsuperseded: Mapping[str, Any] | None
    kind: str
    created: str
    message_keys: tuple[str, ...]
    text: str
    restores: Mapping[str, Any] | None = None
    split: Split | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": self.version,
            "current": self.current,
            "superseded": _copy(self.superseded),
            "unsuperseded": _copy(self.unsuperseded),
            "kind": self.kind,
            "created": self.created,
            "messageKeys": list(self.message_keys),
            "text": self.text,
        }
        if self.restores is not None:
            out["restores"] = dict(self.restores)
        if self.split is not None:
            out["split"] = self.split.to_json()
        return out

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DocumentVersion:
        return cls(
            version=body["version"],
            current=body["current"],
            superseded=_copy(body["superseded"]),
            unsuperseded=_copy(body["unsuperseded"]),
            kind=body["kind"],
            created=body["created"],
            message_keys=tuple(body["messageKeys"]),
            text=body["text"],
            restores=_copy(body.get("restores")),
            split=Split.from_json(body["split"]) if "split" in body else None,
        )


@dataclass(frozen=True)
class DocumentView:
    """A document: its id, state (``live``, ``superseded``, …) and replacement, its session,
    project and kind, and the versions shown, oldest first (only the head's unless the audit
    view asked for every version)."""

    document_id: str
    state: str
    superseded_by: str | None
    session: str
    project: str
    kind: str
    versions: tuple[DocumentVersion, ...]

    @property
    def current(self) -> DocumentVersion | None:
        """The head's version among those shown (the last shown when none is marked)."""
        marked = [v for v in self.versions if v.current]
        return marked[0] if marked else (self.versions[-1] if self.versions else None)

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "state": self.state,
            "supersededBy": self.superseded_by,
            "session": self.session,
            "project": self.project,
            "kind": self.kind,
            "versions": [v.to_json() for v in self.versions],
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> DocumentView:
        return cls(
            document_id=body["documentId"],
            state=body["state"],
            superseded_by=body["supersededBy"],
            session=body["session"],
            project=body["project"],
            kind=body["kind"],
            versions=tuple(DocumentVersion.from_json(v) for v in body["versions"]),
        )


@dataclass(frozen=True)
class TranscriptDocument:
    """A document the transcript read, in order of first admission: its id, the version read,
    its kind and state (``live`` or a superseded state)."""

    document_id: str
    version: int
    kind: str
    state: str

    def to_json(self) -> dict[str, Any]:
        return {
            "documentId": self.document_id,
            "version": self.version,
            "kind": self.kind,
            "state": self.state,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TranscriptDocument:
        return cls(body["documentId"], body["version"], body["kind"], body["state"])


@dataclass(frozen=True)
class Supersession:
    """Why a superseded message's document was retired: the reason, the replacing document
    (None when none was named) and when (ISO-8601 UTC, None when unrecorded)."""

    reason: str
    by: str | None
    at: str | None

    def to_json(self) -> dict[str, Any]:
        return {"reason": self.reason, "by": self.by, "at": self.at}


@dataclass(frozen=True)
class MessageSplit:
    """A message cut over several documents and joined back: the piece count and the pieces'
    documents in order (fewer than ``pieces`` when retention forgot some)."""

    pieces: int
    document_ids: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"pieces": self.pieces, "documentIds": list(self.document_ids)}


@dataclass(frozen=True)
class SubagentLink:
    """The sub-agent session a tool call started and its message count (None when that
    session is not in the store)."""

    session_id: str
    messages: int | None

    def to_json(self) -> dict[str, Any]:
        return {"sessionId": self.session_id, "messages": self.messages}


@dataclass(frozen=True)
class TranscriptMessage:
    """One message of a transcript: its document and source message key, role, kind (``text``,
    ``tool-call``, ``tool-result``, ``thinking``, …), text, time (ISO-8601 UTC or None), tool,
    source line numbers and whether its document was superseded (``supersession`` says why).

    The optional fields are None (or False) when the source did not set them: ``split`` (a cut
    message), ``parent`` (the message it answers), ``tool_call_id``, ``input_is_text`` (the
    tool input is the text itself) or ``tool_input`` (its JSON text), ``meta`` (host-generated
    user text), ``is_error``, ``model``, ``usage`` (token counts by name) and ``subagent``."""

    document_id: str
    message_key: str
    role: str
    kind: str
    text: str
    timestamp: str | None
    tool: str | None
    lines: tuple[int, ...]
    superseded: bool
    supersession: Supersession | None = None
    split: MessageSplit | None = None
    parent: str | None = None
    tool_call_id: str | None = None
    input_is_text: bool = False
    tool_input: str | None = None
    meta: bool = False
    is_error: bool = False
    model: str | None = None
    usage: tuple[tuple[str, int], ...] | None = None
    subagent: SubagentLink | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "documentId": self.document_id,
            "messageKey": self.message_key,
            "role": self.role,
            "kind": self.kind,
            "text": self.text,
            "timestamp": self.timestamp,
            "tool": self.tool,
            "lines": list(self.lines),
            "superseded": self.superseded,
        }
        if self.supersession is not None:
            out["supersession"] = self.supersession.to_json()
        if self.split is not None:
            out["split"] = self.split.to_json()
        if self.parent:
            out["parent"] = self.parent
        if self.tool_call_id:
            out["toolCallId"] = self.tool_call_id
        if self.input_is_text:
            out["inputIsText"] = True
        elif self.tool_input is not None:
            out["toolInput"] = self.tool_input
        if self.meta:
            out["meta"] = True
        if self.is_error:
            out["isError"] = True
        if self.model:
            out["model"] = self.model
        if self.usage:
            out["usage"] = dict(self.usage)
        if self.subagent is not None:
            out["subagent"] = self.subagent.to_json()
        return out

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> TranscriptMessage:
        why = body.get("supersession")
        split = body.get("split")
        child = body.get("subagent")
        usage = body.get("usage")
        return cls(
            document_id=body["documentId"],
            message_key=body["messageKey"],
            role=body["role"],
            kind=body["kind"],
            text=body["text"],
            timestamp=body["timestamp"],
            tool=body["tool"],
            lines=tuple(body["lines"]),
            superseded=body["superseded"],
            supersession=Supersession(why["reason"], why["by"], why["at"]) if why else None,
            split=MessageSplit(split["pieces"], tuple(split["documentIds"])) if split else None,
            parent=body.get("parent"),
            tool_call_id=body.get("toolCallId"),
            input_is_text=bool(body.get("inputIsText")),
            tool_input=body.get("toolInput"),
            meta=bool(body.get("meta")),
            is_error=bool(body.get("isError")),
            model=body.get("model"),
            usage=tuple(usage.items()) if usage else None,
            subagent=SubagentLink(child["sessionId"], child["messages"]) if child else None,
        )

    def usage_json(self) -> dict[str, int] | None:
        """The token usage as the interface spells it (``input``, ``output``, ``cacheRead``,
        ``cacheWrite``), None when the source recorded none."""
        return dict(self.usage) if self.usage else None


@dataclass(frozen=True)
class MetadataEvent:
    """A source line that carries no conversation (listed with ``--all``): its sequence number,
    line number, type and raw text."""

    seq: int
    line: int
    type: str
    conversational: bool
    raw: str

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "line": self.line,
            "type": self.type,
            "conversational": self.conversational,
            "raw": self.raw,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> MetadataEvent:
        return cls(body["seq"], body["line"], body["type"], body["conversational"], body["raw"])


@dataclass(frozen=True)
class TranscriptCounts:
    """Messages listed, how many of them are superseded, and how many superseded ones the
    transcript left out (``hide_superseded``)."""

    messages: int
    superseded: int
    hidden_superseded: int

    def to_json(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "superseded": self.superseded,
            "hiddenSuperseded": self.hidden_superseded,
        }


@dataclass(frozen=True)
class Transcript:
    """A session as ordered messages: its listing row, the documents read, the messages and
    their counts; ``events`` lists the metadata lines when they were asked for (None when not,
    empty when the session has none). ``shared_with`` names other agents' sessions whose agent
    gave them this session's id, as ``(agent, sessionId)`` (JSON ``sharedWith``, when any)."""

    session: SessionInfo
    documents: tuple[TranscriptDocument, ...]
    messages: tuple[TranscriptMessage, ...]
    counts: TranscriptCounts
    events: tuple[MetadataEvent, ...] | None = None
    shared_with: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "session": self.session.to_json(),
            "documents": [d.to_json() for d in self.documents],
            "messages": [m.to_json() for m in self.messages],
            "counts": self.counts.to_json(),
        }
        if self.events is not None:
            out["events"] = [e.to_json() for e in self.events]
        if self.shared_with:
            out["sharedWith"] = [{"agent": a, "sessionId": s} for a, s in self.shared_with]
        return out

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Transcript:
        counts = body["counts"]
        events = body.get("events")
        return cls(
            session=SessionInfo.from_json(body["session"]),
            documents=tuple(TranscriptDocument.from_json(d) for d in body["documents"]),
            messages=tuple(TranscriptMessage.from_json(m) for m in body["messages"]),
            counts=TranscriptCounts(
                counts["messages"], counts["superseded"], counts["hiddenSuperseded"]
            ),
            events=tuple(MetadataEvent.from_json(e) for e in events)
            if events is not None
            else None,
            shared_with=tuple((o["agent"], o["sessionId"]) for o in body.get("sharedWith", ())),
        )

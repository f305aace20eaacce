"""What ``show``, ``show.document`` and ``export`` take and answer: a session's transcript
(:class:`Transcript`), one document's versions with their text and provenance
(:class:`DocumentView`), and a session's text in an export format (:class:`Exported`).

:func:`cwcore.browse.transcript` and :func:`cwcore.browse.show_document` build them; the method
handlers serialize them once with ``to_json()`` and :class:`cwcore.api.Archive` rebuilds them
with ``from_json()``. The JSON is derived from the fields (:mod:`cwcore.contract.codec`): the
keys and values the engine has always answered (a message's optional fields only when set), and
``from_json(x).to_json() == x`` as parsed JSON.

The supersession, unsupersession and restore records a document version carries are the store's
own records, passed on as the store keeps them (their keys sorted): their fields belong to the
store's record formats, which this view does not restate. A piece of a cut message says where
the others are with recall's :class:`~cwcore.contract.recall.Split`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cwcore.contract.codec import Record, field, fields_json
from cwcore.contract.recall import Split
from cwcore.contract.sessions import SessionInfo
from cwcore.errors import InvalidInput

#: The formats ``export`` writes: Markdown for people, cw-jsonl to import again.
EXPORT_FORMATS = ("md", "jsonl")


def check_export_format(fmt: object) -> None:
    """:class:`InvalidInput` unless ``fmt`` is one of :data:`EXPORT_FORMATS`."""
    if fmt not in EXPORT_FORMATS:
        raise InvalidInput("--format must be md or jsonl")


class ShowRequest(Record):
    """``show``: the ``session`` (an id or a unique prefix), metadata events too with ``all``,
    and whether superseded messages are left out: ``hideSuperseded``, or when it is absent the
    older ``includeSuperseded`` (default true: they are listed, marked)."""

    session: str
    include_all: bool = field(name="all", default=False)
    hide_superseded: bool | None = field(default=None, omit_none=True)
    include_superseded: bool | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not self.session:
            raise InvalidInput("session is required")

    @property
    def hides_superseded(self) -> bool:
        """Whether the transcript leaves superseded messages out."""
        if self.hide_superseded is not None:
            return self.hide_superseded
        return self.include_superseded is False


class ShowDocumentRequest(Record):
    """``show.document``: the document, and every version with ``includeSuperseded`` (the
    audit view) instead of its head's only."""

    document_id: str
    include_superseded: bool = False

    def __post_init__(self) -> None:
        if not self.document_id:
            raise InvalidInput("documentId is required")


class ExportRequest(Record):
    """``export``: the ``session`` (an id or a unique prefix) and the ``format``, one of
    :data:`EXPORT_FORMATS`."""

    session: str
    format: str = "md"

    def __post_init__(self) -> None:
        if not self.session:
            raise InvalidInput("session is required")
        check_export_format(self.format)


class Exported(Record):
    """What ``export`` answers: the session's ``text`` in the asked format."""

    text: str


class DocumentVersion(Record):
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
    restores: Mapping[str, Any] | None = field(default=None, omit_none=True)
    split: Split | None = field(default=None, omit_none=True)


class DocumentView(Record):
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


class TranscriptDocument(Record):
    """A document the transcript read, in order of first admission: its id, the version read,
    its kind and state (``live`` or a superseded state)."""

    document_id: str
    version: int
    kind: str
    state: str


class Supersession(Record):
    """Why a superseded message's document was retired: the reason, the replacing document
    (None when none was named) and when (ISO-8601 UTC, None when unrecorded)."""

    reason: str
    by: str | None
    at: str | None


class MessageSplit(Record):
    """A message cut over several documents and joined back: the piece count and the pieces'
    documents in order (fewer than ``pieces`` when retention forgot some)."""

    pieces: int
    document_ids: tuple[str, ...]


class SubagentLink(Record):
    """The sub-agent session a tool call started and its message count (None when that
    session is not in the store)."""

    session_id: str
    messages: int | None


def _usage_json(usage: tuple[tuple[str, int], ...]) -> dict[str, int]:
    return dict(usage)


def _usage(body: Mapping[str, int]) -> tuple[tuple[str, int], ...] | None:
    return tuple(body.items()) or None


#: A message's keys written only when set: a false flag, an empty text or usage is left out.
_SET_ONLY = ("parent", "toolCallId", "inputIsText", "meta", "isError", "model", "usage")


class TranscriptMessage(Record):
    """One message of a transcript: its document and source message key, role, kind (``text``,
    ``tool-call``, ``tool-result``, ``thinking``, …), text, time (ISO-8601 UTC or None), tool,
    source line numbers and whether its document was superseded (``supersession`` says why).

    The optional fields are None (or False) when the source did not set them: ``split`` (a cut
    message), ``parent`` (the message it answers), ``tool_call_id``, ``input_is_text`` (the
    tool input is the text itself) or ``tool_input`` (its JSON text), ``meta`` (host-generated
    user text), ``is_error``, ``model``, ``usage`` (token counts by name) and ``subagent``; the
    answer carries each only when set."""

    document_id: str
    message_key: str
    role: str
    kind: str
    text: str
    timestamp: str | None
    tool: str | None
    lines: tuple[int, ...]
    superseded: bool
    supersession: Supersession | None = field(default=None, omit_none=True)
    split: MessageSplit | None = field(default=None, omit_none=True)
    parent: str | None = field(default=None, omit_none=True)
    tool_call_id: str | None = field(default=None, omit_none=True)
    input_is_text: bool = False
    tool_input: str | None = field(default=None, omit_none=True)
    meta: bool = False
    is_error: bool = False
    model: str | None = field(default=None, omit_none=True)
    usage: tuple[tuple[str, int], ...] | None = field(
        default=None, omit_none=True, encode=_usage_json, decode=_usage
    )
    subagent: SubagentLink | None = field(default=None, omit_none=True)

    def to_json(self) -> dict[str, Any]:
        body = fields_json(self)
        for key in _SET_ONLY:
            if key in body and not body[key]:
                del body[key]
        if self.input_is_text:  # the input is the text: not repeated
            body.pop("toolInput", None)
        return body

    def usage_json(self) -> dict[str, int] | None:
        """The token usage as the interface spells it (``input``, ``output``, ``cacheRead``,
        ``cacheWrite``), None when the source recorded none."""
        return dict(self.usage) if self.usage else None


class MetadataEvent(Record):
    """A source line that carries no conversation (listed with ``--all``): its sequence number,
    line number, type and raw text."""

    seq: int
    line: int
    type: str
    conversational: bool
    raw: str


class TranscriptCounts(Record):
    """Messages listed, how many of them are superseded, and how many superseded ones the
    transcript left out (``hide_superseded``)."""

    messages: int
    superseded: int
    hidden_superseded: int


def _shared_json(shared: tuple[tuple[str, str], ...]) -> list[dict[str, str]]:
    return [{"agent": agent, "sessionId": sid} for agent, sid in shared]


def _shared(body: list[Mapping[str, str]]) -> tuple[tuple[str, str], ...]:
    return tuple((o["agent"], o["sessionId"]) for o in body)


class Transcript(Record):
    """A session as ordered messages: its listing row, the documents read, the messages and
    their counts; ``events`` lists the metadata lines when they were asked for (None when not,
    empty when the session has none). ``shared_with`` names other agents' sessions whose agent
    gave them this session's id, as ``(agent, sessionId)`` (JSON ``sharedWith``, when any)."""

    session: SessionInfo = field(encode=SessionInfo.to_json, decode=SessionInfo.from_json)
    documents: tuple[TranscriptDocument, ...]
    messages: tuple[TranscriptMessage, ...]
    counts: TranscriptCounts
    events: tuple[MetadataEvent, ...] | None = field(default=None, omit_none=True)
    shared_with: tuple[tuple[str, str], ...] = field(
        default=(), encode=_shared_json, decode=_shared
    )

    def to_json(self) -> dict[str, Any]:
        body = fields_json(self)
        if not self.shared_with:  # written only when another agent shares the session
            del body["sharedWith"]
        return body

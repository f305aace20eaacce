"""Records that cross layers: what importers produce and admission stores.

An importer reads a source file into :class:`ParsedSession` values: every source line as a
:class:`SourceEvent` (conversational or metadata) and the conversation as :class:`Message` values
following the archive's definitions. :mod:`cwcore.importers.documents` turns a parsed session into
:class:`DocumentSpec` values (turns and tool-result documents) that admission stores. Thinking
messages ride along a document as :class:`Aside` values: stored with it, never part of its text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "tool", "system"]
ROLES: tuple[str, ...] = ("user", "assistant", "tool", "system")

#: Kinds of a message within a session.
#: ``text``: prose of a user/assistant/system message; ``tool-call``: a call with its input;
#: ``tool-result``: a tool's output; ``summary``: a compaction or branch summary;
#: ``thinking``: model reasoning (kept, hidden by default, not searchable text).
MessageKind = Literal["text", "tool-call", "tool-result", "summary", "thinking"]

#: Document kinds (the ``kind`` of a search hit).
DOCUMENT_KINDS: tuple[str, ...] = ("turn", "tool-result", "decision", "markdown", "note")


@dataclass(frozen=True)
class SourceEvent:
    """One line (or one record) of a source file, kept verbatim and immutable.

    ``line`` is 1-based in the source file. ``raw`` is the exact line without its newline.
    ``conversational`` is False for metadata lines (progress, snapshots, token counts, ...), which
    are kept and shown by ``cw show --all`` but neither counted as messages nor searchable.
    """

    line: int
    raw: bytes
    conversational: bool
    type: str = ""  # the source's own record type, e.g. "assistant", "session_meta"


@dataclass(frozen=True)
class Usage:
    """Token counts of one model response, as the source reported them.

    ``input`` is uncached prompt tokens, ``cache_read`` prompt tokens served from a cache,
    ``cache_write`` prompt tokens written to one, ``output`` generated tokens (reasoning
    included). Formats that count cached tokens inside their input total are converted.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
        }

    @classmethod
    def from_json(cls, value: object) -> Usage | None:
        """The usage a ``to_json`` dict describes; None for anything else."""
        if not isinstance(value, dict):
            return None
        counts = [value.get(k, 0) for k in ("input", "output", "cacheRead", "cacheWrite")]
        if not all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts):
            return None
        return cls(*counts)

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input + other.input,
            self.output + other.output,
            self.cache_read + other.cache_read,
            self.cache_write + other.cache_write,
        )

    def __sub__(self, other: Usage) -> Usage:
        return Usage(
            self.input - other.input,
            self.output - other.output,
            self.cache_read - other.cache_read,
            self.cache_write - other.cache_write,
        )

    def __bool__(self) -> bool:
        return any((self.input, self.output, self.cache_read, self.cache_write))


@dataclass(frozen=True)
class Message:
    """One conversational unit (a prompt, an assistant message, a tool call or a tool result).

    ``message_id`` is the source message id (native, or ``L<n>`` for formats without ids) and is
    unique within its session; ``key`` is the messageKey ``<role>:<message_id>``.
    ``lines`` are the 1-based source lines that form it (Claude Code assistant lines sharing one
    ``message.id`` are one message). ``real_user`` marks a real user message (starts a turn).
    ``model`` and ``usage`` belong to the message that owns a model response (its text, or its
    first tool call); ``subagent`` is, on a tool call that started a sub-agent, the sub-agent's
    session id.
    """

    message_id: str
    role: Role
    kind: MessageKind
    text: str
    lines: tuple[int, ...] = ()
    timestamp: str | None = None  # ISO-8601 UTC
    real_user: bool = False
    parent_id: str | None = None  # the message this one follows (trees, branches)
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_input: str | None = None  # canonical JSON text of the call's input
    is_error: bool = False
    sidechain: bool = False
    model: str | None = None
    usage: Usage | None = None
    subagent: str | None = None

    @property
    def key(self) -> str:
        return f"{self.role}:{self.message_id}"


@dataclass(frozen=True)
class ParsedSession:
    """A session read from one source file (one file may hold several, e.g. cw-jsonl).

    ``lineage`` lists verified ancestor session ids, nearest first. A sub-agent's session names
    the tool call of its parent session that started it in ``parent_tool_call`` (a messageKey).
    """

    session_id: str
    agent: str
    project: str
    events: tuple[SourceEvent, ...]
    messages: tuple[Message, ...]
    started: str | None = None
    title: str | None = None
    cwd: str | None = None
    parent_session: str | None = None
    lineage: tuple[str, ...] = ()
    source_path: str | None = None
    resume_command: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    parent_tool_call: str | None = None


@dataclass(frozen=True)
class FileParse:
    """What an importer read from one file: its sessions, and the lines it could not read as
    ``(1-based line, reason)``. A bad line never stops the rest of the file from importing."""

    sessions: tuple[ParsedSession, ...]
    problems: tuple[tuple[int, str], ...] = ()


@dataclass(frozen=True)
class DocumentPart:
    """One message's share of a document: its key, role, kind and searchable text.

    ``piece`` is ``(index, count)`` when the message was too large for one document and this
    part holds only piece ``index`` (0-based) of ``count`` consecutive pieces of its text. The
    other fields carry the message's own (see :class:`Message`); ``meta`` marks a user-role
    message that is not a real user message (host-generated), so an export keeps it so.
    ``input_is_text`` says the tool input is the message text itself (the common case, stored
    once); otherwise ``tool_input`` holds it (on the first piece only).
    """

    message_key: str
    role: Role
    kind: MessageKind
    text: str
    timestamp: str | None = None
    tool_name: str | None = None
    lines: tuple[int, ...] = ()
    piece: tuple[int, int] | None = None
    parent_id: str | None = None
    tool_call_id: str | None = None
    tool_input: str | None = None
    input_is_text: bool = False
    meta: bool = False
    is_error: bool = False
    model: str | None = None
    usage: Usage | None = None
    subagent: str | None = None


@dataclass(frozen=True)
class Aside:
    """A message kept with a document but outside its text (thinking): never indexed, never
    counted, shown where it happened — after part ``after`` of the document (-1: before the
    first part)."""

    part: DocumentPart
    after: int


@dataclass(frozen=True)
class Annotation:
    """A structural span inside a document's text (question, request, correction, answer, decision).

    ``start``/``end`` are character offsets into the document text as admission serializes it.
    """

    relation: str
    start: int
    end: int
    message_key: str = ""


@dataclass(frozen=True)
class DocumentSpec:
    """What admission stores as one document version.

    ``document_id`` is deterministic (same source, same id) so re-admission is idempotent.
    ``parts`` is the ordered manifest. ``parent_document`` links a tool-result document to its turn.
    ``supersedes`` names a document id whose live version this one replaces, with ``reason``.
    ``annotations`` are structural spans (character offsets into the document text).
    ``asides`` are messages stored with the document but outside its text (thinking).
    """

    document_id: str
    kind: str
    session_id: str
    project: str
    agent: str
    parts: tuple[DocumentPart, ...]
    created: str | None = None
    title: str | None = None
    parent_document: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    annotations: tuple[Annotation, ...] = ()
    supersedes: str | None = None
    supersede_reason: str | None = None
    subject_key: str | None = None
    pinned: bool = False
    request_id: str | None = None
    starts_turn: bool = False  # the document opens a turn (counted in the session's turns)
    asides: tuple[Aside, ...] = ()


@dataclass(frozen=True)
class SessionSpec:
    """Session-level facts admission records once per session (membership is immutable).

    ``session_id`` is the store's id of the session; ``native_id`` the id its agent gave it,
    when the two differ (another agent's session holds the bare id: ``cwcore.store.identity``).
    """

    session_id: str
    project: str
    agent: str
    started: str | None = None
    title: str | None = None
    cwd: str | None = None
    parent_session: str | None = None
    lineage: tuple[str, ...] = ()
    source_path: str | None = None
    resume_command: str | None = None
    parent_tool_call: str | None = None
    native_id: str | None = None

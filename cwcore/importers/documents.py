"""Parsed sessions -> documents: turns and tool-result documents.

A turn starts at each real user message and holds the messages that follow until the next one;
messages before the first real user message form a preamble turn. A turn is a CHAIN: a message
joins the turn whose last message is its parent, so branches never mix (see
:func:`group_turns`). A message that does not continue any turn's chain starts a continuation
document linked to the turn it comes from: a branch (pi trees, Claude rewinds), a sidechain
(Claude subagent messages) or an off-branch run (Gemini ``$rewindTo``).

A turn is stored as a run of small documents (:func:`segments`): consecutive messages packed
while the document holds at most ``segment_bytes`` (8 KiB) of text, and each larger message on
its own — a tool output as a ``tool-result`` document, anything else as a ``turn`` document —
cut into pieces of at most :data:`PIECE_BYTES` (32 KiB) when it is larger still. Every message is
in exactly one document. The turn's first document opens the turn; the others carry
``continues`` (the turn's first document) and name it as their parent, so a hit, its recall and
the transcript know their turn.

Document ids are deterministic: ``t-`` (turn) or ``r-`` (tool result) plus 16 hex digits of a
digest of the session id and the document's first message key, so a grown last document keeps
its id and gets a new version.

Thinking messages are not part of any document's text: each is an :class:`~cwcore.model.Aside`
of the document holding the message it follows (its parent, or in formats without parents the
message before it in the file), placed after that message, so no index handler ever sees it
and a transcript still shows it where it happened. Thinking before any other message rides
with the session's first document, before its first part.

Metadata: ``layout`` (2, :data:`LAYOUT`); on continuations ``continues`` (the turn's first
document), ``branchOf`` (the document holding the branch point), ``sidechain`` (True), ``offBranch``
(True: every message was rewound).

A message larger than :data:`PIECE_BYTES` is cut at character boundaries into pieces
that concatenate to exactly its text; each piece is one part of its own document, marked
``piece = (index, count)`` in the manifest. A document that begins with piece ``i > 0`` takes its
id from the message key and ``i`` (:func:`run_document_id`), so no two pieces share an id or a
version, and every document holding a piece has ``split`` metadata: ``{"messageKey", "piece",
"pieces", "documents"}`` (the pieces' documents in order). Readers join the pieces back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from cwcore.index.structure import detect
from cwcore.model import Aside, DocumentPart, DocumentSpec, Message, ParsedSession, SessionSpec
from cwcore.store.keys import digest16
from cwcore.store.limits import CHUNK_BYTES, MAX_SOURCE_BYTES, MAX_SOURCE_REFS, PART_SEPARATOR

_SEP = len(PART_SEPARATOR)
#: Bytes of text a document packs from consecutive small messages; a larger message is a
#: document of its own. Small documents keep every index handler inside its bounded work (no
#: window drops terms, the exact handler keeps every anchor), give one search hit per source
#: location rather than one per long agentic turn, and stay under the 64 KiB foreground
#: publication bound. Chosen with ``make eval`` (docs/evaluation.md, "Earlier decisions").
SEGMENT_BYTES = 8192
#: The document layout this module writes (``metadata.layout``): 2 since turns are cut into small
#: documents with every message in exactly one of them. Documents without it were cut whole.
LAYOUT = 2
#: A message larger than this is cut into pieces of at most this many bytes, one document each
#: (at line ends where it can): one physical chunk.
PIECE_BYTES = CHUNK_BYTES


def document_id(prefix: str, session_id: str, message_key: str) -> str:
    return f"{prefix}-{digest16(session_id, message_key).hex()[:16]}"


#: Longest derived session title, in characters.
TITLE_CHARS = 80


def session_spec(parsed: ParsedSession) -> SessionSpec:
    return SessionSpec(
        session_id=parsed.session_id,
        project=parsed.project,
        agent=parsed.agent,
        started=parsed.started,
        title=session_title(parsed),
        cwd=parsed.cwd,
        parent_session=parsed.parent_session,
        lineage=parsed.lineage,
        source_path=parsed.source_path,
        resume_command=parsed.resume_command,
        parent_tool_call=parsed.parent_tool_call,
    )


def session_title(parsed: ParsedSession) -> str | None:
    """The session's title: the format's own (summary, custom title, session name) when it has
    one, else the first line of the first real user message that is not a bare slash command —
    or, in a sub-agent's session (which has none), of its first user text — cut to
    :data:`TITLE_CHARS` characters."""
    if parsed.title and parsed.title.strip():
        return parsed.title.strip()
    users = [
        (m.text, m.real_user) for m in parsed.messages if m.role == "user" and m.kind == "text"
    ]
    if not any(real for _, real in users) and not (
        parsed.parent_tool_call or parsed.parent_session
    ):
        # Only a sub-agent's prompts come from its parent; elsewhere user text that is not
        # the user's is the host's (a command caveat, injected context): never a title.
        return None
    return prompt_title(users)


def prompt_title(users: list[tuple[str, bool]]) -> str | None:
    """The derived title from a session's user text messages, in order, as ``(text, real)``
    (see :func:`session_title`)."""
    # A bare slash command ("/mode") says what the user did, not what the session is about.
    said = [u for u in users if not is_command(u[0])] or users
    first = next((u for u in said if u[1]), said[0] if said else None)
    if first is None:
        return None
    line = next((ln.strip() for ln in first[0].splitlines() if ln.strip()), "")
    line = " ".join(line.split())
    if len(line) > TITLE_CHARS:
        line = line[: TITLE_CHARS - 1].rstrip() + "…"
    return line or None


def is_command(text: str) -> bool:
    """Whether ``text`` is a bare slash command (``/mode``): never a title."""
    words = text.split()
    return len(words) == 1 and words[0].startswith("/")


def session_counts(parsed: ParsedSession) -> dict[str, int]:
    """The public per-session counts: ``messages`` (every message: prompts, assistant messages,
    tool calls and results, summaries; never metadata or thinking), ``turns`` (real user
    messages, plus one preamble turn when messages come before the first of them) and
    ``toolCalls``. Branch, sidechain and size continuations are documents, not extra turns."""
    messages = [m for m in parsed.messages if m.kind != "thinking"]
    real = sum(1 for m in messages if m.real_user)
    preamble = 1 if messages and not messages[0].real_user else 0
    return {
        "messages": len(messages),
        "turns": real + preamble,
        "toolCalls": sum(1 for m in messages if m.kind == "tool-call"),
    }


def part_of(message: Message) -> DocumentPart:
    return DocumentPart(
        message_key=message.key,
        role=message.role,
        kind=message.kind,
        text=message.text,
        timestamp=message.timestamp,
        tool_name=message.tool_name,
        lines=message.lines,
        parent_id=message.parent_id,
        tool_call_id=message.tool_call_id,
        tool_input=None if message.tool_input == message.text else message.tool_input,
        input_is_text=message.tool_input is not None and message.tool_input == message.text,
        meta=message.role == "user" and message.kind == "text" and not message.real_user,
        is_error=message.is_error,
        model=message.model,
        usage=message.usage,
        subagent=message.subagent,
    )


def thinking_anchors(messages: tuple[Message, ...]) -> dict[str | None, list[Message]]:
    """Thinking messages by the message they follow: their parent when it is another message
    of the session (through thinking parents), else the message before them in file order;
    ``None`` for thinking that comes before every other message."""
    talk = {m.message_id for m in messages if m.kind != "thinking"}
    anchor_of: dict[str, str | None] = {}
    out: dict[str | None, list[Message]] = {}
    previous: str | None = None
    for message in messages:
        if message.kind != "thinking":
            previous = message.message_id
            continue
        parent = message.parent_id
        anchor: str | None
        if parent is not None and parent in talk:
            anchor = parent
        elif parent is not None and parent in anchor_of:
            anchor = anchor_of[parent]
        else:
            anchor = previous
        anchor_of[message.message_id] = anchor
        out.setdefault(anchor, []).append(message)
    return out


def _asides(
    run: list[DocumentPart], anchors: dict[str | None, list[Message]], first: bool
) -> tuple[Aside, ...]:
    """The thinking of ``run``: after each message it follows (after a cut message's last
    piece), and — for the session's first run — the thinking before every message."""
    out: list[Aside] = []
    if first:
        out += [Aside(part_of(m), -1) for m in anchors.get(None, ())]
    for index, part in enumerate(run):
        if part.piece is not None and part.piece[0] != part.piece[1] - 1:
            continue
        message_id = part.message_key.partition(":")[2]
        out += [Aside(part_of(m), index) for m in anchors.get(message_id, ())]
    return tuple(out)


@dataclass
class _Turn:
    """One turn document's messages; ``link`` is the turn a continuation comes from."""

    messages: list[Message] = field(default_factory=list)
    link: int | None = None
    why: str = ""  # "", "branch" or "sidechain"


def _turns(messages: tuple[Message, ...], off_branch: Collection[str] = ()) -> list[_Turn]:
    """Group messages into chains (the contract of :func:`group_turns`)."""
    off = set(off_branch)
    known = {m.message_id for m in messages}
    turns: list[_Turn] = []
    tail_of: dict[str, int] = {}  # a turn's last message id -> that turn
    turn_of: dict[str, int] = {}  # message id -> its turn
    last_main: int | None = None  # the latest turn of the main thread
    for message in messages:
        target: int | None = None
        link: int | None = None
        why = ""
        parent = message.parent_id if message.parent_id in known else None
        if message.real_user:
            pass
        elif parent is not None and parent in turn_of:
            tail = tail_of.get(parent)
            if tail is not None and (parent in off) == (message.message_id in off):
                target = tail
            else:
                link, why = turn_of[parent], "branch"
        elif message.sidechain:
            link, why = last_main, "sidechain"
        elif last_main is not None and (turns[last_main].messages[-1].message_id in off) == (
            message.message_id in off
        ):
            target = last_main
        if target is None:
            turns.append(_Turn(link=link, why=why))
            target = len(turns) - 1
        else:
            del tail_of[turns[target].messages[-1].message_id]
        turns[target].messages.append(message)
        tail_of[message.message_id] = target
        turn_of[message.message_id] = target
        if not message.sidechain:
            last_main = target
    return turns


def group_turns(
    messages: tuple[Message, ...], off_branch: Collection[str] = ()
) -> list[list[Message]]:
    """Split messages into turns: chains along parent links, cut at each real user message.

    In file order, a message starts a new turn when it is a real user message, when there is no
    turn yet (the preamble), or when it does not continue a chain: its parent (``parent_id``, if
    that names a message of the session) is not the last message of a turn — a branch — or it
    is a sidechain message without a parent. A message without a parent continues the latest
    main-thread turn (linear formats carry no parents). A message never joins a turn whose tail
    differs from it in being listed in ``off_branch`` (Gemini rewinds). Thinking messages are
    in no turn (they ride as asides of the document of the message they follow).
    """
    talk = tuple(m for m in messages if m.kind != "thinking")
    return [turn.messages for turn in _turns(talk, off_branch)]


def cut_text(text: str, budget: int) -> list[str]:
    """``text`` in pieces of at most ``budget`` UTF-8 bytes whose concatenation is ``text``.

    A piece ends after a newline when one lies in the last quarter of its room, else at the last
    character boundary that fits: no byte is dropped or split, so the pieces reassemble exactly.
    One piece (``[text]``) when it already fits.
    """
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= budget:
        return [text]
    pieces: list[str] = []
    pos = 0
    while len(data) - pos > budget:
        end = pos + budget
        newline = data.rfind(b"\n", end - budget // 4, end)
        if newline != -1:
            end = newline + 1
        else:
            while (data[end] & 0xC0) == 0x80:  # a continuation byte: back to its lead byte
                end -= 1
        pieces.append(data[pos:end].decode("utf-8", "surrogatepass"))
        pos = end
    pieces.append(data[pos:].decode("utf-8", "surrogatepass"))
    return pieces


def _fit(parts: list[DocumentPart], budget: int) -> Iterator[list[DocumentPart]]:
    """Cut parts into runs within the per-document reference and byte limits.

    A single part above the byte limit is cut (:func:`cut_text`) into pieces that each carry
    ``piece = (index, count)``: one message spread over consecutive documents. Every piece but
    the last fills a document on its own, so a document holds at most one piece, and a piece
    other than the first always opens its document.
    """
    run: list[DocumentPart] = []
    size = 0
    for part in parts:
        texts = cut_text(part.text, budget)
        pieces = [part]
        if len(texts) > 1:
            pieces = [
                dataclasses.replace(
                    part,
                    text=text,
                    piece=(index, len(texts)),
                    tool_input=part.tool_input if index == 0 else None,
                )
                for index, text in enumerate(texts)
            ]
        for piece in pieces:
            piece_size = len(piece.text.encode("utf-8", "surrogatepass")) + _SEP
            if run and (len(run) >= MAX_SOURCE_REFS or size + piece_size > budget):
                yield run
                run, size = [], 0
            run.append(piece)
            size += piece_size
    if run:
        yield run


def run_document_id(prefix: str, session_id: str, run: list[DocumentPart]) -> str:
    """The id of the document holding ``run``: from its first message key, and for a run that
    begins inside a message (piece ``i`` > 0) from that key and ``i`` too. The digest frames
    its inputs, so a piece id never equals the id of a message whose key merely looks similar
    (``user:m1`` piece 1 is not ``user:m1#1``)."""
    first = run[0]
    if first.piece is None or first.piece[0] == 0:
        return document_id(prefix, session_id, first.message_key)
    digest = digest16(session_id, first.message_key, "piece", str(first.piece[0]))
    return f"{prefix}-{digest.hex()[:16]}"


def _split_metadata(runs: list[list[DocumentPart]], ids: list[str]) -> dict[int, dict[str, Any]]:
    """``split`` metadata per run index for the runs that hold a piece of a cut message:
    the message key, this piece's index, the piece count, and every piece's document in order."""
    holders: dict[str, list[tuple[int, int, int]]] = {}  # key -> (run, piece, count)
    for number, run in enumerate(runs):
        for part in run:
            if part.piece is not None:
                holders.setdefault(part.message_key, []).append((number, *part.piece))
    out: dict[int, dict[str, Any]] = {}
    for key, held in holders.items():
        documents = [ids[number] for number, _, _ in held]
        for number, piece, count in held:
            out[number] = {
                "messageKey": key,
                "piece": piece,
                "pieces": count,
                "documents": documents,
            }
    return out


def segments(
    parts: list[DocumentPart], segment_bytes: int, piece_bytes: int
) -> Iterator[list[DocumentPart]]:
    """A turn's parts as document runs, in order: consecutive small parts packed while the run
    stays within ``segment_bytes`` (and 256 parts); a part larger than ``segment_bytes`` alone,
    cut into pieces of at most ``piece_bytes`` (one document each).

    Packing is greedy from the turn's first message, so messages appended to a growing turn
    never move earlier messages into another run: only the last run grows (a new version,
    ``extended``) and new runs follow it."""
    run: list[DocumentPart] = []
    size = 0
    for part in parts:
        length = len(part.text.encode("utf-8", "surrogatepass"))
        if length > segment_bytes:
            if run:
                yield run
                run, size = [], 0
            yield from _fit([part], piece_bytes)
            continue
        if run and (len(run) >= MAX_SOURCE_REFS or size + _SEP + length > segment_bytes):
            yield run
            run, size = [], 0
        run.append(part)
        size += length + _SEP
    if run:
        yield run


def build_documents(
    parsed: ParsedSession,
    *,
    segment_bytes: int = SEGMENT_BYTES,
    piece_bytes: int = PIECE_BYTES,
) -> list[DocumentSpec]:
    """All documents of a parsed session, in source order (see the module docstring)."""
    docs: list[DocumentSpec] = []
    off = set(parsed.metadata.get("off_branch", ()))
    first_docs: list[str] = []  # each turn's first document id
    piece_bytes = min(piece_bytes, MAX_SOURCE_BYTES - 1024)
    segment_bytes = min(segment_bytes, piece_bytes)
    anchors = thinking_anchors(parsed.messages)
    talk = tuple(m for m in parsed.messages if m.kind != "thinking")
    for number, turn_spec in enumerate(_turns(talk, off)):
        turn = turn_spec.messages
        parts = [part_of(m) for m in turn]
        linked = first_docs[turn_spec.link] if turn_spec.link is not None else None
        extra: dict[str, Any] = {}
        if turn_spec.why == "branch":
            extra["branchOf"] = linked
        elif turn_spec.why == "sidechain":
            extra["sidechain"] = True
        if off and all(m.message_id in off for m in turn):
            extra["offBranch"] = True
        # A turn opens at a real user message; the session's first run of other messages is
        # its preamble turn. Branches, sidechains and size splits continue existing turns.
        opens = bool(turn) and (turn[0].real_user or (number == 0 and not turn_spec.why))
        runs = list(segments(parts, segment_bytes, piece_bytes))
        kinds = ["tool-result" if _tool_output(run) else "turn" for run in runs]
        ids = [
            run_document_id("r" if kind == "tool-result" else "t", parsed.session_id, run)
            for run, kind in zip(runs, kinds, strict=True)
        ]
        splits = _split_metadata(runs, ids)
        first_of_turn = ids[0] if ids else ""
        for index, (run, doc_id, kind) in enumerate(zip(runs, ids, kinds, strict=True)):
            metadata = {"layout": LAYOUT, **extra}
            if index:
                metadata["continues"] = first_of_turn
            if index in splits:
                metadata["split"] = splits[index]
            docs.append(
                DocumentSpec(
                    document_id=doc_id,
                    kind=kind,
                    session_id=parsed.session_id,
                    project=parsed.project,
                    agent=parsed.agent,
                    parts=tuple(run),
                    created=next((p.timestamp for p in run if p.timestamp), None),
                    title=run[0].tool_name if kind == "tool-result" else None,
                    parent_document=first_of_turn if index else linked,
                    metadata=metadata,
                    annotations=tuple(detect(run)) if kind == "turn" else (),
                    starts_turn=opens and index == 0,
                    asides=_asides(run, anchors, first=not docs),
                )
            )
        first_docs.append(first_of_turn)
    return docs


def _tool_output(run: list[DocumentPart]) -> bool:
    """A run holding one tool output on its own (or a piece of one) is a tool-result document."""
    return len(run) == 1 and run[0].kind == "tool-result"

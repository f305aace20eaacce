"""Parsed sessions -> documents: turns and tool-result documents (BRIEF §3 "Definitions").

A turn starts at each real user message and holds the messages that follow until the next one;
messages before the first real user message form a preamble turn. A turn larger than one
admission allows (256 messages, 8 MiB) continues in further turn documents. A tool output of at
least ``tool_result_document_bytes`` also becomes its own ``tool-result`` document linked to its
turn; both reference the same content-addressed chunks, so the payload is stored once.

Document ids are deterministic: ``t-`` or ``r-`` plus 16 hex digits of a digest of the session id
and the first message key, so a grown turn keeps its id and gets a new version.
"""

from __future__ import annotations

from collections.abc import Iterator

from cwcore.model import DocumentPart, DocumentSpec, Message, ParsedSession, SessionSpec
from cwcore.store.keys import digest16
from cwcore.store.limits import MAX_SOURCE_BYTES, MAX_SOURCE_REFS, PART_SEPARATOR

_SEP = len(PART_SEPARATOR)


def document_id(prefix: str, session_id: str, message_key: str) -> str:
    return f"{prefix}-{digest16(session_id, message_key).hex()[:16]}"


def session_spec(parsed: ParsedSession) -> SessionSpec:
    return SessionSpec(
        session_id=parsed.session_id,
        project=parsed.project,
        agent=parsed.agent,
        started=parsed.started,
        title=parsed.title,
        cwd=parsed.cwd,
        parent_session=parsed.parent_session,
        lineage=parsed.lineage,
        source_path=parsed.source_path,
        resume_command=parsed.resume_command,
    )


def part_of(message: Message) -> DocumentPart:
    return DocumentPart(
        message_key=message.key,
        role=message.role,
        kind=message.kind,
        text=message.text,
        timestamp=message.timestamp,
        tool_name=message.tool_name,
        lines=message.lines,
    )


def group_turns(messages: tuple[Message, ...]) -> list[list[Message]]:
    """Split messages into turns at each real user message."""
    turns: list[list[Message]] = []
    for message in messages:
        if message.real_user or not turns:
            turns.append([])
        turns[-1].append(message)
    return turns


def _fit(parts: list[DocumentPart], budget: int) -> Iterator[list[DocumentPart]]:
    """Cut parts into runs within the per-document reference and byte limits.

    A single part above the byte limit is cut into pieces that each fit (the pieces share the
    message key: one message spread over consecutive documents).
    """
    run: list[DocumentPart] = []
    size = 0
    for part in parts:
        data = part.text.encode("utf-8", "surrogatepass")
        pieces = [part]
        if len(data) > budget:
            pieces = []
            for start in range(0, len(data), budget):
                text = data[start : start + budget].decode("utf-8", "ignore")
                pieces.append(
                    DocumentPart(part.message_key, part.role, part.kind, text, part.timestamp,
                                 part.tool_name, part.lines)
                )
        for piece in pieces:
            piece_size = len(piece.text.encode("utf-8", "surrogatepass")) + _SEP
            if run and (len(run) >= MAX_SOURCE_REFS or size + piece_size > budget):
                yield run
                run, size = [], 0
            run.append(piece)
            size += piece_size
    if run:
        yield run


def build_documents(
    parsed: ParsedSession,
    *,
    tool_result_document_bytes: int = 4096,
    byte_budget: int = MAX_SOURCE_BYTES - 1024,
) -> list[DocumentSpec]:
    """All documents of a parsed session, in source order (turn first, then its tool results)."""
    docs: list[DocumentSpec] = []
    for turn in group_turns(parsed.messages):
        parts = [part_of(m) for m in turn]
        first_of_turn: str | None = None
        for index, run in enumerate(_fit(parts, byte_budget)):
            doc_id = document_id("t", parsed.session_id, run[0].message_key)
            first_of_turn = first_of_turn or doc_id
            docs.append(
                DocumentSpec(
                    document_id=doc_id,
                    kind="turn",
                    session_id=parsed.session_id,
                    project=parsed.project,
                    agent=parsed.agent,
                    parts=tuple(run),
                    created=next((p.timestamp for p in run if p.timestamp), None),
                    parent_document=None if index == 0 else first_of_turn,
                    metadata={"continues": first_of_turn} if index else {},
                )
            )
        for message in turn:
            if message.kind != "tool-result":
                continue
            if len(message.text.encode("utf-8", "surrogatepass")) < tool_result_document_bytes:
                continue
            for piece, run in enumerate(_fit([part_of(message)], byte_budget)):
                suffix = "" if piece == 0 else f"#{piece}"
                docs.append(
                    DocumentSpec(
                        document_id=document_id("r", parsed.session_id, message.key + suffix),
                        kind="tool-result",
                        session_id=parsed.session_id,
                        project=parsed.project,
                        agent=parsed.agent,
                        parts=tuple(run),
                        created=message.timestamp,
                        title=message.tool_name,
                        parent_document=first_of_turn,
                    )
                )
    return docs

"""The ``context`` method's request and answer: the documents before and after one document in
its session, as ``gather`` gives them around a hit (:func:`cwcore.browse.document_context`
builds the answer). :class:`Neighbor` is also each gather anchor's context."""

from __future__ import annotations

from cwcore.contract.codec import Record
from cwcore.errors import InvalidInput

#: Turns the context of one document reaches on each side, at most.
MAX_CONTEXT = 8


class ContextRequest(Record):
    """``context``: the document (``documentId``, required and non-empty) and how many turns
    before and after it (``neighbors``, 0 to :data:`MAX_CONTEXT`)."""

    document_id: str
    neighbors: int = 1

    def __post_init__(self) -> None:
        if not self.document_id:
            raise InvalidInput("documentId is required")
        if not 0 <= self.neighbors <= MAX_CONTEXT:
            raise InvalidInput(f"neighbors must be from 0 to {MAX_CONTEXT}")


class Neighbor(Record):
    """A document next to an anchor in its session, as context (no score, no band): its id,
    kind, creation time, message keys and its text's start (``truncated`` when cut);
    ``historical`` is always True."""

    document_id: str
    kind: str
    created: str
    message_keys: tuple[str, ...]
    text: str
    truncated: bool
    historical: bool = True


class DocumentContext(Record):
    """The documents before and after one document in its session (``gather``'s context for a
    single document): the document, its session, the turn it is placed at, and its
    neighbours."""

    document_id: str
    session: str
    turn: str
    before: tuple[Neighbor, ...]
    after: tuple[Neighbor, ...]

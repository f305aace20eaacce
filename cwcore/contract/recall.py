"""Records of recall's answer that other answers carry too.

:class:`Split` says where the pieces of a cut message are: a recalled source and a direct read
(:mod:`cwcore.recall.results`) carry it, and so does a version of ``show.document``'s
:class:`~cwcore.contract.views.DocumentView`.
"""

from __future__ import annotations

from cwcore.contract.codec import Record


class Split(Record):
    """Where the other pieces of a cut message are: the message, this piece's index, the piece
    count and every piece's document, in order."""

    documents: tuple[str, ...]
    message_key: str
    piece: int
    pieces: int

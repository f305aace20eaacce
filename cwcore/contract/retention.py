"""What ``forget`` and ``forget.resolve`` take and answer: the target a forget would remove and
what it removed (:class:`cwcore.store.retention.ForgetReport` accumulates it while a forget or a
retention pass runs, then freezes it into :class:`Forgotten`)."""

from __future__ import annotations

from cwcore.contract.codec import Record
from cwcore.errors import InvalidInput


def _check_target(target: str) -> None:
    if not target:
        raise InvalidInput("target (a session or document id) is required")


class ForgetRequest(Record):
    """``forget``: the session or document whose id is exactly ``target``."""

    target: str

    def __post_init__(self) -> None:
        _check_target(self.target)


class ForgetResolveRequest(Record):
    """``forget.resolve``: the ``target`` a forget would remove; with ``prefix`` a unique
    session id prefix names it too (for a confirmation that shows the full id)."""

    target: str
    prefix: bool = False

    def __post_init__(self) -> None:
        _check_target(self.target)


class ForgetTarget(Record):
    """What a forget would remove, resolved from what the user typed (nothing removed yet):
    ``kind`` ``session`` or ``document``, its full ``id``, and what goes with it."""

    kind: str
    id: str
    project: str
    session: str  # the session itself, or the session a document belongs to
    documents: int
    messages: int
    #: The session's own record does not decode (the counts come from its documents).
    corrupt: bool = False


class Forgotten(Record):
    """What a forget removed, as the faces receive it (the frozen form of
    :class:`ForgetReport`): the resolved target (None for a retention pass), then counts, and
    the documents kept because a pin or a live lease protects them."""

    target: ForgetTarget | None
    sessions: int
    documents: int
    versions: int
    events: int
    chunks: int
    tombstoned: int
    skipped_pinned: tuple[str, ...]
    skipped_leased: tuple[str, ...]

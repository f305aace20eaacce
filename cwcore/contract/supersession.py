"""What a supersede and its undoing answer, as frozen dataclasses.

:class:`cwcore.store.admission.Admission` builds these; the ``supersede`` and
``supersede.undo`` method handlers serialize them once with ``to_json()`` (that JSON is
``cw supersede --json`` and the MCP ``supersede`` tool's result), and
:class:`cwcore.api.Archive` turns the JSON back into them with ``from_json()``.
The JSON is derived from the fields (:mod:`cwcore.contract.codec`): the keys and values the
engine has always answered, ``from_json(x).to_json() == x`` as parsed JSON.
"""

from __future__ import annotations

from cwcore.contract.codec import Record


class Superseded(Record):
    """A document retired from search: the retired ``version``, the replacement ``by`` (None
    when none was named), the reason (``superseded`` when none was given) and the instant."""

    document_id: str
    version: int
    by: str | None
    reason: str
    at: str
    state: str = "superseded"


class Restored(Record):
    """A supersession undone: the document is live again as the new ``version``; ``restored``
    is the version that had been superseded (it stays retired, for audit)."""

    document_id: str
    version: int
    restored: int
    reason: str
    at: str
    state: str = "live"

"""What a supersede and its undoing ask (:class:`SupersedeRequest`, :class:`UnsupersedeRequest`)
and answer, as frozen dataclasses.

:class:`cwcore.store.admission.Admission` builds these; the ``supersede`` and
``supersede.undo`` method handlers serialize them once with ``to_json()`` (that JSON is
``cw supersede --json`` and the MCP ``supersede`` tool's result), and
:class:`cwcore.api.Archive` turns the JSON back into them with ``from_json()``.
The JSON is derived from the fields (:mod:`cwcore.contract.codec`): the keys and values the
engine has always answered, ``from_json(x).to_json() == x`` as parsed JSON.
"""

from __future__ import annotations

from cwcore.contract.codec import Record, field


class SupersedeRequest(Record):
    """Retire ``document_id`` (a reversed decision) from search, ``by`` naming the document
    that replaces it, ``reason`` kept in the audit record, ``subject_key`` moved to ``by`` (the
    engine deletes the key when there is no ``by``; the faces ask for one). ``project``, when
    set, is the caller's authenticated project: a document or replacement of another project
    answers ``not-found``, as a missing one."""

    document_id: str = field(
        min_length=1, doc="The documentId of the archived decision that was reversed."
    )
    by: str | None = field(
        default=None,
        omit_none=True,
        min_length=1,
        doc="The documentId of the archived document that replaces it.",
    )
    reason: str | None = field(default=None, omit_none=True, doc="Why (kept in the audit record).")
    subject_key: str | None = field(
        default=None,
        omit_none=True,
        min_length=1,
        doc="Move this subject key to `by` (needs `by`).",
    )
    project: str | None = field(default=None, omit_none=True)


class UnsupersedeRequest(Record):
    """Undo the supersession of ``document_id`` (it is live and searchable again, as a new
    version), ``reason`` kept in the audit record; ``project`` confines it as for
    :class:`SupersedeRequest`."""

    document_id: str = field(
        min_length=1, doc="The documentId of the superseded document to restore."
    )
    reason: str | None = field(default=None, omit_none=True, doc="Why (kept in the audit record).")
    project: str | None = field(default=None, omit_none=True)


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

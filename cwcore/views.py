"""What ``show.document`` answers, as frozen dataclasses: one document's versions with their
text and provenance.

:func:`cwcore.browse.show_document` builds a :class:`DocumentView`; the method handler
serializes it once with ``to_json()`` and :class:`cwcore.api.Archive` rebuilds it with
``from_json()``. ``to_json()`` keeps exactly the keys, order and values the engine has always
answered, and ``from_json(x).to_json() == x``.

The supersession, unsupersession and restore records a version carries are the store's own
records, passed on as the store keeps them (their keys sorted): their fields belong to the
store's record formats, which this view does not restate. A piece of a cut message says where
the others are with recall's :class:`~cwcore.recall.results.Split`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cwcore.recall.results import Split


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

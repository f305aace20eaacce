"""The supersede dialog: retire a document from search, keeping it auditable.

``SupersedeScreen(document_id, summary)`` asks for a reason, an optional replacement document id
(``by``) and an optional subject key, then calls ``Archive.supersede`` in a thread worker. It
dismisses with the engine's answer (a :class:`~cwcore.contract.supersession.Superseded`)
after a notification, or with ``None`` when cancelled; it acts only once a reason is typed. A
failure (unknown document, a replacement that does not exist, the archive gone) is a
notification and the dialog stays open. On success
the archive handle is marked changed, so screens showing the document reload when they resume.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Button, Input, Label, Static

from cwcore.api import Archive
from cwcore.contract.supersession import Superseded
from cwtui.screens.confirm import ArchiveChangeDialog
from cwtui.widgets.dialog import Dialog

EXPLAIN = (
    "It leaves search and recall but is not deleted: transcripts and the audit view (d) still "
    "show it, with the reason, and U (cw supersede --undo) brings it back."
)


@dataclass(frozen=True)
class RecentSupersede:
    """The document a supersede's notification names (``d shows it for audit``) and until when
    (``time.monotonic()`` seconds) that notification is up. The screen that opened the dialog
    keeps it: ``d`` there opens this document, not the row that took its place when the
    results were read again without it."""

    document_id: str
    until: float

    @classmethod
    def of(cls, result: Superseded | None, seconds: float) -> RecentSupersede | None:
        """What ``result`` leaves for ``d`` while its notification (``seconds`` long) is up."""
        if result is None:
            return None
        return cls(result.document_id, time.monotonic() + seconds)

    @property
    def shown(self) -> bool:
        """Whether its notification is still up."""
        return time.monotonic() < self.until


def audit_key(screen: Screen[Any]) -> str | None:
    """The key of ``screen``'s audit view (its ``document`` action) as the footer shows it
    (``^d``), or None when it has none: the notification names the key that works there."""
    for binding in getattr(type(screen), "BINDINGS", ()):
        if isinstance(binding, Binding) and binding.action == "document":
            return screen.app.get_key_display(binding)
    return None


class SupersedeScreen(ArchiveChangeDialog[Superseded]):
    """Confirm superseding one document, with a reason, replacement and subject key."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape",
            "cancel",
            "Cancel",
            id="cw.supersede.cancel",
            tooltip="Close without superseding",
        ),
    ]

    GO = "supersede-go"
    CANCEL = "supersede-cancel"
    ACTION = "Supersede"

    def __init__(self, document_id: str, summary: str = "") -> None:
        super().__init__()
        self.document_id = document_id
        self.summary = " ".join(summary.split())

    def compose(self) -> ComposeResult:
        with Dialog(id="supersede-dialog", classes="dialog"):
            yield Label(f"Supersede {self.document_id}?", classes="dialog-title")
            if self.summary:
                clipped = self.summary if len(self.summary) <= 200 else self.summary[:199] + "…"
                yield Static(Text(clipped, "italic"), id="supersede-summary")
            yield Static(EXPLAIN, id="supersede-explain")
            yield Label("Reason")
            yield Input(
                placeholder="why it no longer holds (e.g. reversed by ADR 0008)",
                id="supersede-reason",
                compact=True,
            )
            yield Label("Replaced by (document id, optional)")
            yield Input(placeholder="t-…", id="supersede-by", compact=True)
            yield Label("Subject key (optional)")
            yield Input(placeholder="e.g. queue-backend", id="supersede-subject", compact=True)
            with Horizontal(classes="dialog-buttons"):
                yield Button("Supersede", variant="error", id=self.GO)
                yield Button("Cancel", id=self.CANCEL)

    def on_mount(self) -> None:
        self.query_one("#supersede-reason", Input).focus()

    def _value(self, widget_id: str) -> str | None:
        return self.query_one(widget_id, Input).value.strip() or None

    @on(Input.Submitted)
    def _next_or_submit(self, event: Input.Submitted) -> None:
        # Enter moves down the form; on the last field it confirms. An empty reason keeps the
        # cursor there.
        if event.input.id == "supersede-reason" and not event.value.strip():
            return
        if event.input.id == "supersede-subject":
            self._submit()
        else:
            self.focus_next()

    @on(Button.Pressed, "#supersede-go")
    def _submit(self) -> None:
        if self._value("#supersede-reason") is None:
            # A retirement needs a reason someone typed: keys typed into the result list (a
            # query meant for the search bar) used to reach this form, and three Enters retired
            # the document with no reason at all.
            self.notify("Type why it no longer holds first.", severity="warning")
            self.query_one("#supersede-reason", Input).focus()
            return
        by = self._value("#supersede-by")
        if by == self.document_id:
            self.notify("A document cannot replace itself.", severity="warning")
            return
        self.start(
            {
                "documentId": self.document_id,
                "by": by,
                "reason": self._value("#supersede-reason"),
                "subjectKey": self._value("#supersede-subject"),
            }
        )

    def perform(self, archive: Archive, request: dict[str, Any]) -> Superseded:
        return archive.supersede(
            request["documentId"],
            by=request["by"],
            reason=request["reason"],
            subject_key=request["subjectKey"],
        )

    def done_text(self, result: Superseded) -> str:
        by = f", replaced by {result.by}" if result.by else ""
        below = self.app.screen_stack[-2] if len(self.app.screen_stack) > 1 else None
        key = audit_key(below) if below is not None else None
        audit = f"{key} opens it for audit while this shows" if key else "the audit view keeps it"
        return f"Superseded {result.document_id}{by}. It no longer appears in search; {audit}."

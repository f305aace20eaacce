"""The candidates of one frozen preflight decision, each one a way into its source.

``CandidatesScreen(hint)`` lists what the decision retrieved (its diagnostics' ``retrieved``
rows and the ``included`` item: ids, dates, kinds, scores — never text). Enter recalls the
highlighted candidate's document (``Archive.recall`` with the document id), ``o`` opens its
session's transcript at its message. The ids are ``<documentId>#<messageKey>`` or
``<documentId>@w<window>`` (a window with no single message).
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option

from cwtui.screens.common import LiveScreen
from cwtui.widgets.dialog import Dialog
from cwtui.widgets.nav import NavList


def candidates(hint: dict[str, Any]) -> list[dict[str, Any]]:
    """The decision's retrieved rows, the included one first, each with ``documentId``,
    ``messageKey`` (None for a window id), ``session`` and ``included``."""
    diag = hint.get("diagnostics") or {}
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for row, included in [(r, True) for r in diag.get("included") or []] + [
        (r, False) for r in diag.get("retrieved") or []
    ]:
        if not isinstance(row, dict):
            continue
        ident = str(row.get("id") or row.get("documentId") or "")
        if not ident or ident in seen:
            continue
        seen.add(ident)
        document, _, key = ident.partition("#")
        if not key:
            document = str(row.get("documentId") or ident.split("@w")[0])
        rows.append(
            {
                **row,
                "documentId": document,
                "messageKey": key or None,
                "session": row.get("session") or hint.get("session"),
                "included": included,
            }
        )
    return rows


class CandidatesScreen(ModalScreen[None], LiveScreen):
    """Pick a candidate of a frozen decision to recall it or to read it in its session."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Close", id="cw.candidates.close", tooltip="Close"),
        Binding(
            "o",
            "open_transcript",
            "Transcript",
            id="cw.candidates.open",
            tooltip="Open the candidate's session at its message",
        ),
    ]

    def __init__(self, hint: dict[str, Any]) -> None:
        super().__init__()
        self.hint = hint
        self.rows = candidates(hint)

    def compose(self) -> ComposeResult:
        with Dialog(id="candidates-dialog", classes="dialog"):
            yield Label(
                f"Candidates of {self.hint.get('messageKey') or 'this message'}",
                classes="dialog-title",
            )
            if not self.rows:
                yield Static("This decision retrieved nothing.", classes="dim")
            options = []
            for row in self.rows:
                label = Text.assemble(
                    ("+ " if row["included"] else "  ", "bold #3fb950"),
                    (str(row["documentId"]), "bold"),
                    (f"  {row['messageKey'] or '(window)'}", "dim"),
                    (f"\n    {str(row.get('timestamp') or '')[:10]}", "dim"),
                    (f" · {row.get('kind') or '?'}", "dim"),
                    (f" · {row.get('matchType') or ''}", "cyan"),
                    (f" · score {row['score']}" if "score" in row else "", "dim"),
                )
                options.append(Option(label))
            yield NavList(*options, id="candidates-list")
            yield Static(Text("Enter recalls it · o opens its transcript · Esc closes", "dim"))

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        if self.rows:
            listing.highlighted = 0
        listing.focus()

    def _row(self) -> dict[str, Any] | None:
        index = self.query_one(OptionList).highlighted
        return self.rows[index] if index is not None and 0 <= index < len(self.rows) else None

    @on(OptionList.OptionSelected)
    def _recall(self, event: OptionList.OptionSelected) -> None:
        from cwtui.screens.recall import RecallScreen

        row = self.rows[event.option_index]
        self.dismiss(None)
        self.app.push_screen(RecallScreen(str(row["documentId"]), document_id=row["documentId"]))

    def action_open_transcript(self) -> None:
        from cwtui.screens.transcript import TranscriptScreen

        row = self._row()
        if row is None or not row.get("session"):
            self.notify("This candidate names no session.", severity="warning")
            return
        self.dismiss(None)
        self.app.push_screen(TranscriptScreen(str(row["session"]), focus_key=row.get("messageKey")))

    def action_cancel(self) -> None:
        self.dismiss(None)

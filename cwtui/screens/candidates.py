"""The candidates of one frozen preflight decision, each one a way into its source.

``CandidatesScreen(hint, session)`` lists what the decision retrieved (its diagnostics'
``retrieved`` rows and the ``included`` item: ids, dates, kinds, scores — never text). Enter
recalls the highlighted candidate's message (a locator from ``Archive.hint_locator``, then
``Archive.recall``: :mod:`cwtui.screens.candidate_recall`), ``o``
opens its session's transcript at its message. The ids are ``<documentId>#<messageKey>`` or
``<documentId>@w<window>`` (a window with no single message).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

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

if TYPE_CHECKING:
    from cwcore.contract.hints import HintEntry


@dataclass(frozen=True)
class Candidate:
    """One row of the list: the source document, its message key (None for a window id), the
    session to open, whether the decision showed it, and what the row says of it."""

    document_id: str
    message_key: str | None
    session: str | None
    included: bool
    timestamp: str
    kind: str | None
    match_type: str
    score: float


def candidates(hint: HintEntry, session: str | None = None) -> list[Candidate]:
    """The decision's retrieved rows, the included one first; ``session`` (default: the
    decision's) stands in for a row that names none."""
    diag = hint.diagnostics
    fallback = session or hint.session
    rows: list[Candidate] = []
    seen: set[str] = set()

    def place(ident: str) -> tuple[str, str | None] | None:
        if not ident or ident in seen:
            return None
        seen.add(ident)
        document, _, key = ident.partition("#")
        return (document, key) if key else (ident.split("@w")[0], None)

    for item in diag.shown:
        where = place(item.id)
        if where is not None:
            rows.append(
                Candidate(*where, fallback, True, "", item.kind, item.match_type, item.score)
            )
    for row in diag.candidates:
        where = place(row.id)
        if where is not None:
            document, key = where
            rows.append(
                Candidate(
                    document if key else row.document_id,
                    key,
                    row.session or fallback,
                    False,
                    row.timestamp,
                    row.kind,
                    row.match_type,
                    row.score,
                )
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

    def __init__(self, hint: HintEntry, session: str | None = None) -> None:
        super().__init__()
        self.hint = hint
        self.rows = candidates(hint, session)

    def compose(self) -> ComposeResult:
        with Dialog(id="candidates-dialog", classes="dialog"):
            yield Label(
                f"Candidates of {self.hint.message_key or 'this message'}",
                classes="dialog-title",
            )
            if not self.rows:
                yield Static("This decision retrieved nothing.", classes="dim")
            options = []
            for row in self.rows:
                label = Text.assemble(
                    ("+ " if row.included else "  ", "bold #3fb950"),
                    (row.document_id, "bold"),
                    (f"  {row.message_key or '(window)'}", "dim"),
                    (f"\n    {row.timestamp[:10]}", "dim"),
                    (f" · {row.kind or '?'}", "dim"),
                    (f" · {row.match_type}", "cyan"),
                    (f" · score {row.score}", "dim"),
                )
                options.append(Option(label))
            yield NavList(*options, id="candidates-list")
            yield Static(Text("Enter recalls it · o opens its transcript · Esc closes", "dim"))

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        if self.rows:
            listing.highlighted = 0
        listing.focus()

    def _row(self) -> Candidate | None:
        index = self.query_one(OptionList).highlighted
        return self.rows[index] if index is not None and 0 <= index < len(self.rows) else None

    @on(OptionList.OptionSelected)
    def _recall(self, event: OptionList.OptionSelected) -> None:
        from cwtui.screens.candidate_recall import CandidateRecallScreen

        row = self.rows[event.option_index]
        # By a locator of the candidate's message, not the bare document id (a direct read
        # without agent, byte range or message roles).
        ident = f"{row.document_id}#{row.message_key}" if row.message_key else row.document_id
        self.swap(CandidateRecallScreen(ident, row.document_id))

    def action_open_transcript(self) -> None:
        from cwtui.screens.transcript import TranscriptScreen

        row = self._row()
        if row is None or not row.session:
            self.notify("This candidate names no session.", severity="warning")
            return
        self.swap(TranscriptScreen(row.session, focus_key=row.message_key))

    def action_cancel(self) -> None:
        self.dismiss(None)

"""The documents behind a partial index (``p`` on the index view): which ones, which limit.

``PartialScreen()`` reads ``Archive.index_partial`` in a thread worker: the indexed documents
whose handler outcome is ``partial`` or ``skipped``, each with its outcomes and the limit each
capped handler hit (a Markdown document named by its file), up to :attr:`PartialScreen.LIMIT`
at a time (``m`` reads the next ones). Enter opens the highlighted document's audit view.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from cwcore.contract.index import PartialDocument, PartialDocuments
from cwcore.errors import CwError
from cwtui.output import safe
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    CallFailed,
    LiveScreen,
    archive_handle,
    error_text,
)
from cwtui.widgets.dialog import Dialog
from cwtui.widgets.nav import NavList

OUTCOME_STYLE = {"partial": "bold #d29922", "skipped": "bold #da3633"}


def document_option(doc: PartialDocument) -> Text:
    """Two or more lines: the document (a Markdown document's file name first, its folder
    after), its state and windows; each capped handler's outcome and the limit it hit."""
    text = Text()
    if doc.path:
        name = PurePath(doc.path).name
        text.append(safe(name, one_line=True), "bold")
        text.append(f"  {safe(str(PurePath(doc.path).parent), one_line=True)}\n  ", "dim")
    text.append_text(
        Text.assemble(
            (safe(doc.document_id, one_line=True), "bold" if not doc.path else ""),
            (f" v{doc.version} · {doc.kind or '?'} · {doc.windows} windows", "dim"),
            (f" · {doc.state}" if doc.state != "live" else "", "bold red"),
        )
    )
    outcomes = dict(doc.outcomes)
    for handler, cap in sorted(doc.caps):
        outcome = outcomes.get(handler, "?")
        text.append(f"\n  {handler} ", "bold")
        text.append(outcome, OUTCOME_STYLE.get(outcome, ""))
        text.append(f": {safe(cap, one_line=True)}")
    return text


class PartialScreen(ModalScreen[None], LiveScreen):
    """The partial and skipped documents of the published index."""

    LIMIT: ClassVar[int] = 100

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Close", id="cw.partial.close", tooltip="Close"),
        Binding(
            "m",
            "more",
            "More",
            id="cw.partial.more",
            tooltip="Read the next documents",
        ),
    ]

    class Loaded(CallDone):
        def __init__(self, body: PartialDocuments, append: bool) -> None:
            super().__init__()
            self.body, self.append = body, append

    class Failed(CallFailed):
        pass

    def __init__(self) -> None:
        super().__init__()
        self.documents: list[PartialDocument] = []
        self.next: int | None = None

    def compose(self) -> ComposeResult:
        with Dialog(id="partial-dialog", classes="dialog"):
            yield Label("Documents behind PARTIAL", classes="dialog-title")
            yield Static("Reading the applied markers…", id="partial-state")
            yield NavList(id="partial-list")
            yield Static(Text("Enter: the document's audit view · Esc closes", "dim"))

    def on_mount(self) -> None:
        self._load(archive_handle(self.app), 0, False)

    @work(thread=True, exclusive=True, group="partial", exit_on_error=False)
    def _load(self, handle: ArchiveHandle, after: int, append: bool) -> None:
        try:
            with handle.use() as archive:
                body = archive.index_partial(limit=self.LIMIT, after=after)
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(body, append))

    def on_partial_screen_loaded(self, message: Loaded) -> None:
        docs = list(message.body.documents)
        self.documents = [*self.documents, *docs] if message.append else docs
        self.next = message.body.next
        listing = self.query_one(OptionList)
        if not message.append:
            listing.clear_options()
        listing.add_options([Option(document_option(d)) for d in docs])
        state = self.query_one("#partial-state", Static)
        count = len(self.documents)
        more = " · m reads more" if self.next is not None else ""
        state.update(
            Text(f"{count} document{'s' if count != 1 else ''}{more}", "dim")
            if count
            else Text("No document has a partial or skipped outcome.", "bold #3fb950")
        )
        listing.display = bool(count)
        if count:
            if listing.highlighted is None:
                listing.highlighted = 0
            listing.focus()

    def on_partial_screen_failed(self, message: Failed) -> None:
        self.query_one("#partial-state", Static).update(Text(message.text, "bold red"))

    def action_more(self) -> None:
        if self.next is None:
            self.notify("That is all of them.", timeout=2)
            return
        self._load(archive_handle(self.app), self.next, True)

    @on(OptionList.OptionSelected)
    def _open(self, event: OptionList.OptionSelected) -> None:
        from cwtui.screens.document import DocumentScreen

        doc = self.documents[event.option_index]
        self.swap(DocumentScreen(doc.document_id))

    def action_cancel(self) -> None:
        self.dismiss(None)

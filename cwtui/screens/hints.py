"""The hints screen: the frozen preflight decisions of a session, with their diagnostics.

Preflight (docs/hints.md) freezes one decision per user message: an outcome (``excerpt``,
``marker``, ``none``, ``no-query``, ``failed``), the exact hint bytes the host inserts after the
message, its token count, the query hash, the index generation, and diagnostics that hold ids,
numbers and reasons only. This screen reads them with ``Archive.hints()`` from thread workers:

* the left pane lists the sessions that have frozen hints (one ``hints()`` call over the
  archive), with the session selected on the Sessions screen pinned on top even when it has none;
* the table shows the chosen session's decisions (``hints(session=…)``): message key, what the
  user said there (kept with the decision; for decisions frozen before messages were kept, the
  session transcript's message of that key), outcome (coloured), reason, bytes, tokens, query
  hash, generation, when it was frozen;
* the detail pane shows the selected decision: what the user said, why it came out so (one
  sentence: for ``none``, every row older than the age limits, nothing matching, weak evidence,
  …), the hint bytes verbatim (plain text, never parsed as markup), retrieved / included /
  excluded candidates with their reasons, the candidate, dedup and branch counts, the gate,
  token use and latency, and the session's active budget.

``c`` lists the selected decision's candidates; each opens its recall or its transcript. A
session typed with ``s`` may be a unique id prefix, as everywhere an id is typed. The screen only
reads: rotation (``cw hints rotate``) stays with the hosts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import DataTable, Header, OptionList, Static
from textual.widgets.option_list import Option
from textual.worker import get_current_worker

from cwcore.errors import CwError, NotFound
from cwtui.screens.candidates import CandidatesScreen
from cwtui.screens.common import ArchiveHandle, CallDone, LiveScreen, archive_handle, error_text
from cwtui.screens.prompt import PromptScreen
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.hints import budget_text, detail_text, row_cells
from cwtui.widgets.nav import NavList, NavTable

if TYPE_CHECKING:
    from cwcore.contract.hints import HintEntry, HintsListing, SessionBudget
    from cwcore.hints.why import Limits

EMPTY_SESSION = (
    "No frozen hints for this session yet — agents create them with `cw preflight` through "
    "the hooks."
)
EMPTY_ARCHIVE = (
    "No frozen hints yet — agents create them with `cw preflight` through the hooks.\n"
    "Pick a session on the Sessions screen (1), or press s to enter a session id."
)
COLUMNS = ("Message", "Said", "Outcome", "Reason", "Bytes", "Tokens", "Query hash", "Gen", "Frozen")
#: Characters of the user message the table shows (the detail shows more).
SAID_CHARS = 36
DETAIL_SAID_CHARS = 600


def _limits(home: Any) -> Limits:
    """The archive's age limits and suppression (the defaults when its settings are unread)."""
    from cwcore.config import load
    from cwcore.hints.why import Limits, limits_of

    try:
        return limits_of(load(home)[0])
    except Exception:
        return Limits()


def _unsaid(hint: HintEntry) -> str:
    """What the detail says when the decision kept no message text."""
    if hint.said_withheld:
        return f"(withheld: {hint.said_withheld})"
    return "(not kept with this decision, and not in the archive's transcript)"


def sessions_screen_selection(app: Any) -> str | None:
    """The session under the cursor of the Sessions screen, if that screen was ever shown."""
    from cwtui.screens.sessions import SessionsScreen
    from cwtui.widgets.sessions_table import SessionsTable

    stacks = getattr(app, "_screen_stacks", None) or {}
    for screen in stacks.get("sessions", []):
        if isinstance(screen, SessionsScreen):
            try:
                row = screen.query_one(SessionsTable).current
            except Exception:  # not mounted yet, or the table is gone
                return None
            return row.sessionId if row else None
    return None


class HintsScreen(LiveScreen):
    """Frozen preflight hints per session: outcomes, exact bytes, diagnostics, the budget."""

    SUB_TITLE = "Hints"

    #: Hints read per call (the facade's default and the engine's listing bound).
    LIMIT: ClassVar[int] = 1000
    #: Show each decision's latency (snapshot tests turn it off: it varies between runs).
    SHOW_TIMING: ClassVar[bool] = True

    DEFAULT_CSS = """
    #hints-body { height: 1fr; }
    #hints-sessions-pane { width: 28; border-right: tall $panel; }
    #hints-sessions-pane .pane-title { padding: 0 1; text-style: bold; }
    #hints-sessions { height: 1fr; border: none; }
    #hints-main { width: 1fr; }
    #hints-budget { height: auto; padding: 0 1; }
    #hints-table { height: auto; max-height: 12; }
    #hints-empty { padding: 1 2; height: auto; }
    #hints-detail-pane { height: 1fr; padding: 0 1; border-top: tall $panel; }
    Screen.-narrow #hints-sessions-pane { width: 18; }
    Screen.-short #hints-table { max-height: 6; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Reload", id="cw.hints.reload", tooltip="Reload the hints"),
        Binding(
            "s",
            "choose_session",
            "Session id",
            id="cw.hints.session",
            tooltip="Show the frozen hints of a session by id",
        ),
        Binding(
            "l",
            "focus_sessions",
            "Sessions",
            id="cw.hints.sessions",
            tooltip="Focus the list of sessions with hints",
        ),
        Binding(
            "t",
            "focus_table",
            "Table",
            id="cw.hints.table",
            tooltip="Focus the table of the session's frozen hints",
        ),
        Binding(
            "c",
            "candidates",
            "Candidates",
            id="cw.hints.candidates",
            tooltip="The selected decision's candidates: recall one, or open its transcript",
        ),
        Binding(
            "o",
            "open_transcript",
            "Transcript",
            id="cw.hints.open",
            tooltip="Open the session's transcript at the selected decision's user message",
        ),
        Binding(
            "y",
            "copy_hint",
            "Copy hint",
            id="cw.hints.copy",
            tooltip="Copy the selected hint's exact bytes to the clipboard",
        ),
    ]

    class SessionsLoaded(CallDone):
        def __init__(self, sessions: dict[str, SessionBudget], counts: dict[str, int]) -> None:
            super().__init__()
            self.sessions, self.counts = sessions, counts

    class HintsLoaded(CallDone):
        def __init__(
            self, generation: int, session: str, body: HintsListing, said: dict[str, str]
        ) -> None:
            super().__init__()
            self.generation, self.session, self.body, self.said = generation, session, body, said

    class Failed(CallDone):
        def __init__(self, generation: int | None, text: str) -> None:
            super().__init__()
            self.generation, self.text = generation, text

    def __init__(self) -> None:
        super().__init__()
        self.session: str | None = None
        self.pinned: str | None = None  # the Sessions screen's selection when last seen
        self.hints: list[HintEntry] = []
        self.said: dict[str, str] = {}  # message key → what the user said there
        self.budget: SessionBudget | None = None
        self.limits: Limits | None = None  # the archive's age limits, for the "why" sentence
        self.listing: dict[str, SessionBudget] = {}
        self.counts: dict[str, int] = {}
        self.generation = 0
        self._seen_changes = -1

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="hints-body"):
            with Vertical(id="hints-sessions-pane"):
                yield Static("Sessions with hints", classes="pane-title")
                yield NavList(id="hints-sessions")
            with Vertical(id="hints-main"):
                yield Static("Reading the frozen hints…", id="hints-budget")
                yield NavTable(id="hints-table", cursor_type="row", zebra_stripes=True)
                yield Static("", id="hints-empty")
                with VerticalScroll(id="hints-detail-pane"):
                    yield Static("", id="hints-detail")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#hints-table", DataTable).add_columns(*COLUMNS)
        self.pinned = sessions_screen_selection(self.app)
        self.session = self.pinned
        self._show_empty(None)
        self.action_reload()

    def on_screen_resume(self) -> None:
        selection = sessions_screen_selection(self.app)
        handle = archive_handle(self.app)
        if selection and selection != self.pinned:
            self.pinned = self.session = selection  # follow the Sessions screen's selection
            self.action_reload()
        elif self._seen_changes not in (-1, handle.changes):
            self.action_reload()

    # -- the archive ---------------------------------------------------------------------------

    def action_reload(self) -> None:
        handle = archive_handle(self.app)
        self._seen_changes = handle.changes
        self._load_sessions(handle)
        if self.session:
            self._load(self.session)

    @work(thread=True, exclusive=True, group="hints-sessions", exit_on_error=False)
    def _load_sessions(self, handle: ArchiveHandle) -> None:
        try:
            with handle.use() as archive:
                body = archive.hints(limit=self.LIMIT)
        except CwError as exc:
            self.post_message(self.Failed(None, error_text(exc)))
            return
        counts: dict[str, int] = {}
        for row in body.hints:
            counts[row.session] = counts.get(row.session, 0) + 1
        if not get_current_worker().is_cancelled:
            sessions = {state.session: state for state in body.sessions}
            self.post_message(self.SessionsLoaded(sessions, counts))

    def _load(self, session: str) -> None:
        self.generation += 1
        self._load_hints(archive_handle(self.app), self.generation, session)

    @work(thread=True, exclusive=True, group="hints", exit_on_error=False)
    def _load_hints(self, handle: ArchiveHandle, generation: int, session: str) -> None:
        said: dict[str, str] = {}
        try:
            with handle.use() as archive:
                try:  # a prefix (as shown on the other screens) names the session it is unique to
                    session = archive.resolve_session(session).sessionId
                except NotFound:
                    pass  # hints may outlive their session: ask for them by the id as typed
                body = archive.hints(session=session, limit=self.LIMIT)
                if self.limits is None:
                    self.limits = _limits(archive.home)
                kept = {h.message_key: h.said for h in body.hints if h.said is not None}
                if len(kept) < len(body.hints):  # decisions frozen before messages were kept
                    try:
                        messages = archive.show(session).messages
                    except NotFound:
                        messages = ()
                    said = {m.message_key: m.text for m in messages if m.role == "user"}
                said.update(kept)
        except CwError as exc:
            self.post_message(self.Failed(generation, error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.HintsLoaded(generation, session, body, said))

    def on_hints_screen_sessions_loaded(self, message: SessionsLoaded) -> None:
        self.listing, self.counts = message.sessions, message.counts
        order = sorted(
            message.sessions,
            key=lambda s: message.sessions[s].last_activity or "",
            reverse=True,
        )
        if self.pinned and self.pinned not in order:
            order.insert(0, self.pinned)
        options = self.query_one("#hints-sessions", OptionList)
        options.clear_options()
        for name in order:
            label = Text(name if len(name) <= 14 else name[:13] + "…", "bold")
            label.append(f"  {self.counts.get(name, 0)}", "dim")
            if name == self.pinned:
                label.append(" ◂", "bold #58a6ff")
            options.add_option(Option(label, id=name))
        if self.session is None and order:
            self.session = order[0]
            self._load(self.session)
        if self.session in order:
            options.highlighted = order.index(self.session)
        if self.session is None:
            self.query_one("#hints-budget", Static).update("")
            self._show_empty(EMPTY_ARCHIVE)

    def on_hints_screen_hints_loaded(self, message: HintsLoaded) -> None:
        if message.generation != self.generation:
            return
        self.session = message.session
        self.said = message.said
        self.hints = sorted(message.body.hints, key=lambda h: (h.created_at or "", h.message_key))
        self.budget = message.body.budget(message.session)
        self.query_one("#hints-budget", Static).update(
            budget_text(message.session, self.budget, len(self.hints))
        )
        options = self.query_one("#hints-sessions", OptionList)
        for n in range(options.option_count):
            if options.get_option_at_index(n).id == message.session:
                options.highlighted = n
        table = self.query_one("#hints-table", DataTable)
        table.clear()
        for n, hint in enumerate(self.hints):
            cells = row_cells(hint)
            said = " ".join(self.said.get(hint.message_key, "").split())
            if len(said) > SAID_CHARS:
                said = said[: SAID_CHARS - 1] + "…"
            table.add_row(cells[0], Text(said, "italic"), *cells[1:], key=str(n))
        self._show_empty(None if self.hints else EMPTY_SESSION)
        self._update_detail()
        self.refresh_bindings()

    def on_hints_screen_failed(self, message: Failed) -> None:
        if message.generation is not None and message.generation != self.generation:
            return
        self.notify(message.text, title="Hints", severity="error")
        if message.generation is not None:
            self.hints = []
            self.query_one("#hints-table", DataTable).clear()
            self._show_empty(
                f"Cannot read the hints: {message.text}\nPress r to retry.", error=True
            )

    # -- presentation --------------------------------------------------------------------------

    def _show_empty(self, text: str | None, *, error: bool = False) -> None:
        empty = self.query_one("#hints-empty", Static)
        empty.update(Text(text or "", "bold red" if error else ""))
        empty.display = text is not None
        self.query_one("#hints-table").display = text is None
        self.query_one("#hints-detail-pane").display = text is None

    @property
    def current(self) -> HintEntry | None:
        table = self.query_one("#hints-table", DataTable)
        if not self.hints or not table.row_count:
            return None
        row = table.cursor_row
        return self.hints[row] if 0 <= row < len(self.hints) else None

    def _update_detail(self) -> None:
        hint = self.current
        body: Any = ""
        if hint:
            said = " ".join(self.said.get(hint.message_key, "").split())
            if len(said) > DETAIL_SAID_CHARS:
                said = said[: DETAIL_SAID_CHARS - 1] + "…"
            body = Text.assemble(
                ("The user said ", "bold"),
                (f"“{said}”" if said else _unsaid(hint), "italic"),
                "\n\n",
                detail_text(hint, self.budget, show_timing=self.SHOW_TIMING, limits=self.limits),
            )
        self.query_one("#hints-detail", Static).update(body)

    @on(DataTable.RowHighlighted, "#hints-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._update_detail()

    @on(OptionList.OptionSelected, "#hints-sessions")
    def _session_chosen(self, event: OptionList.OptionSelected) -> None:
        if event.option.id:
            self.session = event.option.id
            self._load(self.session)
            self.query_one("#hints-table").focus()

    # -- actions -------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):
            return False
        if action == "copy_hint":
            return True if self.current and self.current.hint else None
        if action in ("candidates", "open_transcript"):
            return True if self.current else None
        return True

    def action_candidates(self) -> None:
        if self.current is not None:
            self.app.push_screen(CandidatesScreen(self.current, self.session))

    def action_open_transcript(self) -> None:
        from cwtui.screens.transcript import TranscriptScreen

        hint = self.current
        if hint is None or not self.session:
            return
        self.app.push_screen(TranscriptScreen(self.session, focus_key=hint.message_key))

    def action_choose_session(self) -> None:
        def chosen(session: str | None) -> None:
            if session and session.strip():
                self.session = session.strip()
                self._load(self.session)

        self.app.push_screen(
            PromptScreen("Frozen hints of a session", "its id, or a unique prefix (4+)"), chosen
        )

    def action_focus_sessions(self) -> None:
        self.query_one("#hints-sessions").focus()

    def action_focus_table(self) -> None:
        if self.hints:
            self.query_one("#hints-table").focus()

    def action_copy_hint(self) -> None:
        hint = self.current
        if hint and hint.hint:
            self.app.copy_to_clipboard(hint.hint)
            self.notify(f"Copied the hint ({hint.bytes:,} bytes).", timeout=2)
        else:
            self.notify("This message has no hint.", severity="warning", timeout=2)

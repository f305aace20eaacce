"""The transcript screen: one session, message by message (Enter on a session opens it).

Loads ``Archive.show`` in a thread worker and hands the messages to a lazily-mounting
:class:`~cwtui.widgets.transcript_view.TranscriptView`. A transcript shows what happened:
superseded messages are there, marked with the reason and the replacement, until ``u`` hides
them (message numbers stay the same either way). Toggles that change what the archive returns
(metadata events = ``cw show --all``) reload; the others change only presentation.

Navigation: a jump (``g``: a number or a key), the next / previous real user prompt (``]`` /
``[``), the next / previous message (``j`` / ``k``), first and last (Home / ``G``), the other
half of a tool call / result pair (``%``), and find (``/``, then ``n`` / ``N``), which searches
every message of the session, folded tool output included, and opens what it lands in. Opened
at a message (a search hit, a recall), the screen lands on it, marks it, and keeps it in place
while the messages around it mount.
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widgets import Header, Static
from textual.worker import get_current_worker

from cwcore.contract.retention import Forgotten
from cwcore.contract.sessions import SessionInfo
from cwcore.contract.supersession import Restored
from cwcore.contract.views import Transcript, TranscriptCounts, TranscriptMessage
from cwcore.errors import CwError
from cwtui.external import open_text
from cwtui.output import safe
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    CallFailed,
    LiveScreen,
    archive_handle,
    error_text,
    screen_is_live,
)
from cwtui.screens.copy import CopyScreen
from cwtui.screens.export import ExportScreen
from cwtui.screens.forget import ForgetScreen
from cwtui.screens.jump import JumpScreen
from cwtui.screens.unsupersede import UnsupersedeScreen
from cwtui.widgets.findbar import FindBar
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.message import FOLDABLE, MessageView, found_spans, shown_text
from cwtui.widgets.transcript_view import Entry, TranscriptView, build_entries

#: Find stops counting here (a one-letter term in a long session).
MAX_MATCHES = 10_000
#: Seconds after Esc before a left transcript's widgets start to be removed (the screen below
#: has painted and takes keys first), and how many widgets one step removes.
DISPOSE_DELAY = 1.0
DISPOSE_BATCH = 8

# Pairs of keys the footer shows as one entry ("n/N match").
MATCH = Binding.Group("match")
PROMPT = Binding.Group("prompt")
MOVE = Binding.Group("message")
OPEN = Binding.Group("open")


def session_summary(
    info: SessionInfo, counts: TranscriptCounts | None = None, *, hidden: bool = False
) -> Text:
    """The header: id, project, agent, start, counts (superseded ones too), the title and the
    resume command when known. ``counts`` is the transcript's (``Archive.show``); ``hidden``
    says the screen hides superseded messages."""
    started = (info.started or "")[:19].replace("T", " ")
    # The session's count, as the sessions table and cw show give it (docs/importers.md: a
    # thinking block is not a message). The transcript's own count lists thinking too: the
    # header said 226 where the table said 180.
    messages = info.messages
    # Ids, names and the title are data: control characters escaped, never written raw.
    text = Text.assemble(
        (safe(info.sessionId, one_line=True), "bold"),
        f"  {safe(info.project, one_line=True)} · {safe(info.agent, one_line=True)}",
        f" · {started} UTC" if started else "",
        (
            f"\n{messages} messages · {info.turns} turns · {info.toolCalls} tool calls",
            "dim",
        ),
    )
    superseded = counts.superseded if counts is not None else 0
    if superseded:
        if hidden:
            text.append(f" · {superseded} superseded hidden (u shows them)", "bold #d29922")
        else:
            text.append(f" · {superseded} superseded, marked (u hides them)", "#d29922")
    if info.title:
        text.append("\n" + safe(" ".join(info.title.split()), one_line=True), "italic")
    if info.resume:
        text.append("\nresume: ", "dim")
        text.append(safe(info.resume, one_line=True), "bold")
    return text


def resolve_jump(entries: list[Entry], wanted: str) -> int | None:
    """The position of message number ``wanted`` (1-based) or of the message with that key.

    A key matches exactly (``user:u3``) or by its source id alone (``u3``).
    """
    if wanted.isdigit():
        number = int(wanted)
        return next(
            (i for i, e in enumerate(entries) if e.kind == "message" and e.number == number), None
        )
    for exact in (True, False):
        for i, e in enumerate(entries):
            if e.kind != "message":
                continue
            if e.message is None:
                continue
            key = e.message.message_key
            if key == wanted if exact else key.split(":", 1)[-1] == wanted:
                return i
    return None


def is_user_prompt(entry: Entry) -> bool:
    m = entry.message
    return m is not None and m.role == "user" and m.kind == "text"


def find_matches(entries: list[Entry], term: str) -> list[tuple[int, int]]:
    """``(position, line)`` of every occurrence of ``term`` in the entries' messages, in order
    (``line``: 0-based, in the text as the message shows it)."""
    found: list[tuple[int, int]] = []
    for position, entry in enumerate(entries):
        if entry.message is None:
            continue
        text = shown_text(entry.message)
        for start, _ in found_spans(text, term):
            found.append((position, text.count("\n", 0, start)))
            if len(found) >= MAX_MATCHES:
                return found
    return found


class TranscriptScreen(LiveScreen):
    """A session's messages; thinking hidden until toggled, metadata events on request."""

    SUB_TITLE = "Transcript"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,b",
            "back",
            "Back",
            id="cw.transcript.back",
            tooltip="Back to the last screen (Esc first closes find)",
        ),
        Binding(
            "slash",
            "find",
            "Find",
            key_display="/",
            id="cw.transcript.find",
            tooltip="Find text in this session's messages, folded tool output included",
        ),
        Binding(
            "n",
            "find_next(1)",
            "Next match",
            group=MATCH,
            id="cw.transcript.find-next",
            tooltip="Go to the next match of the find",
        ),
        Binding(
            "N",
            "find_next(-1)",
            "Prev match",
            key_display="N",
            group=MATCH,
            id="cw.transcript.find-previous",
            tooltip="Go to the previous match of the find",
        ),
        Binding(
            "right_square_bracket",
            "step_user(1)",
            "Next prompt",
            key_display="]",
            group=PROMPT,
            id="cw.transcript.next-user",
            tooltip="Jump to the next user prompt",
        ),
        Binding(
            "left_square_bracket",
            "step_user(-1)",
            "Prev prompt",
            key_display="[",
            group=PROMPT,
            id="cw.transcript.previous-user",
            tooltip="Jump to the previous user prompt",
        ),
        Binding(
            "j",
            "step_message(1)",
            "Next",
            key_display="j",
            group=MOVE,
            id="cw.transcript.next-message",
            tooltip="Go to the next message",
        ),
        Binding(
            "k",
            "step_message(-1)",
            "Prev",
            key_display="k",
            group=MOVE,
            id="cw.transcript.previous-message",
            tooltip="Go to the previous message",
        ),
        Binding(
            "g",
            "jump",
            "Jump",
            id="cw.transcript.jump",
            tooltip="Jump to a message by number or key",
        ),
        Binding(
            "G",
            "edge(1)",
            "Last",
            key_display="G",
            id="cw.transcript.last",
            tooltip="Go to the last message",
        ),
        Binding(
            "percent_sign",
            "pair",
            "Pair",
            key_display="%",
            id="cw.transcript.pair",
            tooltip="Go from a tool call to its result, or from a result to its call",
        ),
        Binding(
            "t",
            "toggle_thinking",
            "Thinking",
            id="cw.transcript.thinking",
            tooltip="Show or hide thinking",
        ),
        Binding(
            "x",
            "toggle_tools",
            "Tools",
            id="cw.transcript.tools",
            tooltip="Expand or collapse every tool call and output",
        ),
        Binding(
            "m",
            "toggle_events",
            "Metadata",
            id="cw.transcript.events",
            tooltip="Show or hide metadata events (cw show --all)",
        ),
        Binding(
            "u",
            "toggle_superseded",
            "Superseded",
            id="cw.transcript.superseded",
            tooltip="Hide or show superseded messages (shown and marked by default)",
        ),
        Binding(
            "c",
            "copy",
            "Copy",
            id="cw.transcript.copy",
            tooltip="Copy the session id, message key, resume command or message text",
        ),
        Binding(
            "v",
            "view(False)",
            "Pager",
            group=OPEN,
            id="cw.transcript.pager",
            tooltip="Open the current message (or tool output) in $PAGER",
        ),
        Binding(
            "E",
            "view(True)",
            "Editor",
            key_display="E",
            group=OPEN,
            id="cw.transcript.editor",
            tooltip="Open a copy of the current message in $EDITOR",
        ),
        Binding(
            "U",
            "unsupersede",
            "Undo",
            key_display="U",
            id="cw.transcript.unsupersede",
            tooltip="Bring the current superseded message's document back into search",
        ),
        Binding(
            "e",
            "export",
            "Export",
            id="cw.transcript.export",
            tooltip="Export this session to a Markdown or cw-jsonl file",
        ),
        Binding(
            "f",
            "forget",
            "Forget",
            id="cw.transcript.forget",
            tooltip="Forget this session (remove it from the archive, after a confirmation)",
        ),
        Binding(
            "r",
            "reload",
            "Reload",
            id="cw.transcript.reload",
            tooltip="Reload the transcript",
        ),
    ]

    show_thinking: reactive[bool] = reactive(False)
    show_events: reactive[bool] = reactive(False)
    hide_superseded: reactive[bool] = reactive(False)
    tools_expanded: reactive[bool] = reactive(False)

    class Loaded(CallDone):
        def __init__(self, body: Transcript) -> None:
            super().__init__()
            self.body = body

    class Failed(CallFailed):
        pass

    def __init__(self, session_id: str, *, focus_key: str | None = None) -> None:
        """``focus_key``: a message key to land on once loaded (a search hit's source)."""
        super().__init__()
        self.session_id = session_id
        self.focus_key = focus_key
        self.body: Transcript | None = None
        self.all_entries: list[Entry] = []
        self.current = -1  # position (in the shown entries) of the message last gone to
        self.find_term = ""
        self.matches: list[tuple[int, int]] = []
        self.match_index = -1
        self._seen_changes = -1

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(self.session_id, "bold"), id="transcript-header")
        yield Static("Loading…", id="transcript-state")
        yield TranscriptView(id="transcript")
        yield FindBar(id="find-bar")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.sub_title = f"Transcript {safe(self.session_id, one_line=True)}"
        self.set_class(True, "-hide-thinking")
        self.action_reload()

    @property
    def view(self) -> TranscriptView:
        return self.query_one(TranscriptView)

    @property
    def entries(self) -> list[Entry]:
        """The entries shown (superseded messages left out while they are hidden)."""
        return self.view.entries

    # -- loading -------------------------------------------------------------------------------

    def on_screen_resume(self) -> None:
        if self._seen_changes not in (-1, archive_handle(self.app).changes):
            self.action_reload()  # something was forgotten or superseded meanwhile

    def action_reload(self) -> None:
        handle = archive_handle(self.app)
        self._seen_changes = handle.changes
        self._load(handle, self.session_id, self.show_events)

    @work(thread=True, exclusive=True, group="transcript", exit_on_error=False)
    def _load(self, handle: ArchiveHandle, session_id: str, include_all: bool) -> None:
        try:
            with handle.use() as archive:
                body = archive.show(session_id, include_all=include_all)
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(body))

    async def on_transcript_screen_loaded(self, message: Loaded) -> None:
        # Land where the user was (a reload), or on the message it was opened at.
        wanted = self.focus_key or self._current_key()
        self.focus_key = None
        self.body = message.body
        self.all_entries = build_entries(message.body)
        self._update_header()
        await self._rebuild(wanted)

    def _current_key(self) -> str | None:
        if 0 <= self.current < len(self.entries):
            message = self.entries[self.current].message
            if message is not None:
                return message.message_key
        return None

    def _visible(self) -> list[Entry]:
        if not self.hide_superseded:
            return list(self.all_entries)
        return [e for e in self.all_entries if not (e.message is not None and e.message.superseded)]

    async def _rebuild(self, wanted: str | None) -> None:
        """Show the entries again (after a load or a toggle), landing on ``wanted``."""
        view = self.view
        view.expand_tools = self.tools_expanded
        entries = self._visible()
        state = self.query_one("#transcript-state", Static)
        if not entries:
            hidden = bool(self.all_entries)
            state.update(
                "Every message of this session is superseded — press u to show them."
                if hidden
                else "This session has no messages."
            )
        state.display = not entries
        self.current = -1
        target = resolve_jump(entries, wanted) if wanted else None
        # Opened at a message: the batch above it mounts with it, before the one scroll that
        # lands on it (mounted later, it would push the target down for a frame).
        start = max(0, target - view.BATCH) if target is not None else 0
        await view.show(entries, start=start, settle=target is None)
        if self.find_term:
            self.matches = find_matches(entries, self.find_term)
            self.match_index = -1
            self._show_count()
        if target is not None:
            await self._go(target)
        else:
            view.focus()

    def on_transcript_screen_failed(self, message: Failed) -> None:
        state = self.query_one("#transcript-state", Static)
        state.update(Text(f"Cannot show {self.session_id}: {message.text}", "bold red"))
        state.display = True
        self.notify(message.text, title="Transcript", severity="error", markup=False)

    def _update_header(self) -> None:
        if self.body is None:
            return
        header = self.query_one("#transcript-header", Static)
        header.update(
            session_summary(self.body.session, self.body.counts, hidden=self.hide_superseded)
        )

    # -- presentation toggles ------------------------------------------------------------------

    def watch_show_thinking(self, shown: bool) -> None:
        self.set_class(not shown, "-hide-thinking")

    def action_toggle_thinking(self) -> None:
        self.show_thinking = not self.show_thinking
        messages = self.body.messages if self.body is not None else ()
        count = sum(1 for m in messages if m.kind == "thinking")
        state = "shown" if self.show_thinking else "hidden"
        self.notify(f"Thinking {state} ({count} in this session)", timeout=2)

    def action_toggle_tools(self) -> None:
        self.tools_expanded = not self.tools_expanded
        self.view.set_tools_expanded(self.tools_expanded)

    def action_toggle_events(self) -> None:
        self.show_events = not self.show_events
        self.notify(f"Metadata events {'shown' if self.show_events else 'hidden'}", timeout=2)
        self.action_reload()

    async def action_toggle_superseded(self) -> None:
        count = self.body.counts.superseded if self.body is not None else 0
        wanted = self._current_key()
        self.hide_superseded = not self.hide_superseded
        self._update_header()
        state = "hidden" if self.hide_superseded else "shown, marked"
        self.notify(f"Superseded messages {state} ({count} in this session)", timeout=2)
        await self._rebuild(wanted)

    # -- navigation ----------------------------------------------------------------------------

    async def _go(self, position: int, line: int | None = None) -> None:
        """Mark entry ``position`` current and land on it (on its body line ``line``)."""
        view = self.view
        widget = await view.reveal_for_top(position)
        if widget is None:
            return
        row = 0
        if isinstance(widget, MessageView):
            if widget.message.kind == "thinking":
                self.show_thinking = True  # a jump to thinking must land on something visible
            if line is not None:
                widget.show_line(line)
                row = max(0, (2 if widget.foldable else 1) + line - 1)
            widget.focus(scroll_visible=False)
        for old in view.query(".current"):
            if old is not widget:
                old.remove_class("current")
        widget.add_class("current")
        self.current = position
        view.land(widget, row)

    async def action_step_user(self, step: int) -> None:
        position = self.current + step if self.current >= 0 or step > 0 else -1
        while 0 <= position < len(self.entries):
            if is_user_prompt(self.entries[position]):
                await self._go(position)
                return
            position += step
        self.notify("No more user prompts that way.", timeout=2)

    def _shown(self, entry: Entry) -> bool:
        return self.show_thinking or entry.message is None or entry.message.kind != "thinking"

    async def action_step_message(self, step: int) -> None:
        start = self.current
        if start < 0:
            first = self.view.first_in_view()
            start = getattr(first, "position", 0) - step if first is not None else -step
        position = start + step
        while 0 <= position < len(self.entries):
            if self.entries[position].kind == "message" and self._shown(self.entries[position]):
                await self._go(position)
                return
            position += step

    async def action_edge(self, last: int) -> None:
        order = range(len(self.entries) - 1, -1, -1) if last else range(len(self.entries))
        for position in order:
            if self.entries[position].kind == "message" and self._shown(self.entries[position]):
                await self._go(position)
                return

    async def action_pair(self) -> None:
        entry = self.entries[self.current] if 0 <= self.current < len(self.entries) else None
        if entry is None or entry.pair is None:
            self.notify("Go to a tool call or result first (j / k, g).", timeout=2)
            return
        await self._jump_to(str(entry.pair))

    def action_jump(self) -> None:
        count = len(self.body.messages) if self.body is not None else 0
        self.open(JumpScreen(count), self._jump_to)

    async def _jump_to(self, wanted: str | None) -> None:
        if not wanted:
            return
        position = resolve_jump(self.entries, wanted)
        if position is None and self.hide_superseded and resolve_jump(self.all_entries, wanted):
            # A superseded message: show them again rather than say it does not exist.
            self.hide_superseded = False
            self._update_header()
            self.notify("Superseded messages shown (the message you asked for is one).")
            await self._rebuild(None)
            position = resolve_jump(self.entries, wanted)
        if position is None:
            self.notify(f"No message {wanted!r} in this session.", severity="warning", markup=False)
            return
        await self._go(position)

    # -- find ----------------------------------------------------------------------------------

    def action_find(self) -> None:
        self.query_one(FindBar).open()

    @on(FindBar.Find)
    async def _find(self, event: FindBar.Find) -> None:
        self.find_term = event.term.strip()
        self.view.set_find_term(self.find_term)
        self.matches = find_matches(self.entries, self.find_term) if self.find_term else []
        self.match_index = -1
        self.view.focus()
        if not self.find_term:
            self._close_find()
            return
        if not self.matches:
            self._show_count()
            self.notify(f"No {self.find_term!r} in this session.", timeout=3, markup=False)
            return
        # The first match at or after the current message.
        here = max(self.current, 0)
        self.match_index = next((i for i, (p, _) in enumerate(self.matches) if p >= here), 0) - 1
        await self.action_find_next(1)

    def _show_count(self) -> None:
        bar = self.query_one(FindBar)
        if not self.find_term:
            bar.count("")
            return
        total = len(self.matches)
        more = "+" if total >= MAX_MATCHES else ""
        where = f"{self.match_index + 1} / {total}{more}" if self.match_index >= 0 else f"{total}"
        bar.count(Text(f"{where} match{'es' if total != 1 else ''} · n / N", "dim"))

    async def action_find_next(self, step: int) -> None:
        if not self.matches:
            text = "Press / to find text." if not self.find_term else "No matches."
            self.notify(text, timeout=2)
            return
        self.match_index = (self.match_index + step) % len(self.matches)
        position, line = self.matches[self.match_index]
        self._show_count()
        await self._go(position, line)

    async def on_transcript_view_edge(self, message: TranscriptView.Edge) -> None:
        await self.action_edge(1 if message.last else 0)

    @on(FindBar.Closed)
    def _find_closed(self) -> None:
        self._close_find()

    def _close_find(self) -> None:
        bar = self.query_one(FindBar)
        bar.display = False
        self.find_term = ""
        self.matches = []
        self.match_index = -1
        self.view.set_find_term("")
        self.view.focus()

    # -- the current message -------------------------------------------------------------------

    def _current_message(self) -> TranscriptMessage | None:
        focused = self.app.focused
        if isinstance(focused, MessageView):
            return focused.message
        if 0 <= self.current < len(self.entries) and self.entries[self.current].message:
            return self.entries[self.current].message
        first = self.view.first_in_view()
        return first.message if isinstance(first, MessageView) else None

    def action_copy(self) -> None:
        info = self.body.session if self.body is not None else None
        message = self._current_message()
        choices = [
            ("session id", (info.sessionId if info else "") or self.session_id),
            ("message key", message.message_key if message else ""),
            ("resume command", (info.resume if info else None) or ""),
            ("message text", message.text if message else ""),
            ("document id", message.document_id if message else ""),
        ]
        self.open(CopyScreen(choices))

    def action_view(self, editor: bool) -> None:
        message = self._current_message()
        if message is None:
            self.notify("No message to open.", severity="warning", timeout=2)
            return
        text = shown_text(message) if message.kind in FOLDABLE else message.text
        name = f"{self.session_id}-{message.message_key}"
        problem = open_text(self.app, text, editor=editor, name=name)
        if problem:
            self.notify(problem, severity="error", markup=False)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):
            return False
        if action == "unsupersede":
            return True if self.body is not None and self.body.counts.superseded else None
        return True

    def action_unsupersede(self) -> None:
        message = self._current_message()
        if message is None or not message.superseded:
            self.notify("Go to a superseded message first (g, j / k).", severity="warning")
            return
        self.open(UnsupersedeScreen(message.document_id, message.text[:300]), self._undone)

    def _undone(self, result: Restored | None) -> None:
        if result is not None:
            self.action_reload()

    # -- the session ---------------------------------------------------------------------------

    def action_export(self) -> None:
        self.open(ExportScreen(self.session_id))

    def action_forget(self) -> None:
        detail = ""
        if self.body is not None:
            info = self.body.session
            detail = (
                f"{info.project} · {info.agent} · {info.messages} messages · {info.turns} turns"
            )
        self.open(ForgetScreen(self.session_id, detail), self._forgotten)

    def _forgotten(self, report: Forgotten | None) -> None:
        if report is not None:
            self._leave()  # the session is gone; the screen below reloads on resume

    def action_back(self) -> None:
        if self.query_one(FindBar).display:
            self._close_find()
            return
        self._leave()

    def _leave(self) -> None:
        """Pop this screen now and remove its widgets later, a few at a time.

        Textual removes a popped screen at once, every widget of it (each has a task to stop):
        with a few hundred messages mounted that held the event loop for 0.3–0.8 s after the
        screen below had painted, so keys typed after Esc waited. Installed under a name, the
        popped screen is left alone; :data:`DISPOSE_DELAY` later its widgets go in batches of
        :data:`DISPOSE_BATCH` (keys are handled between batches), then the screen."""
        if not screen_is_live(self) or self.app.screen is not self:
            return
        view = self.view
        view.leaving = True
        # Nothing focused first: removing a screen whose focused widget goes with it makes
        # Textual look for the next focus along the whole focus chain (every mounted message,
        # laid out again), work for a screen that is going away.
        self.set_focus(None)
        app = self.app
        name = f"cw-leaving-{id(self)}"
        app.install_screen(self, name)
        app.pop_screen()

        def dispose() -> None:
            app.run_worker(self._dispose(name), group="cw-dispose", exit_on_error=False)

        if DISPOSE_DELAY > 0:
            app.set_timer(DISPOSE_DELAY, dispose)
        else:  # (a Textual timer of 0 s never fires)
            app.call_later(dispose)

    async def _dispose(self, name: str) -> None:
        """Remove the widgets of this popped screen in batches, then the screen."""
        view = self.view
        while batch := list(view.children)[:DISPOSE_BATCH]:
            await view.remove_children(batch)
        self.app.uninstall_screen(name)
        await self.remove()

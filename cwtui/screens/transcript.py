"""The transcript screen: one session, message by message (Enter on a session opens it).

Loads ``Archive.show`` in a thread worker and hands the messages to a lazily-mounting
:class:`~cwtui.widgets.transcript_view.TranscriptView`. Toggles that change what the archive
returns (metadata events = ``cw show --all``, superseded versions) reload; toggles that change only
presentation (thinking, tool sections) act on widgets. Jumps go to a message number or key, or to
the next / previous real user prompt.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.reactive import reactive
from textual.widgets import Footer, Header, Static
from textual.worker import get_current_worker

from cwcore.errors import CwError
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    CallFailed,
    LiveScreen,
    archive_handle,
    error_text,
)
from cwtui.screens.export import ExportScreen
from cwtui.screens.forget import ForgetScreen
from cwtui.screens.jump import JumpScreen
from cwtui.widgets.message import MessageView
from cwtui.widgets.transcript_view import Entry, TranscriptView, build_entries


def session_summary(info: dict[str, Any]) -> Text:
    """The header: id, project, agent, start, counts, and the resume command when known."""
    started = (info.get("started") or "")[:19].replace("T", " ")
    text = Text.assemble(
        (info["sessionId"], "bold"),
        f"  {info['project']} · {info['agent']}",
        f" · {started} UTC" if started else "",
        (
            f"\n{info['messages']} messages · {info['turns']} turns · "
            f"{info['toolCalls']} tool calls",
            "dim",
        ),
    )
    if info.get("title"):
        text.append("\n" + " ".join(str(info["title"]).split()), "italic")
    if info.get("resume"):
        text.append("\nresume: ", "dim")
        text.append(str(info["resume"]), "bold")
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
            key = str(e.data["messageKey"])
            if key == wanted if exact else key.split(":", 1)[-1] == wanted:
                return i
    return None


def is_user_prompt(entry: Entry) -> bool:
    return entry.kind == "message" and entry.data["role"] == "user" and entry.data["kind"] == "text"


class TranscriptScreen(LiveScreen):
    """A session's messages; thinking hidden until toggled, metadata events on request."""

    SUB_TITLE = "Transcript"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,b", "back", "Back", id="cw.transcript.back", tooltip="Back to the last screen"
        ),
        Binding(
            "n",
            "next_user",
            "Next prompt",
            id="cw.transcript.next-user",
            tooltip="Jump to the next user prompt",
        ),
        Binding(
            "p",
            "previous_user",
            "Prev",
            id="cw.transcript.previous-user",
            tooltip="Jump to the previous user prompt",
        ),
        Binding(
            "g",
            "jump",
            "Jump",
            id="cw.transcript.jump",
            tooltip="Jump to a message by number or key",
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
            show=False,
            id="cw.transcript.superseded",
            tooltip="Include or hide superseded versions",
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
            show=False,
            id="cw.transcript.forget",
            tooltip="Forget this session (remove it from the archive, after a confirmation)",
        ),
        Binding(
            "r",
            "reload",
            "Reload",
            show=False,
            id="cw.transcript.reload",
            tooltip="Reload the transcript",
        ),
    ]

    show_thinking: reactive[bool] = reactive(False)
    show_events: reactive[bool] = reactive(False)
    show_superseded: reactive[bool] = reactive(False)
    tools_expanded: reactive[bool] = reactive(False)

    class Loaded(CallDone):
        def __init__(self, body: dict[str, Any]) -> None:
            super().__init__()
            self.body = body

    class Failed(CallFailed):
        pass

    def __init__(
        self, session_id: str, *, focus_key: str | None = None, superseded: bool = False
    ) -> None:
        """``focus_key``: a message key to jump to once loaded (a search hit's source);
        ``superseded``: start with superseded versions included (opened from an audit)."""
        super().__init__()
        self.session_id = session_id
        self.focus_key = focus_key
        self.body: dict[str, Any] | None = None
        self.current = -1  # position of the message last jumped to
        self.set_reactive(TranscriptScreen.show_superseded, superseded)
        self._seen_changes = -1

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(Text(self.session_id, "bold"), id="transcript-header")
        yield Static("Loading…", id="transcript-state")
        yield TranscriptView(id="transcript")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"Transcript {self.session_id}"
        self.set_class(True, "-hide-thinking")
        self.action_reload()

    # -- loading -------------------------------------------------------------------------------

    def on_screen_resume(self) -> None:
        if self._seen_changes not in (-1, archive_handle(self.app).changes):
            self.action_reload()  # something was forgotten or superseded meanwhile

    def action_reload(self) -> None:
        handle = archive_handle(self.app)
        self._seen_changes = handle.changes
        self._load(handle, self.session_id, self.show_events, self.show_superseded)

    @work(thread=True, exclusive=True, group="transcript", exit_on_error=False)
    def _load(
        self, handle: ArchiveHandle, session_id: str, include_all: bool, include_superseded: bool
    ) -> None:
        try:
            with handle.use() as archive:
                body = archive.show(
                    session_id, include_all=include_all, include_superseded=include_superseded
                )
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.Loaded(body))

    async def on_transcript_screen_loaded(self, message: Loaded) -> None:
        self.body = message.body
        header = self.query_one("#transcript-header", Static)
        header.update(session_summary(message.body["session"]))
        view = self.query_one(TranscriptView)
        view.expand_tools = self.tools_expanded
        entries = build_entries(message.body)
        state = self.query_one("#transcript-state", Static)
        state.update("This session has no messages." if not entries else "")
        state.display = not entries
        self.current = -1
        wanted, self.focus_key = self.focus_key, None  # only on the first load
        target = resolve_jump(entries, wanted) if wanted else None
        # Opened at a message (a search hit): start the window there, not at the top.
        await view.show(entries, start=target or 0)
        view.focus()
        if wanted:
            await self._jump_to(wanted)

    def on_transcript_screen_failed(self, message: Failed) -> None:
        state = self.query_one("#transcript-state", Static)
        state.update(Text(f"Cannot show {self.session_id}: {message.text}", "bold red"))
        state.display = True
        self.notify(message.text, title="Transcript", severity="error")

    # -- presentation toggles ------------------------------------------------------------------

    def watch_show_thinking(self, shown: bool) -> None:
        self.set_class(not shown, "-hide-thinking")

    def action_toggle_thinking(self) -> None:
        self.show_thinking = not self.show_thinking
        count = sum(1 for m in (self.body or {}).get("messages", []) if m["kind"] == "thinking")
        state = "shown" if self.show_thinking else "hidden"
        self.notify(f"Thinking {state} ({count} in this session)", timeout=2)

    def action_toggle_tools(self) -> None:
        self.tools_expanded = not self.tools_expanded
        self.query_one(TranscriptView).set_tools_expanded(self.tools_expanded)

    def action_toggle_events(self) -> None:
        self.show_events = not self.show_events
        self.notify(f"Metadata events {'shown' if self.show_events else 'hidden'}", timeout=2)
        self.action_reload()

    def action_toggle_superseded(self) -> None:
        self.show_superseded = not self.show_superseded
        self.notify(
            f"Superseded versions {'shown' if self.show_superseded else 'hidden'}", timeout=2
        )
        self.action_reload()

    # -- navigation ----------------------------------------------------------------------------

    async def _go(self, position: int) -> None:
        view = self.query_one(TranscriptView)
        widget = await view.reveal_for_top(position)
        if widget is None:
            return
        if isinstance(widget, MessageView) and widget.message["kind"] == "thinking":
            self.show_thinking = True  # a jump to a thinking block must land on something visible
        for old in view.query(".current"):
            old.remove_class("current")
        widget.add_class("current")
        self.current = position
        # After a refresh, so that a just-mounted widget has its size.
        self.call_after_refresh(view.scroll_to_widget, widget, top=True, animate=False)

    async def _step_user(self, step: int) -> None:
        entries = self.query_one(TranscriptView).entries
        position = self.current + step
        while 0 <= position < len(entries):
            if is_user_prompt(entries[position]):
                await self._go(position)
                return
            position += step
        self.notify("No more user prompts that way.", timeout=2)

    async def action_next_user(self) -> None:
        await self._step_user(1)

    async def action_previous_user(self) -> None:
        if self.current < 0:
            self.notify("No more user prompts that way.", timeout=2)
            return
        await self._step_user(-1)

    def action_jump(self) -> None:
        count = len((self.body or {}).get("messages", []))
        self.app.push_screen(JumpScreen(count), self._jump_to)

    async def _jump_to(self, wanted: str | None) -> None:
        if not wanted:
            return
        position = resolve_jump(self.query_one(TranscriptView).entries, wanted)
        if position is None:
            self.notify(f"No message {wanted!r} in this session.", severity="warning", markup=False)
            return
        await self._go(position)

    def action_export(self) -> None:
        self.app.push_screen(ExportScreen(self.session_id))

    def action_forget(self) -> None:
        info = (self.body or {}).get("session") or {}
        detail = ""
        if info:
            detail = (
                f"{info.get('project')} · {info.get('agent')} · "
                f"{info.get('messages')} messages · {info.get('turns')} turns"
            )
        self.app.push_screen(ForgetScreen(self.session_id, detail), self._forgotten)

    def _forgotten(self, report: dict[str, Any] | None) -> None:
        if report is not None:
            self.app.pop_screen()  # the session is gone; the screen below reloads on resume

    def action_back(self) -> None:
        self.app.pop_screen()

"""The sessions screen (the first screen): projects on the left, sessions on the right.

Two thread workers feed it, both through the Archive:

* the **page** worker loads the filtered table one page at a time (``Archive.sessions``,
  ``limit``/``cursor``); the next page is requested when the table reports it is near its end,
  so thousands of sessions scroll without a full load;
* the **facets** worker (``Archive.facets``, issue 34) counts each project's sessions under the
  active agent and time filters, with its sessions per day for the sparklines, and each agent's
  under the active project and time filters, so the projects list and the agent choices say how
  many sessions a pick would show. One walk of the session-order summaries in the engine; it
  used to be a second worker paging every session through the listing for the sparklines (5.2 s
  at a million messages). It starts once the table's first page has arrived, so it never holds
  the archive while the first rows load, and again whenever the project, agent or time filter
  changes; an answer for filters changed meanwhile is dropped.

Filters: pick a project in the list, an agent in the select, a start date in the input
(``YYYY-MM-DD``, an ISO instant, or ``7d`` / ``24h`` / ``2w`` back from now), and text the id or
title contains (``/``); ctrl+n cycles the time filter any → 24h → 7d → 30d → any (the
same presets as on the search screen, shown in the *since* field).
F5 sorts by another key (start, end, messages, tools, duration) and
F6 reverses the order; the archive sorts (``Archive.sessions(sort=…)``), so paging stays
exact. Every change bumps a generation number; pages from an older generation are dropped when
they arrive. Under 100 columns the projects pane starts folded away (F8 shows it).

Typing goes to the text match (as on the search screen): a key that types a character in the
table or the projects list starts a text match in the ``/`` field (Enter applies it), so the
commands are on keys that cannot be typed text (ctrl+ chords, function keys, Enter, Esc).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import DataTable, Header, Input, Select, Static
from textual.worker import get_current_worker

from cwcore import clock
from cwcore.contract.facets import Facets
from cwcore.contract.sessions import SessionInfo
from cwcore.errors import CwError, InvalidInput
from cwcore.retrieve.filters import parse_time_filter
from cwtui.screens.common import (
    TYPING_SCREEN_BINDINGS,
    ArchiveHandle,
    CallDone,
    CommandInput,
    LiveScreen,
    archive_handle,
    error_text,
)
from cwtui.screens.export import ExportScreen
from cwtui.screens.forget import ForgetScreen
from cwtui.screens.prompt import PromptScreen
from cwtui.widgets.filter_picker import next_time
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.projects import SPARK_DAYS, Overview, ProjectList, ProjectSummary
from cwtui.widgets.sessions_table import SessionsTable

EMPTY_ARCHIVE = "No sessions yet — import some with `cw import PATH` or `cw sync`."
NO_MATCH = "No sessions match these filters — press F7 to clear them."


def parse_since(text: str, now: datetime) -> str | None:
    """The ``since`` filter from what the user typed: empty → None, a span (``7d``, ``24h``,
    ``2w``) back from ``now``, or an ISO-8601 date or instant — what the inline ``since:``
    filter takes (:func:`cwcore.retrieve.filters.parse_time_filter`); else
    :class:`InvalidInput`."""
    return parse_time_filter(text, now) if text.strip() else None


SORTS = ("started", "ended", "messages", "tools", "duration")
SORT_NAMES = {
    "started": "start",
    "ended": "end",
    "messages": "messages",
    "tools": "tool calls",
    "duration": "duration",
}


@dataclass(frozen=True)
class Filters:
    project: str | None = None
    agent: str | None = None
    since: str | None = None
    match: str | None = None
    sort: str = "started"
    ascending: bool = False

    @property
    def any(self) -> bool:
        return any((self.project, self.agent, self.since, self.match))


class SessionsScreen(LiveScreen):
    """Projects with activity, and a lazily paged, filterable table of sessions."""

    SUB_TITLE = "Sessions"

    #: Sessions per table page.
    PAGE_SIZE: ClassVar[int] = 200

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "open_session",
            "Open",
            id="cw.sessions.open",
            tooltip="Open the selected session's transcript",
        ),
        Binding(
            "ctrl+e",
            "export",
            "Export",
            id="cw.sessions.export",
            tooltip="Export the selected session to a Markdown or cw-jsonl file",
        ),
        Binding(
            "ctrl+f",
            "forget",
            "Forget",
            id="cw.sessions.forget",
            tooltip="Forget the selected session (remove it from the archive, after confirming)",
        ),
        Binding(
            "f2",
            "focus_projects",
            "Projects",
            id="cw.sessions.projects",
            tooltip="Pick a project to filter by",
        ),
        Binding("f3", "focus_agent", "Agent", id="cw.sessions.agent", tooltip="Filter by agent"),
        Binding(
            "f4",
            "focus_since",
            "Since",
            id="cw.sessions.since",
            tooltip="Filter by start date (YYYY-MM-DD, or 7d / 24h / 2w back)",
        ),
        Binding(
            "ctrl+n",
            "cycle_time",
            "Time",
            id="cw.sessions.time",
            tooltip="Time: any → 24h → 7d → 30d (the since filter)",
        ),
        Binding(
            "escape",
            "focus_table",
            "Sessions",
            show=False,
            id="cw.sessions.leave-input",
            tooltip="Leave a filter field for the sessions table",
        ),
        Binding(
            "slash",
            "focus_match",
            "Match",
            key_display="/",
            id="cw.sessions.match",
            tooltip="Show only sessions whose id or title contains some text (typing "
            "anywhere on this screen goes there too; Enter applies it)",
        ),
        Binding(
            "f5",
            "cycle_sort",
            "Sort",
            id="cw.sessions.sort",
            tooltip="Sort by start → end → messages → tool calls → duration",
        ),
        Binding(
            "f6",
            "reverse_sort",
            "Reverse",
            id="cw.sessions.reverse",
            tooltip="Reverse the order (oldest / smallest first)",
        ),
        Binding(
            "f7",
            "clear_filters",
            "Clear",
            id="cw.sessions.clear",
            tooltip="Clear the project, agent, date and text filters and the sort",
        ),
        Binding(
            "f8",
            "toggle_projects",
            "Pane",
            id="cw.sessions.pane",
            tooltip="Show or hide the projects pane",
        ),
        Binding(
            "ctrl+g",
            "open_by_id",
            "Session id",
            id="cw.sessions.open-id",
            tooltip="Open a session by its id or a unique prefix of it (4+ characters)",
        ),
        Binding(
            "ctrl+r",
            "reload",
            "Reload",
            id="cw.sessions.reload",
            tooltip="Reload sessions and project counts",
        ),
        *TYPING_SCREEN_BINDINGS,
    ]

    class PageLoaded(CallDone):
        def __init__(
            self, generation: int, first: bool, rows: list[SessionInfo], next_cursor: str | None
        ) -> None:
            super().__init__()
            self.generation, self.first, self.rows, self.next_cursor = (
                generation,
                first,
                rows,
                next_cursor,
            )

    class PageFailed(CallDone):
        def __init__(self, generation: int, first: bool, text: str) -> None:
            super().__init__()
            self.generation, self.first, self.text = generation, first, text

    class FacetsFailed(CallDone):
        """The facets call under ``key`` failed (the page worker reports why)."""

        def __init__(self, key: tuple[str | None, ...]) -> None:
            super().__init__()
            self.key = key

    class FacetsLoaded(CallDone):
        """The facets counted under ``key`` (the project, agent and since filters then)."""

        def __init__(self, key: tuple[str | None, ...], facets: Facets) -> None:
            super().__init__()
            self.key, self.facets = key, facets

    def __init__(self) -> None:
        super().__init__()
        self.filters = Filters()
        self.generation = 0
        self.next_cursor: str | None = None
        self.fetching = False
        #: The projects list as last shown (None until the first facets arrive).
        self.overview: Overview | None = None
        #: The projects' and agents' counts under the other active filters (None: not yet).
        self.facets: Facets | None = None
        self._seen_changes = -1
        #: A reload asked for the counts; they start after the first page.
        self._count_pending = False
        #: The projects pane: None while the width decides (shown from 100 columns up).
        self.projects_shown: bool | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="sessions-body"):
            with Vertical(id="projects-pane"):
                yield Static("Projects", id="projects-title", classes="pane-title")
                yield ProjectList(id="projects")
            with Vertical(id="sessions-pane"):
                with Horizontal(id="filters"):
                    yield Select[str]([], prompt="any agent", id="agent-filter", compact=True)
                    yield CommandInput(
                        placeholder="since: 2026-11-01, 7d", id="since-filter", compact=True
                    )
                    yield CommandInput(placeholder="/ id or title", id="match-filter", compact=True)
                yield SessionsTable(id="sessions")
                yield Static("", id="empty-state")
                yield Static("Loading…", id="sessions-status")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.query_one("#empty-state").display = False
        self.query_one(SessionsTable).focus()
        self.action_reload()

    def on_resize(self) -> None:
        if self.projects_shown is None:
            self._show_projects(self.size.width >= 100)

    # -- loading -------------------------------------------------------------------------------

    def on_screen_resume(self) -> None:
        if self._seen_changes not in (-1, archive_handle(self.app).changes):
            self.action_reload()  # a session was forgotten (here or elsewhere) meanwhile

    def action_reload(self) -> None:
        """Reload the table with the current filters, and recount the projects."""
        self._seen_changes = archive_handle(self.app).changes
        self._count_pending = True
        self.query_one("#projects-title", Static).update("Projects counting…")
        self._restart_pages()

    def _start_count(self) -> None:
        """The projects count, once the table's first page is in (first paint comes first)."""
        if self._count_pending:
            self._count_pending = False
            self._count()

    def _restart_pages(self) -> None:
        self.generation += 1
        self.next_cursor = None
        self.fetching = True
        self.query_one(SessionsTable).reset()
        self._set_status("Loading…")
        self._load_page(archive_handle(self.app), self.generation, self.filters, None)

    @work(thread=True, exclusive=True, group="sessions-page", exit_on_error=False)
    def _load_page(
        self, handle: ArchiveHandle, generation: int, filters: Filters, cursor: str | None
    ) -> None:
        try:
            with handle.use() as archive:
                if get_current_worker().is_cancelled:
                    return
                rows, next_cursor = archive.sessions(
                    project=filters.project,
                    agent=filters.agent,
                    since=filters.since,
                    limit=self.PAGE_SIZE,
                    cursor=cursor,
                    sort=filters.sort,
                    ascending=filters.ascending,
                    match=filters.match,
                )
        except CwError as exc:
            self.post_message(self.PageFailed(generation, cursor is None, error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.PageLoaded(generation, cursor is None, rows, next_cursor))

    @staticmethod
    def _facets_key(filters: Filters) -> tuple[str | None, ...]:
        return (filters.project, filters.agent, filters.since)

    def _count(self) -> None:
        """Count the projects and agents under the current filters (the facets worker)."""
        self._load_facets(archive_handle(self.app), self.filters)

    @work(thread=True, exclusive=True, group="sessions-facets", exit_on_error=False)
    def _load_facets(self, handle: ArchiveHandle, filters: Filters) -> None:
        try:
            with handle.use() as archive:
                if get_current_worker().is_cancelled:
                    return
                found = archive.facets(
                    project=filters.project,
                    agent=filters.agent,
                    since=filters.since,
                    activity_days=SPARK_DAYS,
                )
        except CwError:
            self.post_message(self.FacetsFailed(self._facets_key(filters)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(self.FacetsLoaded(self._facets_key(filters), found))

    def on_sessions_screen_facets_loaded(self, message: FacetsLoaded) -> None:
        if message.key != self._facets_key(self.filters):
            return  # the filters changed while these counts were on their way
        self.facets = message.facets
        self._show_overview()

    def on_sessions_screen_facets_failed(self, message: FacetsFailed) -> None:
        if message.key != self._facets_key(self.filters):
            return
        # Only the pane title: the page worker meets the same failure and reports it in the
        # table's place, where the user is looking.
        self.query_one("#projects-title", Static).update("Projects (unavailable)")

    def _show_overview(self) -> None:
        """The projects list and the agent choices from the facets: each project's sessions
        and sparkline under the agent and time filters, each agent's sessions under the project
        and time filters."""
        found = self.facets
        if found is None:
            return
        idle = (0,) * SPARK_DAYS
        projects = tuple(
            ProjectSummary(p.name, p.sessions, p.activity or idle) for p in found.projects
        )
        overview = self.overview = Overview(
            total=sum(p.sessions for p in projects),
            activity=found.activity or idle,
            projects=projects,
            agents=tuple(a.name for a in found.agents),
        )
        self.query_one(ProjectList).show(overview, self.filters.project)
        self.query_one("#projects-title", Static).update(f"Projects ({len(projects)})")
        self._update_agents(overview.agents, {a.name: a.sessions for a in found.agents})

    def on_sessions_screen_page_loaded(self, message: PageLoaded) -> None:
        if message.first:
            self._start_count()
        if message.generation != self.generation:
            return  # the filters changed while this page was on its way
        table = self.query_one(SessionsTable)
        table.append(message.rows)
        self.next_cursor = message.next_cursor
        self.fetching = False
        if message.first and not message.rows:
            self._show_empty(NO_MATCH if self.filters.any else EMPTY_ARCHIVE)
        else:
            self._show_empty(None)
        more = " · more load as you scroll" if self.next_cursor else ""
        noun = "session" if table.row_count == 1 else "sessions"
        self._set_status(f"{table.row_count:,} {noun}{more}{self._filter_note()}")

    def on_sessions_screen_page_failed(self, message: PageFailed) -> None:
        if message.first:
            self._start_count()
        if message.generation != self.generation:
            return
        self.fetching = False
        if message.first:
            text = f"Cannot open the archive: {message.text}\nPress ctrl+r to retry."
            self._show_empty(text, error=True)
            self._set_status("")
        else:
            self.notify(message.text, title="Loading sessions", severity="error", markup=False)

    def on_sessions_table_near_end(self, message: SessionsTable.NearEnd) -> None:
        if self.next_cursor and not self.fetching:
            self.fetching = True
            handle = archive_handle(self.app)
            self._load_page(handle, self.generation, self.filters, self.next_cursor)

    # -- presentation helpers ------------------------------------------------------------------

    def _show_empty(self, text: str | None, *, error: bool = False) -> None:
        empty = self.query_one("#empty-state", Static)
        empty.update(Text(text or "", style="bold red" if error else ""))
        empty.display = text is not None
        self.query_one(SessionsTable).display = text is None

    def _set_status(self, text: str) -> None:
        self.query_one("#sessions-status", Static).update(text)

    def _filter_note(self) -> str:
        parts = [
            f"{name}={value}"
            for name, value in (
                ("project", self.filters.project),
                ("agent", self.filters.agent),
                ("since", self.filters.since),
                ("match", self.filters.match),
            )
            if value
        ]
        f = self.filters
        if f.sort != "started" or f.ascending:
            arrow = "↑" if f.ascending else "↓"
            parts.insert(0, f"by {SORT_NAMES[f.sort]} {arrow}")
        return f" · {' '.join(parts)}" if parts else ""

    def _update_agents(self, agents: tuple[str, ...], counts: dict[str, int] | None = None) -> None:
        """The agent choices; with ``counts``, each with its sessions under the project and
        time filters."""
        select: Select[str] = self.query_one("#agent-filter", Select)
        options = [
            (agent if counts is None else f"{agent} ({counts.get(agent, 0):,})", agent)
            for agent in agents
        ]
        # Replacing the options resets the value; keep the user's choice and do not let the
        # reset read as a filter change.
        with select.prevent(Select.Changed):
            select.set_options(options)
            if self.filters.agent in agents:
                select.value = self.filters.agent

    # -- filters -------------------------------------------------------------------------------

    def _apply(self, **changes: Any) -> None:
        filters = replace(self.filters, **changes)
        if filters != self.filters:
            recount = self._facets_key(filters) != self._facets_key(self.filters)
            self.filters = filters
            self._restart_pages()
            if recount:
                self._count()

    def on_project_list_chosen(self, message: ProjectList.Chosen) -> None:
        self._apply(project=message.project)
        self.query_one(SessionsTable).focus()

    @on(Select.Changed, "#agent-filter")
    def _agent_changed(self, event: Select.Changed) -> None:
        self._apply(agent=None if event.value is Select.NULL else str(event.value))

    @on(Input.Submitted, "#since-filter")
    def _since_submitted(self, event: Input.Submitted) -> None:
        try:
            since = parse_since(event.value, clock.now())
        except InvalidInput as exc:
            self.notify(exc.message, title="Since", severity="error", markup=False)
            return
        self._apply(since=since)
        self.query_one(SessionsTable).focus()

    @on(Input.Submitted, "#match-filter")
    def _match_submitted(self, event: Input.Submitted) -> None:
        self._apply(match=event.value.strip() or None)
        self.query_one(SessionsTable).focus()

    def action_clear_filters(self) -> None:
        with self.query_one("#agent-filter", Select).prevent(Select.Changed):
            self.query_one("#agent-filter", Select).clear()
        self.query_one("#since-filter", Input).value = ""
        self.query_one("#match-filter", Input).value = ""
        if self.overview is not None:
            self.query_one(ProjectList).show(self.overview, None)
        self._apply(
            project=None, agent=None, since=None, match=None, sort="started", ascending=False
        )

    def action_focus_match(self) -> None:
        self.query_one("#match-filter", Input).focus()

    def action_cycle_time(self) -> None:
        """ctrl+n: the *since* field to the next preset (any → 24h → 7d → 30d → any)."""
        field = self.query_one("#since-filter", Input)
        preset = next_time(field.value)
        field.value = preset or ""
        self._apply(since=parse_since(preset or "", clock.now()))

    def typing_field(self) -> CommandInput:
        return self.query_one("#match-filter", CommandInput)

    def action_cycle_sort(self) -> None:
        sort = SORTS[(SORTS.index(self.filters.sort) + 1) % len(SORTS)]
        self._apply(sort=sort)
        self.notify(f"Sorted by {SORT_NAMES[sort]}, largest first (F6 reverses).", timeout=2)

    def action_reverse_sort(self) -> None:
        self._apply(ascending=not self.filters.ascending)

    def _show_projects(self, shown: bool) -> None:
        self.query_one("#projects-pane").display = shown

    def action_toggle_projects(self) -> None:
        self.projects_shown = not self.query_one("#projects-pane").display
        self._show_projects(self.projects_shown)

    def action_open_by_id(self) -> None:
        def chosen(session: str | None) -> None:
            if session:
                self._resolve(archive_handle(self.app), session)

        self.open(
            PromptScreen("Open a session", "its id, or a unique prefix (4+ characters)"), chosen
        )

    class Resolved(CallDone):
        def __init__(self, session_id: str | None, text: str = "") -> None:
            super().__init__()
            self.session_id, self.text = session_id, text

    @work(thread=True, exclusive=True, group="sessions-resolve", exit_on_error=False)
    def _resolve(self, handle: ArchiveHandle, session: str) -> None:
        try:
            with handle.use() as archive:
                row = archive.resolve_session(session)
        except CwError as exc:
            self.post_message(self.Resolved(None, error_text(exc)))
            return
        self.post_message(self.Resolved(row.sessionId))

    def on_sessions_screen_resolved(self, message: Resolved) -> None:
        if message.session_id is None:
            self.notify(message.text, title="Open a session", severity="warning", markup=False)
        else:
            self._open(message.session_id)

    # -- actions -------------------------------------------------------------------------------

    def _open(self, session_id: str) -> None:
        # Imported here: the transcript's Markdown stack is not needed for the first paint.
        from cwtui.screens.transcript import TranscriptScreen

        self.open(TranscriptScreen(session_id))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value:
            self._open(event.row_key.value)

    def action_open_session(self) -> None:
        current = self.query_one(SessionsTable).current
        if current is not None:
            self._open(current.sessionId)

    def action_export(self) -> None:
        current = self.query_one(SessionsTable).current
        if current is None:
            self.notify("No session selected.", severity="warning")
            return
        self.open(ExportScreen(current.sessionId))

    def action_forget(self) -> None:
        current = self.query_one(SessionsTable).current
        if current is None:
            self.notify("No session selected.", severity="warning")
            return
        detail = (
            f"{current.project} · {current.agent} · {current.messages} messages · "
            f"{current.turns} turns"
        )
        if current.title:
            detail += "\n" + " ".join(current.title.split())[:120]
        self.open(ForgetScreen(current.sessionId, detail))

    def action_focus_projects(self) -> None:
        if not self.query_one("#projects-pane").display:
            self.projects_shown = True
            self._show_projects(True)
        self.query_one(ProjectList).focus()

    def action_focus_agent(self) -> None:
        self.query_one("#agent-filter", Select).focus()

    def action_focus_since(self) -> None:
        self.query_one("#since-filter", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one(SessionsTable).focus()

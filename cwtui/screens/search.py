"""The search screen: a query bar that searches as you type, results, a preview and a timeline.

Typing runs the *fast path* (``rerank: false``) after a pause of :attr:`SearchScreen.DEBOUNCE`
seconds: every keystroke starts an exclusive thread worker that waits out the pause and then
searches, and starting a new one cancels the last, so stale queries never reach the archive (a
worker that already holds the archive finishes, and its answer is dropped by generation). Enter
in the query bar runs the *full* explicit search (``rerank: true``) at once.

Filters: inline in the query (``project:cli agent:codex since:7d role:user kind:tool-result
session:ID until:DATE``, parsed by :func:`cwcore.retrieve.filters.parse_filters`; a session may
be a unique id prefix) and the standing filters of F5, which stay for every search until
changed. ↑ in the query bar brings back earlier searches with their filters.

Pickers (issue 34): ctrl+b picks an agent and ctrl+f a project from the archive's known values,
each listed with the sessions and messages that pass the other active filters
(:class:`~cwtui.widgets.filter_picker.FilterPicker`, :meth:`~cwcore.api.Archive.facets`);
ctrl+n cycles the time: any → 24h → 7d → 30d → any. A pick is written into the standing filters
as its typed token (``agent:codex``, ``since:7d``), so the toggles line shows it, F5 edits it and
an inline filter in the query still wins. A filter that does not parse is named on its own line
under the toggles; one typed into F5 is refused and the standing filters stay as they were (the
error used to take the toggles line's place).

Toggles (they work from the query bar too): F2 scope (all → project → session, the project or
session taken from the selected result), F3 semantic policy (always → auto → never, starting
from the ``semanticPolicy`` setting, as ``cw search`` does), F4 relation (any → question →
request → correction → answer → decision), F6 context (off → ±1 → ±2 turns: the search runs as
``gather``, and the preview shows each hit's chronological neighbours). Display (no new
search): F7 rows (a snippet of two lines → one), F8 order (relevance → newest → oldest: the
fetched results re-sorted by date, said in the status line).

The results list shows each hit's relevance band, score, match type, kind, session and date over
its snippet centred on the match, highlighted (a row that sits above a higher score says why:
its tier, the reranker or the fused rank); the preview pane shows the selected hit in full
(provenance, snippet, terms, how the score was made); the timeline charts when the topic came
up. Enter recalls a hit (:class:`~cwtui.screens.recall.RecallScreen`), ctrl+o opens its session
at the message, ctrl+y / ctrl+l copy the snippet / locator, ctrl+x supersedes it, ctrl+d opens
the document's audit view.

Typing goes to the query bar wherever the focus is (as in fzf): a key that types a character in
the results or the preview starts a new query in the bar (Backspace edits the one there), so
every command here is on a key that cannot be typed text. After Enter, typing the next query
into the results used to fire their letter bindings (``x`` opened Supersede).
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Header, Input, OptionList, Static
from textual.worker import get_current_worker

from cwcore import clock, config
from cwcore.contract.doctor import StoreCounts
from cwcore.contract.gather import GatherAnchor
from cwcore.contract.search import SearchHit, SearchRequest, SearchResponse, parse_request
from cwcore.contract.supersession import Superseded
from cwcore.errors import CwError
from cwcore.retrieve.filters import parse_filters
from cwtui import tui_state
from cwtui.screens.common import (
    TYPING_SCREEN_BINDINGS,
    ArchiveHandle,
    CallDone,
    CommandInput,
    LiveScreen,
    archive_handle,
    error_text,
)
from cwtui.screens.copy import CopyScreen
from cwtui.screens.document import DocumentScreen
from cwtui.screens.prompt import PromptScreen
from cwtui.screens.recall import RecallScreen
from cwtui.screens.saved import SavedSearchesScreen
from cwtui.screens.supersede import RecentSupersede, SupersedeScreen
from cwtui.tui_state import SavedSearch, SearchView, TuiState
from cwtui.widgets.filter_picker import FilterPicker, next_time, set_token, token_value
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.hits import context_block, preview, short_session
from cwtui.widgets.results import ResultsList
from cwtui.widgets.timeline import Timeline

SCOPES = ("all", "project", "session")
POLICIES = ("auto", "always", "never")
RELATIONS = (None, "question", "request", "correction", "answer", "decision")
CONTEXTS = (0, 1, 2)
#: Snippet lines per result row (F7): comfortable, compact.
DENSITIES = (2, 1)
#: Display orders of the fetched results (F8): the engine's, then by date.
ORDERS = ("relevance", "newest", "oldest")
#: Earlier searches the query bar's ↑ walks back through.
HISTORY = 50

EMPTY_ARCHIVE = "The archive is empty — import sessions with `cw import PATH` or `cw sync`."
START = (
    "Type to search: an error message, a path, a symbol, a flag, or a question.\n"
    "Results come as you type; Enter runs the full search (with reranking).\n"
    "Filter inline: project:NAME agent:NAME session:ID role:user kind:tool-result since:7d "
    "until:DATE\n"
    "↓ results · ↑ earlier searches · F2 scope · F3 semantic · F4 relation · F5 filters · "
    "F6 context · F7 rows · F8 order · ^b agent · ^f project · ^n time"
)


def default_policy() -> str:
    """The store's ``semanticPolicy`` setting: what ``cw search`` uses without ``--semantic``."""
    try:
        settings, _ = config.load(config.default_home())
    except CwError:  # a broken config.toml: the search itself will say so
        return config.Settings().semantic_policy
    return settings.semantic_policy


class QueryInput(CommandInput):
    """The query bar; ↓ moves to the results, ↑ brings back the previous search. Typing
    anywhere else on the screen comes here (:meth:`LiveScreen.type_into`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "down",
            "screen.focus_results",
            "Results",
            show=False,
            id="cw.search.results",
            tooltip="Move to the results",
        ),
        Binding(
            "up",
            "screen.history",
            "Earlier",
            show=False,
            id="cw.search.history",
            tooltip="Bring back the previous search (its query and filters)",
        ),
        Binding(
            "escape",
            "screen.leave_query",
            "Clear",
            show=False,
            id="cw.search.clear",
            tooltip="Clear the query; when empty, leave the query bar",
        ),
    ]


class SearchScreen(LiveScreen):
    """Search the archive as you type; recall, open, copy or supersede what you find."""

    SUB_TITLE = "Search"

    DEFAULT_CSS = """
    SearchScreen #search-problems {
        height: auto;
        padding: 0 2;
        display: none;
    }
    """

    #: Seconds of quiet after a keystroke before the fast search runs.
    DEBOUNCE: ClassVar[float] = 0.25
    #: Results per search (the timeline charts all of them).
    LIMIT: ClassVar[int] = 50
    #: Show the engine's timing in the status line (snapshot tests turn it off).
    SHOW_TIMING: ClassVar[bool] = True

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "slash",
            "focus_query",
            "Query",
            key_display="/",
            id="cw.search.query",
            tooltip="Focus the query bar (typing anywhere on this screen goes there too)",
        ),
        Binding(
            "f2",
            "cycle_scope",
            "Scope",
            id="cw.search.scope",
            tooltip="Scope: all → project → session (of the selected result)",
        ),
        Binding(
            "f3",
            "cycle_semantic",
            "Semantic",
            id="cw.search.semantic",
            tooltip="Semantic policy: always → auto → never",
        ),
        Binding(
            "f4",
            "cycle_relation",
            "Relation",
            id="cw.search.relation",
            tooltip="Relation: any → question → request → correction → answer → decision",
        ),
        Binding(
            "f5",
            "filters",
            "Filters",
            id="cw.search.filters",
            tooltip="Standing filters for every search: project agent session role kind since",
        ),
        Binding(
            "f6",
            "cycle_context",
            "Context",
            id="cw.search.context",
            tooltip="Context: off → ±1 → ±2 turns around each hit (what cw gather shows)",
        ),
        Binding(
            "f7",
            "cycle_density",
            "Rows",
            id="cw.search.density",
            tooltip="Result rows: the snippet on two lines → one (no new search)",
        ),
        Binding(
            "f8",
            "cycle_order",
            "Order",
            id="cw.search.order",
            tooltip="Display order of the fetched results: relevance → newest → oldest",
        ),
        Binding(
            "f9",
            "toggle_preview",
            "Preview",
            id="cw.search.preview",
            tooltip="Show or hide the preview pane",
        ),
        Binding(
            "ctrl+o",
            "open_transcript",
            "Transcript",
            id="cw.search.open",
            tooltip="Open the selected result's session transcript at its message",
        ),
        Binding(
            "ctrl+y",
            "copy_snippet",
            "Snippet",
            id="cw.search.copy-snippet",
            tooltip="Copy the selected result's snippet to the clipboard",
        ),
        Binding(
            "ctrl+t",
            "copy",
            "Copy",
            id="cw.search.copy",
            tooltip="Copy the session id, message key, locator, document id or snippet",
        ),
        Binding(
            "ctrl+l",
            "copy_locator",
            "Locator",
            id="cw.search.copy-locator",
            tooltip="Copy the selected result's locator (for cw recall) to the clipboard",
        ),
        Binding(
            "ctrl+x",
            "supersede",
            "Supersede",
            id="cw.search.supersede",
            tooltip="Supersede the selected result's document (with a reason and replacement)",
        ),
        Binding(
            "ctrl+d",
            "document",
            "Audit",
            id="cw.search.document",
            tooltip="Show the selected result's document with every version (audit view)",
        ),
        Binding(
            "ctrl+g",
            "document_by_id",
            "Document id",
            id="cw.search.document-id",
            tooltip="Open a document by id, superseded ones included (audit view)",
        ),
        Binding(
            "ctrl+b",
            "pick_agent",
            "Agent",
            show=False,  # the footer is full at 80 columns: F1 and the palette list it
            id="cw.search.agent",
            tooltip="Pick an agent (each with its sessions and messages under the other filters)",
        ),
        Binding(
            "ctrl+f",
            "pick_project",
            "Project",
            show=False,  # the footer is full at 80 columns: F1 and the palette list it
            id="cw.search.project",
            tooltip="Pick a project (each with its sessions and messages under the other filters)",
        ),
        Binding(
            "ctrl+n",
            "cycle_time",
            "Time",
            show=False,  # the footer is full at 80 columns: F1 and the palette list it
            id="cw.search.time",
            tooltip="Time: any → 24h → 7d → 30d (a since: standing filter)",
        ),
        Binding(
            "ctrl+s",
            "save_search",
            "Save",
            show=False,
            id="cw.search.save",
            tooltip="Save this search (query, filters, toggles) in a slot 1-9, kept across runs",
        ),
        Binding(
            "ctrl+r",
            "saved_searches",
            "Saved",
            show=False,
            id="cw.search.saved",
            tooltip="Recall a saved search (slots 1-9)",
        ),
        *TYPING_SCREEN_BINDINGS,
    ]

    class Results(CallDone):
        """A search's answer: the request it answers, the typed response (status, generation,
        timings), the hits to list in page order and, for a gather, each hit's anchor with its
        neighbours (empty for a plain search)."""

        def __init__(
            self,
            generation: int,
            request: SearchRequest,
            response: SearchResponse,
            hits: tuple[SearchHit, ...],
            anchors: tuple[GatherAnchor, ...] = (),
            unindexed: int = 0,
        ) -> None:
            super().__init__()
            self.generation, self.request = generation, request
            self.response, self.hits, self.anchors = response, hits, anchors
            #: Outbox entries not yet published when the answer came (right after a large
            #: import through the daemon): the answer covers the published part only.
            self.unindexed = unindexed

    class Failed(CallDone):
        def __init__(self, generation: int, text: str) -> None:
            super().__init__()
            self.generation, self.text = generation, text

    class Probed(CallDone):
        def __init__(self, counts: StoreCounts) -> None:
            super().__init__()
            self.counts = counts

    def __init__(self) -> None:
        super().__init__()
        self.scope = "all"
        self.policy = self.setting_policy = default_policy()
        self.relation: str | None = None
        self.context = 0  # neighbours on each side (0: a plain search)
        #: Snippet lines per row and the display order: kept for the app's session (the
        #: screen lives as long as the app), never sent to the engine.
        self.density = DENSITIES[0]
        self.order = ORDERS[0]
        #: The last answer's hits (and gather anchors) in the engine's order; ``hits`` and
        #: ``anchors`` are the same in the display order.
        self.ranked_hits: list[SearchHit] = []
        self.ranked_anchors: list[GatherAnchor] = []
        #: The standing filters (F5), in the inline form.
        self.filter_text = ""
        self.problems: tuple[str, ...] = ()
        self.history: list[tuple[str, str]] = []  # (query, filters), oldest first
        self._history_at: int | None = None
        self._sessions: dict[str, str] = {}  # session prefixes typed → full ids
        self.show_preview: bool | None = None  # None: as the width decides
        self.pin_project: str | None = None
        self.pin_session: str | None = None
        self.generation = 0
        self.hits: list[SearchHit] = []
        #: A gather's anchors, one per hit (empty when the last answer was a plain search).
        self.anchors: list[GatherAnchor] = []
        self.last_request: SearchRequest | None = None
        self.last_response: SearchResponse | None = None
        #: Outbox entries not yet indexed when the last answer came (see ``Results``).
        self.unindexed = 0
        self.archive_empty = False
        self._seen_changes = -1
        self._focus_results_on_answer = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield QueryInput(
            placeholder="Search — type, Enter for the full search; project:… since:7d filter",
            id="search-query",
            compact=True,
        )
        with Horizontal(id="search-bar"):
            yield Static("", id="search-toggles")
            yield Static("", id="search-status")
        yield Static("", id="search-problems")
        with Horizontal(id="search-body"):
            with Vertical(id="results-pane"):
                yield ResultsList(id="results")
                yield Static(START, id="search-empty")
            with VerticalScroll(id="preview-pane"):
                yield Static("", id="preview")
        yield Timeline(id="timeline")
        yield KeysFooter()

    def on_mount(self) -> None:
        self._show_empty(START)
        self._update_toggles()
        self.query_one(QueryInput).focus()
        self._probe(archive_handle(self.app))
        self._restore_last()

    def on_screen_resume(self) -> None:
        handle = archive_handle(self.app)
        if self._seen_changes not in (-1, handle.changes) and self.last_request is not None:
            # A supersede or forget happened meanwhile: the shown results may be stale.
            self._run(full=self.last_request.rerank)

    # -- the archive ---------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="search-probe", exit_on_error=False)
    def _probe(self, handle: ArchiveHandle) -> None:
        """Counts, to tell an empty archive from a query that matched nothing."""
        try:
            with handle.use() as archive:
                counts = archive.counts()
        except CwError:
            return  # the search itself will report a daemon or store problem
        self.post_message(self.Probed(counts))

    def on_search_screen_probed(self, message: Probed) -> None:
        self.archive_empty = not message.counts.documents
        if self.archive_empty and not self.hits:
            self._show_empty(EMPTY_ARCHIVE)

    def build_request(self, *, full: bool) -> SearchRequest | None:
        """The search request for the current query, filters and toggles, validated (None:
        nothing to search; :class:`CwError` when the engine would refuse it, a query over the
        length limit say). Session ids are as typed until the search resolves them."""
        fields = self.request_fields(full=full)
        return None if fields is None else parse_request(fields)

    def request_fields(self, *, full: bool) -> dict[str, Any] | None:
        """The request's JSON fields for the current query, filters and toggles (None: nothing
        to search). Inline filters win over the standing ones; both over the scope's pin."""
        now = clock.now()
        standing = parse_filters(self.filter_text, now=now)
        inline = parse_filters(self.query_one(QueryInput).value, now=now)
        self.problems = standing.problems + inline.problems
        self._show_problems()
        fields = {**standing.fields, **inline.fields}
        query = inline.text
        if not query and self.relation is None:
            return None
        request: dict[str, Any] = {
            "limit": self.LIMIT,
            "scope": self.scope,
            "semanticPolicy": self.policy,
            "rerank": full,
        }
        if query:
            request["query"] = query
        if self.relation:
            request["relation"] = self.relation
        if self.scope == "project" and self.pin_project:
            request["project"] = self.pin_project
        if self.scope == "session" and self.pin_session:
            request["sessions"] = [self.pin_session]
        request.update(fields)
        return request

    def _run(self, *, full: bool, debounced: bool = False) -> None:
        self.generation += 1
        try:
            request = self.build_request(full=full)
        except CwError as exc:  # refused here, at the edge: no worker, no archive call
            self.workers.cancel_group(self, "search")
            self._show_failure(error_text(exc))
            return
        if request is None:
            self.workers.cancel_group(self, "search")
            self._clear_results(EMPTY_ARCHIVE if self.archive_empty else START)
            return
        handle = archive_handle(self.app)
        self._seen_changes = handle.changes
        self._set_status(Text("searching…", "dim"))
        self._search(handle, self.generation, request, debounced)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(
        self, handle: ArchiveHandle, generation: int, request: SearchRequest, debounced: bool
    ) -> None:
        worker = get_current_worker()
        started = time.monotonic()
        # The debounce: a newer key cancels us. The pause is read on every step, so a change to
        # it applies to a worker already waiting (the tests hold typing back with a long one).
        while debounced and (left := started + self.DEBOUNCE - time.monotonic()) > 0:
            if worker.is_cancelled:
                return
            time.sleep(min(0.02, left))
        try:
            with handle.use() as archive:
                if worker.is_cancelled:
                    return
                request = self._resolve_sessions(archive, request)
                # The results list renders search and gather hits alike; the status line reads
                # the anchors' search, the preview a gather anchor's neighbours.
                anchors: tuple[GatherAnchor, ...] = ()
                if self.context:
                    found = archive.gather(request, neighbors=self.context)
                    response, anchors = found.search, found.anchors
                    hits = tuple(a.search_hit for a in anchors)
                else:
                    response = archive.search(request)
                    hits = response.hits()
                unindexed = archive.index_status().outbox_depth
        except CwError as exc:
            if not worker.is_cancelled:
                self.post_message(self.Failed(generation, error_text(exc)))
            return
        if not worker.is_cancelled:
            self.post_message(self.Results(generation, request, response, hits, anchors, unindexed))

    def _resolve_sessions(self, archive: Any, request: SearchRequest) -> SearchRequest:
        """Session ids as typed (a prefix shown in the results, say) made full ids; a prefix
        that names no session or several raises :class:`NotFound` with the reason."""
        if not request.sessions:
            return request
        full = []
        for session in request.sessions:
            if session not in self._sessions:
                self._sessions[session] = archive.resolve_session(session).sessionId
            full.append(self._sessions[session])
        return replace(request, sessions=tuple(full))

    def on_search_screen_results(self, message: Results) -> None:
        if message.generation != self.generation:
            return  # a newer query is on its way
        self.last_request, self.last_response = message.request, message.response
        self.unindexed = message.unindexed
        self.ranked_hits, self.ranked_anchors = list(message.hits), list(message.anchors)
        self._arrange()
        results = self.query_one(ResultsList)
        if self.hits:
            self._show_empty(None)
        elif self.archive_empty:
            self._show_empty(EMPTY_ARCHIVE)
        else:
            self._show_empty(self._no_results_text(message.response))
        self._update_preview()
        self._set_status(self._status_text(message.request, message.response))
        if self._focus_results_on_answer and self.hits:
            results.focus()
        self._focus_results_on_answer = False
        self.refresh_bindings()

    def _arrange(self, keep: SearchHit | None = None) -> None:
        """Show the last answer in the display order (:data:`ORDERS`): the engine's, or by the
        hit's time, newest or oldest first, equal times in the engine's order. ``keep``: the hit
        to keep highlighted (else the first)."""
        anchors: list[GatherAnchor | None] = [*self.ranked_anchors] or [None] * len(
            self.ranked_hits
        )
        pairs = list(zip(self.ranked_hits, anchors, strict=True))
        if self.order != "relevance":
            # Sorted twice (stable): by time, then hits without a time last in either order.
            pairs.sort(key=lambda p: p[0].source.timestamp or "", reverse=self.order == "newest")
            pairs.sort(key=lambda p: not p[0].source.timestamp)
        self.hits = [hit for hit, _ in pairs]
        self.anchors = [a for _, a in pairs if a is not None]
        results = self.query_one(ResultsList)
        results.lines = self.density
        at = next((i for i, h in enumerate(self.hits) if h is keep), None)
        results.show(self.hits, ranked=self.order == "relevance", keep=at)

    def action_cycle_density(self) -> None:
        self.density = DENSITIES[(DENSITIES.index(self.density) + 1) % len(DENSITIES)]
        self.query_one(ResultsList).set_lines(self.density)

    def action_cycle_order(self) -> None:
        self.order = ORDERS[(ORDERS.index(self.order) + 1) % len(ORDERS)]
        self._update_toggles()
        if not self.ranked_hits:
            return
        self._arrange(keep=self.current_hit)
        self._update_preview()
        if self.last_request is not None and self.last_response is not None:
            self._set_status(self._status_text(self.last_request, self.last_response))

    def on_search_screen_failed(self, message: Failed) -> None:
        if message.generation == self.generation:
            self._show_failure(message.text)

    def _show_failure(self, text: str) -> None:
        self._focus_results_on_answer = False
        self._set_status(Text("search failed", "bold red"))
        self._clear_results(f"Search failed: {text}", error=True)
        self.notify(text, title="Search", severity="error", markup=False)

    # -- presentation --------------------------------------------------------------------------

    def _no_results_text(self, body: SearchResponse) -> str:
        """For a person (the engine's ``advice`` is written for agents): what was searched
        and what to change."""
        request = self.last_request or SearchRequest()
        query = request.query or body.query or ""
        narrowed = [
            f"{name} {value}"
            for name, value in (
                ("project", request.project),
                ("agent", request.agent),
                ("role", request.role),
                ("kind", request.kind),
            )
            if value
        ]
        if request.sessions:
            narrowed.append("session " + ", ".join(short_session(s) for s in request.sessions))
        if request.since or request.until:
            narrowed.append("a date range")
        what = f"“{query}”" if query else f"{self.relation} passages"
        head = f"No results for {what}"
        head += f" with {', '.join(narrowed)}." if narrowed else "."
        also = []
        if self.scope != "all":
            also.append("a wider scope (F2)")
        if self.relation:
            also.append("any relation (F4)")
        if self.policy != "always":
            also.append("semantic always (F3)")
        if narrowed:
            also.append("fewer filters (F5, or edit the query)")
        tip = "Try other or fewer words, or check the spelling"
        if also:
            tip += "; or try " + ", ".join(also)
        if self.unindexed:
            tip += (
                f".\n{self.unindexed:,} imported entries are not indexed yet: search covers "
                "what is published so far (the index view, alt+3, shows the progress)"
            )
        return f"{head}\n{tip}."

    def _status_text(self, request: SearchRequest, body: SearchResponse) -> Text:
        n = len(self.hits)
        text = Text(f"{n} result{'s' if n != 1 else ''}", "bold")
        mode = (
            "full (reranked)"
            if any(h.reranked for h in self.hits)
            else ("full" if request.rerank else "fast")
        )
        text.append(f" · {mode}")
        if self.SHOW_TIMING:
            text.append(f" · {body.timing_ms:.0f} ms")
        status = body.retrieval_status
        if status and status != "ok":
            style = "bold yellow" if status in ("partial", "lexical_fallback") else "dim"
            text.append(f" · {status.replace('_', ' ')}", style)
        if body.semantic_search_used:
            text.append(" · semantic", "magenta")
        if self.context:
            text.append(f" · context ±{self.context}", "cyan")
        if self.order != "relevance":
            # Said, so nobody reads the first row as the best match or the newest in the
            # archive: only the fetched page is re-sorted.
            text.append(f" · {self.order} first (these {n} re-sorted)", "bold cyan")
        text.append(f" · gen {body.generation}", "dim")
        if self.unindexed:
            text.append(f" · {self.unindexed:,} not indexed yet", "bold yellow")
        return text

    def _show_problems(self) -> None:
        """The filter problems on their own line under the toggles: in the status line a long
        one took the whole bar and the toggles line disappeared (issue 34)."""
        line = self.query_one("#search-problems", Static)
        line.update(Text(" · ".join(self.problems), "bold yellow"))
        line.display = bool(self.problems)

    def toggles_text(self, width: int) -> Text:
        """The toggles line; below 100 columns without the labels (the keys and values
        still say it all)."""
        scope = self.scope
        if scope == "project":
            scope += f" {self.pin_project}"
        elif scope == "session":
            scope += f" {short_session(self.pin_session)}"
        wide = width >= 100
        parts = [
            ("F2", "scope", scope),
            ("F3", "semantic", self.policy),
            ("F4", "relation", self.relation or "any"),
            ("F5", "filters", self.filter_text or "none"),
            ("F6", "context", f"±{self.context}" if self.context else "off"),
            ("F8", "order", self.order),
        ]
        text = Text(no_wrap=True, overflow="ellipsis")
        for n, (key, label, value) in enumerate(parts):
            text.append(("  " if n else "") + key + " ", "bold cyan")
            if wide:
                text.append(label + " ", "dim")
            text.append(value, "bold")
        return text

    def _update_toggles(self) -> None:
        toggles = self.query_one("#search-toggles", Static)
        toggles.update(self.toggles_text(self.size.width))

    def on_resize(self) -> None:
        self._update_toggles()
        self._apply_preview()

    def _set_status(self, text: Text) -> None:
        self.query_one("#search-status", Static).update(text)

    def _show_empty(self, text: str | None, *, error: bool = False) -> None:
        empty = self.query_one("#search-empty", Static)
        empty.update(Text(text or "", "bold red" if error else ""))
        empty.display = text is not None
        self.query_one(ResultsList).display = text is None
        self.query_one("#timeline").display = text is None and bool(self.hits)
        self._apply_preview(empty=text is not None)

    def _clear_results(self, text: str, *, error: bool = False) -> None:
        self.hits, self.anchors = [], []
        self.ranked_hits, self.ranked_anchors = [], []
        self.last_request, self.last_response = None, None
        self.query_one(ResultsList).show([])
        self._show_empty(text, error=error)
        if not error:
            self._set_status(Text(""))
        self.refresh_bindings()

    def _apply_preview(self, *, empty: bool | None = None) -> None:
        """The preview pane shows unless the screen is narrow (under 100 columns), where F9
        brings it in; with no results it is hidden."""
        if empty is None:
            empty = not self.query_one(ResultsList).display
        wanted = self.show_preview if self.show_preview is not None else self.size.width >= 100
        self.query_one("#preview-pane").display = wanted and not empty

    def action_toggle_preview(self) -> None:
        shown = self.query_one("#preview-pane").display
        self.show_preview = not shown
        self._apply_preview()

    def _update_preview(self) -> None:
        results = self.query_one(ResultsList)
        hit = results.current
        body: Any = ""
        if hit is not None:
            body = preview(hit)
            index = results.highlighted
            if self.anchors and index is not None and 0 <= index < len(self.anchors):
                anchor = self.anchors[index]
                body = context_block(anchor.before, anchor.after, body)
        self.query_one("#preview", Static).update(body)
        self.query_one(Timeline).show(self.hits, results.highlighted)

    @on(OptionList.OptionHighlighted, "#results")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._update_preview()

    # -- typing and toggles --------------------------------------------------------------------

    @on(Input.Changed, "#search-query")
    def _typed(self, event: Input.Changed) -> None:
        # The query changed after an Enter: the person is typing the next one, so the answer
        # must not pull the focus to the results under their fingers.
        self._focus_results_on_answer = False
        self._run(full=False, debounced=True)

    @on(Input.Submitted, "#search-query")
    def _submitted(self, event: Input.Submitted) -> None:
        self._remember(event.value.strip())
        self._focus_results_on_answer = True
        self._run(full=True)

    def _remember(self, query: str) -> None:
        entry = (query, self.filter_text)
        if query and (not self.history or self.history[-1] != entry):
            self.history = [*self.history[-(HISTORY - 1) :], entry]
        self._history_at = None

    def action_history(self) -> None:
        """↑ in the query bar: the search before the one shown (its query and its filters)."""
        if not self.history:
            self.notify("No earlier search yet (Enter runs one and remembers it).", timeout=2)
            return
        at = len(self.history) if self._history_at is None else self._history_at
        at = max(0, at - 1)
        self._history_at = at
        query, filters = self.history[at]
        self.filter_text = filters
        self._update_toggles()
        bar = self.query_one(QueryInput)
        bar.value = query  # Input.Changed reruns the search
        bar.cursor_position = len(query)

    def action_filters(self) -> None:
        def chosen(text: str | None) -> None:
            if text is None:
                return
            parsed = parse_filters(text, now=clock.now())
            if parsed.problems:
                # Refused whole: the standing filters (and the toggles line that shows them)
                # stay as they were, and the error says why (issue 34).
                self.notify(
                    "; ".join(parsed.problems) + " — the filters stay as they were (F5 edits)",
                    title="Filters",
                    severity="error",
                    markup=False,
                )
                return
            leftover = parsed.text
            if leftover:
                self.notify(
                    f"Not a filter: {leftover!r} (project: agent: session: role: kind: since: "
                    "until:)",
                    severity="warning",
                    markup=False,
                )
            self.filter_text = " ".join(text.split())
            self._rerun()

        self.open(
            PromptScreen(
                "Standing filters (every search, until changed)",
                "project:NAME agent:NAME session:ID role:user kind:turn since:7d until:DATE",
                value=self.filter_text,
                allow_empty=True,
            ),
            chosen,
        )

    # -- pickers (agent, project, time) ---------------------------------------------------------

    def facet_filters(self, leave_out: str) -> dict[str, str]:
        """The active project, agent and time filters but ``leave_out``'s, as
        :meth:`Archive.facets` takes them: a picker counts each choice under the others."""
        now = clock.now()
        standing = parse_filters(self.filter_text, now=now)
        inline = parse_filters(self.query_one(QueryInput).value, now=now)
        fields = {**standing.fields, **inline.fields}
        if self.scope == "project" and self.pin_project:
            fields.setdefault("project", self.pin_project)
        names = ("project", "agent", "since", "until")
        return {n: fields[n] for n in names if n != leave_out and isinstance(fields.get(n), str)}

    def _pick(self, kind: str) -> None:
        def chosen(name: str | None) -> None:
            if name is None:
                return  # closed: nothing changes
            self.filter_text = set_token(self.filter_text, kind, name or None)
            typed = parse_filters(self.query_one(QueryInput).value, now=clock.now()).fields
            if name and kind in typed:
                self.notify(f"The {kind}: typed in the query wins over the pick.", timeout=3)
            self._rerun()

        current = token_value(self.filter_text, kind)
        self.open(FilterPicker(kind, current, self.facet_filters(kind)), chosen)

    def action_pick_agent(self) -> None:
        self._pick("agent")

    def action_pick_project(self) -> None:
        self._pick("project")

    def action_cycle_time(self) -> None:
        preset = next_time(token_value(self.filter_text, "since"))
        self.filter_text = set_token(self.filter_text, "since", preset)
        self._rerun()

    def action_cycle_context(self) -> None:
        self.context = CONTEXTS[(CONTEXTS.index(self.context) + 1) % len(CONTEXTS)]
        if self.context and self.show_preview is None and self.size.width < 100:
            self.show_preview = True  # the context is shown in the preview
        self._rerun()

    def _rerun(self) -> None:
        self._update_toggles()
        if self.request_fields(full=False) is not None:
            self._run(full=False)

    def action_cycle_scope(self) -> None:
        hit = self.current_hit
        source = hit.source if hit is not None else None
        scope = SCOPES[(SCOPES.index(self.scope) + 1) % len(SCOPES)]
        if scope == "project":
            self.pin_project = (source and source.project) or self.pin_project
            if not self.pin_project:
                self.notify("Select a result first: project scope uses its project.", timeout=3)
                scope = "all"
        if scope == "session":
            self.pin_session = (source and source.session_id) or self.pin_session
            if not self.pin_session:
                scope = "all"
        self.scope = scope
        self._rerun()

    def action_cycle_semantic(self) -> None:
        self.policy = POLICIES[(POLICIES.index(self.policy) + 1) % len(POLICIES)]
        self._rerun()

    def action_cycle_relation(self) -> None:
        self.relation = RELATIONS[(RELATIONS.index(self.relation) + 1) % len(RELATIONS)]
        self._rerun()

    def action_focus_query(self) -> None:
        self.query_one(QueryInput).focus()

    def typing_field(self) -> QueryInput:
        return self.query_one(QueryInput)

    def action_focus_results(self) -> None:
        results = self.query_one(ResultsList)
        if self.hits:
            results.focus()

    def action_leave_query(self) -> None:
        query = self.query_one(QueryInput)
        if query.value:
            query.value = ""  # Input.Changed clears the results
        elif self.hits:
            self.query_one(ResultsList).focus()
        else:
            self.query_one("#preview-pane").focus()  # typing there comes back to the bar

    # -- result actions ------------------------------------------------------------------------

    @property
    def current_hit(self) -> SearchHit | None:
        return self.query_one(ResultsList).current if self.hits else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):
            return False
        if action in (
            "open_transcript",
            "copy_snippet",
            "copy_locator",
            "copy",
            "supersede",
            "document",
        ):
            return True if self.hits else None  # greyed out until there is a result
        return True

    def action_copy(self) -> None:
        hit = self._need_hit()
        if hit is None:
            return
        self.open(
            CopyScreen(
                [
                    ("session id", hit.source.session_id),
                    ("message key", hit.source.message_key),
                    ("locator", hit.locator),
                    ("document id", hit.document_id),
                    ("snippet", hit.snippet),
                ]
            )
        )

    def _need_hit(self) -> SearchHit | None:
        hit = self.current_hit
        if hit is None:
            self.notify("No result selected.", severity="warning", timeout=2)
        return hit

    def on_results_list_recall(self, message: ResultsList.Recall) -> None:
        hit = message.hit
        sessions = self.last_request.sessions if self.last_request is not None else ()
        self.open(
            RecallScreen(
                hit.locator,
                document_id=hit.document_id,
                session_ids=list(sessions),
                terms=[*hit.matched_terms, *hit.expanded_terms],
            )
        )

    def action_open_transcript(self) -> None:
        from cwtui.screens.transcript import TranscriptScreen

        hit = self._need_hit()
        if hit is None:
            return
        source = hit.source
        if not source.session_id or hit.kind == "markdown":
            self.notify("This result has no session transcript.", severity="warning")
            return
        self.open(TranscriptScreen(source.session_id, focus_key=source.message_key))

    def action_copy_snippet(self) -> None:
        hit = self._need_hit()
        if hit is not None:
            self.app.copy_to_clipboard(hit.snippet)
            self.notify("Copied the snippet.", timeout=2)

    def action_copy_locator(self) -> None:
        hit = self._need_hit()
        if hit is not None:
            self.app.copy_to_clipboard(hit.locator)
            self.notify("Copied the locator (cw recall LOCATOR).", timeout=2)

    #: The document just superseded from here while its notification is up (``d`` opens it).
    superseded: RecentSupersede | None = None

    def action_supersede(self) -> None:
        hit = self._need_hit()
        if hit is None:
            return
        self.open(
            SupersedeScreen(hit.document_id, hit.snippet), self._superseded
        )  # on success the handle is marked changed and the search reruns on resume

    def _superseded(self, result: Superseded | None) -> None:
        # The notification says "d opens it": the rerun drops it from the results, so d on the
        # row that took its place would open another document (issue 34).
        self.superseded = RecentSupersede.of(result, self.app.NOTIFICATION_TIMEOUT)

    def action_document(self) -> None:
        recent, self.superseded = self.superseded, None
        if recent is not None and recent.shown:
            self.open(DocumentScreen(recent.document_id))
            return
        hit = self._need_hit()
        if hit is not None:
            self.open(DocumentScreen(hit.document_id))

    def action_document_by_id(self) -> None:
        def open_document(document_id: str | None) -> None:
            if document_id:
                self.open(DocumentScreen(document_id))

        self.open(
            PromptScreen("Open a document (superseded ones too)", "document id, e.g. t-09b0e9…"),
            open_document,
        )

    # -- saved searches and the last search (cwtui.tui_state) ----------------------------------

    #: Restore the last search on start, and write it at exit (a test or benchmark that
    #: wants a clean start over a home it reuses turns it off).
    RESTORE: ClassVar[bool] = True
    #: The query bar, kept for :meth:`on_unmount` (its widgets are gone by then).
    _bar: QueryInput | None = None

    def search_view(self) -> SearchView:
        """The current search and its display, as the state file keeps it."""
        bar = self._bar or self.query_one(QueryInput)
        return SearchView(
            query=bar.value,
            filters=self.filter_text,
            scope=self.scope,
            project=self.pin_project,
            session=self.pin_session,
            policy=None if self.policy == self.setting_policy else self.policy,
            relation=self.relation,
            context=self.context,
            density=self.density,
            order=self.order,
        )

    def apply_view(self, view: SearchView, *, display: bool) -> None:
        """Take the search of ``view`` (and with ``display`` its rows and order); a value this
        screen does not know falls back to the default. A changed query runs the fast search
        (as ↑ does), else the toggles' rerun does."""
        self.pin_project, self.pin_session = view.project, view.session
        pinned = {"all": True, "project": view.project, "session": view.session}
        self.scope = view.scope if view.scope in SCOPES and pinned[view.scope] else "all"
        self.policy = view.policy if view.policy in POLICIES else self.setting_policy
        self.relation = view.relation if view.relation in RELATIONS else None
        self.context = view.context if view.context in CONTEXTS else 0
        if display:
            self.density = view.density if view.density in DENSITIES else DENSITIES[0]
            self.order = view.order if view.order in ORDERS else ORDERS[0]
            self.query_one(ResultsList).lines = self.density
        self.filter_text = " ".join(view.filters.split())
        self._update_toggles()
        bar = self.query_one(QueryInput)
        if bar.value != view.query:
            bar.value = view.query  # Input.Changed runs the fast search
            bar.cursor_position = len(view.query)
        else:
            self._rerun()

    def _tell_problem(self, loaded: tui_state.Loaded) -> None:
        """Say once that the state file was unreadable (and moved aside)."""
        if loaded.problem:
            self.notify(loaded.problem, title="Saved searches", severity="warning", markup=False)

    def _restore_last(self) -> None:
        self._bar = self.query_one(QueryInput)
        if not self.RESTORE:
            return
        loaded = tui_state.load(tui_state.state_path())
        self._tell_problem(loaded)
        if loaded.state.last is not None:
            self.apply_view(loaded.state.last, display=True)
            # Selected, as a field focused by / is: typing starts a new query, End keeps it.
            self._bar.select_all()

    def on_unmount(self) -> None:
        if not self.RESTORE or self._bar is None:
            return
        view = self.search_view()
        try:  # quitting: nobody is left to tell of a failed write
            tui_state.update(tui_state.state_path(), lambda state: state.with_last(view))
        except OSError:
            pass

    def _write_state(self, change: Any) -> TuiState | None:
        try:
            loaded = tui_state.update(tui_state.state_path(), change)
        except OSError as exc:
            self.notify(f"Could not save: {exc.strerror or exc}", severity="error", markup=False)
            return None
        self._tell_problem(loaded)
        return loaded.state

    def _open_slots(self, *, saving: bool, chosen: Any) -> None:
        loaded = tui_state.load(tui_state.state_path())
        self._tell_problem(loaded)
        self.open(
            SavedSearchesScreen(loaded.state, saving=saving), lambda n: chosen(loaded.state, n)
        )

    def _cleared(self, number: int) -> None:
        if self._write_state(lambda state: state.without_slot(number)) is not None:
            self.notify(f"Slot {number} emptied.", timeout=2)

    def action_save_search(self) -> None:
        """ctrl+s: pick a slot, then name it (the query, or the slot's name, to start with)."""
        view = self.search_view()

        def picked(state: TuiState, number: int | None) -> None:
            if number is None:
                return
            if number < 0:
                self._cleared(-number)
                return
            old = state.slot(number)
            name = old.name if old is not None else " ".join(view.query.split())[:40]

            def named(text: str | None) -> None:
                if not text:
                    return
                saved = SavedSearch(number, text, view)
                if self._write_state(lambda s: s.with_saved(saved)) is not None:
                    self.notify(
                        f"Saved in slot {number}: {text} (ctrl+r recalls it).",
                        timeout=3,
                        markup=False,
                    )

            self.open(PromptScreen(f"Name for slot {number}", "a name", value=name), named)

        self._open_slots(saving=True, chosen=picked)

    def action_saved_searches(self) -> None:
        """ctrl+r: pick a saved search; its query, filters, scope, policy, relation and context
        replace the current ones (rows and order stay)."""

        def picked(state: TuiState, number: int | None) -> None:
            if number is None:
                return
            if number < 0:
                self._cleared(-number)
                return
            saved = state.slot(number)
            if saved is None:
                return
            self.apply_view(saved.view, display=False)
            self._remember(saved.view.query.strip())
            self.notify(f"Slot {number}: {saved.name}", timeout=2, markup=False)

        self._open_slots(saving=False, chosen=picked)

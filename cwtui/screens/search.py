"""The search screen: a query bar that searches as you type, results, a preview and a timeline.

Typing runs the *fast path* (``rerank: false``) after a pause of :attr:`SearchScreen.DEBOUNCE`
seconds: every keystroke starts an exclusive thread worker that waits out the pause and then
searches, and starting a new one cancels the last, so stale queries never reach the archive (a
worker that already holds the archive finishes, and its answer is dropped by generation). Enter
in the query bar runs the *full* explicit search (``rerank: true``) at once.

Toggles (they work from the query bar too): F2 scope (all → project → session, the project or
session taken from the selected result), F3 semantic policy (always → auto → never, starting
from the ``semanticPolicy`` setting, as ``cw search`` does), F4 relation (any → question →
request → correction → answer → decision).

The results list shows each hit's relevance band, score, match type, kind, session and date over
its highlighted snippet; the preview pane shows the selected hit in full (provenance, snippet,
terms, how the score was made); the timeline charts when the topic came up. Enter recalls a hit
(:class:`~cwtui.screens.recall.RecallScreen`), ``o`` opens its session at the message, ``y`` /
``l`` copy the snippet / locator, ``x`` supersedes it, ``d`` opens the document's audit view.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Header, Input, OptionList, Static
from textual.worker import get_current_worker

from cwcore import config
from cwcore.errors import CwError
from cwtui.screens.common import ArchiveHandle, CallDone, LiveScreen, archive_handle, error_text
from cwtui.screens.document import DocumentScreen
from cwtui.screens.prompt import PromptScreen
from cwtui.screens.recall import RecallScreen
from cwtui.screens.supersede import SupersedeScreen
from cwtui.widgets.footer import KeysFooter
from cwtui.widgets.hits import preview, short_session
from cwtui.widgets.results import ResultsList
from cwtui.widgets.timeline import Timeline

SCOPES = ("all", "project", "session")
POLICIES = ("always", "auto", "never")
RELATIONS = (None, "question", "request", "correction", "answer", "decision")

EMPTY_ARCHIVE = "The archive is empty — import sessions with `cw import PATH` or `cw sync`."
START = (
    "Type to search: an error message, a path, a symbol, a flag, or a question.\n"
    "Results come as you type; Enter runs the full search (with reranking).\n"
    "↓ moves to the results · F2 scope · F3 semantic · F4 relation"
)


def default_policy() -> str:
    """The store's ``semanticPolicy`` setting: what ``cw search`` uses without ``--semantic``."""
    try:
        settings, _ = config.load(config.default_home())
    except CwError:  # a broken config.toml: the search itself will say so
        return config.Settings().semantic_policy
    return settings.semantic_policy


class QueryInput(Input):
    """The query bar; ↓ moves to the results."""

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
            tooltip="Focus the query bar",
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
            "o",
            "open_transcript",
            "Transcript",
            id="cw.search.open",
            tooltip="Open the selected result's session transcript at its message",
        ),
        Binding(
            "y",
            "copy_snippet",
            "Copy",
            id="cw.search.copy-snippet",
            tooltip="Copy the selected result's snippet to the clipboard",
        ),
        Binding(
            "l",
            "copy_locator",
            "Locator",
            show=False,
            id="cw.search.copy-locator",
            tooltip="Copy the selected result's locator (for cw recall) to the clipboard",
        ),
        Binding(
            "x",
            "supersede",
            "Supersede",
            id="cw.search.supersede",
            tooltip="Supersede the selected result's document (with a reason and replacement)",
        ),
        Binding(
            "d",
            "document",
            "Audit",
            id="cw.search.document",
            tooltip="Show the selected result's document with every version (audit view)",
        ),
        Binding(
            "i",
            "document_by_id",
            "Document id",
            show=False,
            id="cw.search.document-id",
            tooltip="Open a document by id, superseded ones included (audit view)",
        ),
    ]

    class Results(CallDone):
        def __init__(self, generation: int, request: dict[str, Any], body: dict[str, Any]) -> None:
            super().__init__()
            self.generation, self.request, self.body = generation, request, body

    class Failed(CallDone):
        def __init__(self, generation: int, text: str) -> None:
            super().__init__()
            self.generation, self.text = generation, text

    class Probed(CallDone):
        def __init__(self, counts: dict[str, Any]) -> None:
            super().__init__()
            self.counts = counts

    def __init__(self) -> None:
        super().__init__()
        self.scope = "all"
        self.policy = default_policy()
        self.relation: str | None = None
        self.pin_project: str | None = None
        self.pin_session: str | None = None
        self.generation = 0
        self.hits: list[dict[str, Any]] = []
        self.last_request: dict[str, Any] | None = None
        self.last_body: dict[str, Any] | None = None
        self.archive_empty = False
        self._seen_changes = -1
        self._focus_results_on_answer = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield QueryInput(
            placeholder="Search the archive — type to search, Enter for the full search",
            id="search-query",
        )
        with Horizontal(id="search-bar"):
            yield Static("", id="search-toggles")
            yield Static("", id="search-status")
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

    def on_screen_resume(self) -> None:
        handle = archive_handle(self.app)
        if self._seen_changes not in (-1, handle.changes) and self.last_request is not None:
            # A supersede or forget happened meanwhile: the shown results may be stale.
            self._run(full=bool(self.last_request.get("rerank")), delay=0.0)

    # -- the archive ---------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="search-probe", exit_on_error=False)
    def _probe(self, handle: ArchiveHandle) -> None:
        """Counts, to tell an empty archive from a query that matched nothing."""
        try:
            with handle.use() as archive:
                counts = archive.doctor().get("counts") or {}
        except CwError:
            return  # the search itself will report a daemon or store problem
        self.post_message(self.Probed(counts))

    def on_search_screen_probed(self, message: Probed) -> None:
        self.archive_empty = not message.counts.get("documents")
        if self.archive_empty and not self.hits:
            self._show_empty(EMPTY_ARCHIVE)

    def build_request(self, *, full: bool) -> dict[str, Any] | None:
        """The search request for the current query and toggles (None: nothing to search)."""
        query = self.query_one(QueryInput).value.strip()
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
        return request

    def _run(self, *, full: bool, delay: float) -> None:
        self.generation += 1
        request = self.build_request(full=full)
        if request is None:
            self.workers.cancel_group(self, "search")
            self._clear_results(EMPTY_ARCHIVE if self.archive_empty else START)
            return
        handle = archive_handle(self.app)
        self._seen_changes = handle.changes
        self._set_status(Text("searching…", "dim"))
        self._search(handle, self.generation, request, delay)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(
        self, handle: ArchiveHandle, generation: int, request: dict[str, Any], delay: float
    ) -> None:
        worker = get_current_worker()
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0:  # the debounce: a newer key cancels us
            if worker.is_cancelled:
                return
            time.sleep(min(0.02, left))
        try:
            with handle.use() as archive:
                if worker.is_cancelled:
                    return
                body = archive.search(request)
        except CwError as exc:
            if not worker.is_cancelled:
                self.post_message(self.Failed(generation, error_text(exc)))
            return
        if not worker.is_cancelled:
            self.post_message(self.Results(generation, request, body))

    def on_search_screen_results(self, message: Results) -> None:
        if message.generation != self.generation:
            return  # a newer query is on its way
        self.last_request, self.last_body = message.request, message.body
        self.hits = list(message.body.get("results") or [])
        results = self.query_one(ResultsList)
        results.show(self.hits)
        if self.hits:
            self._show_empty(None)
        elif self.archive_empty:
            self._show_empty(EMPTY_ARCHIVE)
        else:
            self._show_empty(self._no_results_text(message.body))
        self._update_preview()
        self._set_status(self._status_text(message.request, message.body))
        if self._focus_results_on_answer and self.hits:
            results.focus()
        self._focus_results_on_answer = False
        self.refresh_bindings()

    def on_search_screen_failed(self, message: Failed) -> None:
        if message.generation != self.generation:
            return
        self._focus_results_on_answer = False
        self._set_status(Text("search failed", "bold red"))
        self._clear_results(f"Search failed: {message.text}", error=True)
        self.notify(message.text, title="Search", severity="error", markup=False)

    # -- presentation --------------------------------------------------------------------------

    def _no_results_text(self, body: dict[str, Any]) -> str:
        query = body.get("query") or ""
        lines = [f"No results for “{query}”." if query else "No results."]
        if body.get("advice"):
            lines.append(str(body["advice"]))
        hints = []
        if self.scope != "all":
            hints.append("a wider scope (F2)")
        if self.relation:
            hints.append("any relation (F4)")
        if self.policy != "always":
            hints.append("semantic: always (F3)")
        if hints:
            lines.append("Try " + ", or ".join(hints) + ".")
        return "\n".join(lines)

    def _status_text(self, request: dict[str, Any], body: dict[str, Any]) -> Text:
        n = len(self.hits)
        text = Text(f"{n} result{'s' if n != 1 else ''}", "bold")
        mode = (
            "full (reranked)"
            if any(h.get("reranked") for h in self.hits)
            else ("full" if request.get("rerank") else "fast")
        )
        text.append(f" · {mode}")
        if self.SHOW_TIMING and isinstance(body.get("timing_ms"), int | float):
            text.append(f" · {body['timing_ms']:.0f} ms")
        status = str(body.get("retrieval_status") or "")
        if status and status != "ok":
            style = "bold yellow" if status in ("partial", "lexical_fallback") else "dim"
            text.append(f" · {status.replace('_', ' ')}", style)
        if body.get("semantic_search_used"):
            text.append(" · semantic", "magenta")
        text.append(f" · generation {body.get('generation', '?')}", "dim")
        return text

    def _update_toggles(self) -> None:
        scope = self.scope
        if scope == "project":
            scope += f" {self.pin_project}"
        elif scope == "session":
            scope += f" {short_session(self.pin_session)}"
        text = Text.assemble(
            ("F2 ", "bold cyan"),
            ("scope ", "dim"),
            (scope, "bold"),
            ("  F3 ", "bold cyan"),
            ("semantic ", "dim"),
            (self.policy, "bold"),
            ("  F4 ", "bold cyan"),
            ("relation ", "dim"),
            (self.relation or "any", "bold"),
        )
        self.query_one("#search-toggles", Static).update(text)

    def _set_status(self, text: Text) -> None:
        self.query_one("#search-status", Static).update(text)

    def _show_empty(self, text: str | None, *, error: bool = False) -> None:
        empty = self.query_one("#search-empty", Static)
        empty.update(Text(text or "", "bold red" if error else ""))
        empty.display = text is not None
        self.query_one(ResultsList).display = text is None
        self.query_one("#timeline").display = text is None and bool(self.hits)
        self.query_one("#preview-pane").display = text is None

    def _clear_results(self, text: str, *, error: bool = False) -> None:
        self.hits = []
        self.last_request = self.last_body = None
        self.query_one(ResultsList).show([])
        self._show_empty(text, error=error)
        if not error:
            self._set_status(Text(""))
        self.refresh_bindings()

    def _update_preview(self) -> None:
        results = self.query_one(ResultsList)
        hit = results.current
        self.query_one("#preview", Static).update(preview(hit) if hit else "")
        self.query_one(Timeline).show(self.hits, results.highlighted)

    @on(OptionList.OptionHighlighted, "#results")
    def _highlighted(self, event: OptionList.OptionHighlighted) -> None:
        self._update_preview()

    # -- typing and toggles --------------------------------------------------------------------

    @on(Input.Changed, "#search-query")
    def _typed(self, event: Input.Changed) -> None:
        self._run(full=False, delay=self.DEBOUNCE)

    @on(Input.Submitted, "#search-query")
    def _submitted(self, event: Input.Submitted) -> None:
        self._focus_results_on_answer = True
        self._run(full=True, delay=0.0)

    def _rerun(self) -> None:
        self._update_toggles()
        if self.build_request(full=False) is not None:
            self._run(full=False, delay=0.0)

    def action_cycle_scope(self) -> None:
        hit = self.current_hit
        source = (hit or {}).get("source") or {}
        scope = SCOPES[(SCOPES.index(self.scope) + 1) % len(SCOPES)]
        if scope == "project":
            self.pin_project = source.get("project") or self.pin_project
            if not self.pin_project:
                self.notify("Select a result first: project scope uses its project.", timeout=3)
                scope = "all"
        if scope == "session":
            self.pin_session = source.get("sessionId") or self.pin_session
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
            self.query_one("#preview-pane").focus()  # so the screen keys (1, 2, 3, ?) work

    # -- result actions ------------------------------------------------------------------------

    @property
    def current_hit(self) -> dict[str, Any] | None:
        return self.query_one(ResultsList).current if self.hits else None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if not super().check_action(action, parameters):
            return False
        if action in ("open_transcript", "copy_snippet", "copy_locator", "supersede", "document"):
            return True if self.hits else None  # greyed out until there is a result
        return True

    def _need_hit(self) -> dict[str, Any] | None:
        hit = self.current_hit
        if hit is None:
            self.notify("No result selected.", severity="warning", timeout=2)
        return hit

    def on_results_list_recall(self, message: ResultsList.Recall) -> None:
        hit = message.hit
        sessions = (self.last_request or {}).get("sessions") or []
        self.app.push_screen(
            RecallScreen(
                str(hit["locator"]),
                document_id=str(hit.get("documentId")),
                session_ids=list(sessions),
                terms=list(hit.get("matchedTerms") or []) + list(hit.get("expandedTerms") or []),
            )
        )

    def action_open_transcript(self) -> None:
        from cwtui.screens.transcript import TranscriptScreen

        hit = self._need_hit()
        if hit is None:
            return
        source = hit.get("source") or {}
        if not source.get("sessionId") or hit.get("kind") == "markdown":
            self.notify("This result has no session transcript.", severity="warning")
            return
        self.app.push_screen(
            TranscriptScreen(str(source["sessionId"]), focus_key=source.get("messageKey"))
        )

    def action_copy_snippet(self) -> None:
        hit = self._need_hit()
        if hit is not None:
            self.app.copy_to_clipboard(str(hit.get("snippet", "")))
            self.notify("Copied the snippet.", timeout=2)

    def action_copy_locator(self) -> None:
        hit = self._need_hit()
        if hit is not None:
            self.app.copy_to_clipboard(str(hit.get("locator", "")))
            self.notify("Copied the locator (cw recall LOCATOR).", timeout=2)

    def action_supersede(self) -> None:
        hit = self._need_hit()
        if hit is None:
            return
        self.app.push_screen(
            SupersedeScreen(str(hit["documentId"]), str(hit.get("snippet", "")))
        )  # on success the handle is marked changed and the search reruns on resume

    def action_document(self) -> None:
        hit = self._need_hit()
        if hit is not None:
            self.app.push_screen(DocumentScreen(str(hit["documentId"])))

    def action_document_by_id(self) -> None:
        def open_document(document_id: str | None) -> None:
            if document_id:
                self.app.push_screen(DocumentScreen(document_id))

        self.app.push_screen(
            PromptScreen("Open a document (superseded ones too)", "document id, e.g. t-09b0e9…"),
            open_document,
        )

"""The index view: how complete the published index generation is, and what is still queued.

A thread worker reads ``Archive.index_status()`` (generation, complete/partial, documents,
windows, per-handler complete/partial/skipped counts, outbox depth and lag, faults), the
archive's counts (``doctor``) and the daemon's status (``daemon.status``; an embedded archive has
no daemon and says so). A timer refreshes it every :attr:`IndexScreen.LIVE_INTERVAL` seconds
while the outbox has work (and every :attr:`IndexScreen.IDLE_INTERVAL` seconds otherwise), only
while the screen is shown. ``i`` publishes pending work now (``index_run(wait=True)``), its
progress events driving the bar.

The outbox bar: when work appears, the deepest outbox seen since it was last empty is the total,
and the bar fills as the depth falls; an empty outbox is a full bar.

The semantic row: windows embedded of the published total, pending windows, what search uses
meanwhile (nothing, the partial vectors, all of them), the model and mode, and — from the
handler's cursor across refreshes — its rate and the time left. It comes with
``index_status`` (two point reads, no scan) and refreshes at the live interval while windows
are pending.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Header, ProgressBar, Static
from textual.worker import get_current_worker

from cwcore.contract.doctor import StoreCounts
from cwcore.contract.index import HandlerCounts, IndexStatus, SemanticProgress
from cwcore.contract.sources import SourcesSummary
from cwcore.errors import CwError
from cwtui import semantic_status
from cwtui.screens.common import (
    ArchiveHandle,
    CallDone,
    CallFailed,
    LiveScreen,
    archive_handle,
    error_text,
    is_embedded,
)
from cwtui.widgets.footer import KeysFooter

if TYPE_CHECKING:
    from cwcore.daemon.results import DaemonStatus

BAR_WIDTH = 24
BAR = "━"


def outcome_bar(counts: dict[str, int], width: int = BAR_WIDTH) -> Text:
    """complete / partial / skipped as a green / yellow / red bar of ``width`` cells, then the
    complete share in percent."""
    total = sum(int(counts.get(k, 0)) for k in ("complete", "partial", "skipped"))
    if total <= 0:
        return Text("·" * width, "dim")
    bar = Text()
    used = 0
    for key, colour in (("complete", "#3fb950"), ("partial", "#d29922"), ("skipped", "#da3633")):
        n = int(counts.get(key, 0))
        cells = round(n / total * width) if key != "skipped" else width - used
        if n and cells == 0:
            cells = 1
        cells = max(0, min(width - used, cells))
        bar.append(BAR * cells, colour)
        used += cells
    share = int(counts.get("complete", 0)) / total
    bar.append(f" {share:4.0%}", "dim")
    return bar


def duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


def summary_text(status: IndexStatus, counts: StoreCounts | None) -> Text:
    complete = status.complete
    rebuild = status.rebuild
    badge = " COMPLETE " if complete else (" REBUILDING " if rebuild else " PARTIAL ")
    text = Text.assemble(
        ("Generation ", "bold"),
        (str(status.generation), "bold"),
        "  ",
        (badge, "bold #0d1117 on #3fb950" if complete else "bold #0d1117 on #d29922"),
    )
    published = status.published
    text.append(
        f"  published {str(published)[:19].replace('T', ' ')} UTC"
        if published
        else "  nothing published yet",
        "dim",
    )
    text.append(f"\n{status.documents:,} documents indexed in {status.windows:,} windows")
    if rebuild:
        text.append(
            f"\nrebuilding: {rebuild.done:,} of {rebuild.queued:,}"
            " documents republished; searches see those so far",
            "bold #d29922",
        )
    elif not complete:
        text.append(
            "\npartial: some documents hit an indexing limit — what was kept is correct, some "
            "was left out (the partial and skipped columns; p lists them and the limit each "
            "hit); searches answer retrieval_status=partial",
            "dim",
        )
    if status.windows and not status.word_stems and not rebuild:
        text.append(
            "\nword forms not indexed (this index predates them): searches without vectors "
            "match words only as written; `cw index rebuild` adds them",
            "dim",
        )
    if counts:
        text.append(
            f"\nArchive: {counts.sessions:,} sessions · {counts.documents:,} documents · "
            f"{counts.messages:,} messages · {counts.chunks:,} chunks",
            "dim",
        )
    return text


def daemon_text(daemon: DaemonStatus | None, error: str | None) -> Text:
    text = Text.assemble(("Daemon  ", "bold"))
    if error:
        text.append(error, "bold red")
        return text
    if daemon is None:
        text.append("embedded", "bold")
        text.append(" — this process opened the store itself (CW_EMBEDDED=1); no daemon", "dim")
        return text
    text.append("running", "bold #3fb950")
    for label, value in (
        ("pid", str(daemon.pid)),
        ("uptime", duration(float(daemon.uptime_s))),
        ("connections", str(daemon.connections)),
        ("in flight", str(daemon.in_flight)),
        ("build", daemon.build),
        ("socket", daemon.socket),
    ):
        text.append(f"  {label} ", "dim")
        text.append(value)
    return text


def sources_text(summary: SourcesSummary | None) -> Text:
    """The coverage of the last sync (``Archive.sources().summary``), one line."""
    text = Text.assemble(("Sources  ", "bold"))
    if summary is None:
        text.append("unknown", "dim")
        return text
    text.append(f"{summary.found} of {summary.locations} locations found")
    text.append(
        f" · {summary.files:,} files · {summary.sessions:,} sessions · "
        f"{summary.messages:,} messages",
        "dim",
    )
    if summary.skipped:
        text.append(f" · {summary.skipped:,} skipped (cw sources)", "bold #d29922")
    last = summary.last_sync
    text.append(f" · last sync {last}" if last else " · never synced (cw sync)", "dim")
    return text


class IndexScreen(LiveScreen):
    """Index generation, handler outcomes, the outbox and the daemon, refreshed live."""

    SUB_TITLE = "Index"

    #: Seconds between refreshes while the outbox has work / while it is empty.
    LIVE_INTERVAL: ClassVar[float] = 1.0
    IDLE_INTERVAL: ClassVar[float] = 5.0

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "refresh", "Refresh", id="cw.index.refresh", tooltip="Refresh the status now"),
        Binding(
            "i",
            "index_now",
            "Index now",
            id="cw.index.run",
            tooltip="Publish all pending index work now (cw index --wait)",
        ),
        Binding(
            "p",
            "partial",
            "Partial docs",
            id="cw.index.partial",
            tooltip="The documents with a partial or skipped handler outcome, and which limit",
        ),
    ]

    def action_partial(self) -> None:
        from cwtui.screens.partial import PartialScreen

        self.open(PartialScreen())

    class Loaded(CallDone):
        def __init__(
            self,
            status: IndexStatus,
            counts: StoreCounts | None,
            daemon: DaemonStatus | None,
            daemon_error: str | None,
            sources: SourcesSummary | None = None,
            sources_read: bool = False,
        ) -> None:
            super().__init__()
            self.status, self.counts = status, counts
            self.daemon, self.daemon_error = daemon, daemon_error
            self.sources, self.sources_read = sources, sources_read

    class Failed(CallFailed):
        pass

    class Progress(CallDone):
        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done, self.total = done, total

    class RunFinished(CallDone):
        def __init__(self, status: IndexStatus | None, error: str | None) -> None:
            super().__init__()
            self.status, self.error = status, error

    def __init__(self) -> None:
        super().__init__()
        self.status: IndexStatus | None = None
        self.peak_depth = 0
        self.running = False  # an `i` run is in flight
        self._refreshing = False
        self._last_refresh = 0.0
        #: (monotonic time, handler cursor) of recent refreshes: the embedding rate.
        self._embed_samples: list[tuple[float, int]] = []

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="index-body"):
            yield Static("Reading the index status…", id="index-summary")
            with Horizontal(id="index-outbox-row"):
                yield Static("", id="index-outbox")
                yield ProgressBar(total=1, show_eta=False, id="index-progress")
            with Horizontal(id="index-semantic-row"):
                yield Static("", id="index-semantic")
                yield ProgressBar(
                    total=1, show_eta=False, show_percentage=False, id="index-semantic-progress"
                )
            yield Static("", id="index-semantic-detail")
            yield Static("Handlers", classes="pane-title")
            yield DataTable(id="index-handlers", cursor_type="none", zebra_stripes=True)
            yield Static("", id="index-faults")
            yield Static("", id="index-daemon")
            yield Static("", id="index-sources")
        yield KeysFooter()

    def on_mount(self) -> None:
        table = self.query_one("#index-handlers", DataTable)
        table.add_columns("Handler", "Complete", "Partial", "Skipped", "Coverage")
        self.set_interval(self.LIVE_INTERVAL, self._tick)
        self.action_refresh()

    def on_screen_resume(self) -> None:
        self.action_refresh()

    # -- refreshing ----------------------------------------------------------------------------

    def _tick(self) -> None:
        if not self.is_current or self._refreshing or self.running:
            return
        status = self.status
        sem = status.semantic if status is not None else None
        embedding = sem is not None and sem.state in ("waiting", "embedding")
        busy = (status is not None and bool(status.outbox_depth)) or embedding
        interval = self.LIVE_INTERVAL if busy else self.IDLE_INTERVAL
        if time.monotonic() - self._last_refresh >= interval - 0.05:
            # The sources line changes only with a sync: the live timer leaves it (and its
            # file-system checks of every known location) alone.
            self._refresh(with_sources=False)

    def action_refresh(self) -> None:
        self._refresh(with_sources=True)

    def _refresh(self, *, with_sources: bool) -> None:
        if self._refreshing:
            return
        self._refreshing = True
        self._last_refresh = time.monotonic()
        self._load(archive_handle(self.app), with_sources)

    @work(thread=True, exclusive=True, group="index-status", exit_on_error=False)
    def _load(self, handle: ArchiveHandle, with_sources: bool = True) -> None:
        daemon: DaemonStatus | None = None
        daemon_error: str | None = None
        try:
            with handle.use() as archive:
                status = archive.index_status()
                counts = archive.counts()
                sources = None
                if with_sources:
                    try:
                        sources = archive.sources().summary
                    except CwError:
                        pass  # coverage is a nicety: never fail the index view for it
                if not is_embedded(archive):
                    try:
                        daemon = archive.daemon_status()
                    except CwError as exc:
                        daemon_error = f"status unavailable: {error_text(exc)}"
        except CwError as exc:
            self.post_message(self.Failed(error_text(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(
                self.Loaded(status, counts, daemon, daemon_error, sources, with_sources)
            )

    def on_index_screen_loaded(self, message: Loaded) -> None:
        self._refreshing = False
        self.status = message.status
        self.query_one("#index-summary", Static).update(
            summary_text(message.status, message.counts)
        )
        self._show_outbox(message.status.outbox_depth, message.status.outbox_lag_s)
        self._show_semantic(message.status.semantic)
        self._show_handlers(message.status.handlers)
        faults = [f.to_json() for f in message.status.faults]
        faults_widget = self.query_one("#index-faults", Static)
        faults_widget.display = bool(faults)
        if faults:
            faults_widget.update(
                Text.assemble(
                    (f"Faults ({len(faults)})\n", "bold red"),
                    "\n".join(str(f) for f in faults[:10]),
                )
            )
        self.query_one("#index-daemon", Static).update(
            daemon_text(message.daemon, message.daemon_error)
        )
        if message.sources_read:
            self.query_one("#index-sources", Static).update(sources_text(message.sources))

    def on_index_screen_failed(self, message: Failed) -> None:
        self._refreshing = False
        self.query_one("#index-summary", Static).update(
            Text(f"Cannot read the index status: {message.text}\nPress r to retry.", "bold red")
        )

    def _show_outbox(self, depth: int, lag: float) -> None:
        self.peak_depth = max(self.peak_depth, depth) if depth else 0
        text = Text.assemble(
            ("Outbox  ", "bold"),
            (f"depth {depth:,}", "bold #d29922" if depth else ""),
            (f" · lag {duration(lag)}", "dim"),
            ("  indexing…" if depth or self.running else "  idle", "dim"),
        )
        self.query_one("#index-outbox", Static).update(text)
        bar = self.query_one("#index-progress", ProgressBar)
        if depth:
            bar.update(total=self.peak_depth, progress=self.peak_depth - depth)
        elif not self.running:
            bar.update(total=1, progress=1)

    def embedding_rate(self, cursor: int, now: float | None = None) -> float | None:
        """Windows/s the semantic handler's cursor moved over the last minute of refreshes
        (None until two samples differ)."""
        now = time.monotonic() if now is None else now
        samples = self._embed_samples
        if samples and cursor < samples[-1][1]:
            samples.clear()  # reset (a rebuild or a model change): start over
        samples.append((now, cursor))
        while len(samples) > 2 and now - samples[0][0] > 60:
            samples.pop(0)
        (t0, c0), (t1, c1) = samples[0], samples[-1]
        if t1 - t0 <= 0 or c1 <= c0:
            return None
        return (c1 - c0) / (t1 - t0)

    def _show_semantic(self, sem: SemanticProgress | None) -> None:
        row = self.query_one("#index-semantic-row", Horizontal)
        detail_widget = self.query_one("#index-semantic-detail", Static)
        row.display = detail_widget.display = sem is not None
        if sem is None:  # a daemon of an older build
            return
        rate = self.embedding_rate(sem.cursor)
        self.query_one("#index-semantic", Static).update(semantic_status.summary(sem))
        detail_widget.update(semantic_status.detail(sem, rate))
        bar = self.query_one("#index-semantic-progress", ProgressBar)
        total = sem.total
        if sem.state == "disabled":
            bar.update(total=1, progress=0)
        elif total:
            bar.update(total=total, progress=sem.cursor)
        else:
            bar.update(total=1, progress=1)

    def _show_handlers(self, handlers: tuple[HandlerCounts, ...]) -> None:
        table = self.query_one("#index-handlers", DataTable)
        table.clear()
        for counts in handlers:
            table.add_row(
                Text(counts.name, "bold"),
                Text(f"{counts.complete:,}", justify="right"),
                Text(f"{counts.partial:,}", justify="right"),
                Text(f"{counts.skipped:,}", justify="right"),
                outcome_bar(counts.to_json()),
            )

    # -- index now -----------------------------------------------------------------------------

    def action_index_now(self) -> None:
        if self.running:
            self.notify("Indexing is already running.", timeout=2)
            return
        self.running = True
        self.query_one("#index-progress", ProgressBar).update(total=None, progress=0)
        self._run(archive_handle(self.app))

    @work(thread=True, exclusive=True, group="index-run", exit_on_error=False)
    def _run(self, handle: ArchiveHandle) -> None:
        def on_event(event: dict[str, Any]) -> None:
            if event.get("type") == "progress":
                self.post_message(self.Progress(int(event["done"]), int(event["total"])))

        try:
            with handle.use() as archive:
                status = archive.index_run(wait=True, on_event=on_event)
        except CwError as exc:
            self.post_message(self.RunFinished(None, error_text(exc)))
            return
        self.post_message(self.RunFinished(status, None))

    def on_index_screen_progress(self, message: Progress) -> None:
        bar = self.query_one("#index-progress", ProgressBar)
        bar.update(total=max(1, message.total), progress=message.done)

    def on_index_screen_run_finished(self, message: RunFinished) -> None:
        self.running = False
        if message.error:
            self.notify(message.error, title="Index", severity="error")
        else:
            self.notify("Index is up to date.", title="Index", timeout=3)
        self.action_refresh()

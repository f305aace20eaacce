"""``cw index``: publish, inspect, verify and rebuild the derived indexes."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from cwcore.api import Archive
from cwcore.errors import CwError, ModelUnavailable
from cwtui import semantic_status
from cwtui.output import console, emit_answer, err_console, guard, shown_id

if TYPE_CHECKING:
    from rich.progress import Progress

    from cwcore.contract.index import IndexStatus, SemanticProgress

app = typer.Typer(help="Publish, inspect, verify and rebuild the derived indexes.")

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _render_status(body: IndexStatus) -> None:
    rebuild = body.rebuild
    state = "complete" if body.complete else ("rebuilding" if rebuild else "partial")
    console.print(
        f"generation {body.generation} ({state}), {body.documents:,} document(s) in "
        f"{body.windows:,} window(s); outbox depth {body.outbox_depth}, "
        f"lag {body.outbox_lag_s:.1f}s"
    )
    if rebuild:
        console.print(f"rebuild: {rebuild.done:,} of {rebuild.queued:,} document(s) republished")
    elif body.windows and not body.word_stems:
        console.print(
            "word forms: not indexed (this index predates them); `cw index rebuild` adds them"
        )
    table = Table("handler", "complete", "partial", "skipped")
    for counts in body.handlers:
        table.add_row(counts.name, str(counts.complete), str(counts.partial), str(counts.skipped))
    console.print(table)
    sem = body.semantic
    if sem:
        console.print(semantic_status.summary(sem))
        console.print(Text("  ") + semantic_status.detail(sem))
    doc = body.document
    if doc is not None:
        console.print(f"document {doc.document_id} v{doc.version} ({doc.state}): ", end="")
        if doc.indexed:
            outcomes = ", ".join(f"{h} {o}" for h, o in sorted(doc.handlers))
            console.print(f"generation {doc.generation}, {doc.windows} window(s): {outcomes}")
        else:
            console.print("not indexed yet")


#: Seconds between two looks at the daemon's embedding progress.
POLL_S = 1.0
#: Windows one embedding step of an embedded archive (no daemon) takes.
STEP_WINDOWS = 256
#: Seconds of samples the rate is measured over.
RATE_WINDOW_S = 30.0
#: Seconds between two progress lines when stderr is not a terminal (``--progress``).
LINE_EVERY_S = 5.0
#: Semantic states in which there is nothing left to wait for.
SETTLED = ("disabled", "complete")


class Rate:
    """Windows embedded per second over the last :data:`RATE_WINDOW_S` seconds of samples
    (``add(monotonic seconds, windows embedded so far)``); None until two samples differ."""

    def __init__(self) -> None:
        self._samples: list[tuple[float, int]] = []

    def add(self, at: float, embedded: int) -> None:
        self._samples.append((at, embedded))
        while len(self._samples) > 2 and at - self._samples[0][0] > RATE_WINDOW_S:
            self._samples.pop(0)

    @property
    def per_second(self) -> float | None:
        if len(self._samples) < 2:
            return None
        (t0, e0), (t1, e1) = self._samples[0], self._samples[-1]
        if t1 <= t0 or e1 <= e0:
            return None
        return (e1 - e0) / (t1 - t0)


def embedding_line(sem: SemanticProgress, rate: float | None) -> str:
    """``embedding 1,234 / 22,814 windows (5%) · 12.3 windows/s · about 29 min left``."""
    line = f"embedding {sem.embedded:,} / {sem.total:,} windows ({sem.progress:.0%})"
    if sem.state == "revalidating":
        line += " · revalidating after a rebuild"
    if rate:
        line += f" · {rate:,.1f} windows/s"
        if sem.pending:
            line += f" · about {semantic_status._left(sem.pending / rate)} left"
    return line


class _Shown:
    """Where the embedding progress goes: a live line on a terminal, a plain line every
    :data:`LINE_EVERY_S` seconds elsewhere (``--progress``), or nowhere."""

    def __init__(self, live: bool, lines: bool) -> None:
        self.live, self.lines = live, lines
        self._progress: Progress | None = None
        self._task: Any = None
        self._last_line = -LINE_EVERY_S

    def __enter__(self) -> _Shown:
        if self.live:
            from rich.progress import BarColumn, Progress, TextColumn

            self._progress = Progress(
                TextColumn("[bold]embedding[/]"),
                BarColumn(),
                TextColumn("{task.fields[text]}"),
                console=err_console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task("embed", total=None, text="")
        return self

    def __exit__(self, *exc: object) -> None:
        if self._progress is not None:
            self._progress.stop()

    def update(self, sem: SemanticProgress, rate: float | None, now: float) -> None:
        text = embedding_line(sem, rate)
        if self._progress is not None:
            shown = text.removeprefix("embedding ")
            self._progress.update(
                self._task, completed=sem.cursor, total=max(sem.total, 1), text=escape(shown)
            )
        elif self.lines and now - self._last_line >= LINE_EVERY_S:
            self._last_line = now
            err_console.print(text, markup=False, soft_wrap=True)

    def note(self, text: str) -> None:
        """A closing line on stderr."""
        err_console.print(text, markup=False, soft_wrap=True)


def _embedding_stuck(archive: Archive) -> str | None:
    """Why the daemon's embedding cannot go on (its last failure), or None."""
    try:
        service = archive.daemon_status().service
    except CwError:
        return None
    error = service.get("semantic_error")
    return str(error) if error else None


def wait_for_embeddings(archive: Archive, shown: _Shown) -> None:
    """Until every published window is embedded (or semantic retrieval is off), showing the
    progress: an embedded archive embeds here, step by step; with a daemon its worker embeds
    and this polls. Ends with one line on stderr: done (when progress was shown), why
    embedding cannot go on (no model, a failing model), or, on Ctrl-C, how far it got (exit
    130; a daemon goes on alone)."""
    sem = archive.index_status().semantic
    if sem is None or sem.state in SETTLED:
        return
    rate = Rate()
    clock = time.monotonic
    try:
        while sem.state not in SETTLED and sem.pending:
            rate.add(clock(), sem.embedded)
            shown.update(sem, rate.per_second, clock())
            if archive.embedded:
                try:
                    archive.embed_pending(max_windows=STEP_WINDOWS)
                except ModelUnavailable as exc:
                    shown.note(f"embedding stopped: {exc.message}; search stays lexical")
                    return
            else:
                time.sleep(POLL_S)
                stuck = _embedding_stuck(archive)
                if stuck:
                    shown.note(f"embedding stopped: {stuck}; search stays lexical meanwhile")
                    return
            new = archive.index_status().semantic
            if new is None:
                return
            sem = new
    except KeyboardInterrupt:
        goes_on = "" if archive.embedded else "; the daemon goes on embedding"
        shown.note(f"stopped waiting at {sem.embedded:,} / {sem.total:,} windows{goes_on}")
        raise typer.Exit(130) from None
    if shown.live or shown.lines:
        shown.note(f"embedding complete: {sem.embedded:,} / {sem.total:,} windows")


def publish(archive: Archive, *, wait: bool, lines: bool = False) -> IndexStatus:
    """``archive.index_run`` (all pending work with ``wait``) with its progress on stderr: a bar
    on a terminal, else with ``lines`` a plain line every :data:`LINE_EVERY_S` seconds."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    live = err_console.is_terminal
    with Progress(
        TextColumn("[bold]indexing[/]"),
        BarColumn(),
        MofNCompleteColumn(),
        console=err_console,
        transient=True,
        disable=not live,
    ) as bar:
        task = bar.add_task("index", total=None)
        last = [-LINE_EVERY_S]

        def on_event(event: dict[str, Any]) -> None:
            if event.get("type") != "progress":
                return
            bar.update(task, completed=event["done"], total=event["total"])
            now = time.monotonic()
            quiet = not lines or live or not event["total"]
            if not quiet and now - last[0] >= LINE_EVERY_S:
                last[0] = now
                err_console.print(f"indexing {event['done']:,} / {event['total']:,} documents")

        return archive.index_run(wait=wait, on_event=on_event)


@app.callback(invoke_without_command=True)
def index(
    ctx: typer.Context,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Index everything pending, then wait for the embeddings (progress on a "
            "terminal; Ctrl-C stops waiting).",
        ),
    ] = False,
    progress: Annotated[
        bool,
        typer.Option("--progress", help="Progress lines on stderr even when it is not a terminal."),
    ] = False,
    lexical: Annotated[
        bool,
        typer.Option(
            "--lexical", help="With --wait: wait for the lexical index only, not the embeddings."
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Publish pending index work now (`--wait`: until the outbox is empty and every window
    is embedded)."""
    if ctx.invoked_subcommand is not None:
        return
    live = err_console.is_terminal
    with guard(as_json), Archive.open() as archive:
        body = publish(archive, wait=wait, lines=progress)
        if wait and not lexical:
            with _Shown(live=live, lines=progress and not live) as shown:
                wait_for_embeddings(archive, shown)
            body = archive.index_status()
        if as_json:
            emit_answer(body)
        else:
            _render_status(body)


@app.command()
def status(
    document: Annotated[str | None, typer.Option(help="Also this document's outcomes.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Outbox depth and lag, the published generation, per-handler outcome counts, and the
    semantic index's embedding progress."""
    with guard(as_json), Archive.open() as archive:
        body = archive.index_status(document)
        if as_json:
            emit_answer(body)
        else:
            _render_status(body)


@app.command()
def partial(
    limit: Annotated[int, typer.Option(help="Documents to list (1-1000).")] = 100,
    after: Annotated[int, typer.Option(help="Continue after this ordinal (from `next`).")] = 0,
    as_json: JsonOpt = False,
) -> None:
    """The documents behind a partial index: each one's handler outcomes, the limit each capped
    handler hit, and a Markdown document's file."""
    with guard(as_json), Archive.open() as archive:
        body = archive.index_partial(limit=limit, after=after)
        if as_json:
            emit_answer(body)
            return
        if not body.documents:
            console.print("No document has a partial or skipped handler outcome.")
        for doc in body.documents:
            outcomes = ", ".join(f"{h} {o}" for h, o in sorted(doc.outcomes))
            console.print(
                f"[bold]{shown_id(doc.document_id)}[/] v{doc.version} ({doc.state}, "
                f"{doc.windows} window(s)): {outcomes}"
            )
            if doc.path:  # a Markdown document's file, whole (soft wrap: never cut mid-name)
                console.print(f"  [dim]file[/] {shown_id(doc.path)}", soft_wrap=True)
            for handler, cap in sorted(doc.caps):
                console.print(f"  [dim]{handler}: {escape(cap)}[/]")
        if body.next is not None:
            console.print(f"[dim]more: cw index partial --after {body.next}[/]")


@app.command()
def verify(as_json: JsonOpt = False) -> None:
    """Check the derived view against canonical records."""
    with guard(as_json), Archive.open() as archive:
        body = archive.index_verify()
        if as_json:
            emit_answer(body)
        else:
            if body.ok:
                console.print(f"ok: {body.checked:,} ordinal(s) checked")
            for problem in body.problems:
                err_console.print(problem, markup=False)
        if not body.ok:
            raise typer.Exit(1)


@app.command()
def rebuild(
    wait: Annotated[bool, typer.Option("--wait", help="Rebuild before returning.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Delete every derived index and rebuild it from canonical records."""
    with guard(as_json), Archive.open() as archive:
        body = archive.index_rebuild(wait=wait)
        if as_json:
            emit_answer(body)
        else:
            console.print(f"queued {body.queued or 0:,} document(s) for indexing")
            _render_status(body)

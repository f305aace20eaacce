"""The cw terminal UI: a Textual app over the :class:`~cwcore.api.Archive` facade.

:func:`make_app` is the one way to build it (the ``cw tui`` command and the tests share it). The
app owns an :class:`~cwtui.screens.common.ArchiveHandle`: the archive is opened lazily, from the
first screen's thread worker, and closed when the app exits. Top-level screens come from the
registry in :mod:`cwtui.screens` (one Textual mode each); the command palette offers every
``cw.*`` binding (:mod:`cwtui.widgets.palette`); ``?`` shows the keys of the current screen.

Errors never crash the app: expected ones (:class:`~cwcore.errors.CwError`) are turned into
messages by the worker that met them; anything else a worker raises lands in
:meth:`CwApp.on_worker_state_changed` and becomes an error notification. Screens derive from
:class:`~cwtui.screens.common.LiveScreen`, which drops a worker's late result once its screen is
gone; once the app starts to exit, input is dropped. Should a handler still raise, Textual prints
the traceback and ``cw tui`` exits 1.
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, ClassVar

from rich.console import RenderableType
from textual import events
from textual.app import App
from textual.binding import Binding, BindingType
from textual.worker import Worker, WorkerState

from cwcore.api import Archive
from cwtui.screens import DEFAULT_MODE
from cwtui.screens import MODES as MODE_SPECS
from cwtui.screens.common import ArchiveFactory, ArchiveHandle, LiveScreen, error_text
from cwtui.screens.help import HelpScreen
from cwtui.widgets.palette import CwCommands


class DetachedThreads(ThreadPoolExecutor):
    """The event loop's default executor (thread workers run on it): each call on its own
    daemon thread, and shutting down never waits.

    Quitting then never waits on a worker still inside a call: the process ends without joining
    a thread blocked in a daemon round trip (the daemon drops the request when the connection
    closes). An in-process archive is different: :meth:`CwApp.run` waits for its call in
    flight, so a write is committed and the store closed before the process ends.
    """

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        future: Future[Any] = Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # handed to whoever awaits the future
                future.set_exception(exc)
            else:
                future.set_result(result)

        threading.Thread(target=run, name="cw-worker", daemon=True).start()
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


class CwApp(App[None]):
    """Browse and search the archive: sessions and transcripts, search with recall and
    supersession, the index status."""

    TITLE = "cw"
    CSS_PATH = "app.tcss"
    COMMANDS: ClassVar[set[Any]] = App.COMMANDS | {CwCommands}
    MODES: ClassVar[dict[str, Any]] = {spec.name: spec.factory for spec in MODE_SPECS}
    # Screen classes app.tcss lays out by: under 100 columns panes fold away or shrink, under
    # 32 rows the search timeline is one row of bars.
    HORIZONTAL_BREAKPOINTS = [(0, "-narrow"), (100, "-wide")]  # noqa: RUF012 (App types it)
    VERTICAL_BREAKPOINTS = [(0, "-short"), (32, "-tall")]  # noqa: RUF012

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "question_mark",
            "help",
            "Help",
            key_display="?",
            id="cw.help",
            tooltip="Show the keys of this screen",
        ),
        Binding("q,ctrl+q", "quit", "Quit", key_display="q ^q", id="cw.quit", tooltip="Quit cw"),
        *(
            Binding(
                spec.key,
                f"switch_mode('{spec.name}')",
                spec.title,
                show=False,
                id=f"cw.mode.{spec.name}",
                tooltip=f"Go to {spec.title}: {spec.help}",
            )
            for spec in MODE_SPECS
        ),
    ]

    def __init__(self, archive_factory: ArchiveFactory) -> None:
        super().__init__()
        self.archive_handle = ArchiveHandle(archive_factory)
        #: Set when the app starts to exit: from then on keys and clicks are dropped (a key
        #: typed right after ``q`` must not open a dialog on a screen that is being removed).
        self.exiting = False

    def exit(
        self, result: None = None, return_code: int = 0, message: RenderableType | None = None
    ) -> None:
        self.exiting = True
        super().exit(result, return_code, message)

    async def on_event(self, event: events.Event) -> None:
        if self.exiting and isinstance(event, events.InputEvent):
            return
        screen = self.screen if self.screen_stack else None
        if (
            isinstance(event, (events.Key, events.Paste))
            and isinstance(screen, LiveScreen)
            and screen.typed_blind(event)
        ):
            return  # typed before the dialog was on the screen: not meant for it
        await super().on_event(event)

    def on_mount(self) -> None:
        asyncio.get_running_loop().set_default_executor(DetachedThreads(max_workers=1))
        self.switch_mode(DEFAULT_MODE)

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run the app in the terminal; return its return value (an SVG screenshot taken under
        an auto-pilot, for one) as soon as it has exited and the archive is released (the
        terminal is restored before that)."""
        try:
            return super().run(*args, **kwargs)
        finally:
            handle = self.archive_handle
            if handle.in_process:
                handle.drain()  # a write in flight commits and closes the store first
            # Everything the app built is garbage now: the interpreter's last collection would
            # walk it all (a third of a second), for memory the process is giving back anyway.
            gc.freeze()

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen.for_screen(self.screen))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The central net for what a worker did not expect: a notification, never a crash."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(
                error_text(event.worker.error), title="Error", severity="error", markup=False
            )

    def on_unmount(self) -> None:
        # Never waits: a worker still inside a call closes the archive as the call ends.
        self.archive_handle.close()


def make_app(archive_factory: ArchiveFactory = Archive.open) -> CwApp:
    """The TUI over the archive ``archive_factory()`` opens (on first use, in a worker)."""
    return CwApp(archive_factory)

"""The TUI's first paint and the session listing under it, on a 200,000-message archive.

Run: ``.venv/bin/python -m bench tui`` (or ``make bench``). The archive is synthetic cw-jsonl:
5,000 sessions of 40 short messages (``n / 40`` sessions in general) over about two years, in 25
projects (a few large, many small) and four agents, session ids unrelated to start order (as
real ids are). It is imported and indexed once with the real engine and kept under
``CW_BENCH_CACHE`` (default ``/tmp/cw-bench-preflight``, as ``tui-<n>``) for later runs; the
message text is short because the listing never reads it (the bench measures sessions, not
text). Then:

* **list_sessions in process** — ``cwcore.browse.list_sessions`` on the engine's reader: the
  TUI's first page (200 rows), the projects count (``facets`` with the sparklines' days), a
  page deep in the list (through its cursor), and the first page under each filter (a small
  project, an agent, a ``since`` one month back);
* **list_sessions through the daemon** — the same first page as the ``sessions`` method over the
  socket (the TUI's path), with the daemon warm;
* **TUI first paint** — ``Archive.open()`` against the warm daemon (what ``cw tui`` does before
  drawing), then ``make_app(...).run_test()`` headless with Pilot: the time from starting the
  app to the sessions table showing its first rows, and to the projects pane finishing its count
  ("counting…" gone). Each run is a new archive connection and a new app. One extra run starts
  with no daemon (``cw tui`` starting it on demand);
* **the floor** — between those runs, the same app over a stub archive that has no sessions and
  answers at once: the time to its first frame is Textual's own start-up on this machine under
  the same load, which no archive work can go below;
* **a search keystroke to results, on the dev logs** — the seven real agent logs of
  ``data/agent-logs`` (``CW_BENCH_DEV_LOGS``) imported once into their own cached home, and the
  49 queries of ``data/agent-logs-queries`` typed into the search screen against the warm
  daemon: each query but its last character is put in the bar and answered, then the last
  character is pressed; the time from that key to the end of the first frame that paints the
  answer to the whole query in the results list (the fast path, ``rerank: false``; see
  :class:`_PaintClock`; the time until Pilot finds the app idle is reported beside it). The
  screen's 250 ms debounce — a deliberate pause for typing, not work — is set to 0 here, so the
  number is the TUI's own path: the worker, the daemon round trip, the search and painting the
  list; a person sees it 250 ms after their last key. Then Enter on the same query: the full
  search (``rerank: true``), key to results.

* **Esc from a transcript and quit** — on the demo archive (``cwcore/demo``) and on the larger
  one (the dev logs when present, else this bench's synthetic archive, labelled so), against the
  warm daemon at 160×45: the largest session is opened and then left with Esc, once as opened
  and once after reading it (End, then :data:`READ_PAGES` × PageUp, which mounts a batch per
  few pages); the time from Esc to the end of the first frame that paints the screen below
  (and until Pilot finds the app idle), and from ``ctrl+q`` until the headless app has exited
  (its screens removed and the archive released). Then **quit in a terminal**: ``cw tui`` in a
  pseudo-terminal, ``ctrl+q`` on the sessions screen and on an open transcript, to the end of
  the process (terminal restore and interpreter exit included).

Python start-up and importing Textual are not in these numbers (they are the same for any
archive size); the bench prints them once for reference. The machine's load average is printed
beside the figures.
"""

from __future__ import annotations

import asyncio
import calendar
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from bench.common import (
    cached_cw_jsonl,
    percentiles,
    print_table,
    restore_environ,
    save_environ,
    write_result,
)

SESSION = 40
SIZE = 200_000
NOW = "2026-11-30T12:00:00Z"
PROJECTS = 25
AGENTS = ("claude-code", "codex", "pi", "gemini")
WORDS = [f"w{i}" for i in range(2_000)]
LIST_CALLS = 60
PAINT_RUNS = 12
PAGE = 200
TUI_SIZE = (120, 36)
REPO = Path(__file__).resolve().parent.parent
DEV_LOGS = REPO.parent / "shared" / "data" / "agent-logs"
DEV_QUERIES = REPO.parent / "shared" / "data" / "agent-logs-queries" / "queries.jsonl"


def write_archive(path: Path, n: int, seed: int = 7) -> None:
    """``n`` messages in sessions of 40, newest about a day before the bench clock."""
    rng = random.Random(seed)
    sessions = max(1, n // SESSION)
    end = calendar.timegm((2026, 11, 29, 12, 0, 0))
    span = 2 * 365 * 86_400
    weights = [1 / (k + 1) for k in range(PROJECTS)]
    with path.open("w", encoding="utf-8") as fh:
        for s in range(sessions):
            sid = hashlib.blake2b(f"s{s}".encode(), digest_size=8).hexdigest()
            start = end - span + (span * s) // sessions + rng.randrange(0, 3_600)
            project = f"/home/dev/project-{rng.choices(range(PROJECTS), weights)[0]:02d}"
            agent = rng.choice(AGENTS)
            for m in range(min(SESSION, n - s * SESSION)):
                moment = start + 30 * m
                row = {
                    "session": sid,
                    "id": f"m{m}",
                    "role": "user" if m % 2 == 0 else "assistant",
                    "text": " ".join(rng.choices(WORDS, k=rng.randint(6, 16))),
                    "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(moment)),
                    "project": project,
                    "agent": agent,
                }
                fh.write(json.dumps(row) + "\n")


def build(home: Path, n: int) -> dict[str, Any]:
    """Import and index an ``n``-message archive into ``home`` (reused when already built)."""
    return cached_cw_jsonl(home, n, write_archive)


def _time(fn: Any, calls: int = LIST_CALLS, warm: int = 3) -> dict[str, float]:
    for _ in range(warm):
        fn()
    samples = []
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t0) * 1000)
    return percentiles(samples)


def in_process(home: Path) -> dict[str, Any]:
    """``list_sessions`` on the engine's own reader (the daemon's side of the call)."""
    from cwcore import browse, facets
    from cwcore.methods import make_service
    from cwtui.widgets.projects import SPARK_DAYS

    t0 = time.perf_counter()
    engine = make_service(home)
    opened_ms = (time.perf_counter() - t0) * 1000
    try:
        reader = engine.reader
        first = browse.list_sessions(reader, limit=PAGE)
        sessions = int((engine.store.meta_get("counts") or {}).get("sessions", 0))
        # A cursor about half way down the list (the page the user reaches after scrolling).
        cursor = first["next_cursor"]
        for _ in range(max(0, sessions // (2 * PAGE) - 1)):
            cursor = browse.list_sessions(reader, limit=PAGE, cursor=cursor)["next_cursor"]
        projects: dict[str, int] = {}
        for row in browse.list_sessions(reader, limit=browse.MAX_LIMIT)["sessions"]:
            projects[row["project"]] = projects.get(row["project"], 0) + 1
        small = min(projects, key=lambda p: (projects[p], p))
        out: dict[str, Any] = {
            "engine_open_ms": round(opened_ms, 1),
            "sessions": sessions,
            "first_page": _time(lambda: browse.list_sessions(reader, limit=PAGE)),
            "projects_count": _time(
                lambda: facets.facets(reader, activity_days=SPARK_DAYS), calls=20
            ),
            "middle_page": _time(lambda: browse.list_sessions(reader, limit=PAGE, cursor=cursor)),
            "small_project": _time(
                lambda: browse.list_sessions(reader, project=small, limit=PAGE), calls=20
            ),
            "small_project_sessions": projects[small],
            "agent": _time(lambda: browse.list_sessions(reader, agent="pi", limit=PAGE), calls=20),
            "since_30d": _time(
                lambda: browse.list_sessions(reader, since="2026-10-31", limit=PAGE), calls=20
            ),
        }
        return out
    finally:
        engine.close()


def through_daemon(home: Path) -> dict[str, Any]:
    from cwcore.daemon.client import connect
    from cwtui.widgets.projects import SPARK_DAYS

    client = connect(home)
    try:
        return {
            "first_page": _time(lambda: client.call("sessions", {"limit": PAGE})),
            "projects_count": _time(
                lambda: client.call("facets", {"activityDays": SPARK_DAYS}), calls=20
            ),
        }
    finally:
        client.close()


class _EmptyArchive:
    """An archive with no sessions that answers at once: the floor of the first paint."""

    def sessions(self, **_: Any) -> tuple[list[Any], None]:
        return [], None

    def facets(self, **_: Any) -> Any:
        from cwcore.contract.facets import Facets

        return Facets((), (), 0, 0)

    def close(self) -> None:
        return None


async def _floor_once() -> float:
    """App start to the sessions screen's first frame, with nothing to wait for: Textual's
    own start-up (styles, widgets, the first render) on this machine, at this moment."""
    from cwtui.app import make_app
    from cwtui.screens.sessions import SessionsScreen

    t0 = time.perf_counter()
    app = make_app(lambda: _EmptyArchive())  # type: ignore[arg-type, return-value]
    async with app.run_test(size=TUI_SIZE) as pilot:
        while True:
            screen = app.screen
            if isinstance(screen, SessionsScreen) and screen.query_one("#empty-state").display:
                done = time.perf_counter()
                break
            await pilot.pause(0.002)
        await pilot.press("ctrl+q")
    return (done - t0) * 1000


async def _paint_once() -> dict[str, float]:
    from cwcore.api import Archive
    from cwtui.app import make_app
    from cwtui.screens.sessions import SessionsScreen
    from cwtui.widgets.sessions_table import SessionsTable

    t0 = time.perf_counter()
    archive = Archive.open()  # what `cw tui` does before it draws
    t_open = time.perf_counter()
    app = make_app(lambda: archive)
    first = counted = 0.0
    async with app.run_test(size=TUI_SIZE) as pilot:
        t_app = time.perf_counter()
        deadline = t_app + 120
        while time.perf_counter() < deadline:
            screen = app.screen
            if isinstance(screen, SessionsScreen):
                if not first and screen.query_one(SessionsTable).row_count:
                    first = time.perf_counter()
                if first and screen.overview is not None:
                    counted = time.perf_counter()
                    break
            await pilot.pause(0.002)
        await pilot.press("ctrl+q")
    if not first or not counted:
        raise RuntimeError("the sessions table or the projects count did not arrive in 120 s")
    return {
        "open_ms": (t_open - t0) * 1000,
        "first_rows_ms": (first - t_open) * 1000,
        "total_ms": (first - t0) * 1000,
        "projects_counted_ms": (counted - t_open) * 1000,
    }


def first_paint(home: Path, runs: int = PAINT_RUNS) -> dict[str, Any]:
    """Alternating runs against the archive and against :class:`_EmptyArchive`, so both see
    the same load; the first of each warms up."""
    samples, floor = [], []
    for _ in range(runs + 1):
        samples.append(asyncio.run(_paint_once()))
        floor.append(asyncio.run(_floor_once()))
    out = {name: percentiles([s[name] for s in samples[1:]]) for name in samples[0]}
    out["empty_archive_ms"] = percentiles(floor[1:])
    return out


def build_dev_logs(home: Path, logs: Path) -> dict[str, Any]:
    """The sessions under ``logs`` (the real agent logs, or the bundled demo) imported and
    indexed once into ``home`` (reused when built)."""
    from bench.common import cached_build

    def make(home: Path) -> dict[str, Any]:
        from cwcore.importers import pipeline
        from cwcore.methods import make_service

        engine = make_service(home)
        try:
            summary = pipeline.import_paths(engine.admission, [str(logs)], settings=engine.settings)
            engine.indexer.drain()
            counts = engine.store.meta_get("counts") or {}
        finally:
            engine.close()
        return {"documents": summary.imported, "messages": int(counts.get("messages", 0))}

    return cached_build(home, make)


class _PaintClock:
    """Times a search from its key to the end of the first frame that paints its answer.

    Armed with the query (and whether it is the full search) just before the key is sent. When
    the screen takes that answer (its handler fills the result list, or the empty state), the
    widgets it changed are dirty, so the next frame Textual composes and writes
    (``Screen._refresh_layout``) is the one that shows the answer; the end of that frame is the
    time taken. Pilot's ``press`` returns later than that: it waits for the app to go idle
    (20 ms slices with almost no CPU), which is the test harness's settling, not the user's
    wait; that time is kept beside it as ``idle``.
    """

    def __init__(self) -> None:
        self.target: tuple[str, bool] | None = None
        self.answered = False
        self.painted: float | None = None

    def arm(self, query: str, rerank: bool) -> None:
        self.target = (query, rerank)
        self.answered = False
        self.painted = None

    def install(self) -> Any:
        """Wraps the two hooks; returns a function that restores them."""
        from textual.screen import Screen

        from cwtui.screens.search import SearchScreen

        clock = self
        on_results = SearchScreen.on_search_screen_results
        refresh_layout = Screen._refresh_layout

        def took(screen: Any, message: Any) -> None:
            on_results(screen, message)
            req = message.request
            if clock.target == (req.query, req.rerank):
                clock.answered = True

        def frame(screen: Any, *args: Any, **kwargs: Any) -> Any:
            result = refresh_layout(screen, *args, **kwargs)
            if clock.answered and clock.painted is None:
                clock.painted = time.perf_counter()
            return result

        SearchScreen.on_search_screen_results = took  # type: ignore[method-assign]
        Screen._refresh_layout = frame  # type: ignore[method-assign]

        def restore() -> None:
            SearchScreen.on_search_screen_results = on_results  # type: ignore[method-assign]
            Screen._refresh_layout = refresh_layout  # type: ignore[method-assign]

        return restore

    async def wait(self, what: str) -> float:
        deadline = time.perf_counter() + 60
        while self.painted is None:
            if time.perf_counter() > deadline:
                raise RuntimeError(f"the answer to {what!r} was not painted in 60 s")
            await asyncio.sleep(0.001)
        return self.painted


async def _keystrokes(queries: list[str]) -> dict[str, Any]:
    """Each query typed as described in the module docstring; returns the samples (ms)."""
    from cwcore.api import Archive
    from cwtui.app import make_app
    from cwtui.screens.search import QueryInput, SearchScreen

    archive = Archive.open()
    app = make_app(lambda: archive)
    fast, fast_idle, full, full_idle, engine, semantic = [], [], [], [], [], 0
    clock = _PaintClock()
    restore = clock.install()

    async def answered(screen: SearchScreen, query: str, rerank: bool) -> None:
        deadline = time.perf_counter() + 60
        while time.perf_counter() < deadline:
            req = screen.last_request
            if req is not None and req.query == query and req.rerank == rerank:
                return
            await asyncio.sleep(0.001)
        bar_value = screen.query_one("#search-query").value  # type: ignore[attr-defined]
        raise RuntimeError(
            f"no answer to {query!r} (rerank {rerank}) in 60 s; the bar holds {bar_value!r}, "
            f"the last answer was to {screen.last_request}"
        )

    try:
        async with app.run_test(size=TUI_SIZE) as pilot:
            await pilot.press("alt+2")  # (a digit on Sessions types into its text match)
            while not isinstance(app.screen, SearchScreen):
                await pilot.pause(0.01)
            screen = app.screen
            bar = screen.query_one(QueryInput)

            def focus_bar() -> None:
                # The key must add to the query, not replace it: a field selects its text when
                # it gets the focus (reset on every blur), and the timed key would replace it.
                bar.select_on_focus = False
                bar.focus()

            focus_bar()
            for raw in queries:
                query = " ".join(raw.split())
                if len(query) < 2:
                    continue
                bar.value = query[:-1]
                bar.cursor_position = len(bar.value)
                await answered(screen, query[:-1].strip(), False)
                focus_bar()
                await pilot.pause()
                clock.arm(query, False)
                t0 = time.perf_counter()
                await pilot.press(query[-1] if query[-1] != " " else "space")
                await answered(screen, query, False)
                fast.append((await clock.wait(query) - t0) * 1000)
                await pilot.pause()
                fast_idle.append((time.perf_counter() - t0) * 1000)
                shown = screen.last_response
                engine.append(shown.timing_ms if shown is not None else 0.0)
                clock.arm(query, True)
                t1 = time.perf_counter()
                await pilot.press("enter")
                await answered(screen, query, True)
                full.append((await clock.wait(query) - t1) * 1000)
                await pilot.pause()
                full_idle.append((time.perf_counter() - t1) * 1000)
                shown = screen.last_response
                semantic += bool(shown is not None and shown.semantic_search_used)
            await pilot.press("escape", "escape", "ctrl+q")
    finally:
        restore()
        archive.close()
    return {
        "fast": fast,
        "fast_idle": fast_idle,
        "full": full,
        "full_idle": full_idle,
        "engine": engine,
        "semantic_used": semantic,
    }


def search_keystroke(logs: Path, queries_file: Path, cache: Path) -> dict[str, Any] | None:
    """Keystroke → results on the dev logs through the warm daemon (None: the logs are absent)."""
    from cwtui.screens.search import SearchScreen

    if not logs.is_dir() or not queries_file.is_file():
        print(f"  search keystroke: skipped ({logs} or {queries_file} is absent)")
        return None
    home = cache / "tui-devlogs"
    saved = save_environ("CW_HOME")
    os.environ["CW_HOME"] = str(home)
    debounce, restore = SearchScreen.DEBOUNCE, SearchScreen.RESTORE
    SearchScreen.DEBOUNCE = 0.0  # the work, not the deliberate pause (see the docstring)
    # The warm-up and the timed run share one home: the timed run must not start from the
    # warm-up's last search restored.
    SearchScreen.RESTORE = False
    try:
        facts = build_dev_logs(home, logs)
        queries = [json.loads(line)["query"] for line in queries_file.read_text().splitlines()]
        asyncio.run(_keystrokes(queries[:3]))  # warm up the daemon and the app
        samples = asyncio.run(_keystrokes(queries))
    finally:
        SearchScreen.DEBOUNCE, SearchScreen.RESTORE = debounce, restore
        _stop(home)
        restore_environ(saved)
    return {
        **facts,
        "queries": len(samples["fast"]),
        "debounce_ms": round(debounce * 1000),
        "fast_ms": percentiles(samples["fast"]),
        "fast_until_idle_ms": percentiles(samples["fast_idle"]),
        "fast_engine_ms": percentiles(samples["engine"]),
        "full_ms": percentiles(samples["full"]),
        "full_until_idle_ms": percentiles(samples["full_idle"]),
        "semantic_used": samples["semantic_used"],
    }


READ_PAGES = 30
EXIT_SIZE = (160, 45)
EXIT_RUNS = 5
DEMO = REPO / "cwcore" / "demo"


async def _leave_once(read: bool) -> dict[str, float]:
    """One app: open the largest session, (read it), Esc, then ctrl+q; times in ms."""
    from textual.screen import Screen

    from cwcore.api import Archive
    from cwtui.app import make_app
    from cwtui.screens.sessions import SessionsScreen
    from cwtui.screens.transcript import TranscriptScreen
    from cwtui.widgets.sessions_table import SessionsTable

    archive = Archive.open()
    app = make_app(lambda: archive)
    below: list[Any] = [None]
    painted: list[float] = []
    refresh_layout = Screen._refresh_layout

    def frame(screen: Any, *args: Any, **kwargs: Any) -> Any:
        result = refresh_layout(screen, *args, **kwargs)
        if screen is below[0] and screen.is_current and not painted:
            painted.append(time.perf_counter())
        return result

    async def idle(pilot: Any) -> None:
        await app.workers.wait_for_complete()
        await pilot.pause()

    Screen._refresh_layout = frame  # type: ignore[method-assign, assignment]
    try:
        async with app.run_test(size=EXIT_SIZE) as pilot:
            deadline = time.perf_counter() + 120
            # The steady state: rows in and the projects counted (a count arriving while the
            # transcript is open would make the Esc frame repaint the projects pane for it).
            while not (
                isinstance(app.screen, SessionsScreen)
                and app.screen.query_one(SessionsTable).row_count
                and app.screen.overview is not None
            ):
                if time.perf_counter() > deadline:
                    raise RuntimeError("the sessions table or projects count not in 120 s")
                await pilot.pause(0.01)
            sessions = app.screen
            largest = max(
                sessions.query_one(SessionsTable)._sessions.values(), key=lambda r: r.messages
            )
            sessions.open(TranscriptScreen(largest.sessionId))
            while not (isinstance(app.screen, TranscriptScreen) and app.screen.body is not None):
                await pilot.pause(0.01)
            transcript = app.screen
            await idle(pilot)
            if read:
                await pilot.press("G")
                await idle(pilot)
                for _ in range(READ_PAGES):
                    await pilot.press("pageup")
                    await idle(pilot)
            mounted = transcript.view.mounted
            below[0] = sessions
            t0 = time.perf_counter()
            await pilot.press("escape")
            await pilot.pause()
            t_idle = time.perf_counter()
            while not painted:
                await pilot.pause(0.001)
            await idle(pilot)
            t_quit = time.perf_counter()
            await pilot.press("ctrl+q")
        t_gone = time.perf_counter()
    finally:
        Screen._refresh_layout = refresh_layout  # type: ignore[method-assign]
        archive.close()
    return {
        "messages": largest.messages,
        "mounted": mounted,
        "esc_ms": (painted[0] - t0) * 1000,
        "esc_idle_ms": (max(t_idle, painted[0]) - t0) * 1000,
        "quit_headless_ms": (t_gone - t_quit) * 1000,
    }


def _quit_in_terminal(open_transcript: bool) -> float:
    """``cw tui`` in a pseudo-terminal (160×45): ``ctrl+q`` once the screen is quiet (on the
    sessions screen, or on the first session's transcript), to the end of the process (ms)."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    pid, fd = pty.fork()
    if pid == 0:  # the child: cw tui, as a person starts it
        env = dict(os.environ, TERM="xterm-256color", PYTHONPATH=str(REPO))
        code = "import sys; sys.argv = ['cw', 'tui']; from cwtui.launch import main; main()"
        os.execve(sys.executable, [sys.executable, "-c", code], env)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", EXIT_SIZE[1], EXIT_SIZE[0], 0, 0))

    def quiet(gap: float, limit: float = 60.0) -> None:
        """Read until something was written and then nothing for ``gap`` seconds (a key sent
        before the app has put the terminal in raw mode is the tty's: ctrl+q is XON)."""
        end = time.monotonic() + limit
        seen = False
        while time.monotonic() < end:
            ready, _, _ = select.select([fd], [], [], gap)
            if not ready:
                if seen:
                    return
                continue
            seen = True
            try:
                if not os.read(fd, 65536):
                    return
            except OSError:
                return

    try:
        quiet(1.0)
        if open_transcript:
            os.write(fd, b"\r")
            quiet(1.0)
        t0 = time.monotonic()
        os.write(fd, b"\x11")  # ctrl+q
        while True:
            ready, _, _ = select.select([fd], [], [], 0.01)
            if ready:
                try:
                    if not os.read(fd, 65536):
                        break
                except OSError:
                    break
            done, _ = os.waitpid(pid, os.WNOHANG)
            if done:
                pid = 0
                break
            if time.monotonic() - t0 > 60:
                raise RuntimeError("cw tui did not quit in 60 s")
        if pid:
            os.waitpid(pid, 0)
        return (time.monotonic() - t0) * 1000
    finally:
        os.close(fd)


def leave_and_quit(home: Path, label: str, runs: int = EXIT_RUNS) -> dict[str, Any]:
    """Esc from the largest transcript and quit, on the archive at ``home`` (warm daemon)."""
    saved = save_environ("CW_HOME")
    os.environ["CW_HOME"] = str(home)
    try:
        asyncio.run(_leave_once(False))  # warm up the daemon and the app
        opened = [asyncio.run(_leave_once(False)) for _ in range(runs)]
        read = [asyncio.run(_leave_once(True)) for _ in range(runs)]
        terminal = [_quit_in_terminal(False) for _ in range(runs)]
        terminal_transcript = [_quit_in_terminal(True) for _ in range(runs)]
    finally:
        _stop(home)
        restore_environ(saved)
    out: dict[str, Any] = {
        "archive": label,
        "largest_session_messages": opened[0]["messages"],
        "mounted_as_opened": opened[0]["mounted"],
        "mounted_after_reading": read[0]["mounted"],
        "load_average": os.getloadavg()[0],
    }
    for name, samples in (("opened", opened), ("read", read)):
        for key in ("esc_ms", "esc_idle_ms", "quit_headless_ms"):
            out[f"{name}_{key}"] = percentiles([s[key] for s in samples])
    out["quit_terminal_ms"] = percentiles(terminal)
    out["quit_terminal_transcript_ms"] = percentiles(terminal_transcript)
    return out


def build_demo(home: Path) -> dict[str, Any]:
    """The bundled demo sessions imported once into ``home`` (reused when built)."""
    return build_dev_logs(home, DEMO)


def exits(cache: Path, synthetic: Path) -> list[dict[str, Any]]:
    """:func:`leave_and_quit` on the demo archive and on the larger one."""
    demo = cache / "tui-demo"
    facts = build_demo(demo)
    results = [dict(leave_and_quit(demo, "demo archive"), **facts)]
    print(f"  esc/quit: {json.dumps(results[-1])}", flush=True)
    logs = Path(os.environ.get("CW_BENCH_DEV_LOGS", DEV_LOGS))
    if logs.is_dir():
        home = cache / "tui-devlogs"
        facts = build_dev_logs(home, logs)
        results.append(dict(leave_and_quit(home, "dev logs (real text)"), **facts))
    else:
        results.append(leave_and_quit(synthetic, "synthetic (no dev logs here)"))
    print(f"  esc/quit: {json.dumps(results[-1])}", flush=True)
    return results


def _stop(home: Path) -> None:
    from cwcore.daemon import control

    control.stop(home)


def imports_ms() -> dict[str, float]:
    """Python start-up plus importing the TUI (not in the first-paint numbers)."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = {}
    for name, code in (("python_bare", "pass"), ("import_tui", "import cwtui.app")):
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], env=env, check=True)
            samples.append((time.perf_counter() - t0) * 1000)
        out[name] = round(sorted(samples)[len(samples) // 2], 1)
    return out


def run(n: int | None = None, quick: bool = False) -> dict[str, Any]:
    """Every section; ``quick`` (``python -m bench tui --quick``) keeps the keystroke, Esc and
    quit sections and skips the 200,000-message listing and first paint (and its build)."""
    if quick:
        return run_quick()
    n = n or int(os.environ.get("CW_BENCH_TUI_SIZE", SIZE))
    cache = Path(os.environ.get("CW_BENCH_CACHE", "/tmp/cw-bench-preflight"))
    home = cache / f"tui-{n}"
    runtime = Path(tempfile.mkdtemp(prefix="cwbt", dir="/tmp"))
    runtime.chmod(0o700)
    saved = save_environ("CW_HOME", "CW_NOW", "CW_EMBEDDED", "XDG_RUNTIME_DIR")
    os.environ.update({"CW_HOME": str(home), "CW_NOW": NOW, "XDG_RUNTIME_DIR": str(runtime)})
    os.environ.pop("CW_EMBEDDED", None)
    try:
        facts = build(home, n)
        print(f"  archive: {json.dumps(facts)}", flush=True)
        local = in_process(home)
        print(f"  in process: {json.dumps(local)}", flush=True)
        cold = asyncio.run(_paint_once())  # no daemon yet: `cw tui` starts it
        _stop(home)
        threading.Event().wait(0.5)
        cold_again = asyncio.run(_paint_once())
        socket = through_daemon(home)
        paint = first_paint(home)
        _stop(home)
        logs = Path(os.environ.get("CW_BENCH_DEV_LOGS", DEV_LOGS))
        queries = Path(os.environ.get("CW_BENCH_DEV_QUERIES", DEV_QUERIES))
        keystroke = search_keystroke(logs, queries, cache)
        leaving = exits(cache, home)
    finally:
        try:
            _stop(home)
        finally:
            shutil.rmtree(runtime, ignore_errors=True)
            restore_environ(saved)
    body = {
        **facts,
        "sessions": local["sessions"],
        "load_average": os.getloadavg()[0],
        "list_sessions_in_process": local,
        "list_sessions_daemon": socket,
        "first_paint_warm_daemon": paint,
        "first_paint_cold_daemon": {k: round(v, 1) for k, v in cold.items()},
        "first_paint_cold_daemon_2": {k: round(v, 1) for k, v in cold_again.items()},
        "startup": imports_ms(),
        "search_keystroke_dev_logs": keystroke,
        "esc_and_quit": leaving,
        "targets": TARGETS,
    }

    def pp(v: dict[str, float]) -> str:
        return f"{v['p50_ms']:.1f} / {v['p95_ms']:.1f}"

    rows: list[tuple[str, ...]] = [
        ("list_sessions first page (200), in process", pp(local["first_page"])),
        ("projects count with sparklines (facets), in process", pp(local["projects_count"])),
        ("list_sessions middle page, in process", pp(local["middle_page"])),
        (
            f"project filter ({local['small_project_sessions']} sessions)",
            pp(local["small_project"]),
        ),
        ("agent filter", pp(local["agent"])),
        ("since 30 days", pp(local["since_30d"])),
        ("sessions first page, through the daemon", pp(socket["first_page"])),
        ("projects count (facets), through the daemon", pp(socket["projects_count"])),
        ("TUI: Archive.open (warm daemon)", pp(paint["open_ms"])),
        ("TUI: app start → first rows", pp(paint["first_rows_ms"])),
        ("TUI: open + first rows", pp(paint["total_ms"])),
        ("TUI: app start → projects counted", pp(paint["projects_counted_ms"])),
        ("TUI: app start → first frame, instant empty archive", pp(paint["empty_archive_ms"])),
    ]
    rows += _keystroke_rows(keystroke)
    rows += _exit_rows(leaving)
    print_table(
        f"sessions listing and TUI first paint, {n:,} messages ({local['sessions']:,} sessions)",
        rows,
        ("what", "p50 / p95 ms"),
    )
    print(f"load average: {body['load_average']:.2f} (1 min) on {os.cpu_count()} cores")
    print(
        f"cold (daemon started on demand): open {cold['open_ms']:.0f} ms, first rows "
        f"{cold['first_rows_ms']:.0f} ms; again {cold_again['open_ms']:.0f} / "
        f"{cold_again['first_rows_ms']:.0f} ms; startup {body['startup']}"
    )
    print(f"written {write_result('tui', body)}")
    return body


if __name__ == "__main__":
    run(int(sys.argv[1]) if len(sys.argv) > 1 else None)


TARGETS = {"first_paint_ms": 1000, "search_keystroke_ms": 150, "quit_ms": 500, "esc_ms": 500}


def _pp(v: dict[str, float]) -> str:
    return f"{v['p50_ms']:.1f} / {v['p95_ms']:.1f}"


def _keystroke_rows(keystroke: dict[str, Any] | None) -> list[tuple[str, ...]]:
    if not keystroke:
        return []
    return [
        (
            f"search keystroke → results, dev logs ({keystroke['queries']} queries, fast"
            f" path, + {keystroke['debounce_ms']} ms debounce), key → answer painted",
            _pp(keystroke["fast_ms"]),
        ),
        ("  the same, key → app idle (Pilot's settling)", _pp(keystroke["fast_until_idle_ms"])),
        ("  of which the engine's search (timing_ms)", _pp(keystroke["fast_engine_ms"])),
        ("search Enter → answer painted (full, reranked)", _pp(keystroke["full_ms"])),
        ("  the same, Enter → app idle", _pp(keystroke["full_until_idle_ms"])),
    ]


def _exit_rows(leaving: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for r in leaving:
        name = f"{r['archive']}, largest session {r['largest_session_messages']:,} messages"
        rows += [
            (
                f"Esc from a transcript → screen below painted ({name};"
                f" {r['mounted_as_opened']} mounted)",
                _pp(r["opened_esc_ms"]),
            ),
            (
                f"  the same after reading it (End + {READ_PAGES} PageUp;"
                f" {r['mounted_after_reading']} mounted)",
                _pp(r["read_esc_ms"]),
            ),
            ("  the same, Esc → app idle (after reading)", _pp(r["read_esc_idle_ms"])),
            ("quit (ctrl+q) → headless app exited, after reading", _pp(r["read_quit_headless_ms"])),
            ("quit in a terminal (cw tui in a pty) → process exit", _pp(r["quit_terminal_ms"])),
            (
                "  the same with a transcript open",
                _pp(r["quit_terminal_transcript_ms"]),
            ),
        ]
    return rows


def run_quick() -> dict[str, Any]:
    """The keystroke, Esc and quit sections only (the larger archive: the dev logs, else a
    20,000-message synthetic one)."""
    cache = Path(os.environ.get("CW_BENCH_CACHE", "/tmp/cw-bench-preflight"))
    runtime = Path(tempfile.mkdtemp(prefix="cwbt", dir="/tmp"))
    runtime.chmod(0o700)
    saved = save_environ("CW_HOME", "CW_NOW", "CW_EMBEDDED", "XDG_RUNTIME_DIR")
    os.environ.update({"CW_NOW": NOW, "XDG_RUNTIME_DIR": str(runtime)})
    os.environ.pop("CW_EMBEDDED", None)
    synthetic = cache / "tui-20000"
    try:
        logs = Path(os.environ.get("CW_BENCH_DEV_LOGS", DEV_LOGS))
        queries = Path(os.environ.get("CW_BENCH_DEV_QUERIES", DEV_QUERIES))
        keystroke = search_keystroke(logs, queries, cache)
        if not logs.is_dir():
            os.environ["CW_HOME"] = str(synthetic)
            build(synthetic, 20_000)
        leaving = exits(cache, synthetic)
    finally:
        shutil.rmtree(runtime, ignore_errors=True)
        restore_environ(saved)
    body = {
        "quick": True,
        "load_average": os.getloadavg()[0],
        "search_keystroke_dev_logs": keystroke,
        "esc_and_quit": leaving,
        "targets": TARGETS,
    }
    print_table(
        "TUI: keystroke → results, Esc from a transcript, quit",
        _keystroke_rows(keystroke) + _exit_rows(leaving),
        ("what", "p50 / p95 ms"),
    )
    print(f"load average: {body['load_average']:.2f} (1 min) on {os.cpu_count()} cores")
    print(f"written {write_result('tui-quick', body)}")
    return body

"""``make screenshots``: a current image of every TUI screen, from the bundled demo archive.

Usage: ``python -m cwtui.screenshots [OUT_DIR]`` (default: ``screenshots/`` at the repository
root). It imports ``cwcore/demo/`` into a temporary ``CW_HOME`` (embedded, the clock fixed at
:data:`DEMO_NOW` so dates and sparklines are the same every run), drives the real app headless
with Textual's Pilot at each of :data:`SIZES`, and saves one SVG per screen
(``App.save_screenshot``) in ``OUT_DIR/<cols>x<rows>/``: sessions, transcript, find in a
transcript, search, search with filters and context, help, recall, supersede dialog, document
(audit), undo dialog, index, partial documents, hints, hint candidates (preflight decisions
frozen beforehand in the newest session, :data:`HINT_MESSAGES`). When
``rsvg-convert`` or the ``cairosvg`` package is available, each SVG is also converted to PNG;
without either, the SVGs alone are written (and stale PNGs are left alone).
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DEMO_DIR = REPO / "cwcore" / "demo"
OUT_DIR = REPO / "screenshots"
#: The smallest terminal the TUI must fully serve, and a roomy one.
SIZES = ((80, 24), (160, 45))
SIZE = SIZES[1]
DEMO_NOW = "2026-11-20T12:00:00Z"
#: The demo's story: the queue moved to RocksDB on 11-12 and back to SQLite on 11-15.
QUERY = "why did we move the queue back to SQLite"
DECISION_TEXT = "use RocksDB (rocksdict)"
REVERSAL_TEXT = "revert the RocksDB queue decision"
#: Preflight messages frozen in the newest demo session for the hints screen: a historical cue
#: about an identifier (a marker or an excerpt), an acknowledgement (no-query), a weak topic.
HINT_MESSAGES = (
    ("user:demo-1", "Last time, what was wrong with `parseRetryAfter`?"),
    ("user:demo-2", "ok thanks"),
    ("user:demo-3", "the queue lock file again"),
)

#: Every screen, in the order the README shows them: (file stem, caption).
SCREENS = (
    ("sessions", "Sessions: projects with activity sparklines, filters, sort, sessions"),
    ("transcript", "Transcript: Markdown, highlighted code, paired and folded tool calls"),
    ("transcript-find", "Find in a transcript: into folded tool output, n / N"),
    ("search", "Search: relevance bands, match types, preview, timeline"),
    ("search-context", "Search with inline filters and context (gather's neighbours)"),
    ("recall", "Recall: the exact source of a hit, the match highlighted"),
    ("supersede", "Supersede: reason, replacement and subject key"),
    ("document", "Document audit view: a superseded decision, still readable"),
    ("unsupersede", "Undo a supersession: an audited new record"),
    ("index", "Index: generation, handler outcomes, outbox, daemon"),
    ("partial", "The documents behind PARTIAL, and the limit each hit"),
    ("hints", "Hints: what the user said, frozen decisions, exact bytes, diagnostics"),
    ("candidates", "A decision's candidates: recall or transcript each"),
    ("help", "Help: the keys of the current screen (here, search)"),
)


async def settle(pilot: Any) -> None:
    """Wait until no worker runs and their messages are handled (as the TUI tests do)."""
    app = pilot.app
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if not any(worker.is_running for worker in app.workers):
            await pilot.pause()
            return
    raise RuntimeError("workers never settled")


async def drive(app: Any, out: Path, size: tuple[int, int] = SIZE) -> list[Path]:
    """Walk through every screen and save an SVG of each; returns the files written."""
    from cwtui.screens.search import SearchScreen

    written: list[Path] = []

    async def shot(pilot: Any, name: str) -> None:
        await settle(pilot)
        app.clear_notifications()
        await pilot.pause()
        written.append(Path(app.save_screenshot(f"{name}.svg", str(out))))

    async with app.run_test(size=size) as pilot:
        await shot(pilot, "sessions")

        # The newest session's transcript (the one that asks why the queue is on SQLite), at
        # its first prompt.
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("right_square_bracket")
        await shot(pilot, "transcript")
        await pilot.press("slash", *"WAL mode", "enter")
        await shot(pilot, "transcript-find")
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("escape")

        # Search: type (the fast path), then Enter for the full search.
        await pilot.press("alt+2")
        await settle(pilot)
        await pilot.press(*QUERY)
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, SearchScreen), screen
        hits = screen.hits
        decision = next(i for i, h in enumerate(hits) if DECISION_TEXT in h.snippet)
        reversal = next(h for h in hits if REVERSAL_TEXT in h.snippet)
        await pilot.press(*(["down"] * decision))
        await shot(pilot, "search")
        await pilot.press("f1")
        await shot(pilot, "help")
        await pilot.press("escape")

        # Inline filters and the context toggle, then back to the plain search.
        query = screen.query_one("#search-query")
        saved = query.value  # type: ignore[attr-defined]
        query.value = "queue SQLite role:user since:2026-11-14"  # type: ignore[attr-defined]
        await settle(pilot)
        await pilot.press("f6")
        await shot(pilot, "search-context")
        await pilot.press("f6", "f6")
        query.value = saved  # type: ignore[attr-defined]
        await settle(pilot)
        screen.query_one("#results").focus()
        await pilot.press(*(["down"] * decision))
        await settle(pilot)

        await pilot.press("enter")
        await shot(pilot, "recall")

        # Supersede the RocksDB decision by its reversal, then audit it.
        await pilot.press("ctrl+x")
        await settle(pilot)
        await pilot.press(*"Reversed on 2026-11-15: RocksDB admits one process (ADR 0008)")
        await pilot.press("enter", *reversal.document_id, "enter", *"queue-backend")
        await shot(pilot, "supersede")
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("ctrl+d")
        await shot(pilot, "document")
        await pilot.press("U")
        await settle(pilot)
        await pilot.press(*"the reversal is under review")
        await shot(pilot, "unsupersede")
        await pilot.press("escape")

        await pilot.press("3")
        await shot(pilot, "index")
        await pilot.press("p")
        await shot(pilot, "partial")
        await pilot.press("escape")

        # The newest session is still selected on the Sessions screen: its frozen hints.
        await pilot.press("4")
        await shot(pilot, "hints")
        await pilot.press("c")
        await shot(pilot, "candidates")
    return written


def _for_converter(svg: Path, tmp: Path) -> Path:
    """A copy of ``svg`` that converters lay out like browsers do: Textual writes spaces as
    no-break spaces, which rsvg/cairo draw from a fallback font of another width; plain spaces
    with ``xml:space="preserve"`` keep every column where the terminal had it."""
    text = svg.read_text(encoding="utf-8").replace("&#160;", " ")
    text = text.replace("<svg ", '<svg xml:space="preserve" ', 1)
    copy = tmp / svg.name
    copy.write_text(text, encoding="utf-8")
    return copy


def to_png(svgs: list[Path]) -> str | None:
    """Convert each SVG to a PNG beside it; returns the converter used (None: none found)."""
    rsvg = shutil.which("rsvg-convert")
    cairosvg: Any = None
    if rsvg is None:
        try:
            cairosvg = importlib.import_module("cairosvg")
        except ImportError:
            return None
    with tempfile.TemporaryDirectory(prefix="cw-svg-") as tmp:
        for svg in svgs:
            source, png = _for_converter(svg, Path(tmp)), svg.with_suffix(".png")
            if rsvg:
                subprocess.run([rsvg, "-o", str(png), str(source)], check=True)
            else:
                cairosvg.svg2png(url=str(source), write_to=str(png))
    return "rsvg-convert" if rsvg else "cairosvg"


def main(argv: list[str]) -> int:
    root = Path(argv[0]).resolve() if argv else OUT_DIR
    written: list[Path] = []
    for size in SIZES:
        out = root / f"{size[0]}x{size[1]}"
        out.mkdir(parents=True, exist_ok=True)
        status = _capture(out, size, written)
        if status:
            return status
    for path in written:
        print(path.relative_to(REPO) if path.is_relative_to(REPO) else path)
    converter = to_png(written)
    if converter:
        print(f"PNG copies written with {converter}.")
    else:
        print("No rsvg-convert or cairosvg found: SVG only (apt-get install librsvg2-bin).")
    return 0


def _capture(out: Path, size: tuple[int, int], written: list[Path]) -> int:
    """Every screen at ``size`` into ``out`` (a fresh demo archive each time)."""
    with tempfile.TemporaryDirectory(prefix="cw-screenshots-") as home:
        # An empty user HOME: the index view's source coverage shows no file of this machine.
        user = Path(home) / "user-home"
        user.mkdir()
        os.environ.update(CW_HOME=home, CW_EMBEDDED="1", CW_NOW=DEMO_NOW, HOME=str(user))
        for name in ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "APPDATA"):
            os.environ.pop(name, None)
        from cwcore.api import Archive
        from cwtui.app import make_app

        with Archive.open(Path(home), embedded=True) as archive:
            summary = archive.import_paths([DEMO_DIR])
            if not summary.errors:
                newest = archive.sessions(limit=1)[0][0].sessionId
                for key, message in HINT_MESSAGES:
                    archive.preflight(message, session=newest, message_key=key)
        if summary.errors:
            print(f"demo import failed: {summary.errors}", file=sys.stderr)
            return 1
        app = make_app(lambda: Archive.open(Path(home), embedded=True))
        shots = asyncio.run(drive(app, out, size))
    missing = {name for name, _ in SCREENS} - {path.stem for path in shots}
    if missing:
        print(f"screens not captured: {', '.join(sorted(missing))}", file=sys.stderr)
        return 1
    written.extend(shots)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

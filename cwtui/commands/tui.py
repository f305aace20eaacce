"""``cw tui``: the terminal UI (registered by the CLI; see :mod:`cwtui.app`)."""

from __future__ import annotations

import sys

from cwcore.api import Archive
from cwcore.errors import CwError
from cwtui.output import safe


def tui() -> None:
    """Browse the archive in the terminal UI."""
    # Open before starting the UI: a store or daemon problem is one clear line on stderr, not a
    # full-screen app with nothing in it. The app then uses (and finally closes) this archive.
    try:
        archive = Archive.open()
    except CwError as exc:
        print(f"cw: cannot open the archive: {safe(exc.message)}", file=sys.stderr)
        raise SystemExit(exc.exit_code) from None

    from cwtui.app import make_app  # Textual loads only for this command

    app = make_app(lambda: archive)
    app.run()
    if app.return_code:  # Textual printed a traceback: the exit status must say so too
        raise SystemExit(app.return_code)

"""Opening a message in ``$PAGER`` or ``$EDITOR``: the TUI steps aside while the program runs.

The text goes to a private temporary file (a copy: what an editor changes there is not written
back to the archive) that is removed once the program exits. The command comes from
``$PAGER`` (default ``less``) or ``$VISUAL`` / ``$EDITOR`` (default ``vi``), split like a shell
word list; the file's path is its last argument.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import Any

DEFAULT_PAGER = "less"
DEFAULT_EDITOR = "vi"


def command(editor: bool) -> list[str]:
    """The pager's or the editor's command line from the environment."""
    if editor:
        raw = os.environ.get("VISUAL") or os.environ.get("EDITOR") or DEFAULT_EDITOR
    else:
        raw = os.environ.get("PAGER") or DEFAULT_PAGER
    try:
        words = shlex.split(raw)
    except ValueError:
        words = []
    return words or [DEFAULT_EDITOR if editor else DEFAULT_PAGER]


def open_text(app: Any, text: str, *, editor: bool = False, name: str = "message") -> str | None:
    """Show ``text`` in the pager (or the editor) with the app suspended; returns an error
    line for a notification, or None when the program ran and exited 0."""
    from textual.app import SuspendNotSupported

    argv = command(editor)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60] or "message"
    folder = Path(tempfile.mkdtemp(prefix="cw-view-"))
    path = folder / f"{safe}.txt"
    try:
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        path.chmod(0o600)
        try:
            with app.suspend():
                done = subprocess.run([*argv, str(path)], check=False)
        except SuspendNotSupported:
            return "This terminal cannot hand the screen to another program."
        except FileNotFoundError:
            return f"No such program: {argv[0]} (set {'EDITOR' if editor else 'PAGER'})."
        except OSError as exc:
            return f"Cannot run {argv[0]}: {exc}"
        if done.returncode:
            return f"{argv[0]} exited with status {done.returncode}."
        return None
    finally:
        path.unlink(missing_ok=True)
        folder.rmdir()

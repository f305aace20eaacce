"""``make run``: import the bundled demo archive (or the sessions named by SOURCE) and show them.

Usage: ``python -m cwtui.demo [SOURCE...]``. Without SOURCE it imports ``cwcore/demo/``, the
invented sessions that ship with cw; with SOURCE (``make run SOURCE=~/.claude/projects``) it
imports exactly those paths and nothing else.
"""

from __future__ import annotations

import sys
from pathlib import Path

from cwtui.cli import app

DEMO_DIR = Path(__file__).resolve().parent.parent / "cwcore" / "demo"
DEMO_QUERY = "ERR_LEASE_EXPIRED"


def _cw(*args: str) -> int:
    print(f"\n$ cw {' '.join(args)}", flush=True)
    try:
        app(list(args), standalone_mode=False)
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception as exc:  # typer.Exit is a click exception subclass
        code = getattr(exc, "exit_code", 1)
        return int(code)
    return 0


def main(argv: list[str]) -> int:
    sources = [a for a in argv if a.strip()] or [str(DEMO_DIR)]
    status = _cw("import", *sources)
    if status not in (0, 2):
        return status
    _cw("sessions", "--limit", "10")
    from cwcore.api import Archive

    with Archive.open() as archive:
        rows, _ = archive.sessions(limit=1)
    if rows:
        _cw("show", rows[0].sessionId)
    commands = {c.name for c in app.registered_commands}
    if "search" in commands:
        _cw("search", DEMO_QUERY if not argv else "error")
    print("\nNext: .venv/bin/cw --help", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

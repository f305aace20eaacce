"""The ``cw`` entry point: the lean path for the calls scripts make, else the full CLI.

``cw search|recall|preflight|sessions … --json`` on a store whose daemon is running is
answered by :mod:`cwtui.lean` without importing Typer, Rich or the engine's client modules
(process start to last byte is then mostly the interpreter's own start-up); every other
command, and every case the lean path declines, runs :func:`cwtui.cli.main` with the same
arguments.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] in (["search"], ["recall"], ["preflight"], ["sessions"]) and "--json" in argv:
        from cwtui import lean

        code = lean.run(argv[0], argv[1:])
        if code is not None:
            sys.exit(code)
    from cwtui.cli import main as full

    full()


if __name__ == "__main__":
    main()

"""``python -m bench [NAME...] [--quick]``: run the benchmarks (all by default), print tables,
write JSON.

Each bench module exposes ``run() -> dict`` and writes ``bench/results/<name>.json``. ``realtext``
measures cw on real conversations beside SQLite FTS5 (the claims); ``search`` is the synthetic
Zipfian corpus, kept for scale only. ``--quick`` runs the benches that have a quick mode
(``realtext``) at small sizes, to check the machinery.
"""

from __future__ import annotations

import importlib
import inspect
import sys

from bench.common import machine

BENCHES = [
    "realtext",
    "search",
    "daemon",
    "admission",
    "import_memory",
    "importers",
    "indexing",
    "semantic",
    "preflight",
    "cli_start",
    "tui",
    "reservation",
    "fairness",
    "scale",  # real text repeated ×N (--copies N, default 4), through a daemon beside FTS5
]


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    if argv[:1] == ["scale"]:  # the one bench with options of its own (--copies N, --idle S)
        return int(importlib.import_module("bench.scale").main(argv[1:]))
    names = [a for a in argv if a != "--quick"] or BENCHES
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(f"unknown bench: {', '.join(unknown)}; known: {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    print(f"machine: {machine()}")
    for name in names:
        run = importlib.import_module(f"bench.{name}").run
        if "quick" in inspect.signature(run).parameters:
            run(quick=quick)
        else:
            run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

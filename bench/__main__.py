"""``python -m bench [NAME...]``: run the benchmarks (all by default), print tables, write JSON.

Each bench module exposes ``run() -> dict`` and writes ``bench/results/<name>.json``.
"""

from __future__ import annotations

import importlib
import sys

from bench.common import machine

BENCHES = [
    "search",
    "daemon",
    "admission",
    "importers",
    "indexing",
    "semantic",
    "preflight",
    "tui",
    "reservation",
]


def main(argv: list[str]) -> int:
    names = argv or BENCHES
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(f"unknown bench: {', '.join(unknown)}; known: {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    print(f"machine: {machine()}")
    for name in names:
        importlib.import_module(f"bench.{name}").run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

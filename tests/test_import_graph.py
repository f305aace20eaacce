"""cwcore's import graph has no cycle, counting every import statement (function-level and
``TYPE_CHECKING`` ones included) between its packages and top-level modules.

import-linter's layers contract (``make lint``) orders the packages it names; this test also
covers the modules it does not name (``browse``, ``views``, ``reads``, ``bands``, ...), where a
pair importing each other inside functions would otherwise go unseen.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "cwcore"


def _unit(module: str) -> str:
    """The graph node of a dotted module: its ``cwcore.<package>`` or top-level module."""
    return ".".join(module.split(".")[:2])


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT.parent).with_suffix("").parts).removesuffix(".__init__")


def import_graph() -> dict[str, set[str]]:
    """``unit -> units it imports`` over every ``.py`` file of cwcore (absolute imports; the
    package uses no relative ones)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in ROOT.rglob("*.py"):
        source = _unit(_module_name(path))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                target = _unit(name)
                if name.startswith("cwcore.") and target != source:
                    graph[source].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_cycles_finds_a_planted_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_cwcore_packages_and_modules() -> None:
    graph = import_graph()
    assert "cwcore.engine" in graph and "cwcore.retrieve" in graph  # the walk saw the tree
    assert cycles(graph) == []

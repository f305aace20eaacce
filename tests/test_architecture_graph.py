"""docs/architecture.md draws the package imports as they are.

The drawing is the transitive reduction of the graph of direct imports between the packages of
the layers contract: every arrow must be a real import, and every real import must follow a path
of arrows. A review found the old drawing showed three imports that did not exist.
"""

from __future__ import annotations

import re
import tomllib
from collections import defaultdict
from functools import cache
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def _packages() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["name"] == "cwcore layers")
    return [name.strip() for layer in layers for name in layer.split("|")]


@cache
def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("cwcore", "cwtui")


def _short(package: str) -> str:
    return package.rpartition(".")[2]


def _real_edges() -> set[tuple[str, str]]:
    graph, packages = _graph(), _packages()
    return {
        (_short(a), _short(b))
        for a in packages
        for b in packages
        if a != b and graph.direct_import_exists(importer=a, imported=b, as_packages=True)
    }


def _reduction(edges: set[tuple[str, str]]) -> set[tuple[str, str]]:
    following: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        following[a].add(b)

    def reachable_without(start: str, edge: tuple[str, str]) -> set[str]:
        seen: set[str] = set()
        stack = [b for b in following[start] if (start, b) != edge]
        while stack:
            node = stack.pop()
            if node not in seen:
                seen.add(node)
                stack.extend(following[node])
        return seen

    return {(a, b) for a, b in edges if b not in reachable_without(a, (a, b))}


def _drawn_edges() -> set[tuple[str, str]]:
    text = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    block = re.search(r"```mermaid\nflowchart TD\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md lost its layers drawing"
    edges = set()
    for line in block.group(1).splitlines():
        match = re.fullmatch(r"\s*(\w+)(?:\[\"[^\"]*\"\])?\s*-->\s*(\w+)\s*", line)
        if match:
            edges.add((match.group(1), match.group(2)))
    return edges


def test_the_drawing_is_the_reduced_import_graph() -> None:
    drawn = {(a, b) for a, b in _drawn_edges() if a != "faces"}
    real = _reduction(_real_edges())
    assert drawn - real == set(), "drawn arrows that are not (reduced) imports"
    assert real - drawn == set(), "imports the drawing does not show"


@pytest.mark.parametrize("target", ["api", "hosts"])
def test_the_faces_arrows_exist(target: str) -> None:
    assert ("faces", target) in _drawn_edges()
    assert _graph().direct_import_exists(
        importer="cwtui", imported=f"cwcore.{target}", as_packages=True
    )


def test_reduction_keeps_a_path_for_every_import() -> None:
    edges = {("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")}
    assert _reduction(edges) == {("a", "b"), ("b", "c"), ("c", "d")}

"""Tests reach past the Archive facade only through ``tests/support.py`` (issue 37).

Read as syntax, not run: an attribute ``.engine`` (the embedded engine), a call of
``for_engine`` (the semantic tier) or a private name of the engine, its store, its semantic tier
or its index worker, anywhere in ``tests/`` but the support module, is a reach the support
module should give a name instead. ``ALLOWED`` lists the ones kept, each with why; an entry
that stops matching fails too, so the list only shrinks.
"""

from __future__ import annotations

import ast

from tests.helpers import REPO

TESTS = REPO / "tests"
SUPPORT = TESTS / "support.py"

#: The engine-side classes whose private names a test may not use directly.
INSIDES = {
    "cwcore/engine.py": {"Engine"},
    "cwcore/store/rocks.py": {"Store", "Batch"},
    "cwcore/semantic/runtime.py": {"Semantic"},
    "cwcore/index/worker.py": {"IndexWorker"},
}

#: Private names of those classes that other objects tests legitimately touch also use (a
#: Textual widget's ``_options``, an embedder's ``_lock``): matching them would only flag those.
SHARED_NAMES = {"_cache", "_index", "_lock", "_options", "_store"}

#: (file, name) -> why the reach stays.
ALLOWED = {
    ("tests/test_services.py", "for_engine"): "checks for_engine itself: one tier per engine",
}


def private_names() -> set[str]:
    """The private attributes and methods of the classes in ``INSIDES``, read from source."""
    names: set[str] = set()
    for path, classes in INSIDES.items():
        tree = ast.parse((REPO / path).read_text(encoding="utf-8"))
        for cls in ast.walk(tree):
            if not (isinstance(cls, ast.ClassDef) and cls.name in classes):
                continue
            for node in ast.walk(cls):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    name = node.name
                elif (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "self"
                ):
                    name = node.attr
                else:
                    continue
                if name.startswith("_") and not name.startswith("__"):
                    names.add(name)
    return names - SHARED_NAMES


def reaches(source: str, private: set[str]) -> list[tuple[int, str]]:
    """(line, name) of every reach past the facade in ``source``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
            if node.attr == "engine" and not (
                isinstance(node.value, ast.Name) and node.value.id == "cwcore"
            ):
                found.append((node.lineno, "engine"))
            elif node.attr in private and not own:
                found.append((node.lineno, node.attr))
            elif node.attr == "for_engine":
                found.append((node.lineno, "for_engine"))
        elif isinstance(node, ast.Name) and node.id == "for_engine":
            found.append((node.lineno, "for_engine"))
        elif isinstance(node, ast.ImportFrom):
            found += [(node.lineno, a.name) for a in node.names if a.name == "for_engine"]
    return found


def test_the_private_names_are_read_from_the_engine() -> None:
    names = private_names()
    assert {"_maintenance_step", "_sample_compaction", "_db", "_embedder", "_publish"} <= names
    assert not names & SHARED_NAMES


def test_the_check_finds_each_kind_of_reach() -> None:
    planted = (
        "from cwcore.semantic.runtime import for_engine\n"
        "import cwcore.engine\n"
        "engine = archive.engine\n"
        "report = engine._maintenance_step()\n"
        "self._db = None\n"
        "tier = runtime.for_engine(engine)\n"
    )
    got = reaches(planted, private_names())
    assert sorted(got) == [
        (1, "for_engine"),
        (3, "engine"),
        (4, "_maintenance_step"),
        (6, "for_engine"),
    ]


def test_only_the_support_module_reaches_past_the_facade() -> None:
    private = private_names()
    seen: dict[tuple[str, str], list[int]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        if path == SUPPORT:
            continue
        rel = path.relative_to(REPO).as_posix()
        for line, name in reaches(path.read_text(encoding="utf-8"), private):
            seen.setdefault((rel, name), []).append(line)
    unexpected = {key: lines for key, lines in seen.items() if key not in ALLOWED}
    assert not unexpected, f"use (or add) an accessor of tests/support.py: {unexpected}"
    stale = sorted(set(ALLOWED) - set(seen))
    assert not stale, f"no longer reached, drop from ALLOWED: {stale}"

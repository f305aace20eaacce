"""The engine's method table: built in one place, no name defined twice, every method a face
calls present, and each method's output bound and passivity exactly as the protocol declares."""

from __future__ import annotations

import ast
import threading
from pathlib import Path
from typing import Any

import pytest

from cwcore.contract import methods as catalogue
from cwcore.daemon.service import DEFAULT_SERVICE, load_factory
from cwcore.engine import DEFAULT_OUTPUT_BYTES, Engine
from cwcore.errors import CwError, InvalidInput
from cwcore.methods import TABLE, Method, MethodTable, make_service

ROOT = Path(__file__).resolve().parents[1]
MiB = 1024 * 1024
SHOW_BYTES = 6_356_992  # large_results.MAX_INLINE_BYTES: six inline windows and an envelope

#: name -> (output bound in bytes, passive): what the daemon reserves and what counts as
#: foreground activity. A change here changes the daemon protocol.
EXPECTED = {
    "bound.memory": (MiB, False),
    "bound.messages": (2 * MiB, False),
    "bound.sessions": (MiB, False),
    "context": (MiB, False),
    "counts": (MiB, True),
    "doctor": (MiB, False),
    "export": (SHOW_BYTES, False),
    "facets": (MiB, False),
    "forget": (MiB, False),
    "forget.resolve": (MiB, False),
    "gather": (4 * MiB, False),
    "hints": (8 * MiB, False),
    "hints.locate": (MiB, False),
    "hints.maintain": (MiB, False),
    "hints.rotate": (MiB, False),
    "hook.turn": (MiB, False),
    "import": (MiB, False),
    "index.partial": (MiB, True),
    "index.rebuild": (MiB, False),
    "index.run": (MiB, False),
    "index.status": (MiB, True),
    "index.verify": (4 * MiB, False),
    "markdown.read": (2 * MiB, False),
    "markdown.read-entry": (2 * MiB, False),
    "markdown.search": (2 * MiB, False),
    "memory.add": (MiB, False),
    "memory.contest": (MiB, False),
    "memory.context": (4 * MiB, False),
    "memory.delete": (MiB, False),
    "memory.deprecate": (MiB, False),
    "memory.list": (8 * MiB, False),
    "memory.show": (MiB, False),
    "models.install": (MiB, False),
    "models.install_reranker": (MiB, False),
    "models.status": (MiB, False),
    "preflight": (MiB, False),
    "recall": (16 * MiB, False),
    "search": (4 * MiB, False),
    "semantic.embed_pending": (MiB, False),
    "semantic.status": (MiB, False),
    "sessions": (MiB, False),
    "sessions.resolve": (MiB, False),
    "show": (SHOW_BYTES, False),
    "show.document": (SHOW_BYTES, False),
    "sources": (MiB, True),
    "supersede": (MiB, False),
    "supersede.undo": (MiB, False),
    "sync": (MiB, False),
}


def _answer(_engine: Any, _params: dict[str, Any], _emit: Any, _cancel: Any) -> dict[str, Any]:
    return {"ok": True}


def _called_methods() -> set[str]:
    """Every method name the faces send: ``.call("NAME", ...)`` or ``.ask(SPEC, ...)`` in the
    Archive facade (which the CLI, the TUI and the MCP server go through) and in cwtui, and the
    hook client's ``"method": "NAME"`` request."""
    files = [ROOT / "cwcore" / "api.py", *sorted((ROOT / "cwtui").rglob("*.py"))]
    files.append(ROOT / "cwcore" / "hosts" / "hook_client.py")
    names: set[str] = set()
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "call"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value)
            if (  # a declared method: ``.ask(SPEC, ...)`` names its Spec in the catalogue
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "ask"
                and node.args
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id.isupper()
            ):
                names.add(getattr(catalogue, node.args[0].id).name)
            if isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "method"
                        and isinstance(value, ast.Constant)
                        and isinstance(value.value, str)
                    ):
                        names.add(value.value)
    return {n for n in names if not n.startswith("daemon.")}  # the daemon answers those itself


def test_a_name_defined_twice_is_refused() -> None:
    with pytest.raises(CwError, match="'twice' is defined twice"):
        MethodTable([Method("once", _answer), Method("twice", _answer), Method("twice", _answer)])


def test_every_method_a_face_calls_is_in_the_table() -> None:
    called = _called_methods()
    # The extraction itself works: names of every area are among them.
    assert {"import", "search", "recall", "hook.turn", "bound.messages", "models.status"} <= called
    assert called - TABLE.names == set()


def test_output_bounds_and_passive_methods_are_the_declared_ones() -> None:
    assert {m.name: (m.output_bytes, m.passive) for m in TABLE} == EXPECTED
    assert TABLE.passive_names == {"counts", "index.partial", "index.status", "sources"}
    assert TABLE.output_bytes("no.such.method") == DEFAULT_OUTPUT_BYTES
    assert TABLE.handler("no.such.method") is None and not TABLE.passive("no.such.method")


def test_the_engine_answers_from_the_table_it_was_given(cw_home: Path) -> None:
    table = MethodTable([Method("t.answer", _answer, output_bytes=3 * MiB, passive=True)])
    engine = Engine(cw_home, table)
    try:
        assert engine.call("t.answer", {}, lambda _e: None, threading.Event()) == {"ok": True}
        assert engine.max_output_bytes("t.answer", {}) == 3 * MiB
        with pytest.raises(InvalidInput, match="unknown method 'search'"):
            engine.call("search", {"query": "x"}, lambda _e: None, threading.Event())
    finally:
        engine.close()


def test_the_daemon_loads_the_engine_with_the_full_table() -> None:
    assert load_factory(DEFAULT_SERVICE) is make_service


def test_every_declared_method_is_answered_through_its_contract(archive: Any) -> None:
    """A method declared in cwcore.contract.methods is in the table with its declared limits;
    its request is checked at the edge (a wrong type names the key, before any work) and its
    answer comes back as the declared record."""
    from cwcore.contract.facets import Facets, FacetsRequest
    from cwcore.contract.methods import DECLARED, FACETS

    for spec in DECLARED:
        method = TABLE.get(spec.name)
        assert method is not None, spec.name
        assert method.passive == spec.passive
        assert method.output_bytes == (spec.output_bytes or DEFAULT_OUTPUT_BYTES)
    with pytest.raises(InvalidInput, match=r"^agent must be a string$"):
        archive.call("facets", {"agent": 3})
    with pytest.raises(InvalidInput, match=r"^since must be an ISO-8601"):
        archive.call("facets", {"since": "yesterday-ish"})
    answer = archive.ask(FACETS, FacetsRequest(agent="codex"))
    assert isinstance(answer, Facets) and answer == archive.facets(agent="codex")

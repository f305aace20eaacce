"""The engine's method table: every request the daemon serves, built here and only here.

Each area's module lists its methods (:class:`~cwcore.methods.registry.Method`: name, handler,
output bound, passive); :data:`TABLE` joins those lists, and a name defined twice fails the
import. A new method is a handler and a line in its area's list; a new area is a module and a
line below. The engine is handed this table by whoever opens it (:func:`make_service`), so the
engine itself imports no handler.

Areas: :mod:`.archive` (import, sync, sources, doctor, session and document reads, forget,
supersede), :mod:`.index`, :mod:`.retrieval` (search, recall, gather), :mod:`.hints`,
:mod:`.memory`, :mod:`.markdown`, :mod:`.semantic` (models and embeddings) and :mod:`.hosts`
(the project-bound reads of the MCP server). A handler's request is parsed and checked by its
declared record (:mod:`cwcore.contract.methods`), never by hand.
"""

from __future__ import annotations

from pathlib import Path

from cwcore.engine import Engine
from cwcore.methods import archive, hints, hosts, index, markdown, memory, retrieval, semantic
from cwcore.methods.registry import Method, MethodTable

__all__ = ["TABLE", "Method", "MethodTable", "make_service"]

TABLE = MethodTable(
    [
        *archive.METHODS,
        *index.METHODS,
        *retrieval.METHODS,
        *hints.METHODS,
        *memory.METHODS,
        *markdown.METHODS,
        *semantic.METHODS,
        *hosts.METHODS,
    ]
)


def make_service(home: Path) -> Engine:
    """The engine over ``home`` with the full method table: the daemon's service factory
    (``cwcore.methods:make_service``) and what an embedded archive opens."""
    return Engine(home, TABLE)

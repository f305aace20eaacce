"""The typed view of the open engine that features below it take (issue 37: no ``engine: Any``).

mypy checks that :class:`cwcore.engine.Engine` satisfies :class:`Services` and
:class:`SearchServices` (the assignments below); the test checks the semantic tier is one per
engine, whichever type names it.
"""

from __future__ import annotations

from cwcore.api import Archive
from cwcore.engine import Engine
from cwcore.hints.services import SearchServices
from cwcore.semantic import runtime
from cwcore.services import Services
from tests.support import engine_of


def test_the_engine_is_the_services_features_take(archive: Archive) -> None:
    engine: Engine = engine_of(archive)
    services: Services = engine
    searching: SearchServices = engine
    assert services.store is searching.store
    assert runtime.for_engine(engine) is runtime.for_engine(services)

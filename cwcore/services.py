"""What the engine's features read of an open engine, typed.

Features below :mod:`cwcore.engine` in the layers (hints, memory, the bound reads, the semantic
tier) are handed the open engine but may not import it; they name it as :class:`Services`, the
part they use. :class:`cwcore.engine.Engine` satisfies it structurally (a test checks), so a
feature that reaches for anything else fails type checking instead of at run time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from cwcore.config import Settings
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store


class Services(Protocol):
    """The open store's folder (``CW_HOME``), settings, store and canonical reader."""

    @property
    def home(self) -> Path: ...

    @property
    def settings(self) -> Settings: ...

    @property
    def store(self) -> Store: ...

    @property
    def reader(self) -> Reader: ...

"""What preflight and ``hints.locate`` read of the open engine besides :class:`Services`: the
search context (signer, lease minutes, limits) and the index worker (the BM25 reader)."""

from __future__ import annotations

from typing import Protocol

from cwcore.index.worker import IndexWorker
from cwcore.retrieve.search import SearchContext
from cwcore.services import Services


class SearchServices(Services, Protocol):
    """:class:`Services` plus the engine's search context and index worker."""

    @property
    def indexer(self) -> IndexWorker: ...

    def search_context(self) -> SearchContext: ...

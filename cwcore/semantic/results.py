"""What ``models.status``, ``models.install`` and ``models.install_reranker`` answer, as frozen
dataclasses.

:mod:`cwcore.methods.semantic` builds the answers as JSON (``cw models … --json`` and the daemon
protocol carry them unchanged); :class:`cwcore.api.Archive` turns them into these with
``from_json()`` so the faces read attributes. ``to_json()`` keeps exactly the keys, order and
values the engine answers, and ``from_json(x).to_json() == x``.

A model folder's answer starts with the fields of its ``manifest.json`` as the install wrote them
(an open set: older installs wrote other fields, and the engine does not interpret them), then
the fields the engine adds, always in the order of :data:`ENGINE_KEYS`, each only when present.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from cwcore.index.results import SemanticProgress

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


@dataclass(frozen=True)
class SelfTest:
    """One test embedding of two related and one unrelated sentence. When it ran, ``dim`` is the
    vector width, ``related``/``unrelated`` the cosine similarities (four decimals) and ``ms``
    its wall time in milliseconds; when the model could not load, ``ok`` is false and
    ``category``/``error`` say why."""

    ok: bool
    dim: int | None = None
    related: float | None = None
    unrelated: float | None = None
    ms: float | None = None
    category: str | None = None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"ok": self.ok}
        for key, value in (
            ("dim", self.dim),
            ("related", self.related),
            ("unrelated", self.unrelated),
            ("ms", self.ms),
            ("category", self.category),
            ("error", self.error),
        ):
            if value is not None:
                body[key] = value
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SelfTest:
        return cls(
            ok=body["ok"],
            dim=body.get("dim"),
            related=body.get("related"),
            unrelated=body.get("unrelated"),
            ms=body.get("ms"),
            category=body.get("category"),
            error=body.get("error"),
        )


@dataclass(frozen=True)
class PinnedRevision:
    """The reranker revision searches require: ``rerankerModelRevision`` when set, else the
    content digest recorded at install, else none (``source`` says which)."""

    model: str
    revision: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "revision": self.revision, "source": self.source}


@dataclass(frozen=True)
class ModelFolder:
    """One model folder: its manifest fields (read-only, in the order written; a status answer
    has ``installed`` true or false in place of the install time, an install answer the time),
    its path, and what the engine adds: the total size of its files in bytes (``size_bytes``),
    a ``note`` when nothing is installed, a self-test, whether the reranker is ``enabled`` in
    the settings, its pinned revision, whether it ``loaded`` and, when not, the error
    ``category`` and message."""

    manifest: Mapping[str, Any]
    path: str
    size_bytes: int | None = None
    note: str | None = None
    self_test: SelfTest | None = None
    enabled: bool | None = None
    pinned: PinnedRevision | None = None
    loaded: bool | None = None
    category: str | None = None
    error: str | None = None

    @property
    def installed(self) -> bool:
        """False only for a status answer about an empty folder."""
        return self.manifest.get("installed") is not False

    def to_json(self) -> dict[str, Any]:
        body = dict(self.manifest)
        body["path"] = self.path
        for key, value in (
            ("bytes", self.size_bytes),
            ("note", self.note),
            ("selfTest", None if self.self_test is None else self.self_test.to_json()),
            ("enabled", self.enabled),
            ("pinned", None if self.pinned is None else self.pinned.to_json()),
            ("loaded", self.loaded),
            ("category", self.category),
            ("error", self.error),
        ):
            if value is not None:
                body[key] = value
        return body

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ModelFolder:
        test, pinned = body.get("selfTest"), body.get("pinned")
        return cls(
            manifest=MappingProxyType({k: v for k, v in body.items() if k not in ENGINE_KEYS}),
            path=body["path"],
            size_bytes=body.get("bytes"),
            note=body.get("note"),
            self_test=None if test is None else SelfTest.from_json(test),
            enabled=body.get("enabled"),
            pinned=None
            if pinned is None
            else PinnedRevision(pinned["model"], pinned["revision"], pinned["source"]),
            loaded=body.get("loaded"),
            category=body.get("category"),
            error=body.get("error"),
        )


@dataclass(frozen=True)
class SemanticStatus:
    """The semantic index handler's progress, whether semantic retrieval is ``enabled``, whether
    the embedder is ``loaded`` in this engine, and the vectors in the loaded search index
    (None until one is loaded)."""

    progress: SemanticProgress
    enabled: bool
    loaded: bool
    index_rows: int | None

    def to_json(self) -> dict[str, Any]:
        return {
            **self.progress.to_json(),
            "enabled": self.enabled,
            "loaded": self.loaded,
            "indexRows": self.index_rows,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> SemanticStatus:
        return cls(
            SemanticProgress.from_json(body), body["enabled"], body["loaded"], body["indexRows"]
        )


@dataclass(frozen=True)
class ModelsStatus:
    """``cw models status``: the embedding model, the reranker and the semantic index."""

    embedder: ModelFolder
    reranker: ModelFolder
    semantic: SemanticStatus

    def to_json(self) -> dict[str, Any]:
        return {
            "embedder": self.embedder.to_json(),
            "reranker": self.reranker.to_json(),
            "semantic": self.semantic.to_json(),
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> ModelsStatus:
        return cls(
            ModelFolder.from_json(body["embedder"]),
            ModelFolder.from_json(body["reranker"]),
            SemanticStatus.from_json(body["semantic"]),
        )

"""The semantic tier's methods: ``models.status``, ``models.install``,
``models.install_reranker``, ``semantic.embed_pending`` and ``semantic.status``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cwcore.contract.methods import (
    MODELS_INSTALL,
    MODELS_INSTALL_RERANKER,
    MODELS_STATUS,
    SEMANTIC_EMBED_PENDING,
    SEMANTIC_STATUS,
)
from cwcore.contract.models import (
    EmbedPending,
    EmbedPendingRequest,
    InstallRerankerRequest,
    ModelFolder,
    ModelsInstallRequest,
    ModelsStatus,
    ModelsStatusRequest,
    SemanticStatus,
    SemanticStatusRequest,
)
from cwcore.engine import Engine
from cwcore.errors import ModelUnavailable
from cwcore.methods.registry import Method, typed
from cwcore.semantic import errors, models, runtime


def _self_test(engine: Engine) -> dict[str, Any]:
    try:
        return runtime.for_engine(engine).embedder().self_test()
    except ModelUnavailable as exc:
        return {"ok": False, "category": errors.category(exc), "error": exc.message}


def _reranker_status(engine: Engine) -> dict[str, Any]:
    settings = engine.settings
    folder = models.reranker_dir(engine.home, settings.reranker_model_cache_path)
    body = models.folder_status(folder)
    body["enabled"] = settings.reranker_enabled
    # The pin: rerankerModelRevision when set, else the content digest recorded at install.
    revision, source = settings.reranker_model_revision, "rerankerModelRevision"
    if not revision:
        revision = str(body.get("contentDigest") or "")
        source = "content digest recorded at install" if revision else "none"
    body["pinned"] = {"model": settings.reranker_model, "revision": revision, "source": source}
    if body["installed"]:
        reranker = runtime.for_engine(engine).reranker()
        body["loaded"] = reranker.available
        if reranker.error is not None:
            body["category"] = errors.category(reranker.error)
            body["error"] = reranker.error.message
    return body


def _semantic_status(engine: Engine) -> dict[str, Any]:
    """The semantic index handler's progress (see :func:`cwcore.semantic.index.status`)."""
    body = runtime.for_engine(engine).status()
    if not body.get("enabled", True):
        body["state"], body["partial"] = "disabled", False
    return body


def _models_status(engine: Engine, req: ModelsStatusRequest) -> ModelsStatus:
    """What is installed, where, sizes; with ``selfTest`` (default) one test embedding."""
    embedder = models.folder_status(models.minilm_dir(engine.home))
    if not embedder["installed"]:
        embedder["note"] = "assembled from the installed packages on first use (cw models install)"
    elif req.self_test:
        embedder["selfTest"] = _self_test(engine)
    return ModelsStatus(
        embedder=ModelFolder.from_json(embedder),
        reranker=ModelFolder.from_json(_reranker_status(engine)),
        semantic=SemanticStatus.from_json(_semantic_status(engine)),
    )


def _models_install(engine: Engine, req: ModelsInstallRequest) -> ModelFolder:
    """Assemble CW_HOME/models/minilm from the installed packages, then run the self-test."""
    semantic = runtime.for_engine(engine)
    semantic.reset()
    variant = models.VARIANT_INT8_MATMUL if req.int8 else models.VARIANT_PACKAGE
    body = models.install_minilm(engine.home, variant)
    body["selfTest"] = _self_test(engine)
    return ModelFolder.from_json(body)


def _models_install_reranker(engine: Engine, req: InstallRerankerRequest) -> ModelFolder:
    settings = engine.settings
    semantic = runtime.for_engine(engine)
    semantic.reset()
    body = models.install_reranker(
        engine.home,
        Path(req.source or ""),
        name=req.name or settings.reranker_model,
        revision=req.revision or settings.reranker_model_revision,
        configured=settings.reranker_model_cache_path,
    )
    reranker = semantic.reranker()
    body["loaded"] = reranker.available
    if reranker.error is not None:
        body["category"] = errors.category(reranker.error)
        body["error"] = reranker.error.message
    return ModelFolder.from_json(body)


def _embed_pending(engine: Engine, req: EmbedPendingRequest) -> EmbedPending:
    """One batch of the semantic index handler (``maxWindows``, default 16)."""
    done = runtime.for_engine(engine).embed_pending(req.max_windows)
    return EmbedPending(done, SemanticStatus.from_json(_semantic_status(engine)))


def _semantic_status_method(engine: Engine, req: SemanticStatusRequest) -> SemanticStatus:
    return SemanticStatus.from_json(_semantic_status(engine))


METHODS: tuple[Method, ...] = (
    typed(MODELS_STATUS, _models_status),
    typed(MODELS_INSTALL, _models_install),
    typed(MODELS_INSTALL_RERANKER, _models_install_reranker),
    typed(SEMANTIC_EMBED_PENDING, _embed_pending),
    typed(SEMANTIC_STATUS, _semantic_status_method),
)

"""The semantic tier's methods: ``models.status``, ``models.install``,
``models.install_reranker``, ``semantic.embed_pending`` and ``semantic.status``."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from cwcore.engine import Emit, Engine
from cwcore.errors import InvalidInput, ModelUnavailable
from cwcore.methods.params import required_str
from cwcore.methods.registry import Method
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


def _models_status(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """What is installed, where, sizes; with ``selfTest`` (default) one test embedding."""
    embedder = models.folder_status(models.minilm_dir(engine.home))
    if not embedder["installed"]:
        embedder["note"] = "assembled from the installed packages on first use (cw models install)"
    elif params.get("selfTest", True):
        embedder["selfTest"] = _self_test(engine)
    return {
        "embedder": embedder,
        "reranker": _reranker_status(engine),
        "semantic": _semantic_status(engine),
    }


def _models_install(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """Assemble CW_HOME/models/minilm from the installed packages, then run the self-test."""
    semantic = runtime.for_engine(engine)
    semantic.reset()
    body = models.install_minilm(engine.home)
    body["selfTest"] = _self_test(engine)
    return body


def _models_install_reranker(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    source = required_str(params, "from", "a local folder with model.onnx and tokenizer files")
    settings = engine.settings
    name = params.get("name") or settings.reranker_model
    revision = params.get("revision") or settings.reranker_model_revision
    if not isinstance(name, str) or not isinstance(revision, str):
        raise InvalidInput("name and revision must be strings")
    semantic = runtime.for_engine(engine)
    semantic.reset()
    body = models.install_reranker(
        engine.home,
        Path(source),
        name=name,
        revision=revision,
        configured=settings.reranker_model_cache_path,
    )
    reranker = semantic.reranker()
    body["loaded"] = reranker.available
    if reranker.error is not None:
        body["category"] = errors.category(reranker.error)
        body["error"] = reranker.error.message
    return body


def _embed_pending(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    """One batch of the semantic index handler (``maxWindows``, default 16)."""
    limit = params.get("maxWindows", 16)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 4096:
        raise InvalidInput("maxWindows must be an integer from 1 to 4096")
    done = runtime.for_engine(engine).embed_pending(limit)
    return {"embedded": done, **_semantic_status(engine)}


def _semantic_status_method(
    engine: Engine, params: dict[str, Any], emit: Emit, cancel: threading.Event
) -> dict[str, Any]:
    return _semantic_status(engine)


METHODS: tuple[Method, ...] = (
    Method("models.status", _models_status),
    Method("models.install", _models_install),
    Method("models.install_reranker", _models_install_reranker),
    Method("semantic.embed_pending", _embed_pending),
    Method("semantic.status", _semantic_status_method),
)

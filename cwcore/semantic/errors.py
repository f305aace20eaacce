"""Failure categories of the semantic tier: a fallback reports the actual failure category.

Every failure of the embedder or the reranker is a :class:`~cwcore.errors.ModelUnavailable` whose
``details["category"]`` is one of :data:`CATEGORIES`. Non-strict search turns it into
``retrieval_status=lexical_fallback``, ``semantic_search_used=false`` and that category; strict
search lets it propagate.
"""

from __future__ import annotations

from cwcore.errors import ModelUnavailable

MODEL_MISSING = "model-missing"  # not installed and not installable from the packages
LOAD_FAILED = "load-failed"  # files present but fastembed/onnxruntime could not load them
INFERENCE_FAILED = "inference-failed"  # the model ran and raised
TIMEOUT = "timeout"  # the worker thread did not answer in time
DISABLED = "disabled"  # semanticRetrieval/rerankerEnabled is off
NOT_EMBEDDED = "not-embedded"  # semanticPolicy always, but no window has a vector yet

CATEGORIES = (MODEL_MISSING, LOAD_FAILED, INFERENCE_FAILED, TIMEOUT, DISABLED, NOT_EMBEDDED)


def unavailable(category: str, message: str, **details: object) -> ModelUnavailable:
    """A :class:`ModelUnavailable` carrying its category."""
    assert category in CATEGORIES, category
    return ModelUnavailable(message, category=category, **details)


def category(exc: BaseException) -> str:
    """The failure category of any exception raised by the semantic tier."""
    if isinstance(exc, ModelUnavailable):
        return str(exc.details.get("category", LOAD_FAILED))
    if isinstance(exc, TimeoutError):
        return TIMEOUT
    return INFERENCE_FAILED

"""The optional cross-encoder reranker: it reorders the fused lexical/semantic tier of explicit
search and gather, never crosses the exact/structural tiers, never changes a presented score.

A cross-encoder folder (``model.onnx`` + tokenizer files, e.g. an export of
``Xenova/ms-marco-MiniLM-L-6-v2``) is installed only by ``cw models install-reranker --from DIR``
(:func:`cwcore.semantic.models.install_reranker`). :meth:`Reranker.load` registers it with
fastembed's ``TextCrossEncoder.add_custom_model`` and loads it from that folder, offline.

:meth:`Reranker.rerank` returns one relevance score per candidate, or ``None`` whenever the model
is not installed, is pinned to another name/revision, its files no longer hash to the content
digest recorded at install (the default pin), fails to load, raises, or does not answer
within the timeout: reranking refines an order, it never fails a search. ``strict=True`` raises
the categorized :class:`~cwcore.errors.ModelUnavailable` instead. Inference runs on one worker
thread. Candidates are cut to about 256 model tokens centred on their match
(:func:`centered`) before scoring.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from cwcore.errors import ModelUnavailable
from cwcore.semantic import errors, models

log = logging.getLogger("cw.semantic")

RERANK_TIMEOUT_S = 10.0
MAX_TOKENS = 256
CHARS_PER_TOKEN = 4  # English prose averages 4–5 characters per word piece
CANDIDATE_CHARS = MAX_TOKENS * CHARS_PER_TOKEN

_register_lock = threading.Lock()


def centered(text: str, start: int = 0, end: int = 0, max_chars: int = CANDIDATE_CHARS) -> str:
    """About ``max_chars`` characters of ``text`` centred on ``[start, end)`` (the match)."""
    if len(text) <= max_chars:
        return text
    start, end = max(0, min(start, len(text))), max(0, min(max(end, start), len(text)))
    middle = (start + end) // 2
    lo = max(0, min(middle - max_chars // 2, len(text) - max_chars))
    hi = lo + max_chars
    # Widen to word boundaries so no word is cut in half.
    while lo > 0 and not text[lo - 1].isspace() and middle - lo < max_chars // 2 + 32:
        lo -= 1
    while hi < len(text) and not text[hi].isspace() and hi - middle < max_chars // 2 + 32:
        hi += 1
    return text[lo:hi]


class Reranker:
    """One loaded cross-encoder (or the memory of why none could be loaded)."""

    def __init__(self, folder: Path, manifest: dict[str, Any] | None) -> None:
        self.folder = folder
        self.manifest = manifest or {}
        self._model: Any = None
        self.error: ModelUnavailable | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cw-rerank")

    @classmethod
    def load(
        cls,
        cache_path: Path,
        *,
        name: str | None = None,
        revision: str | None = None,
        timeout: float = RERANK_TIMEOUT_S,
    ) -> Reranker:
        """Load the reranker installed at ``cache_path``. Never raises: a failure is kept in
        :attr:`error` (its category says why) and :meth:`rerank` then returns None."""
        manifest = models.read_manifest(cache_path)
        self = cls(cache_path, manifest)
        if manifest is None:
            self.error = errors.unavailable(
                errors.MODEL_MISSING,
                f"no reranker installed at {cache_path} (cw models install-reranker --from DIR)",
            )
            return self
        wrong_name = bool(name) and manifest.get("model") != name
        if wrong_name or (bool(revision) and manifest.get("revision") != revision):
            self.error = errors.unavailable(
                errors.MODEL_MISSING,
                f"the installed reranker is {manifest.get('model')}@{manifest.get('revision')}, "
                f"not the pinned {name}@{revision}",
            )
            return self
        recorded = manifest.get("contentDigest")
        if recorded and models.content_digest(cache_path) != recorded:
            self.error = errors.unavailable(
                errors.MODEL_MISSING,
                f"the reranker files at {cache_path} changed since they were installed as "
                f"{recorded}: reinstall it (cw models install-reranker --from DIR)",
            )
            return self
        future: Future[Any] = self._pool.submit(self._load)
        try:
            future.result(timeout=timeout)
        except FutureTimeout:
            self.error = errors.unavailable(errors.TIMEOUT, "loading the reranker timed out")
        except ModelUnavailable as exc:
            self.error = exc
        return self

    def _load(self) -> None:
        os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            from fastembed.common.model_description import ModelSource
            from fastembed.rerank.cross_encoder import TextCrossEncoder

            sha = str(self.manifest.get("sha256", "x"))[:16]
            name = f"cw/reranker-{sha}"
            with _register_lock:
                known = {m["model"].lower() for m in TextCrossEncoder.list_supported_models()}
                if name.lower() not in known:
                    TextCrossEncoder.add_custom_model(
                        name, sources=ModelSource(hf=name), model_file=models.MODEL_FILE
                    )
            model = TextCrossEncoder(
                name, specific_model_path=str(self.folder), local_files_only=True
            )
            tokenizer = getattr(getattr(model, "model", None), "tokenizer", None)
            if tokenizer is not None:
                tokenizer.enable_truncation(max_length=min(512, 2 * MAX_TOKENS))
            self._model = model
        except ImportError as exc:
            raise errors.unavailable(errors.MODEL_MISSING, f"fastembed missing: {exc}") from None
        except Exception as exc:
            raise errors.unavailable(
                errors.LOAD_FAILED, f"cannot load the reranker: {exc}"
            ) from None

    @property
    def available(self) -> bool:
        return self._model is not None

    @property
    def installed(self) -> bool:
        """Whether a reranker was installed here (loaded or not): only then is reranking a stage
        of search whose failure ``strict`` propagates."""
        return bool(self.manifest)

    @property
    def name(self) -> str | None:
        return self.manifest.get("model")

    def _score(self, query: str, texts: list[str]) -> list[float]:
        try:
            return [float(s) for s in self._model.rerank(query, texts, batch_size=16)]
        except Exception as exc:
            raise errors.unavailable(errors.INFERENCE_FAILED, f"reranking failed: {exc}") from None

    def rerank(
        self,
        query: str,
        texts: Sequence[str],
        *,
        spans: Sequence[tuple[int, int]] | None = None,
        strict: bool = False,
        timeout: float = RERANK_TIMEOUT_S,
    ) -> list[float] | None:
        """One score per text (higher is more relevant), or None when unavailable.

        ``spans`` (one ``(start, end)`` character range per text, its match) centres the
        ~256-token cut of each candidate; without it a candidate's head is scored."""
        try:
            if self._model is None:
                raise self.error or errors.unavailable(errors.MODEL_MISSING, "no reranker")
            if not texts:
                return []
            future: Future[list[float]] = self._pool.submit(
                self._score,
                query,
                [
                    centered(t, *(spans[i] if spans is not None else (0, 0)))
                    for i, t in enumerate(texts)
                ],
            )
            try:
                scores = future.result(timeout=timeout)
            except FutureTimeout:
                raise errors.unavailable(errors.TIMEOUT, "the reranker timed out") from None
            if len(scores) != len(texts):
                raise errors.unavailable(errors.INFERENCE_FAILED, "the reranker lost candidates")
            return scores
        except ModelUnavailable as exc:
            if strict:
                raise
            log.debug("reranker unavailable (%s): %s", errors.category(exc), exc)
            return None

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

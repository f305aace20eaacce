"""A daemon service for the fault tests: the real engine with a slow, model-free embedder.

The daemon under test loads it with ``CW_DAEMON_SERVICE=tests.faults.slow_engine:make_service``
(the repository on its PYTHONPATH). Each embedding batch sleeps ``CW_TEST_EMBED_DELAY_S``
seconds (default 1) and returns deterministic hash vectors, so background embedding stays
pending for as long as a test needs without the MiniLM model.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cwcore.engine import Engine
from cwcore.methods import TABLE
from cwcore.semantic.embedder import DIM, clip
from cwcore.store.keys import digest16
from tests.support import semantic_of, use_embedder


class SlowEmbedder:
    """The :class:`cwcore.semantic.embedder.Embedder` surface the worker and search use."""

    model_id = "slow-fake:1"
    loaded = True

    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s

    def digest(self, text: str) -> bytes:
        return digest16("cw-embed", self.model_id, clip(text))

    def _vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
        vec = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return vec / np.linalg.norm(vec)

    def embed(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        time.sleep(self.delay_s)
        if not texts:
            return np.zeros((0, DIM), np.float32)
        return np.stack([self._vector(clip(t)) for t in texts])

    def embed_query(self, text: str, **_: Any) -> np.ndarray:
        return self._vector(clip(text))

    def load(self, *_: Any) -> None:
        return None

    def self_test(self, *_: Any) -> dict[str, Any]:
        return {"ok": True}

    def close(self) -> None:
        return None


def make_service(home: Path) -> Engine:
    engine = Engine(home, TABLE)
    delay = float(os.environ.get("CW_TEST_EMBED_DELAY_S", "1.0"))
    use_embedder(semantic_of(engine), SlowEmbedder(delay))
    return engine

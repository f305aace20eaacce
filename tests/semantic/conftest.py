"""Shared fixtures of the semantic tests: the real MiniLM loaded once, a fake embedder, a tiny
archive about distinct topics, and a hand-built ONNX cross-encoder."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cwcore.api import Archive
from cwcore.semantic import models
from cwcore.semantic.embedder import DIM, clip
from cwcore.store.keys import digest16
from tests.helpers import write_jsonl

TOPICS = {
    "s-db": [
        ("The test suite fails with sqlite database is locked errors.", "Close the connection."),
        ("Why is the migration slow on the orders table?", "Add an index on created_at."),
    ],
    "s-ui": [
        ("Make the landing page banner blue and bigger.", "Changed the CSS of the hero."),
        ("The font on the pricing page looks blurry.", "Use the woff2 files."),
    ],
    "s-cook": [
        ("How long should I bake sourdough bread?", "About 45 minutes at 230 degrees."),
        ("My pasta sauce is too acidic.", "Add a pinch of sugar or some butter."),
    ],
}


def topic_rows() -> list[dict[str, Any]]:
    rows = []
    for session, turns in TOPICS.items():
        for i, (user, answer) in enumerate(turns):
            rows.append({"session": session, "id": f"u{i}", "role": "user", "text": user})
            rows.append({"session": session, "id": f"a{i}", "role": "assistant", "text": answer})
    return rows


@pytest.fixture
def topics(archive: Archive, tmp_path: Path) -> Archive:
    src = write_jsonl(tmp_path / "topics.jsonl", topic_rows())
    archive.import_paths([src], fmt="cw-jsonl")
    return archive


class FakeEmbedder:
    """Deterministic hash vectors with the Embedder interface; counts what it computes and can
    be told to fail."""

    def __init__(self) -> None:
        self.model_id = "fake:1"
        self.computed = 0
        self.fail = False

    def digest(self, text: str) -> bytes:
        return digest16("cw-embed", self.model_id, clip(text))

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
        vec = np.random.default_rng(seed).standard_normal(DIM).astype(np.float32)
        return vec / np.linalg.norm(vec)

    def embed(self, texts: Sequence[str], *, cache: Any = None, timeout: float = 0) -> np.ndarray:
        if self.fail:
            raise RuntimeError("simulated crash in the middle of a batch")
        digests = [self.digest(t) for t in texts]
        found = dict(zip(digests, cache.get_many(digests), strict=True)) if cache else {}
        out, fresh = [], []
        for d, t in zip(digests, texts, strict=True):
            vec = found.get(d)
            if vec is None:
                vec = self.vector(clip(t))
                self.computed += 1
                fresh.append((d, vec))
                found[d] = vec
            out.append(vec)
        if cache is not None and fresh:
            cache.put_many(fresh)
        return np.stack(out) if out else np.zeros((0, DIM), np.float32)


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


def build_cross_encoder(folder: Path) -> Path:
    """A tiny ONNX 'cross-encoder': logits = number of attended tokens (longer scores higher),
    with the MiniLM tokenizer files shipped in cwcore/semantic/model."""
    import onnx
    from onnx import TensorProto, helper

    folder.mkdir(parents=True, exist_ok=True)
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "seq"])
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 1])
    axes = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
    nodes = [
        helper.make_node("Cast", ["attention_mask"], ["mask_f"], to=TensorProto.FLOAT),
        helper.make_node("ReduceSum", ["mask_f", "axes"], ["logits"], keepdims=1),
    ]
    graph = helper.make_graph(nodes, "tiny-cross-encoder", inputs, [output], initializer=[axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, str(folder / "model.onnx"))
    data = resources.files("cwcore.semantic") / "model"
    for name in models.TOKENIZER_FILES:
        (folder / name).write_bytes((data / name).read_bytes())
    return folder


@pytest.fixture
def cross_encoder_dir(tmp_path: Path) -> Path:
    return build_cross_encoder(tmp_path / "tiny-ce")


@pytest.fixture
def copy_tree() -> Any:
    return shutil.copytree

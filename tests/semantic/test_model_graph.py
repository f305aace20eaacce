"""The embedder's graph without its softmax NaN guards (cwcore.semantic.derive).

The package's file puts ``Where(IsNaN(p), 0, p)`` after each attention softmax; in this model a
softmax never yields NaN, so the guard is the identity and cw removes it (15 % of the model's
time). What must hold: the vectors are the package's bit for bit (so stored vectors stay valid
across the upgrade), only that exact shape is removed, and a folder installed before is brought
up to date without re-embedding anything.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from typer.testing import CliRunner

from cwcore.errors import ModelUnavailable
from cwcore.semantic import derive, errors, models
from cwcore.semantic.embedder import Embedder
from cwtui.cli import app

# Texts of different lengths, so a batch pads some of them: padded keys are masked, the case
# the guard was exported for.
TEXTS = [
    "ok",
    "the sqlite database is locked while the tests run in parallel",
    "my sister moved to Lisbon last spring and loves the trams " * 3,
    "rename the session identifier column and migrate the index; then rebuild it " * 12,
    "é ü 漢字 — 🙂 tabs\tand\nnew lines",
]


def _ops(model: onnx.ModelProto) -> Counter[str]:
    return Counter(node.op_type for node in model.graph.node)


def _old_home(root: Path, monkeypatch: pytest.MonkeyPatch, variant: str | None = None) -> Path:
    """A home as installed before the guards were removed (graph revision 1)."""
    home = root / f"old-{variant or 'default'}"
    with monkeypatch.context() as mp:
        mp.setattr(models, "STRIP_NAN_GUARDS", False)
        mp.setattr(models, "_derived", {})
        models.install_minilm(home, variant)
    return home


def test_the_package_graph_loses_exactly_its_six_guards() -> None:
    model = onnx.load(str(models.package_onnx()))
    before = _ops(model)
    assert derive.strip_nan_guards(model) == 6
    after = _ops(model)
    assert before["IsNaN"] == 6 and after["IsNaN"] == 0
    assert before["Where"] - after["Where"] == 6 and after["Where"] == 1  # the mask's own stays
    assert dict(before - after) == {"IsNaN": 6, "Where": 6}
    onnx.checker.check_model(model)


def test_default_vectors_are_the_package_files_bit_for_bit(
    minilm_home: Path, minilm: Embedder, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = models.read_manifest(models.minilm_dir(minilm_home))
    assert manifest is not None
    assert manifest["graphRevision"] == 2 and manifest["nanGuardsRemoved"] == 6
    assert manifest["sha256"] != manifest["sourceSha256"]  # the file differs ...
    folder = models.minilm_dir(_old_home(tmp_path, monkeypatch))
    old = Embedder(folder, models.read_manifest(folder))  # for_home would bring it up to date
    try:
        assert old.manifest["sha256"] == models.sha256_file(models.package_onnx())
        # ... its vectors do not: the same identity, the same bits, padded batch or single.
        assert old.model_id == minilm.model_id
        # queries=n: every text through the model, none from a cache.
        ours = minilm.embed(TEXTS, queries=len(TEXTS))
        theirs = old.embed(TEXTS, queries=len(TEXTS))
        assert np.array_equal(ours, theirs)
        for text in TEXTS[:2]:
            assert np.array_equal(minilm.embed_query(text), old.embed_query(text))
    finally:
        old.close()


@pytest.mark.parametrize("variant", [None, models.VARIANT_INT8_MATMUL])
def test_a_folder_installed_before_is_brought_up_to_date_on_first_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variant: str | None
) -> None:
    home = _old_home(tmp_path, monkeypatch, variant)
    folder = models.minilm_dir(home)
    old = models.read_manifest(folder)
    assert old is not None and old["graphRevision"] == 1
    old_id = Embedder(folder, old).model_id
    monkeypatch.setattr(models, "_derived", {})
    _, now = models.ensure_minilm(home)
    assert now["graphRevision"] == 2 and now["variant"] == old["variant"]
    assert now["nanGuardsRemoved"] == 6 and now["sha256"] != old["sha256"]
    assert now["installed"] == old["installed"] and "upgraded" in now
    # Stored vectors stay valid: the identity they are filed under is unchanged.
    assert Embedder(folder, now).model_id == old_id
    assert _ops(onnx.load(str(folder / models.MODEL_FILE)))["IsNaN"] == 0
    assert models.ensure_minilm(home)[1] == models.read_manifest(folder)  # once, then kept


def test_a_failed_upgrade_keeps_the_folder_that_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = _old_home(tmp_path, monkeypatch)
    folder = models.minilm_dir(home)
    before = models.read_manifest(folder)
    calls: list[Path] = []

    def broken(source: Path, target: Path, variant: str, *, strip: bool) -> dict[str, object]:
        calls.append(source)
        raise errors.unavailable(errors.LOAD_FAILED, "cannot derive the embedding model: boom")

    monkeypatch.setattr(models, "derive_minilm", broken)
    _, body = models.ensure_minilm(home)
    assert body == before and models.read_manifest(folder) == before
    assert calls == [folder / models.MODEL_FILE]  # the installed file, not the package's
    assert sorted(p.name for p in models.models_root(home).iterdir()) == [
        ".assemble.lock",
        "minilm",
    ]
    models.ensure_minilm(home)
    assert len(calls) == 1  # not tried again by this process


def test_a_model_file_changed_since_install_is_not_upgraded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its vectors are filed under the installed file's digest: a file that no longer hashes so
    is not the graph they match, and deriving from it could file other vectors under it."""
    home = _old_home(tmp_path, monkeypatch)
    folder = models.minilm_dir(home)
    before = models.read_manifest(folder)
    with (folder / models.MODEL_FILE).open("ab") as fh:
        fh.write(b"\0")
    assert models.ensure_minilm(home)[1] == before == models.read_manifest(folder)


def test_without_a_usable_onnx_the_default_is_the_package_file_as_it_ships(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, minilm: Embedder
) -> None:
    """Removing the guards is a speed-up only: when the child cannot derive the graph, a fresh
    home still gets a working model (the package's file, the same vectors) and says why."""
    calls: list[Path] = []

    def broken(source: Path, target: Path, variant: str, *, strip: bool) -> dict[str, object]:
        calls.append(target)
        raise errors.unavailable(errors.LOAD_FAILED, "cannot derive the embedding model: boom")

    monkeypatch.setattr(models, "derive_minilm", broken)
    monkeypatch.setattr(models, "_derived", {})
    home = tmp_path / "home"
    body = models.install_minilm(home)
    assert body["graphRevision"] == 1 and body["nanGuardsRemoved"] == 0
    assert body["sha256"] == body["sourceSha256"] == body["vectorsSha256"]
    assert "boom" in body["derivationError"]
    # Not tried again at every first use (cw models install is the way to retry) ...
    _, again = models.ensure_minilm(home)
    assert again == models.read_manifest(models.minilm_dir(home)) and len(calls) == 1
    # ... and the model works, filing its vectors under the same identity as the default's.
    fallback = Embedder.for_home(home)
    try:
        assert fallback.model_id == minilm.model_id
        assert np.array_equal(
            fallback.embed(TEXTS[:2], queries=2), minilm.embed(TEXTS[:2], queries=2)
        )
    finally:
        fallback.close()
    # The int8 variant has no such fallback: its install fails and replaces nothing.
    with pytest.raises(ModelUnavailable):
        models.install_minilm(home, models.VARIANT_INT8_MATMUL)
    assert models.read_manifest(models.minilm_dir(home)) == again


def _tiny(replacement: float = 0.0, *, feed: str = "Softmax", guard_is_output: bool = False):
    """x -> Softmax|Relu -> Where(IsNaN(p), c, p) -> Mul(2) -> y."""
    nodes = [
        helper.make_node(feed, ["x"], ["p"], **({"axis": -1} if feed == "Softmax" else {})),
        helper.make_node("IsNaN", ["p"], ["nan"]),
        helper.make_node("Where", ["nan", "c", "p"], ["g"]),
        helper.make_node("Mul", ["g", "two"], ["y"]),
    ]
    inits = [
        helper.make_tensor("c", TensorProto.FLOAT, [], [replacement]),
        helper.make_tensor("two", TensorProto.FLOAT, [], [2.0]),
    ]
    out = "g" if guard_is_output else "y"
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, [2, 3])],
        inits,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


def test_only_the_exact_guard_shape_is_removed() -> None:
    x = np.array([[1.0, 2.0, -3.0], [-1e30, 0.5, 7.0]], dtype=np.float32)
    model = _tiny()
    want = _run(model, x)
    assert derive.strip_nan_guards(model) == 1
    assert _ops(model) == Counter({"Softmax": 1, "Mul": 1})
    assert np.array_equal(_run(model, x), want)
    # Not after a softmax, a replacement other than zero, or the guard as the graph's output:
    # each is left as it was.
    for kept in (_tiny(feed="Relu"), _tiny(1.0), _tiny(guard_is_output=True)):
        assert derive.strip_nan_guards(kept) == 0
        assert _ops(kept)["IsNaN"] == 1


def test_the_child_refuses_bad_arguments_in_one_line(tmp_path: Path) -> None:
    for args in ([], ["--fp16", "a", "b"], ["only-one"]):
        done = subprocess.run(
            [sys.executable, "-m", "cwcore.semantic.derive", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2 and done.stderr.startswith("usage:")


def test_models_status_says_what_the_graph_is(cw_home: Path) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["models", "install", "--json"]).exit_code == 0
    shown = runner.invoke(app, ["models", "status", "--no-self-test"])
    assert shown.exit_code == 0, shown.output
    row = next(line for line in shown.output.splitlines() if line.lstrip("│ ").startswith("graph"))
    assert "revision 2" in row and "6 no-op softmax guards" in row
    body = json.loads(runner.invoke(app, ["models", "status", "--json"]).output)
    assert body["embedder"]["graphRevision"] == 2
    assert body["embedder"]["vectorsSha256"] == models.sha256_file(models.package_onnx())

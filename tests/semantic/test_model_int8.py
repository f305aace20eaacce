"""The embedder's int8 variant (``cw models install --int8``): the package's weights, computed
in int8.

The package's ONNX file stores int8 weights but casts them back to float inside the graph, so it
runs at float speed; the variant is a derived graph whose weight MatMuls run in int8
(models.derive_minilm). The default computes the package's vectors (test_model_graph.py).
"""

from __future__ import annotations

import json
import sys
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from typer.testing import CliRunner

from cwcore.errors import InvalidInput, ModelUnavailable
from cwcore.semantic import errors, models
from cwcore.semantic.embedder import Embedder
from cwtui.cli import app

INT8 = models.VARIANT_INT8_MATMUL


@pytest.fixture(scope="module")
def int8_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("int8-home")
    models.install_minilm(home, INT8)
    return home


TEXTS = [
    "the sqlite database is locked while the tests run in parallel",
    "a recipe for sourdough bread with a long cold proof",
    "rename the session identifier column and migrate the index",
    "my sister moved to Lisbon last spring and loves the trams",
    "the daemon keeps 240 MB resident once the model is released",
    "which flag makes pytest stop at the first failure?",
]


def _ops(path: Path) -> Counter[str]:
    return Counter(node.op_type for node in onnx.load(str(path)).graph.node)


def test_the_default_computes_the_package_files_vectors(minilm_home: Path) -> None:
    manifest = models.read_manifest(models.minilm_dir(minilm_home))
    assert manifest is not None and manifest["variant"] == models.VARIANT_PACKAGE
    assert manifest["vectorsSha256"] == manifest["sourceSha256"]
    assert manifest["sourceSha256"] == models.sha256_file(models.package_onnx())


def test_int8_variant_runs_its_weight_matmuls_in_int8(int8_home: Path) -> None:
    folder = models.minilm_dir(int8_home)
    manifest = models.read_manifest(folder)
    assert manifest is not None and manifest["variant"] == INT8
    assert manifest["sourceSha256"] == models.sha256_file(models.package_onnx())
    assert manifest["sha256"] == models.sha256_file(folder / models.MODEL_FILE)
    assert manifest["nanGuardsRemoved"] == 6 and manifest["graphRevision"] == 2
    ops = _ops(folder / models.MODEL_FILE)
    # 6 layers x (q, k, v, output, two feed-forward) weight matrices; attention's own two
    # activation-by-activation products a layer stay float.
    assert ops["MatMulInteger"] == 36 and ops["MatMul"] == 12
    assert ops["DynamicQuantizeLinear"] > 0
    package = _ops(models.package_onnx())
    assert package["MatMulInteger"] == 0 and package["MatMul"] == 48  # what it replaces


def test_int8_vectors_agree_with_the_package_model(int8_home: Path, minilm: Embedder) -> None:
    int8 = Embedder.for_home(int8_home)
    try:
        assert int8.model_id != minilm.model_id  # vectors of one never serve the other
        ours, theirs = int8.embed(TEXTS), minilm.embed(TEXTS)
        cosines = (ours * theirs).sum(axis=1)
        assert cosines.min() > 0.98, cosines
        for i in range(len(TEXTS)):  # each text's nearest other text is the same
            a, b = ours @ ours[i], theirs @ theirs[i]
            a[i] = b[i] = -1
            assert int(np.argmax(a)) == int(np.argmax(b))
    finally:
        int8.close()


def test_derivation_is_deterministic_and_runs_apart(tmp_path: Path) -> None:
    source = models.package_onnx()
    a = models.derive_minilm(source, tmp_path / "a.onnx", INT8, strip=True)
    b = models.derive_minilm(source, tmp_path / "b.onnx", INT8, strip=True)
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
    assert a == b and a["nanGuards"] == 6
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.onnx", "b.onnx"]  # no scratch left
    # The quantizer ran in a child: this process never imported it (it keeps ~200 MB).
    assert "onnxruntime.quantization" not in sys.modules


def test_a_failed_derivation_is_one_categorized_line_and_installs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx file")
    with pytest.raises(ModelUnavailable) as info:
        models.derive_minilm(broken, tmp_path / "out.onnx", INT8, strip=True)
    assert errors.category(info.value) == errors.LOAD_FAILED
    assert "\n" not in str(info.value) and "cannot derive" in str(info.value)
    assert not (tmp_path / "out.onnx").exists()
    monkeypatch.setattr(models, "package_onnx", lambda: broken)
    monkeypatch.setattr(models, "_derived", {})
    with pytest.raises(ModelUnavailable):
        models.install_minilm(tmp_path / "home", INT8)
    assert not models.minilm_dir(tmp_path / "home").exists()
    left = [p.name for p in models.models_root(tmp_path / "home").iterdir()]
    assert left == [".assemble.lock"]  # no half-built folder


def test_another_home_copies_the_derived_model_while_it_still_hashes_the_same(
    tmp_path: Path, int8_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    want = models.sha256_file(models.minilm_dir(int8_home) / models.MODEL_FILE)
    monkeypatch.setattr(models, "_derived", {})
    first = models.install_minilm(tmp_path / "one", INT8)
    calls: list[Path] = []
    real = models.derive_minilm

    def counting(source: Path, target: Path, variant: str, *, strip: bool) -> dict[str, object]:
        calls.append(target)
        return real(source, target, variant, strip=strip)

    monkeypatch.setattr(models, "derive_minilm", counting)
    second = models.install_minilm(tmp_path / "two", INT8)
    assert calls == [] and first["sha256"] == second["sha256"] == want
    # A copy altered since (or removed) is not trusted: the next home derives its own.
    (models.minilm_dir(tmp_path / "two") / models.MODEL_FILE).write_bytes(b"changed")
    third = models.install_minilm(tmp_path / "three", INT8)
    assert len(calls) == 1 and third["sha256"] == want


def test_an_unknown_variant_is_refused_and_installs_nothing(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match="unknown model variant"):
        models.install_minilm(tmp_path / "home", "fp16")
    assert not models.minilm_dir(tmp_path / "home").exists()


def test_cli_installs_either_variant_and_says_which(cw_home: Path) -> None:
    runner = CliRunner()
    for args, variant in ((["--int8"], INT8), ([], models.VARIANT_PACKAGE)):
        result = runner.invoke(app, ["models", "install", *args, "--json"])
        assert result.exit_code == 0, result.output
        body = json.loads(result.output.strip().splitlines()[-1])
        assert body["variant"] == variant and body["selfTest"]["ok"] is True
        on_disk = models.read_manifest(models.minilm_dir(cw_home))
        assert on_disk is not None and on_disk["sha256"] == body["sha256"]
    shown = runner.invoke(app, ["models", "install", "--help"])
    assert "--int8" in shown.output


def test_cli_refuses_in_one_line_when_the_variant_cannot_be_derived(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    assert runner.invoke(app, ["models", "install", "--json"]).exit_code == 0
    before = models.read_manifest(models.minilm_dir(cw_home))
    broken = tmp_path / "broken.onnx"
    broken.write_bytes(b"not an onnx file")
    monkeypatch.setattr(models, "package_onnx", lambda: broken)
    monkeypatch.setattr(models, "_derived", {})
    result = runner.invoke(app, ["models", "install", "--int8"])
    assert result.exit_code == 7, result.output
    lines = [x for x in result.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("cw: cannot derive the int8 embedding model")
    assert models.read_manifest(models.minilm_dir(cw_home)) == before  # the model as it was


def test_first_use_during_an_install_waits_for_it_and_keeps_its_variant(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's worker may need the model (first use assembles the default) while ``cw
    models install --int8`` is deriving: first use waits, then keeps what the install wrote."""
    home = tmp_path / "home"
    started, release = threading.Event(), threading.Event()
    real = models.derive_minilm

    def slow(source: Path, target: Path, variant: str, *, strip: bool) -> dict[str, object]:
        started.set()
        assert release.wait(60)
        return real(source, target, variant, strip=strip)

    monkeypatch.setattr(models, "derive_minilm", slow)
    monkeypatch.setattr(models, "_derived", {})
    installed: list[dict[str, object]] = []
    used: list[dict[str, object]] = []
    install = threading.Thread(target=lambda: installed.append(models.install_minilm(home, INT8)))
    install.start()
    assert started.wait(60)  # the install is under way, its folder not yet in place
    first_use = threading.Thread(target=lambda: used.append(models.ensure_minilm(home)[1]))
    first_use.start()
    release.set()
    install.join(120)
    first_use.join(120)
    assert installed[0]["variant"] == INT8 and used[0]["variant"] == INT8
    on_disk = models.read_manifest(models.minilm_dir(home))
    assert on_disk is not None and on_disk["variant"] == INT8

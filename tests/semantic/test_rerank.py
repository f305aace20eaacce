"""The reranker: a tiny ONNX cross-encoder, silent degrade, strict mode, the install command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cwcore.errors import ModelUnavailable
from cwcore.semantic import errors, models
from cwcore.semantic.rerank import Reranker, centered
from cwtui.cli import app


def test_scores_with_a_tiny_cross_encoder(tmp_path: Path, cross_encoder_dir: Path) -> None:
    home = tmp_path / "home"
    body = models.install_reranker(home, cross_encoder_dir, name="tiny", revision="r1")
    assert body["model"] == "tiny" and body["revision"] == "r1"
    reranker = Reranker.load(models.reranker_dir(home), name="tiny", revision="r1")
    assert reranker.available, reranker.error
    scores = reranker.rerank("q", ["short", "a much longer candidate text than the other"])
    assert scores is not None and len(scores) == 2
    assert scores[1] > scores[0]
    assert reranker.rerank("q", []) == []
    reranker.close()


def test_absent_reranker_degrades_silently(tmp_path: Path) -> None:
    reranker = Reranker.load(tmp_path / "none")
    assert not reranker.available
    assert reranker.rerank("q", ["a", "b"]) is None
    with pytest.raises(ModelUnavailable) as info:
        reranker.rerank("q", ["a"], strict=True)
    assert errors.category(info.value) == errors.MODEL_MISSING


def test_broken_reranker_degrades_silently(tmp_path: Path, cross_encoder_dir: Path) -> None:
    (cross_encoder_dir / "model.onnx").write_bytes(b"garbage")
    home = tmp_path / "home"
    models.install_reranker(home, cross_encoder_dir, name="tiny", revision="r1")
    reranker = Reranker.load(models.reranker_dir(home))
    assert reranker.rerank("q", ["a"]) is None
    with pytest.raises(ModelUnavailable) as info:
        reranker.rerank("q", ["a"], strict=True)
    assert errors.category(info.value) == errors.LOAD_FAILED


def test_inference_failure_degrades_silently(tmp_path: Path, cross_encoder_dir: Path) -> None:
    home = tmp_path / "home"
    models.install_reranker(home, cross_encoder_dir, name="tiny", revision="r1")
    reranker = Reranker.load(models.reranker_dir(home))
    assert reranker.available

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("worker died")

    reranker._model.rerank = boom
    assert reranker.rerank("q", ["a"]) is None
    with pytest.raises(ModelUnavailable) as info:
        reranker.rerank("q", ["a"], strict=True)
    assert errors.category(info.value) == errors.INFERENCE_FAILED


def test_pinned_revision_must_match(tmp_path: Path, cross_encoder_dir: Path) -> None:
    home = tmp_path / "home"
    models.install_reranker(home, cross_encoder_dir, name="tiny", revision="r1")
    reranker = Reranker.load(models.reranker_dir(home), name="tiny", revision="r2")
    assert reranker.rerank("q", ["a"]) is None


def test_candidates_cut_around_the_match() -> None:
    text = "x " * 2000 + "NEEDLE" + " y" * 2000
    at = text.index("NEEDLE")
    cut = centered(text, at, at + 6)
    assert "NEEDLE" in cut and len(cut) <= 1024 + 80
    assert centered("short", 0, 0) == "short"


def test_install_reranker_command(cross_encoder_dir: Path, cw_home: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "models",
            "install-reranker",
            "--from",
            str(cross_encoder_dir),
            "--revision",
            "abc",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    body = json.loads(result.output.strip().splitlines()[-1])
    assert body["revision"] == "abc" and body["loaded"] is True
    assert Path(body["path"]) == cw_home / "models" / "reranker"
    bad = runner.invoke(app, ["models", "install-reranker", "--from", str(cw_home), "--json"])
    assert bad.exit_code == 2
    assert json.loads(bad.output.strip().splitlines()[-1])["error"]["code"] == "invalid-input"

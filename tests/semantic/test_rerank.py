"""The reranker: a tiny ONNX cross-encoder, silent degrade, strict mode, the install command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.contract.search import SearchResponse
from cwcore.errors import ModelUnavailable
from cwcore.semantic import errors, models
from cwcore.semantic.rerank import Reranker, centered
from cwtui.cli import app
from tests.support import semantic_of


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


def test_search_reranks_the_fused_tier_around_each_match(
    topics: Archive, cross_encoder_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert topics.call("models.install_reranker", {"from": str(cross_encoder_dir)})["loaded"]
    request = {"query": "pricing page font", "semanticPolicy": "never", "limit": 10}
    plain = topics.search({**request, "rerank": False})
    assert len(plain.results) >= 2 and not any(h.reranked for h in plain.results)

    semantic = semantic_of(topics)
    seen: list[tuple[list[str], list[tuple[int, int]]]] = []
    real = semantic.rerank

    def spy(query: str, texts: list[str], spans: Any = None, *, strict: bool = False) -> Any:
        seen.append((texts, spans))
        return real(query, texts, spans, strict=strict)

    monkeypatch.setattr(semantic, "rerank", spy)
    ranked = topics.search(request)
    texts, spans = seen[0]
    assert len(spans) == len(texts)
    for text, (start, end) in zip(texts, spans, strict=True):
        assert text[start:end].lower() in {"pricing", "page", "font"}
    assert all(h.reranked for h in ranked.results)
    # The tiny model prefers longer texts: order may change, presented scores never do.
    assert {h.document_id: h.score for h in ranked.results} == {
        h.document_id: h.score for h in plain.results
    }
    raw = topics.call("search", request)  # a reranked answer survives its JSON both ways
    assert raw["results"] and all(h["reranked"] for h in raw["results"])
    typed = SearchResponse.from_json(raw)
    assert json.dumps(typed.to_json()) == json.dumps(raw)
    assert SearchResponse.from_json(typed.to_json()) == typed


def test_search_without_a_reranker_keeps_the_fused_order(topics: Archive) -> None:
    request = {"query": "pricing page font", "semanticPolicy": "never", "limit": 10}
    with_rerank = topics.search(request)
    without = topics.search({**request, "rerank": False})
    assert [h.document_id for h in with_rerank.results] == [h.document_id for h in without.results]
    assert not any(h.reranked for h in with_rerank.results)


def test_the_default_pin_is_the_content_digest_recorded_at_install(
    cross_encoder_dir: Path, cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner = CliRunner()
    installed = runner.invoke(
        app, ["models", "install-reranker", "--from", str(cross_encoder_dir), "--json"]
    )
    assert installed.exit_code == 0, installed.output
    body = json.loads(installed.output.strip().splitlines()[-1])
    folder = cw_home / "models" / "reranker"
    digest = models.content_digest(folder)
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 64
    assert body["revision"] == body["contentDigest"] == digest and body["loaded"] is True
    status = runner.invoke(app, ["models", "status", "--no-self-test", "--json"])
    reranker = json.loads(status.output.strip().splitlines()[-1])["reranker"]
    assert reranker["revision"] == digest and reranker["loaded"] is True
    assert reranker["pinned"] == {
        "model": "Xenova/ms-marco-MiniLM-L-6-v2",
        "revision": digest,
        "source": "content digest recorded at install",
    }
    # The console's width is fixed when cwtui.output is first imported: set it, not COLUMNS.
    from cwtui import output

    monkeypatch.setattr(output.console, "width", 200)
    human = runner.invoke(app, ["models", "status", "--no-self-test"])
    assert human.exit_code == 0 and "pinned revision" in human.output
    assert digest in human.output
    # Files changed after the install no longer match the pin: the reranker is not used.
    (folder / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    reranker = Reranker.load(folder)
    assert not reranker.available and reranker.error is not None
    assert errors.category(reranker.error) == errors.MODEL_MISSING
    assert "changed since they were installed" in reranker.error.message


def test_an_explicit_revision_is_the_pin(
    cross_encoder_dir: Path, cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_RERANKER_MODEL_REVISION", "v1-abc")
    with Archive.open(cw_home, embedded=True) as archive:
        body = archive.call("models.install_reranker", {"from": str(cross_encoder_dir)})
        assert body["revision"] == "v1-abc" and body["contentDigest"].startswith("sha256:")
        status = archive.call("models.status", {"selfTest": False})["reranker"]
        assert status["pinned"]["revision"] == "v1-abc"
        assert status["pinned"]["source"] == "rerankerModelRevision"


def test_the_default_reranker_is_the_pinned_model_over_40_candidates() -> None:
    from cwcore.config import Settings

    settings = Settings()
    assert settings.reranker_model == "Xenova/ms-marco-MiniLM-L-6-v2"
    assert settings.reranker_enabled is True and settings.reranker_candidates == 40

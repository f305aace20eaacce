"""``strict`` propagates exactly the failures of the stages that ran (spec 004; issue 32: strict
failed with no reranker installed even under ``semanticPolicy never``, and ``always`` with
nothing embedded answered ``ok``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cwcore.api import Archive
from cwcore.contract.search import SearchResponse
from cwcore.errors import ModelUnavailable
from cwcore.semantic import errors
from tests.helpers import write_jsonl
from tests.semantic.conftest import build_cross_encoder

TEXTS = [
    "the pricing page font looks blurry on retina screens",
    "the pricing table moved below the fold on the page",
    "font loading flashes on the landing page",
    "unrelated note about lunch",
]


def _open(cw_home: Path, tmp_path: Path) -> Archive:
    rows = [{"session": "s", "id": f"m{i}", "role": "user", "text": t} for i, t in enumerate(TEXTS)]
    arch = Archive.open(cw_home, embedded=True)
    arch.import_paths([write_jsonl(tmp_path / "a.jsonl", rows)], fmt="cw-jsonl")
    return arch


def _search(arch: Archive, policy: str, strict: bool) -> SearchResponse:
    body = {"query": "pricing page font", "semanticPolicy": policy, "strict": strict}
    return arch.search(body)


def _category(info: pytest.ExceptionInfo[ModelUnavailable]) -> str:
    return errors.category(info.value)


def test_no_reranker_installed_is_no_failure_even_strict(cw_home: Path, tmp_path: Path) -> None:
    with _open(cw_home, tmp_path) as arch:
        body = _search(arch, "never", strict=True)
        assert body.retrieval_status == "ok" and len(body.results) >= 2
        assert body.stages["rerank"]["used"] is False


def test_always_with_nothing_embedded_fails_strict(cw_home: Path, tmp_path: Path) -> None:
    with _open(cw_home, tmp_path) as arch:
        with pytest.raises(ModelUnavailable) as info:
            _search(arch, "always", strict=True)
        assert _category(info) == errors.NOT_EMBEDDED
        # Not strict, or not asked for outright: the lexical answer, as before.
        assert _search(arch, "always", strict=False).results
        assert _search(arch, "auto", strict=True).results


def test_always_with_semantic_switched_off_fails_strict(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "0")
    with _open(cw_home, tmp_path) as arch:
        with pytest.raises(ModelUnavailable) as info:
            _search(arch, "always", strict=True)
        assert _category(info) == errors.DISABLED
        assert _search(arch, "never", strict=True).results


def test_an_installed_reranker_that_cannot_load_fails_strict(cw_home: Path, tmp_path: Path) -> None:
    folder = build_cross_encoder(tmp_path / "ce")
    (folder / "model.onnx").write_bytes(b"garbage")
    with _open(cw_home, tmp_path) as arch:
        arch.call("models.install_reranker", {"from": str(folder)})
        with pytest.raises(ModelUnavailable) as info:
            _search(arch, "never", strict=True)
        # A busy machine may give up waiting on the load first: either is the stage's failure.
        assert _category(info) in (errors.LOAD_FAILED, errors.TIMEOUT)
        body = _search(arch, "never", strict=False)  # not strict: the fused order, silently
        assert body.retrieval_status == "ok" and not any(h.reranked for h in body.results)


def test_a_disabled_reranker_is_no_stage_even_strict(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = build_cross_encoder(tmp_path / "ce")
    (folder / "model.onnx").write_bytes(b"garbage")
    monkeypatch.setenv("CW_RERANKER_ENABLED", "0")
    with _open(cw_home, tmp_path) as arch:
        arch.call("models.install_reranker", {"from": str(folder)})
        assert _search(arch, "never", strict=True).results


def test_a_working_reranker_runs_under_strict(cw_home: Path, tmp_path: Path) -> None:
    folder = build_cross_encoder(tmp_path / "ce")
    with _open(cw_home, tmp_path) as arch:
        assert arch.call("models.install_reranker", {"from": str(folder)})["loaded"]
        body = _search(arch, "never", strict=True)
        assert body.results and all(h.reranked for h in body.results)

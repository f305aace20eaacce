"""The semantic tier's requests (cwcore.contract.models): a wrong type names its key, bounds are
refused by the record before anything is sent, and the typed status and embedding steps answer
the JSON the engine has always written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.contract.models import (
    EmbedPending,
    EmbedPendingRequest,
    InstallRerankerRequest,
    SemanticStatus,
)
from cwcore.errors import InvalidInput
from tests.unsent import unsent_archive


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        ("models.status", {"selfTest": "no"}, r"^selfTest must be true or false$"),
        ("models.install_reranker", {"from": 3}, r"^from must be a string$"),
        ("models.install_reranker", {"from": "/x", "name": 1}, r"^name must be a string$"),
        ("models.install_reranker", {}, r"^from \(a local folder .*\) is required$"),
        ("semantic.embed_pending", {"maxWindows": True}, r"^maxWindows must be an integer$"),
        ("semantic.embed_pending", {"maxWindows": 0}, r"^maxWindows must be an integer from 1"),
    ],
)
def test_a_wrong_type_or_bound_is_refused_naming_its_key(
    archive: Archive, method: str, params: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        archive.call(method, params)


def test_a_bound_is_refused_before_the_request_is_sent(tmp_path: Path) -> None:
    unsent = unsent_archive(tmp_path)
    with pytest.raises(InvalidInput, match="maxWindows must be an integer from 1 to 4096"):
        unsent.embed_pending(max_windows=4097)
    with pytest.raises(InvalidInput, match="is required"):
        InstallRerankerRequest("")


def test_the_wire_keys_are_kept() -> None:
    wire = InstallRerankerRequest("/m", revision="abc").to_json()
    assert wire == {"from": "/m", "revision": "abc"}
    assert InstallRerankerRequest.parse({"from": "/m"}).source == "/m"
    assert EmbedPendingRequest().to_json() == {"maxWindows": 16}


def test_typed_status_and_embedding_step(archive: Archive) -> None:
    raw = archive.call("semantic.status")
    status = archive.semantic_status()
    assert status.to_json() == raw and isinstance(status, SemanticStatus)
    step = archive.embed_pending(max_windows=4)
    assert isinstance(step, EmbedPending) and step.embedded == 0  # nothing imported
    body = step.to_json()
    assert body["embedded"] == 0 and "state" in body and "indexRows" in body
    assert EmbedPending.from_json(body) == step

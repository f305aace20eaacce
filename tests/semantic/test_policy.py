"""The default semanticPolicy (chosen by make eval) reaches search from every front end."""

from __future__ import annotations

import json
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.config import Settings
from cwcore.retrieve import search as search_module
from cwcore.retrieve.semantic import SemanticOutcome
from cwcore.semantic import index as handler
from cwtui.cli import app
from tests.semantic.conftest import FakeEmbedder
from tests.support import engine_of


def test_the_default_policy_is_auto() -> None:
    assert Settings().semantic_policy == "auto"


@pytest.fixture
def policies(
    topics: Archive, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The policy of every request that reached the semantic mode (vectors exist; the model
    itself is not run)."""
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 16, embedder=fake_embedder)
    topics.close()
    seen: list[str] = []

    def record(*args: Any, policy: str, **kwargs: Any) -> SemanticOutcome:
        seen.append(policy)
        return SemanticOutcome()

    monkeypatch.setattr(search_module, "semantic_tier", record)
    return seen


def _search(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["search", "sqlite database locked", "--json", *args])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.output.strip().splitlines()[-1]))


def test_cw_search_without_a_flag_uses_the_setting(
    policies: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _search()["results"]
    assert policies == ["auto"]
    _search("--semantic", "always")
    assert policies[-1] == "always"
    monkeypatch.setenv("CW_SEMANTIC_POLICY", "always")
    _search()
    assert policies[-1] == "always"
    monkeypatch.setenv("CW_SEMANTIC_POLICY", "never")
    _search()  # never: the semantic mode is not consulted at all
    assert policies == ["auto", "always", "always"]
    # A policy named on the command line stays named on the wire, even the default one.
    _search("--semantic", "auto")
    assert policies == ["auto", "always", "always", "auto"]


def test_request_default_is_the_setting_default() -> None:
    from cwcore.config import Settings
    from cwcore.contract.search import DEFAULT_POLICY, SearchRequest, parse_request

    assert Settings().semantic_policy == DEFAULT_POLICY
    # A request that names no policy leaves it to the engine, which parses with its setting.
    assert SearchRequest().semantic_policy is None
    assert parse_request({"query": "x"}).semantic_policy is None
    engine_side = parse_request({"query": "x"}, default_policy=Settings().semantic_policy)
    assert engine_side.semantic_policy == DEFAULT_POLICY

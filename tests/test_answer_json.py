"""Faces print the engine's JSON as it came (issue 37: "the CLI prints the answer's JSON without
rebuilding it"): an answer read by ``Archive.ask`` keeps the JSON it was read from, and every
``--json`` output of an engine method prints that JSON, not the record written out again.

The proof: the transport marks each answer with a key no record declares. A rebuilt answer would
lose it; the printed one keeps it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive, EmbeddedTransport
from cwcore.contract.methods import SESSIONS, answer_json
from cwcore.contract.sessions import SessionsRequest
from cwtui.cli import app
from tests.helpers import conversation, write_jsonl

MARK = "engineWroteThis"


@pytest.fixture
def marked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An archive with two sessions whose every answer carries ``MARK`` (the method's name)."""
    source = write_jsonl(tmp_path / "a.jsonl", conversation("s1", 2) + conversation("s2", 1))
    with Archive.open() as archive:
        archive.import_paths([source])
    plain = EmbeddedTransport.call

    def call(self: EmbeddedTransport, method: str, params: dict[str, Any], on_event: Any = None):
        body = plain(self, method, params, on_event)
        return {**body, MARK: method}

    monkeypatch.setattr(EmbeddedTransport, "call", call)
    return source


def test_an_asked_answer_keeps_the_json_it_was_read_from(marked: Path) -> None:
    with Archive.open() as archive:
        page = archive.ask(SESSIONS, SessionsRequest(limit=1))
    body = answer_json(page)
    assert body[MARK] == "sessions"
    assert body is answer_json(page)  # the same object: nothing written again
    assert page.to_json() == {k: v for k, v in body.items() if k != MARK}
    # A record changed after it arrived is written from its fields.
    changed = dataclasses.replace(page, next_cursor="elsewhere")
    assert answer_json(changed) == {**page.to_json(), "next_cursor": "elsewhere"}


@pytest.mark.parametrize(
    ("args", "method"),
    [
        (["sessions", "--json"], "sessions"),
        (["show", "s1", "--json"], "show"),
        (["facets", "--json"], "facets"),
        (["doctor", "--json"], "doctor"),
        (["sources", "--json"], "sources"),
        (["index", "status", "--json"], "index.status"),
        (["index", "partial", "--json"], "index.partial"),
        (["index", "verify", "--json"], "index.verify"),
        (["memory", "list", "--json"], "memory.list"),
        (["hints", "--json"], "hints"),
        (["search", "turn", "--json"], "search"),
    ],
)
def test_json_outputs_print_the_engine_json(marked: Path, args: list[str], method: str) -> None:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    (line,) = result.stdout.splitlines()
    assert json.loads(line)[MARK] == method


def test_the_import_summary_is_the_engine_json(marked: Path) -> None:
    result = CliRunner().invoke(app, ["import", str(marked), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary[MARK] == "import" and summary["imported"] == 0 and summary["skipped"]

"""The JSON of ``cw search --json`` and ``--batch``, pinned to golden files, and the typed
:class:`SearchResponse` that carries it from the engine to the faces.

That JSON is a contract: the typed response must serialize to exactly what the engine answered —
the same keys, in the same order, with the same values — and a response rebuilt from its own
JSON must equal it. Locators are signed over a random lease, so each is replaced by
``<locator>`` (and timings by 0) before comparing with the golden file; the round trips are
checked on the raw answers, byte for byte.

Regenerate after a deliberate change of the JSON: ``CW_UPDATE_GOLDEN=1 pytest tests/retrieve``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.contract.search import SearchHit, SearchResponse
from cwcore.hosts.mcp_server import SEARCH, Binding, BoundTools, cap_results
from cwcore.index import windows as index_windows
from cwcore.markdown import fingerprint as fp
from cwcore.recall.recall import LABEL
from cwtui.cli import app
from cwtui.demo import DEMO_DIR
from tests.markdown.conftest import write
from tests.markdown.test_evidence import uncovered_term, varied
from tests.recall.test_results_golden import _normal

GOLDEN = Path(__file__).parent / "golden"
runner = CliRunner()


def _check(name: str, answers: list[Any]) -> None:
    text = "".join(json.dumps(_normal(a), ensure_ascii=False) + "\n" for a in answers)
    path = GOLDEN / f"{name}.jsonl"
    if os.environ.get("CW_UPDATE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8").splitlines()
    got = text.splitlines()
    assert len(got) == len(expected)
    for i, (line, want) in enumerate(zip(got, expected, strict=True)):
        assert line == want, f"{name} answer {i} differs"


def _round_trips(body: dict[str, Any]) -> None:
    """A real answer survives JSON → typed → JSON byte for byte, and typed → JSON → typed."""
    typed = SearchResponse.from_json(body)
    assert json.dumps(typed.to_json(), ensure_ascii=False) == json.dumps(body, ensure_ascii=False)
    assert SearchResponse.from_json(typed.to_json()) == typed
    for hit in typed.results:
        assert SearchHit.from_json(hit.to_json()) == hit


def _unplaced(value: Any) -> Any:
    """``value`` with its session ids and timestamps replaced (they vary from run to run)."""
    if isinstance(value, list):
        return [_unplaced(v) for v in value]
    if isinstance(value, dict):
        return {
            k: f"<{k}>" if k in ("sessionId", "timestamp") else _unplaced(v)
            for k, v in value.items()
        }
    return value


def _cli(*args: str) -> list[dict[str, Any]]:
    out = runner.invoke(app, ["search", *args])
    assert out.exit_code == 0, out.output
    return [json.loads(line) for line in out.stdout.splitlines()]


QUERIES: list[list[str]] = [
    ["ERR_LEASE_EXPIRED"],
    ["retry", "--limit", "3"],
    ["pytest", "--limit", "5"],
    ["rocksdb", "--relation", "correction"],
    ["retry", "--group", "session", "--limit", "3"],
    ["zzqqxx-no-such-thing"],  # empty: the answer carries advice
]


def test_cw_search_json_is_unchanged_over_the_demo(cw_home: Path, tmp_path: Path) -> None:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([DEMO_DIR])
    answers: list[dict[str, Any]] = []
    for args in QUERIES:
        [body] = _cli("--json", "--semantic", "never", *args)
        answers.append(body)
    batch = tmp_path / "requests.jsonl"
    lines = [
        {"id": "a", "query": "retry", "limit": 2, "semanticPolicy": "never"},
        {"id": 7, "query": "nothing-matches-this-xyz", "semanticPolicy": "never"},
        {"id": "bad", "query": "retry", "limit": 0},
        {"query": "ERR_LEASE_EXPIRED", "limit": 1, "semanticPolicy": "never"},
    ]
    batch.write_text("".join(json.dumps(r) + "\n" for r in lines) + "not json\n")
    answers += _cli("--batch", str(batch), "--json")  # errors in place: the --json contract
    # A superseded decision leaves the results; its successor stays, historical as ever.
    with Archive.open(cw_home, embedded=True) as archive:
        raw = archive.call("search", {"query": "retry", "limit": 2, "semanticPolicy": "never"})
        first, second = (h["documentId"] for h in raw["results"])
        archive.supersede(first, by=second, reason="golden")
    [after] = _cli("--json", "--semantic", "never", "--limit", "2", "retry")
    assert first not in [h["documentId"] for h in after["results"]]
    answers.append(after)
    _check("search", answers)
    assert any(b.get("advice") for b in answers) and any(b.get("id") == 7 for b in answers)
    for body in answers:
        if "error" not in body:
            _round_trips(body)


def test_markdown_and_evidence_hits_round_trip(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two windows a document: the rest of a long Markdown file is evidence, not windows.
    monkeypatch.setattr(index_windows, "MAX_WINDOWS", 2)
    root = tmp_path / "inventory"
    text = varied()
    write(root / "items.md", text)
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([root], fmt="markdown")
    answers: list[dict[str, Any]] = []
    for query in (uncovered_term(text), "item00003", "Inventory item00004"):
        [body] = _cli("--json", "--semantic", "never", query)
        answers.append(body)
    # The source paths, and so the document's and session's ids, hold the test's own
    # temporary folder; the file's time is when the test wrote it.
    doc = fp.document_id(root, "items.md")
    placed = json.dumps(answers).replace(str(tmp_path), "<tmp>").replace(doc, "<doc>")
    _check("markdown", _unplaced(json.loads(placed)))
    for body in answers:
        _round_trips(body)
    evidence = SearchResponse.from_json(answers[0]).evidence
    assert evidence and all(SearchHit.is_evidence(h) for h in evidence)
    window_hits = SearchResponse.from_json(answers[1]).results
    assert window_hits and window_hits[0].kind == "markdown" and window_hits[0].extra


def test_the_mcp_search_tool_answers_the_engine_json_labelled(cw_home: Path) -> None:
    """The MCP search tool's answer is the engine's JSON under the historical label, capped:
    the typed response between them changes no byte (locators and timings aside)."""
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([DEMO_DIR])
        tools = BoundTools(archive, Binding(project="orbit-api"))
        for args in ({"query": "retry", "limit": 3}, {"query": "zzqqxx-none"}, {"query": "pytest"}):
            got = tools.call(SEARCH, dict(args))
            raw = archive.call("search", {**args, "project": "orbit-api", "scope": "project"})
            want = {"label": LABEL, "historical": True, **cap_results(raw)}
            assert json.dumps(_normal(got)) == json.dumps(_normal(want))
            assert got["results"] or got["advice"]

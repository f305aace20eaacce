"""The JSON of recall, direct reads, gather and context, pinned to golden files.

These answers are a contract (``cw recall --json``, ``cw gather --json``, the MCP tools): the
typed results that carry them from the engine to the faces must serialize to exactly the JSON
the engine produced before they existed — the same keys with the same values (compared as
parsed JSON, :func:`tests.results.canonical`: key order is the codec's). Locators are signed
over a random lease, so each is replaced by ``<locator>`` (and the search's timings by 0) before
comparing; everything else must match exactly.

Regenerate after a deliberate change of the JSON: ``CW_UPDATE_GOLDEN=1 pytest tests/recall``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.contract.gather import GatherResponse
from cwcore.recall.recall import read_document
from cwcore.retrieve.locator import is_locator
from cwtui.cli import app
from cwtui.demo import DEMO_DIR
from tests.helpers import write_jsonl
from tests.results import canonical
from tests.support import engine_of

GOLDEN = Path(__file__).parent / "golden"
NEVER = {"semanticPolicy": "never"}


def _normal(value: Any) -> Any:
    """``value`` with every locator replaced, the search's timings zeroed and long strings
    shown as their start, length and digest."""
    if isinstance(value, str):
        if is_locator(value):
            return "<locator>"
        if len(value) > 160:  # long text as its length and digest: exact, and small on disk
            digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
            return f"{value[:40]}…<{len(value)} chars sha256 {digest}>"
        return value
    if isinstance(value, list):
        return [_normal(v) for v in value]
    if isinstance(value, dict):
        return {
            k: (0 if k in ("timing_ms", "ms", "elapsedMs") else _normal(v))
            for k, v in value.items()
        }
    return value


def _check(name: str, answers: list[Any]) -> None:
    text = "".join(json.dumps(_normal(a), ensure_ascii=False) + "\n" for a in answers)
    path = GOLDEN / f"{name}.jsonl"
    if os.environ.get("CW_UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    expected = path.read_text(encoding="utf-8").splitlines()
    got = text.splitlines()
    assert len(got) == len(expected)
    for i, (line, want) in enumerate(zip(got, expected, strict=True)):
        assert canonical(json.loads(line)) == canonical(json.loads(want)), (
            f"{name} answer {i} differs"
        )


def _hits(archive: Archive, query: str, limit: int = 5) -> list[dict[str, Any]]:
    return list(archive.call("search", {"query": query, "limit": limit, **NEVER})["results"])


def _recall(archive: Archive, target: str, **params: Any) -> dict[str, Any]:
    """The transport's answer and the typed face's, which must serialize to it."""
    raw = archive.call("recall", {"locator": target, **params})
    typed = archive.recall(
        target,
        neighbors=params.get("neighbors", 1),
        max_tokens=params.get("maxTokens", 3000),
        session_ids=params.get("sessionIds", ()),
        project=params.get("project"),
    )
    assert typed.to_json() == raw
    return raw


def _context(archive: Archive, document_id: str) -> dict[str, Any]:
    raw = archive.call("context", {"documentId": document_id})
    assert archive.context(document_id).to_json() == raw
    return raw


def test_demo_recall_gather_and_context_json_is_unchanged(archive: Archive) -> None:
    archive.import_paths([DEMO_DIR])
    answers: list[Any] = []
    for query in ("ERR_LEASE_EXPIRED", "retry", "pytest"):
        for hit in _hits(archive, query):
            answers.append(_recall(archive, hit["locator"]))
            answers.append(_recall(archive, hit["locator"], neighbors=0, maxTokens=60))
            answers.append(_recall(archive, hit["documentId"]))
            answers.append(_recall(archive, hit["locator"], project="elsewhere"))
            engine = engine_of(archive)
            answers.append(read_document(engine.store, hit["documentId"], max_bytes=10).to_json())
            answers.append(_context(archive, hit["documentId"]))
        for around in (0, 1, 2):
            request = {"query": query, "limit": 3, **NEVER}
            raw = archive.call("gather", {**request, "neighbors": around})
            assert _normal(archive.gather(request, neighbors=around).to_json()) == _normal(raw)
            assert GatherResponse.from_json(raw).to_json() == raw
            answers.append(raw)
    answers.append(_recall(archive, "garbage"))
    answers.append(_recall(archive, "no/such"))
    [hit] = _hits(archive, "ERR_LEASE_EXPIRED", limit=1)
    tampered = hit["locator"][:-2] + ("AA" if not hit["locator"].endswith("AA") else "BB")
    answers.append(_recall(archive, tampered))
    [newer] = _hits(archive, "retry", limit=1)
    archive.supersede(hit["documentId"], by=newer["documentId"], reason="golden")
    answers.append(_recall(archive, hit["locator"]))
    answers.append(_recall(archive, hit["documentId"]))
    _check("demo", answers)


def test_split_turn_and_tool_result_json_is_unchanged(archive: Archive, tmp_path: Path) -> None:
    filler = "lorem ipsum dolor sit amet " * 200  # ~5.4 KB: two messages fill a document
    rows: list[dict[str, Any]] = [
        {"session": "s", "id": "u1", "role": "user", "text": "please look into the pool"}
    ]
    for i in range(6):
        text = f"step {i}: " + ("the kestrel clue is here " if i == 3 else "") + filler
        rows.append({"session": "s", "id": f"a{i}", "role": "assistant", "text": text})
    output = "".join(f"line {n}: falcon trace {n}\n" for n in range(3000))  # ~75 KB tool output
    rows += [
        {"session": "s", "id": "u2", "role": "user", "text": "run the falcon job"},
        {"session": "s", "id": "c1", "role": "assistant", "text": "running", "tool": "bash"},
        {"session": "s", "id": "r1", "role": "tool", "text": output},
        {"session": "s", "id": "a9", "role": "assistant", "text": "falcon done"},
    ]
    archive.import_paths([write_jsonl(tmp_path / "t.jsonl", rows)])
    answers: list[Any] = []
    for query in ("kestrel clue", "falcon trace 1500", "falcon"):
        for hit in _hits(archive, query, limit=3):
            for neighbors, budget in ((0, 3000), (1, 3000), (2, 100_000), (1, 40)):
                body = _recall(archive, hit["locator"], neighbors=neighbors, maxTokens=budget)
                answers.append(body)
                for side in ("before", "after"):
                    further = (body.get("continuation") or {}).get(side)
                    if further:
                        answers.append(_recall(archive, further, neighbors=0))
            answers.append(_recall(archive, hit["documentId"]))
            answers.append(_context(archive, hit["documentId"]))
        request = {"query": query, "limit": 3, **NEVER}
        raw = archive.call("gather", {**request, "neighbors": 2})
        assert _normal(archive.gather(request, neighbors=2).to_json()) == _normal(raw)
        assert GatherResponse.from_json(raw).to_json() == raw
        answers.append(raw)
    _check("segments", answers)


def test_cli_json_prints_the_engine_answer(cw_home: Path) -> None:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([DEMO_DIR])
        [hit] = _hits(archive, "ERR_LEASE_EXPIRED", limit=1)
        want_recall = archive.call("recall", {"locator": hit["locator"], "neighbors": 0})
        want_gather = archive.call(
            "gather", {"query": "retry", "limit": 2, "scope": "all", "neighbors": 1}
        )
    runner = CliRunner()
    out = runner.invoke(app, ["recall", "--json", "--neighbors", "0", hit["locator"]])
    assert out.exit_code == 0, out.output
    assert out.stdout == json.dumps(want_recall, ensure_ascii=False) + "\n"
    out = runner.invoke(app, ["gather", "--json", "--limit", "2", "retry"])
    assert out.exit_code == 0, out.output
    got = json.loads(out.stdout)
    assert json.dumps(_normal(got)) == json.dumps(_normal(want_gather))

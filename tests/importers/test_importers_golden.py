"""Golden tests: each fixture parses (and builds documents) exactly as its golden file records.

The golden files live in ``tests/importers/golden/``; after an intended change regenerate them
with ``.venv/bin/python tests/importers/golden_support.py`` and review the diff. Fixtures cover,
per format: Claude Code merged assistant lines, thinking, isMeta and command wrappers, several
tool results on one line, a sidechain, a compaction summary, an in-file fork and bad lines;
Codex duplicate ``event_msg`` lines, repeated ``session_meta``, reasoning, custom tool calls, a
fork with an ancestor id and a truncated last line; pi v3 branches with summaries, labels and
custom messages, and pi v1; Gemini upserts, ``$set``, ``$rewindTo`` and the legacy ``.json``;
and a metadata-only file for each format that has one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cwcore.importers import base
from tests.importers.golden_support import CASES, FIXTURES, golden_path, render, snapshot


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixture_matches_golden(case: str) -> None:
    expected = golden_path(case).read_text(encoding="utf-8")
    assert render(snapshot(FIXTURES / case)) == expected, (
        f"{case} no longer matches its golden file; if the change is intended, run "
        "`.venv/bin/python tests/importers/golden_support.py` and review the diff"
    )


@pytest.mark.parametrize("case", sorted(CASES))
def test_detect_picks_the_right_importer(case: str) -> None:
    importer = base.detect(FIXTURES / case)
    assert importer is not None and importer.name == CASES[case]


AGENT_FORMATS = ("claude-code", "codex", "pi", "gemini")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("README.md", "# Project\n\nSome *markdown* text.\n\n- a list\n"),
        ("random.json", json.dumps({"name": "x", "version": 3, "items": [1, 2]}, indent=2)),
        ("random.jsonl", '{"a": 1}\n{"b": [1, 2]}\n{"type": "user", "text": "hi"}\n'),
        ("package.json", json.dumps({"type": "module", "dependencies": {}})),
        ("empty.jsonl", ""),
        ("binary.jsonl", "\x00\x01\x02garbage\n"),
    ],
)
def test_agent_sniffers_reject_non_logs(tmp_path: Path, name: str, content: str) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    head = base.read_head(path)
    for fmt in AGENT_FORMATS:
        assert not base.get(fmt).sniff(path, head), f"{fmt} accepted {name}"
    detected = base.detect(path)
    assert detected is None or detected.name not in AGENT_FORMATS


def test_golden_files_have_no_stale_extras() -> None:
    expected = {golden_path(case).name for case in CASES}
    present = {p.name for p in golden_path(next(iter(CASES))).parent.glob("*.json")}
    assert present == expected

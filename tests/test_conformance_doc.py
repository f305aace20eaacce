"""docs/spec-conformance.md stays true to the tree: every row names modules and tests that
exist, and the totals at the top are the rows' own count.

A row whose test was renamed or whose module moved reads as evidence that is no longer there;
the audit of issue 32 found such rows by hand, so this checks them on every run.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "spec-conformance.md"
ROW = re.compile(r"^\| ((?:\d{3}|BRIEF)\.\d+) \| (.*) \| (.*) \| (.*) \| (.*) \|$")
TEST_REF = re.compile(r"^`([^`:]+)::([A-Za-z_][A-Za-z0-9_]*)(?:\[[^`]*\])?`")
DOCUMENTS = {"000": "Spec 000", "001": "Spec 001", "002": "Spec 002", "003": "Spec 003"}
DOCUMENTS |= {"004": "Spec 004", "BRIEF": "BRIEF"}


def _rows() -> list[tuple[str, str, str, str]]:
    """(id, module cell, test cell, status cell) of every requirement row."""
    rows = []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        match = ROW.match(line)
        if match:
            rows.append((match[1], match[3], match[4], match[5]))
    return rows


def _status(cell: str) -> str:
    for status in ("as specified", "**different**", "**missing**"):
        if cell.startswith(status):
            return status.strip("*")
    raise AssertionError(f"unknown status {cell[:40]!r}")


def test_rows_are_parsed() -> None:
    assert len(_rows()) >= 200


@pytest.mark.parametrize("row", _rows(), ids=lambda row: row[0])
def test_every_cited_module_and_test_exists(row: tuple[str, str, str, str]) -> None:
    rid, modules, tests, status = row
    _status(status)
    for cited in re.findall(r"`([^`]+)`", modules):
        path = cited.split()[0]
        if "/" in path and not path.startswith("cw "):
            assert (ROOT / path).exists(), f"{rid}: module {path} does not exist"
    if tests == "no test":
        return
    for ref in tests.split("<br>"):
        match = TEST_REF.match(ref.strip())
        assert match, f"{rid}: {ref!r} is not `file::test`"
        file = ROOT / "tests" / match[1]
        assert file.is_file(), f"{rid}: test file {match[1]} does not exist"
        name = match[2]
        assert re.search(rf"def {name}\b", file.read_text(encoding="utf-8")), (
            f"{rid}: {match[1]} defines no {name}"
        )


def test_the_totals_are_the_rows_count() -> None:
    text = DOC.read_text(encoding="utf-8")
    counts = Counter((rid.split(".")[0], _status(status)) for rid, _, _, status in _rows())
    total = sum(counts.values())
    by_status = Counter(status for (_, status) in counts.elements())
    headline = (
        f"**{total} requirements: {by_status['as specified']} as specified, "
        f"{by_status['different']} different, {by_status['missing']} missing.**"
    )
    assert headline in text
    for key, title in DOCUMENTS.items():
        line = next(line for line in text.splitlines() if line.startswith(f"| {title}"))
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        assert cells[1:] == [
            str(counts[(key, "as specified")]),
            str(counts[(key, "different")]),
            str(counts[(key, "missing")]),
        ], line

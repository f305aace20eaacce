"""``cw read-entry`` and ``cw read-markdown``: exact lines and headings, clear errors, limits."""

from __future__ import annotations

from pathlib import Path

import pytest

from cwcore.markdown import fingerprint as fp
from cwcore.markdown.limits import RESULT_CHARS, TOOL_RESULT_CHARS
from tests.markdown.conftest import cli, write

DOC = (
    "# Architecture\r\n"  # 1
    "\r\n"  # 2
    "Overview text.\r\n"  # 3
    "\r\n"  # 4
    "## Keyspace\r\n"  # 5
    "\r\n"  # 6
    "Keys are tagged.\r\n"  # 7
    "\r\n"  # 8
    "### Layouts\r\n"  # 9
    "Fixed-width fields.\r\n"  # 10
    "\r\n"  # 11
    "# Retrieval\r\n"  # 12
    "\r\n"  # 13
    "## Keyspace\r\n"  # 14: the same title under another parent
    "Term digests.\r\n"  # 15
)


@pytest.fixture
def doc(tmp_path: Path) -> tuple[str, Path]:
    root = tmp_path / "site"
    path = write(root / "design.md", DOC.encode())
    code, summary, _ = cli("import", str(root), "--format", "markdown", "--json")
    assert code == 0 and summary["imported"] == 1
    return fp.document_id(root, "design.md"), path


def lines_of(first: int, last: int) -> str:
    return "".join(DOC.split("\n")[i] + "\n" for i in range(first - 1, last))


def test_read_lines_is_exact(doc: tuple[str, Path]) -> None:
    doc_id, path = doc
    code, body, _ = cli("read-markdown", doc_id, "--lines", "5-7", "--json")
    assert code == 0
    assert body["text"] == lines_of(5, 7) == "## Keyspace\r\n\r\nKeys are tagged.\r\n"
    assert body["lines"] == [5, 7] and body["headingPath"] == ["Architecture", "Keyspace"]
    raw = path.read_bytes()
    assert raw[body["byteStart"] : body["byteEnd"]] == body["text"].encode()
    assert DOC[body["start"] : body["end"]] == body["text"]
    # one line; a range past the end stops at the last line; by path or relative path
    assert cli("read-markdown", doc_id, "--lines", "3", "--json")[1]["text"] == "Overview text.\r\n"
    code, body, _ = cli("read-markdown", "design.md", "--lines", "14-99", "--json")
    assert code == 0 and body["lines"] == [14, 15] and body["text"] == lines_of(14, 15)
    assert cli("read-markdown", str(path), "--lines", "1", "--json")[1]["lines"] == [1, 1]


@pytest.mark.parametrize("bad", ["0-2", "5-3", "x", "16", "16-20"])
def test_bad_line_ranges_are_exit_2(doc: tuple[str, Path], bad: str) -> None:
    code, body, _ = cli("read-markdown", doc[0], "--lines", bad, "--json")
    assert code == 2 and body["error"]["code"] == "invalid-input"


def test_read_a_unique_heading(doc: tuple[str, Path]) -> None:
    doc_id, _ = doc
    code, body, _ = cli("read-markdown", doc_id, "--heading", "layouts", "--json")
    assert code == 0
    assert body["text"] == lines_of(9, 11)
    assert body["heading"] == {"title": "Layouts", "level": 3, "line": 9}
    assert body["headingPath"] == ["Architecture", "Keyspace", "Layouts"]
    # a section includes its sub-sections, up to the next heading of its level or higher
    code, body, _ = cli("read-markdown", doc_id, "--heading", "Architecture > Keyspace", "--json")
    assert code == 0 and body["text"] == lines_of(5, 11) and body["lines"] == [5, 11]
    code, body, _ = cli("read-markdown", doc_id, "--heading", "Retrieval/Keyspace", "--json")
    assert code == 0 and body["text"] == lines_of(14, 15)


def test_a_heading_can_be_named_by_a_unique_part(doc: tuple[str, Path]) -> None:
    doc_id, _ = doc
    code, body, _ = cli("read-markdown", doc_id, "--heading", "layout", "--json")
    assert code == 0 and body["heading"]["title"] == "Layouts"
    code, body, _ = cli("read-markdown", doc_id, "--heading", "key", "--json")
    assert code == 2 and "ambiguous (3 matches)" in body["error"]["message"]


def test_ambiguous_or_missing_heading_lists_candidates(doc: tuple[str, Path]) -> None:
    doc_id, _ = doc
    code, _out, err = cli("read-markdown", doc_id, "--heading", "Keyspace")
    assert code == 2
    assert "ambiguous" in err
    assert "Architecture > Keyspace (line 5)" in err and "Retrieval > Keyspace (line 14)" in err
    code, body, _ = cli("read-markdown", doc_id, "--heading", "Nothing", "--json")
    assert code == 2 and "no heading 'Nothing'" in body["error"]["message"]
    assert "Architecture (line 1)" in body["error"]["message"]
    code, body, _ = cli("read-markdown", doc_id, "--json")
    assert code == 2 and "exactly one of" in body["error"]["message"]
    code, body, _ = cli("read-markdown", "no-such-doc", "--lines", "1", "--json")
    assert code == 3


def test_read_entry_forms(doc: tuple[str, Path]) -> None:
    doc_id, _ = doc
    code, body, _ = cli("read-entry", f"{doc_id}#md:16:34", "--json")
    assert code == 0 and body["text"] == DOC[16:34] and body["evidenceId"] == f"{doc_id}#md:16:34"
    assert body["lines"] == [2, 3] and body["headingPath"] == ["Architecture"]
    code, body, _ = cli("read-entry", doc_id, "--json")
    assert code == 0 and body["text"] == DOC and not body["truncated"]
    code, _out, err = cli("read-entry", "md:1:2")
    assert code == 2 and "names no document" in err
    code, body, _ = cli("read-entry", f"{doc_id}#md:5:9999", "--json")
    assert code == 2 and "outside" in body["error"]["message"]
    code, out, _ = cli("read-entry", f"{doc_id}#md:16:34")
    assert code == 0 and "Overview text." in out and "lines 2-3" in out


def test_read_limits(tmp_path: Path) -> None:
    root = tmp_path / "big"
    paragraph = "word " * 199 + "end.\n\n"  # 1,001 characters
    text = "# Big\n\n" + paragraph * 80  # about 80,000 characters
    write(root / "big.md", text)
    assert cli("import", str(root), "--format", "markdown", "--json")[0] == 0
    doc_id = fp.document_id(root, "big.md")
    code, body, _ = cli("read-entry", doc_id, "--json")
    assert code == 0 and body["characters"] == RESULT_CHARS and body["truncated"]
    assert body["next"] == f"{doc_id}#md:{RESULT_CHARS}:{len(text)}"
    code, body, _ = cli("read-entry", body["next"], "--max-chars", str(TOOL_RESULT_CHARS), "--json")
    assert code == 0 and body["characters"] == TOOL_RESULT_CHARS and body["truncated"]
    code, body, _ = cli("read-entry", doc_id, "--max-chars", str(TOOL_RESULT_CHARS + 1), "--json")
    assert code == 2 and body["error"]["code"] == "invalid-input"
    code, body, _ = cli("read-markdown", doc_id, "--heading", "Big", "--json")
    assert code == 0 and len(body["text"]) == RESULT_CHARS and body["truncated"]
    assert body["text"] == text[:RESULT_CHARS]

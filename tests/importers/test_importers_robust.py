"""Bad input never stops an import: malformed lines become problems, the rest imports.

Property: for every JSONL fixture, a random truncation plus random garbage lines never crashes
its importer, and every message whose source lines all survived is still produced (compared by
role, kind, text and tool call id — ids of the ``L<n>`` formats move with inserted lines).
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cwcore.importers import base
from cwcore.model import FileParse
from tests.importers.golden_support import CASES, FIXTURES

JSONL_CASES = sorted(c for c in CASES if c.endswith(".jsonl"))
LEGACY = "gemini/legacy-proj/chats/session-2025-08-01T09-00-7c1e9a00.json"

BAD_LINES: list[bytes] = [
    b"not json {",
    b"[1, 2, 3]",
    b'"just a string"',
    b'{"no": "type"}',
    b'\xff\xfe{"type": "user"}',
    b'{"a":' * 3000 + b"1" + b"}" * 3000,
]


def signature(parsed: FileParse) -> Counter[tuple[str, str, str, str | None]]:
    return Counter(
        (m.role, m.kind, m.text, m.tool_call_id) for s in parsed.sessions for m in s.messages
    )


def parse_bytes(tmp_path: Path, case: str, data: bytes) -> FileParse:
    target = tmp_path / Path(case).name  # keep the name: ids may come from it
    target.write_bytes(data)
    beside = (FIXTURES / case).with_suffix("")
    if beside.is_dir():  # a session's folder (its sub-agents' transcripts) goes along
        shutil.copytree(beside, target.with_suffix(""), dirs_exist_ok=True)
    return base.get(CASES[case]).parse(target)


@pytest.mark.parametrize("case", JSONL_CASES)
def test_bad_lines_are_problems_and_the_rest_imports(tmp_path: Path, case: str) -> None:
    original = (FIXTURES / case).read_bytes()
    expected = signature(base.get(CASES[case]).parse(FIXTURES / case))
    lines = original.splitlines(keepends=True)
    mutated = b"".join(lines[:1] + [bad + b"\n" for bad in BAD_LINES] + lines[1:])
    mutated += b'{"type": "truncated last line'  # no newline: a file still being written
    result = parse_bytes(tmp_path, case, mutated)
    assert signature(result) == expected
    flagged = {line for line, _ in result.problems}
    assert set(range(2, 2 + len(BAD_LINES))) <= flagged
    assert mutated.count(b"\n") + 1 in flagged
    assert all(reason for _, reason in result.problems)


@pytest.mark.parametrize(
    ("fmt", "row"),
    [
        (
            "claude-code",
            {
                "type": "user",
                "uuid": "a\u0000b",
                "sessionId": "S",
                "message": {"role": "user", "content": "x"},
            },
        ),
        ("claude-code", {"type": "assistant", "uuid": "u9", "message": "not an object"}),
        (
            "pi",
            {
                "type": "message",
                "id": "../etc\u0000",
                "parentId": None,
                "message": {"role": "user", "content": "x"},
            },
        ),
        ("pi", {"type": "message", "id": "e1", "message": {"content": "no role"}}),
        ("codex", {"type": "response_item", "payload": "not an object"}),
        ("gemini", {"id": "bad\u0000id", "type": "user", "content": "x"}),
        ("gemini", {"id": "m1", "content": "no type"}),
    ],
)
def test_lines_missing_required_fields_are_problems(
    tmp_path: Path, fmt: str, row: dict[str, object]
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    result = base.get(fmt).parse(path)
    assert [line for line, _ in result.problems] == [1]
    assert all(not s.messages for s in result.sessions)


def test_duplicate_ids_are_problems(tmp_path: Path) -> None:
    row = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "message": {"role": "user", "content": "hello"},
    }
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    result = base.get("pi").parse(path)
    assert [m.message_id for m in result.sessions[0].messages] == ["e1"]
    assert [line for line, _ in result.problems] == [2]


# tmp_path is shared by a test's examples: each example overwrites the same file, which is fine
FIXTURE_CHECK = [HealthCheck.function_scoped_fixture]

garbage = st.one_of(
    st.text(
        st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",)), max_size=40
    ).map(lambda t: t.encode("utf-8")),
    st.binary(max_size=40).map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ")),
    st.sampled_from([b"[]", b"null", b"42", b"{}", b'{"type": 7}', b"{", b'"x"']),
)


@pytest.mark.parametrize("case", JSONL_CASES)
@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_CHECK)
@given(data=st.data())
def test_truncation_and_garbage_never_lose_intact_messages(
    tmp_path: Path, case: str, data: st.DataObject
) -> None:
    original = (FIXTURES / case).read_bytes()
    parsed = base.get(CASES[case]).parse(FIXTURES / case)
    cut = data.draw(st.integers(0, len(original)), label="cut")
    kept = original[:cut]
    lines = kept.splitlines(keepends=True)
    # a line survives when all of its bytes do (its newline may be cut)
    intact = {
        n
        for n, line in enumerate(original.splitlines(keepends=True), start=1)
        if n <= len(lines) and lines[n - 1].rstrip(b"\r\n") == line.rstrip(b"\r\n")
    }
    inserts = data.draw(st.lists(st.tuples(st.integers(0, len(lines)), garbage), max_size=4))
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += b"\n"  # garbage after a cut line must not glue onto it
    for position, junk in sorted(inserts, key=lambda p: p[0], reverse=True):
        lines.insert(position, junk + b"\n")
    result = parse_bytes(tmp_path, case, b"".join(lines))  # must not raise
    survivors = Counter(
        (m.role, m.kind, m.text, m.tool_call_id)
        for s in parsed.sessions
        for m in s.messages
        if set(m.lines) <= intact
    )
    assert not survivors - signature(result)


@settings(max_examples=40, deadline=None, suppress_health_check=FIXTURE_CHECK)
@given(cut=st.integers(0, len((FIXTURES / LEGACY).read_bytes())))
def test_legacy_gemini_json_truncated_anywhere(tmp_path: Path, cut: int) -> None:
    original = (FIXTURES / LEGACY).read_bytes()
    full = base.get("gemini").parse(FIXTURES / LEGACY)
    result = parse_bytes(tmp_path, LEGACY, original[:cut])  # must not raise
    got = signature(result)
    # a record the cut leaves whole keeps its messages: it ends before the next record starts
    starts = sorted(e.line for s in full.sessions for e in s.events if e.line > 1)
    starts.append(original.count(b"\n"))
    whole_lines = original[:cut].count(b"\n")
    expected = Counter(
        (m.role, m.kind, m.text, m.tool_call_id)
        for s in full.sessions
        for m in s.messages
        if whole_lines >= next(n for n in starts if n > m.lines[0]) - 1
    )
    assert not expected - got
    if cut < len(original.rstrip()):
        assert result.problems

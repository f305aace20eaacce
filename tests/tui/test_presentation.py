"""Pure presentation helpers: sparklines, the since filter, jumps, export paths, entries."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from cwcore.contract.sessions import SessionInfo
from cwcore.contract.views import MetadataEvent, Transcript, TranscriptCounts, TranscriptMessage
from cwcore.errors import InvalidInput
from cwtui.screens.export import default_path
from cwtui.screens.sessions import parse_since
from cwtui.screens.transcript import resolve_jump, session_summary
from cwtui.widgets.sparkline import BARS, EMPTY, sparkline
from cwtui.widgets.transcript_view import build_entries

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def test_sparkline_scales_to_the_busiest_day() -> None:
    assert sparkline([0, 1, 2, 4]) == EMPTY + BARS[2] + BARS[4] + BARS[-1]
    assert sparkline([0, 0]) == EMPTY * 2
    assert sparkline([]) == ""


def test_parse_since_accepts_dates_instants_and_relative_spans() -> None:
    assert parse_since("", NOW) is None
    assert parse_since("7d", NOW) == "2026-11-13T12:00:00.000Z"
    assert parse_since("24h", NOW) == "2026-11-19T12:00:00.000Z"
    assert parse_since("2w", NOW) == "2026-11-06T12:00:00.000Z"
    assert parse_since("2026-11-01", NOW) == "2026-11-01T00:00:00.000Z"
    with pytest.raises(InvalidInput):
        parse_since("last tuesday", NOW)


def test_default_export_path_is_a_safe_file_name() -> None:
    assert default_path("s-alpha-1", "md") == "./s-alpha-1.md"
    assert default_path("../../etc/passwd", "jsonl") == "./_.._etc_passwd.jsonl"
    assert default_path("", "md") == "./session.md"


def _message(key: str, line: int, role: str = "user", kind: str = "text") -> TranscriptMessage:
    return TranscriptMessage("d-1", key, role, kind, key, None, None, (line,), False)


def _transcript(
    messages: list[TranscriptMessage], events: tuple[MetadataEvent, ...] | None = None
) -> Transcript:
    info = SessionInfo("s", "p", "a", None, None, len(messages), 1, 0, None)
    return Transcript(info, (), tuple(messages), TranscriptCounts(len(messages), 0, 0), events)


def test_entries_interleave_metadata_events_by_source_line() -> None:
    body = _transcript(
        [_message("user:u1", 2), _message("assistant:a1", 4, "assistant")],
        (MetadataEvent(1, 1, "progress", False, "{}"), MetadataEvent(2, 3, "x", False, "")),
    )
    entries = build_entries(body)
    assert [(e.kind, e.number) for e in entries] == [
        ("event", 0),
        ("message", 1),
        ("event", 0),
        ("message", 2),
    ]


def test_resolve_jump_by_number_full_key_or_source_id() -> None:
    entries = build_entries(
        _transcript([_message("user:u1", 1), _message("assistant:u1x", 2, "assistant")])
    )
    assert resolve_jump(entries, "2") == 1
    assert resolve_jump(entries, "user:u1") == 0
    assert resolve_jump(entries, "u1x") == 1
    assert resolve_jump(entries, "9") is None
    assert resolve_jump(entries, "zz") is None


def test_session_summary_shows_the_resume_command_when_known() -> None:
    info = SessionInfo(
        sessionId="abc",
        project="p",
        agent="claude-code",
        started="2026-11-18T09:30:00.000Z",
        ended=None,
        messages=3,
        turns=1,
        toolCalls=0,
        parent=None,
        resume="claude --resume abc",
    )
    text = session_summary(info).plain
    assert "resume: claude --resume abc" in text
    assert "resume" not in session_summary(replace(info, resume=None)).plain

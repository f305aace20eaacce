"""Pure presentation helpers: sparklines, the since filter, jumps, export paths, entries."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.contract.sessions import SessionInfo
from cwcore.contract.views import MetadataEvent, Transcript, TranscriptCounts, TranscriptMessage
from cwcore.errors import InvalidInput
from cwtui.screens.export import default_path
from cwtui.screens.sessions import parse_since
from cwtui.screens.transcript import resolve_jump, session_summary
from cwtui.widgets.projects import ProjectTally
from cwtui.widgets.sparkline import BARS, EMPTY, activity_day, daily_counts, sparkline
from cwtui.widgets.transcript_view import build_entries

NOW = datetime(2026, 11, 20, 12, tzinfo=UTC)


def test_daily_counts_cover_the_window_ending_today() -> None:
    days = [date(2026, 11, 20), date(2026, 11, 20), date(2026, 11, 14), date(2026, 11, 13), None]
    assert daily_counts(days, end=NOW, span=7) == [1, 0, 0, 0, 0, 0, 2]  # 13th: outside


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["alpha", "beta", "γ"]),
            st.sampled_from(["pi", "codex"]),
            st.one_of(st.none(), st.integers(-40, 5)),
            st.one_of(st.none(), st.integers(-40, 5)),
        ),
        max_size=60,
    ),
    st.integers(1, 50),
)
def test_the_tally_counts_what_daily_counts_counts(
    sessions: list[tuple[str, str, int | None, int | None]], page: int
) -> None:
    """The walk's tally keeps per-day cells instead of every session's day; page by page its
    overview equals daily_counts over every session seen so far (the oracle it replaced)."""

    def stamp(offset: int | None) -> str | None:
        return None if offset is None else (NOW + timedelta(days=offset)).isoformat()

    rows = [
        SessionInfo(f"s{i}", p, a, stamp(s0), stamp(s1), 1, 1, 0, None)
        for i, (p, a, s0, s1) in enumerate(sessions)
    ]
    tally = ProjectTally(end=NOW, span=28)
    seen: list[SessionInfo] = []
    for start in range(0, max(1, len(rows)), page):
        tally.add(rows[start : start + page])
        seen += rows[start : start + page]
        got = tally.overview(complete=False)
        days = {
            r.project: [activity_day(x.started, x.ended) for x in seen if x.project == r.project]
            for r in seen
        }
        assert got.total == len(seen)
        assert got.activity == tuple(
            daily_counts([activity_day(x.started, x.ended) for x in seen], end=NOW, span=28)
        )
        assert {p.name: (p.sessions, p.activity) for p in got.projects} == {
            name: (len(d), tuple(daily_counts(d, end=NOW, span=28))) for name, d in days.items()
        }
        assert got.agents == tuple(sorted({x.agent for x in seen}))


def test_sparkline_scales_to_the_busiest_day() -> None:
    assert sparkline([0, 1, 2, 4]) == EMPTY + BARS[2] + BARS[4] + BARS[-1]
    assert sparkline([0, 0]) == EMPTY * 2
    assert sparkline([]) == ""


def test_activity_day_prefers_the_start() -> None:
    assert activity_day("2026-11-18T23:59:00Z", "2026-11-19T01:00:00Z") == date(2026, 11, 18)
    assert activity_day(None, "2026-11-19T01:00:00Z") == date(2026, 11, 19)
    assert activity_day(None, None) is None
    assert activity_day("garbage", None) is None


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

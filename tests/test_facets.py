"""Facets (issue 34, filter pickers): every known agent and project with its sessions and
messages counted under the *other* filters, through the Archive (embedded: the same method
table the daemon serves) and in batches smaller than the archive."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore import facets as facets_module
from cwcore.api import Archive
from cwcore.errors import InvalidInput
from cwcore.facets import FacetCount, Facets
from tests.helpers import write_jsonl


def session(sid: str, project: str, agent: str, start: str, n: int) -> list[dict[str, Any]]:
    """``n`` messages a minute apart from ``start`` (``YYYY-MM-DDTHH:``)."""
    return [
        {
            "session": sid,
            "id": f"m{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "text": f"message {i} of {sid}",
            "timestamp": f"{start}{i:02d}:00Z",
            "project": project,
            "agent": agent,
        }
        for i in range(n)
    ]


@pytest.fixture
def arch(cw_home: Path, tmp_path: Path) -> Any:
    rows = (
        session("s1", "alpha", "claude-code", "2026-11-18T09:", 4)
        + session("s2", "alpha", "codex", "2026-11-05T08:", 2)
        + session("s3", "beta", "codex", "2026-11-15T14:", 3)
        + session("s4", "gamma", "pi", "2026-10-01T10:", 1)
    )
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
        yield archive


def counts(items: tuple[FacetCount, ...]) -> dict[str, tuple[int, int]]:
    return {item.name: (item.sessions, item.messages) for item in items}


def test_without_filters_every_value_counts_everything(arch: Archive) -> None:
    found = arch.facets()
    assert counts(found.agents) == {"claude-code": (1, 4), "codex": (2, 5), "pi": (1, 1)}
    assert counts(found.projects) == {"alpha": (2, 6), "beta": (1, 3), "gamma": (1, 1)}
    assert (found.sessions, found.messages) == (4, 10)
    # The message counts are the sessions listing's own.
    rows, _ = arch.sessions(limit=100)
    assert found.messages == sum(r.messages for r in rows)


def test_each_facet_honours_the_other_filters_and_keeps_every_name(arch: Archive) -> None:
    found = arch.facets(agent="codex")
    # Projects within the agent; agents are not narrowed by their own filter.
    assert counts(found.projects) == {"alpha": (1, 2), "beta": (1, 3), "gamma": (0, 0)}
    assert counts(found.agents) == {"claude-code": (1, 4), "codex": (2, 5), "pi": (1, 1)}
    assert (found.sessions, found.messages) == (2, 5)

    found = arch.facets(project="alpha")
    assert counts(found.agents) == {"claude-code": (1, 4), "codex": (1, 2), "pi": (0, 0)}
    assert counts(found.projects)["beta"] == (1, 3)
    assert (found.sessions, found.messages) == (2, 6)

    found = arch.facets(project="alpha", agent="codex")
    assert (found.sessions, found.messages) == (1, 2)
    assert found.agent("codex") == FacetCount("codex", 1, 2)
    assert found.project("nosuch") is None


def test_time_range_overlaps_the_session_span(arch: Archive) -> None:
    found = arch.facets(since="2026-11-10T00:00:00Z")
    assert counts(found.projects) == {"alpha": (1, 4), "beta": (1, 3), "gamma": (0, 0)}
    found = arch.facets(since="2026-11-01", until="2026-11-16")
    assert counts(found.agents) == {"claude-code": (0, 0), "codex": (2, 5), "pi": (0, 0)}
    # A range that ends inside a session's span still holds that session.
    found = arch.facets(since="2026-11-18T09:01:30Z", until="2026-11-18T09:02:00Z")
    assert (found.sessions, found.messages) == (1, 4)


def test_bad_times_are_refused(arch: Archive) -> None:
    with pytest.raises(InvalidInput, match="since must be an ISO-8601"):
        arch.facets(since="notadate")
    with pytest.raises(InvalidInput, match="until"):
        arch.facets(until="7d")


def test_an_empty_archive_has_no_facets(cw_home: Path) -> None:
    with Archive.open(cw_home, embedded=True) as archive:
        assert archive.facets() == Facets((), (), 0, 0)


def test_counts_come_from_the_index_without_reading_session_records(
    arch: Archive, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The session-order summaries carry each session's message count, kept with the record at
    every admission: facets read no session record (5.2 s for a million messages when they
    did) and still count a session that grew."""
    from cwcore.store.reader import Reader

    def no_records(*_a: Any, **_k: Any) -> Any:
        raise AssertionError("facets read a session record")

    monkeypatch.setattr(Reader, "sessions_by_id", no_records)
    monkeypatch.setattr(Reader, "session", no_records)
    assert counts(arch.facets().agents) == {"claude-code": (1, 4), "codex": (2, 5), "pi": (1, 1)}
    more = session("s3", "beta", "codex", "2026-11-16T14:", 6)[3:]  # three more messages
    arch.import_paths([write_jsonl(tmp_path / "more.jsonl", more)])
    found = arch.facets(project="beta")
    assert counts(found.agents)["codex"] == (1, 6)
    assert (found.sessions, found.messages) == (1, 6)
    assert facets_module.__all__ == ["FacetCount", "Facets", "facets"]


def test_activity_counts_each_project_s_sessions_per_day(arch: Archive) -> None:
    """The TUI's sparklines: sessions per UTC day (start, else end) for the days ending with
    ``until``'s day, per project under the agent and time filters, summed in ``activity``."""
    found = arch.facets(until="2026-11-20", activity_days=7)  # 14th .. 20th
    assert found.activity_end == "2026-11-20"
    by = {p.name: p.activity for p in found.projects}
    assert by == {
        "alpha": (0, 0, 0, 0, 1, 0, 0),  # s1 on the 18th; s2 (5th) before the days
        "beta": (0, 1, 0, 0, 0, 0, 0),  # s3 on the 15th
        "gamma": (0,) * 7,
    }
    assert found.activity == (0, 1, 0, 0, 1, 0, 0)
    assert all(a.activity is None for a in found.agents)
    codex = arch.facets(agent="codex", until="2026-11-20", activity_days=7)
    assert {p.name: sum(p.activity or ()) for p in codex.projects} == {
        "alpha": 0,
        "beta": 1,
        "gamma": 0,
    }
    assert Facets.from_json(codex.to_json()) == codex
    # Not asked: no activity, and no key in the JSON.
    plain = arch.facets()
    assert plain.activity is None and plain.activity_end is None
    assert all(p.activity is None for p in plain.projects)
    assert "activity" not in plain.to_json()["projects"][0]
    with pytest.raises(InvalidInput):
        arch.facets(activity_days=-1)


_STAMP = st.one_of(
    st.none(),
    st.just("garbage"),
    st.builds(
        lambda minutes, form: form(
            datetime(2026, 11, 20, 12, tzinfo=UTC) + timedelta(minutes=minutes)
        ),
        st.integers(-60 * 24 * 40, 60 * 24 * 3),
        st.sampled_from(
            [
                lambda t: t.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                lambda t: t.astimezone(timezone(timedelta(hours=-7))).isoformat(),
                lambda t: t.replace(tzinfo=None).isoformat(),
                lambda t: t.date().isoformat(),
            ]
        ),
    ),
)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["alpha", "beta", "γ"]),
            st.sampled_from(["pi", "codex"]),
            _STAMP,
            _STAMP,
        ),
        max_size=40,
    ),
    st.integers(1, 40),
)
def test_activity_equals_counting_parsed_days(
    entries: list[tuple[str, str, str | None, str | None]], span: int
) -> None:
    """The scan's day cells against parsing every stamp (the TUI's walk did that): the engine's
    own ``…Z`` form is read by its prefix, every other form is parsed, garbage is left out."""
    from cwcore.clock import parse_time
    from cwcore.store import session_order

    rows = [
        session_order.Entry(started or "", f"s{i}", project, agent, ended, 1)
        for i, (project, agent, started, ended) in enumerate(entries)
    ]
    end = datetime(2026, 11, 20, 12, tzinfo=UTC)

    class Reader:
        store = None

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(session_order, "scan", lambda _store: iter(rows))
        mp.setenv("CW_NOW", end.isoformat())
        found = facets_module.facets(Reader(), activity_days=span)  # type: ignore[arg-type]

    def day(row: session_order.Entry) -> date | None:
        stamp = row.started or row.ended
        try:
            return parse_time(stamp).date() if stamp else None
        except InvalidInput:
            return None

    first = end.date() - timedelta(days=span - 1)
    expected: dict[str, list[int]] = {}
    for row in rows:
        cells = expected.setdefault(row.project, [0] * span)
        d = day(row)
        if d is not None and first <= d <= end.date():
            cells[(d - first).days] += 1
    assert {p.name: list(p.activity or ()) for p in found.projects} == expected
    assert list(found.activity or ()) == (
        [sum(c) for c in zip(*expected.values(), strict=True)] if expected else [0] * span
    )


def test_json_round_trip(arch: Archive) -> None:
    found = arch.facets(project="alpha")
    assert Facets.from_json(found.to_json()) == found
    assert list(found.to_json()) == ["agents", "projects", "sessions", "messages"]


def test_through_a_real_daemon(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon serves the method from the same table: the same answer as embedded."""
    from cwcore.daemon.client import connect
    from tests.helpers import real_daemon_env

    rows = session("s1", "alpha", "codex", "2026-11-18T09:", 3) + session(
        "s2", "beta", "pi", "2026-11-05T08:", 2
    )
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
        embedded = archive.facets(agent="codex").to_json()
    with real_daemon_env(cw_home, monkeypatch):
        monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "false")
        with connect(cw_home) as client:
            answer = client.call("facets", {"agent": "codex"})
            with pytest.raises(InvalidInput):
                client.call("facets", {"since": "notadate"})
    assert answer == embedded
    assert Facets.from_json(answer).project("alpha") == FacetCount("alpha", 1, 3)


def test_cw_facets_lists_both_facets_and_json(cw_home: Path, tmp_path: Path) -> None:
    """``cw facets``: a table per facet for people, the record's JSON with ``--json``, and a
    bad date as one line on stderr with exit 2."""
    import json

    from typer.testing import CliRunner

    from cwtui.cli import app

    rows = session("s1", "alpha", "claude-code", "2026-11-18T09:", 4) + session(
        "s2", "gamma", "codex", "2026-11-05T08:", 2
    )
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
        expected = archive.facets(agent="codex")
    runner = CliRunner()
    result = runner.invoke(app, ["facets", "--agent", "codex", "--json"])
    assert result.exit_code == 0, result.stderr
    assert Facets.from_json(json.loads(result.stdout)) == expected
    result = runner.invoke(app, ["facets", "--project", "alpha"])
    assert result.exit_code == 0
    assert "claude-code" in result.stdout and "gamma" in result.stdout
    assert "1 session · 4 messages pass every filter" in result.stdout
    result = runner.invoke(app, ["facets", "--since", "notadate"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "cw: since must be an ISO-8601 date or instant"
    # --days: each project's sessions per day, a sparkline column and ``activity`` in the JSON.
    result = runner.invoke(app, ["facets", "--days", "7", "--until", "2026-11-20", "--json"])
    assert result.exit_code == 0, result.stderr
    body = json.loads(result.stdout)
    assert body["activityEnd"] == "2026-11-20"
    assert {p["name"]: p["activity"] for p in body["projects"]} == {
        "alpha": [0, 0, 0, 0, 1, 0, 0],
        "gamma": [0] * 7,
    }
    result = runner.invoke(app, ["facets", "--days", "7", "--until", "2026-11-20"])
    assert result.exit_code == 0
    assert "per day to 2026-11-20" in result.stdout and "····█··" in result.stdout
    result = runner.invoke(app, ["facets", "--days", "400"])
    assert result.exit_code == 2 and "--days" in result.stderr

"""A session is its agent's and its native id's: two agents' sessions with one id never merge.

The cases the importers issue found: a Codex rollout and an OpenClaw session both ``quote-123``
(one "codex" session held both conversations), and a Kilo database with the same ``ses_…`` ids
as an OpenCode one (counted "unchanged", stayed ``opencode``)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.errors import InvalidInput, NotFound
from cwcore.store import identity, keys, rocks
from cwcore.store.rocks import Store
from cwtui.cli import app
from tests.helpers import write_jsonl
from tests.importers.golden_support import FIXTURES
from tests.support import store_of

runner = CliRunner()
SID = "quote-123"


def codex_rollout(folder: Path, session_id: str = SID) -> Path:
    rows = [
        {
            "timestamp": "2026-03-01T10:00:00.000Z",
            "type": "session_meta",
            "payload": {"id": session_id, "cwd": "/home/dev/quotes", "timestamp": "2026-03-01"},
        },
        {
            "timestamp": "2026-03-01T10:00:01.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "why does the quote total round up"}],
            },
        },
        {
            "timestamp": "2026-03-01T10:00:02.000Z",
            "type": "response_item",
            "payload": {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ROUND_HALF_UP in quote_total."}],
            },
        },
    ]
    folder.mkdir(parents=True, exist_ok=True)
    return write_jsonl(folder / f"rollout-2026-03-01T10-00-00-{session_id}.jsonl", rows)


def openclaw_session(home: Path, session_id: str = SID) -> Path:
    rows: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2026-03-02T09:00:00.000Z",
            "cwd": "/home/dev/claw",
        },
        {
            "type": "message",
            "id": "a1",
            "parentId": None,
            "timestamp": "2026-03-02T09:00:01.000Z",
            "message": {"role": "user", "content": [{"type": "text", "text": "book the table"}]},
        },
        {
            "type": "message",
            "id": "a2",
            "parentId": "a1",
            "timestamp": "2026-03-02T09:00:02.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "text", "text": "Booked for eight at Osteria."}],
            },
        },
    ]
    folder = home / ".openclaw" / "agents" / "main" / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    return write_jsonl(folder / f"{session_id}.jsonl", rows)


def cw(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == code, result.stdout + result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def rows(archive: Archive) -> list[dict[str, Any]]:
    found, _ = archive.sessions(limit=100)
    return [r.to_json() for r in found]


def test_two_agents_sharing_an_id_are_two_sessions(tmp_path: Path, archive: Archive) -> None:
    rollout = codex_rollout(tmp_path / "codex")
    claw = openclaw_session(tmp_path / "home")
    first = archive.import_paths([rollout])
    second = archive.import_paths([claw])
    assert (first.sessions, second.sessions) == (1, 1)
    assert any("openclaw:quote-123" in note for note in second.notices)
    listed = {(r["agent"], r["sessionId"]): r for r in rows(archive)}
    assert set(listed) == {("codex", SID), ("openclaw", f"openclaw:{SID}")}
    assert listed[("codex", SID)]["messages"] == 2
    assert listed[("openclaw", f"openclaw:{SID}")]["messages"] == 2
    # Each conversation stays in its own session.
    codex_text = " ".join(m.text for m in archive.show(f"codex:{SID}").messages)
    claw_text = " ".join(m.text for m in archive.show(f"openclaw:{SID}").messages)
    assert "ROUND_HALF_UP" in codex_text and "Osteria" not in codex_text
    assert "Osteria" in claw_text and "ROUND_HALF_UP" not in claw_text
    # A re-import of either file changes nothing.
    again = archive.import_paths([claw, rollout])
    assert again.imported == 0 and again.skipped > 0 and again.notices == []


def test_ids_resolve_to_one_agents_session(tmp_path: Path, archive: Archive) -> None:
    archive.import_paths([codex_rollout(tmp_path / "codex")])
    archive.import_paths([openclaw_session(tmp_path / "home")])
    # A listed id always opens its own session; <agent>:<id> names either agent's.
    assert archive.resolve_session(SID).agent == "codex"
    assert archive.resolve_session(f"codex:{SID}").sessionId == SID
    assert archive.resolve_session(f"openclaw:{SID}").sessionId == f"openclaw:{SID}"
    shown = archive.show(SID)
    assert shown.shared_with == (("openclaw", f"openclaw:{SID}"),)
    assert archive.show(f"openclaw:{SID}").shared_with == (("codex", SID),)
    # A third agent, then the bare id's owner forgotten: the native id names two sessions.
    (tmp_path / "pi").mkdir()
    pi = write_jsonl(
        tmp_path / "pi" / f"2026-03-03T09-00-00-000Z_{SID}.jsonl",
        [
            {"type": "session", "version": 3, "id": SID, "timestamp": "2026-03-03T09:00:00Z"},
            {
                "type": "message",
                "id": "p1",
                "parentId": None,
                "timestamp": "2026-03-03T09:00:01Z",
                "message": {"role": "user", "content": [{"type": "text", "text": "hello pi"}]},
            },
        ],
    )
    assert archive.import_paths([pi]).sessions == 1
    archive.forget(SID)
    with pytest.raises(NotFound, match=r"shared by 2 agents: openclaw \(openclaw:quote-123\), pi"):
        archive.resolve_session(SID)
    assert archive.resolve_session(f"pi:{SID}").agent == "pi"


def test_the_cli_says_which_agents_share_an_id(tmp_path: Path, cw_home: Path) -> None:
    cw("import", str(codex_rollout(tmp_path / "codex")))
    cw("import", str(openclaw_session(tmp_path / "home")))
    result = runner.invoke(app, ["show", SID])
    assert result.exit_code == 0 and "ROUND_HALF_UP" in result.stdout
    assert "openclaw's session openclaw:quote-123 has the same id" in result.stdout
    shown = runner.invoke(app, ["show", f"openclaw:{SID}"])
    assert shown.exit_code == 0 and "Osteria" in shown.stdout
    body = cw("sessions")
    assert {(s["agent"], s["sessionId"]) for s in body["sessions"]} == {
        ("codex", SID),
        ("openclaw", f"openclaw:{SID}"),
    }
    native = {s["sessionId"]: s.get("nativeId") for s in body["sessions"]}
    assert native[f"openclaw:{SID}"] == SID


def test_kilo_and_opencode_databases_with_the_same_ids(tmp_path: Path, archive: Archive) -> None:
    opencode = tmp_path / "opencode.db"
    shutil.copy(FIXTURES / "opencode" / "opencode.db", opencode)
    kilo = tmp_path / "kilo.db"
    shutil.copy(opencode, kilo)  # a Kilo store copied from OpenCode's: the same ses_ ids
    first = archive.import_paths([opencode])
    second = archive.import_paths([kilo])
    assert second.sessions == first.sessions > 0
    assert second.imported > 0, "the Kilo sessions were taken for OpenCode's"
    agents: dict[str, set[str]] = {}
    for row in rows(archive):
        agents.setdefault(row.get("nativeId") or row["sessionId"], set()).add(row["agent"])
    assert agents and all(found == {"opencode", "kilo"} for found in agents.values())


def test_forget_drops_the_identity(tmp_path: Path, archive: Archive) -> None:
    archive.import_paths([codex_rollout(tmp_path / "codex")])
    archive.import_paths([openclaw_session(tmp_path / "home")])
    archive.forget(SID)  # the listed id: codex's
    # Only OpenClaw's session is left: the bare id now names it.
    assert archive.resolve_session(SID).sessionId == f"openclaw:{SID}"


def test_a_session_without_messages_is_a_notice(tmp_path: Path, archive: Archive) -> None:
    header_only = write_jsonl(
        tmp_path / "rollout-2026-03-01T10-00-00-empty.jsonl",
        [
            {
                "timestamp": "2026-03-01T10:00:00.000Z",
                "type": "session_meta",
                "payload": {"id": "empty-1", "cwd": "/home/dev/x"},
            }
        ],
    )
    summary = archive.import_paths([header_only])
    assert (summary.sessions, summary.empty, summary.imported) == (0, 1, 0)
    assert summary.notices == [
        f"{header_only}: session empty-1 (codex) has no messages; not imported"
    ]
    assert rows(archive) == []


class Killed(BaseException):
    """The process dying between two commits (not an error anything may catch)."""


def test_backfill_indexes_a_schema_2_store_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "db"
    with Store(path) as store:
        batch = store.batch()
        for i in range(7):
            record = {"id": f"s{i}", "agent": "pi", "project": "p", "nextSeq": 1}
            batch.put("scopes", keys.SESSION.encode(f"s{i}"), _record(record))
        store.meta_put(batch, "schema", {"version": 2})
        store.commit(batch)
    monkey = pytest.MonkeyPatch()
    monkey.setattr(identity, "BACKFILL_PAGE", 3)
    calls = {"n": 0}
    real_commit = Store.commit

    def crash_after_one(self: Store, batch: Any) -> None:
        real_commit(self, batch)
        calls["n"] += 1
        if calls["n"] == 1:
            raise Killed  # stands in for a kill between two pages

    monkey.setattr(Store, "commit", crash_after_one)
    with pytest.raises(Killed):
        Store(path)
    monkey.setattr(Store, "commit", real_commit)
    with Store(path) as store:
        assert store.schema_version == rocks.SCHEMA_VERSION  # and the migrations after it
        assert [identity.agents_of(store, f"s{i}") for i in range(7)] == [
            [("pi", f"s{i}")] for i in range(7)
        ]
    monkey.undo()


def _record(body: dict[str, Any]) -> bytes:
    from cwcore.store import codec

    return codec.encode_record(body)


def test_opencode_tree_companions_are_counted_not_listed(tmp_path: Path, archive: Archive) -> None:
    storage = FIXTURES / "opencode" / "storage"
    summary = archive.import_paths([storage])
    assert summary.sessions >= 1
    assert summary.companions > 0
    assert not [n for n in summary.notices if "skipped" in n]


def test_sqlite_fixture_is_readable() -> None:
    # The kilo/opencode case above copies this database: it must hold sessions.
    with sqlite3.connect(FIXTURES / "opencode" / "opencode.db") as conn:
        assert conn.execute("SELECT count(*) FROM session").fetchone()[0] > 0


def test_search_scoped_to_an_agents_session(tmp_path: Path, archive: Archive) -> None:
    archive.import_paths([codex_rollout(tmp_path / "codex")])
    archive.import_paths([openclaw_session(tmp_path / "home")])
    archive.index_run(wait=True)
    for name, found in ((f"openclaw:{SID}", "Osteria"), (f"codex:{SID}", "ROUND_HALF_UP")):
        request = {"query": "Osteria ROUND_HALF_UP", "scope": "session", "sessions": [name]}
        hits = archive.search(request).results
        assert hits and all(found in h.snippet for h in hits), name
    # The listed id names codex's session.
    hits = archive.search({"query": "ROUND_HALF_UP", "scope": "session", "sessions": [SID]})
    assert hits.results and all(h.source.session_id == SID for h in hits.results)


def test_names_no_key_can_hold_name_no_session(archive: Archive) -> None:
    """A clear one-line error (`not-found`, or `unsafe-key` for a name no id can be), never an
    internal one."""
    for name in ("a\x00b", "x" * 600, "codex:" + "y" * 600, "\udc00abc"):
        with pytest.raises((NotFound, InvalidInput)):
            archive.resolve_session(name)


def test_resolving_many_names_answers_as_one_by_one(tmp_path: Path, archive: Archive) -> None:
    archive.import_paths([codex_rollout(tmp_path / "codex")])
    archive.import_paths([openclaw_session(tmp_path / "home")])
    store = store_of(archive)
    names = [f"openclaw:{SID}", "missing", SID, "a\x00b", "x" * 600, f"codex:{SID}", "quote"]
    expected = [identity.resolve(store, n) for n in names]
    assert expected[:3] == [f"openclaw:{SID}", None, SID]
    assert identity.resolve_many(store, names) == expected
    assert identity.resolve_many(store, []) == []
    # The bare id's owner forgotten: the native id names two sessions, and the error is the
    # one resolving the names in order meets first.
    archive.import_paths([codex_rollout(tmp_path / "pi-like", "other-1")])
    archive.forget(SID)
    batch = store.batch()
    batch.put("scopes", keys.SESSION_NATIVE.encode(SID, "pi"), b"pi:" + SID.encode())
    store.commit(batch)
    with pytest.raises(NotFound, match="shared by 2 agents"):
        identity.resolve(store, SID)
    with pytest.raises(NotFound, match="shared by 2 agents"):
        identity.resolve_many(store, ["other-1", "missing", SID, f"openclaw:{SID}"])

"""cw forget: canonical records gone, shared chunks kept, ordinals tombstoned, outbox retire."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cwcore.errors import NotFound
from cwcore.model import DocumentPart, DocumentSpec, SessionSpec
from cwcore.store import keys
from cwcore.store.admission import Admission
from cwcore.store.reader import Reader
from cwcore.store.retention import Retention
from cwcore.store.rocks import Store
from cwtui.cli import app
from tests.helpers import conversation, write_jsonl

SHARED = "shared tool output\n" * 100


def _doc(session: str, doc_id: str, text: str) -> DocumentSpec:
    part = DocumentPart("tool:x", "tool", "tool-result", text)
    return DocumentSpec(doc_id, "turn", session, "p", "a", (part,))


def test_forget_session_keeps_shared_chunks(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        adm, reader, ret = Admission(store), Reader(store), Retention(store)
        a = adm.admit_one(SessionSpec("s1", "p", "a"), _doc("s1", "d1", SHARED + "only in s1"))
        adm.admit_one(SessionSpec("s1", "p", "a"), _doc("s1", "d1", SHARED + "only in s1, v2"))
        adm.admit_one(SessionSpec("s2", "p", "a"), _doc("s2", "d2", SHARED + "only in s2"))
        report = ret.forget("s1")
        assert (report.sessions, report.documents, report.versions, report.tombstoned) == (
            1,
            1,
            2,
            2,
        )
        with pytest.raises(NotFound):
            reader.session("s1")
        with pytest.raises(NotFound):
            reader.head("d1")
        assert reader.tombstone(a.ordinal)["retired"] == "forgotten"
        assert reader.ordinal(a.ordinal) is None
        # d2 still reads in full: the chunks it shares with d1 survived.
        assert reader.text(reader.manifest("d2")).startswith(SHARED)
        retired = [
            e for _, e in reader.outbox() if e["op"] == "retire" and e.get("reason") == "forgotten"
        ]
        assert {(e["documentId"], e["version"]) for e in retired} == {("d1", 1), ("d1", 2)}
        ret.forget("s2")
        assert sum(1 for _ in store.scan("chunks", b"")) == 0  # nothing left behind
        assert sum(1 for _ in store.scan("events", b"")) == 0
        assert store.meta_get("counts")["sessions"] == 0


def test_forget_cli(tmp_path: Path) -> None:
    runner = CliRunner()
    write_jsonl(tmp_path / "a.jsonl", conversation("s1", 2) + conversation("s2", 1))
    runner.invoke(app, ["import", str(tmp_path / "a.jsonl")])
    result = runner.invoke(app, ["forget", "s1", "--yes", "--json"])
    assert result.exit_code == 0
    assert json.loads(result.stdout)["documents"] == 2
    listed = json.loads(runner.invoke(app, ["sessions", "--json"]).stdout)
    assert [s["sessionId"] for s in listed["sessions"]] == ["s2"]
    missing = runner.invoke(app, ["forget", "nope", "--yes"])
    assert missing.exit_code == 3 and "no session" in missing.stderr


def test_expiry_respects_retention_setting(tmp_path: Path) -> None:
    from cwcore.config import Settings

    with Store(tmp_path / "db") as store:
        adm, ret = Admission(store), Retention(store)
        old = DocumentPart("user:u", "user", "text", "old", timestamp="2025-01-01T00:00:00Z")
        new = DocumentPart("user:u", "user", "text", "new", timestamp="2026-11-19T00:00:00Z")
        adm.admit_one(
            SessionSpec("old", "p", "a"), DocumentSpec("o1", "turn", "old", "p", "a", (old,))
        )
        adm.admit_one(
            SessionSpec("new", "p", "a"), DocumentSpec("n1", "turn", "new", "p", "a", (new,))
        )
        assert ret.expire(Settings()).sessions == 0  # keeps everything by default
        assert ret.expire(Settings(retention_session_days=30)).sessions == 1
        assert [r["id"] for r in Reader(store).sessions()] == ["new"]
        assert store.get("scopes", keys.SESSION.encode("old")) is None

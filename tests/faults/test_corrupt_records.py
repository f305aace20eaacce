"""A canonical record that does not decode: ``cw doctor`` still reports (naming it, exit 1), other
commands fail in one line that names it (exit 5), nothing "repairs" it from derived data, and
``cw forget`` of the damaged session still removes it. CLI cases run ``cw`` in-process through
its root command (the daemon case through a real daemon).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.contract.doctor import DoctorReport
from cwcore.errors import CorruptRecord
from cwcore.store import keys
from cwcore.store.rocks import Store
from tests.faults.helpers import json_lines, run_cw
from tests.helpers import conversation, real_daemon_env, write_jsonl
from tests.support import engine_of

SESSION_MESSAGE = "session record of 'broken-1' is corrupt (unknown record version): see cw doctor"


@contextlib.contextmanager
def opened(home: Path) -> Iterator[Store]:
    """The store opened directly, creating its files owner-only as cw does."""
    old = os.umask(0o077)
    store = Store(home / "store")
    try:
        yield store
    finally:
        store.close()
        os.umask(old)


def damage(home: Path, family: str, key: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """Rewrite one stored value in place (what disk damage or another program leaves)."""
    with opened(home) as store:
        raw = store.get(family, key)
        assert raw is not None, key
        bad = change(raw)
        batch = store.batch()
        batch.put(family, key, bad)
        store.commit(batch)
        return bad


def stored(home: Path, family: str, key: bytes) -> bytes | None:
    with opened(home) as store:
        return store.get(family, key)


def new_version(raw: bytes) -> bytes:
    return b"\x09" + raw[1:]


@pytest.fixture
def archived(cw_home: Path, tmp_path: Path) -> dict[str, Any]:
    rows = conversation("broken-1", 3) + conversation("intact-2", 2)
    with Archive.open(cw_home, embedded=True) as archive:
        summary = archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
        assert summary.errors == []
        docs = [d.document_id for d in archive.show("broken-1").documents]
        counts = archive.doctor().counts.to_json()
    return {"documents": docs, "counts": counts}


def doctor_json(*extra: str) -> tuple[int, dict[str, Any]]:
    done = run_cw("doctor", "--json", *extra)
    return done.returncode, json_lines(done.stdout)[0]


def test_a_corrupt_session_record_is_named_everywhere_and_forget_removes_it(
    cw_home: Path, archived: dict[str, Any]
) -> None:
    key = keys.SESSION.encode("broken-1")
    bad = damage(cw_home, "scopes", key, new_version)

    code, report = doctor_json()
    assert code == 1
    records = report["checks"]["records"]
    assert records["ok"] is False and records["corrupt"] == 1
    assert records["examples"] == ["scopes/session 'broken-1': unknown record version"]
    assert "never repairs" in records["advice"] and "backup" in records["advice"]
    assert report["checks"]["sessionOrder"]["ok"] and report["checks"]["index"]["ok"]
    human = run_cw("doctor")
    assert human.returncode == 1
    assert "records" in human.stdout and "session 'broken-1'" in human.stdout

    # --repair leaves the canonical record exactly as it found it.
    assert doctor_json("--repair")[0] == 1
    assert stored(cw_home, "scopes", key) == bad

    for args in (("sessions",), ("show", "broken-1"), ("show", "brok"), ("export", "broken-1")):
        done = run_cw(*args)
        assert (done.returncode, done.stderr) == (5, f"cw: {SESSION_MESSAGE}\n"), args
    machine = run_cw("sessions", "--json")
    assert json_lines(machine.stdout) == [
        {"error": {"code": "corrupt-record", "message": SESSION_MESSAGE}}
    ]
    assert run_cw("show", "intact-2").returncode == 0  # the rest of the archive reads

    # The way out: forget the damaged session by its exact id.
    resolved = run_cw("forget", "broken-1", "--yes", "--json")
    assert resolved.returncode == 0, resolved.stderr
    report_body = json_lines(resolved.stdout)[0]
    assert report_body["target"]["corrupt"] is True
    assert report_body["target"]["project"] == "proj"
    assert (report_body["sessions"], report_body["documents"]) == (1, len(archived["documents"]))
    listed = json_lines(run_cw("sessions", "--json").stdout)[0]["sessions"]
    assert [s["sessionId"] for s in listed] == ["intact-2"]
    code, after = doctor_json()
    assert code == 0, after["checks"]
    before = archived["counts"]
    assert after["counts"]["sessions"] == before["sessions"] - 1
    assert after["counts"]["messages"] == before["messages"] - 6
    assert run_cw("index", "verify").returncode == 0


def test_forget_names_a_damaged_session_before_removing_it(
    cw_home: Path, archived: dict[str, Any]
) -> None:
    damage(cw_home, "scopes", keys.SESSION.encode("broken-1"), new_version)
    done = run_cw("forget", "broken-1", "--yes")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "forgetting session broken-1 (its record is corrupt, 3 document(s), 6 message(s))"
    ]


@pytest.mark.parametrize(
    ("what", "expected"),
    [
        ("manifest", "documents/document '{doc}' 1: unknown record version"),
        ("chunk", "chunks/chunk {digest}: its bytes do not match its digest"),
        ("event", "events/event 'broken-1' 1: unknown version"),
        ("ordinal", "ordinals/ordinal {ordinal}: not JSON: "),
    ],
)
def test_doctor_reports_every_kind_of_corrupt_record(
    cw_home: Path, archived: dict[str, Any], what: str, expected: str
) -> None:
    doc = archived["documents"][0]
    with Archive.open(cw_home, embedded=True) as archive:
        engine = engine_of(archive)
        manifest = engine.reader.manifest(doc)
    digest = manifest["parts"][0]["chunks"][0][0]
    ordinal = int(manifest["ordinal"])
    targets = {
        "manifest": ("documents", keys.DOC_VERSION.encode(doc, 1), new_version),
        "chunk": ("chunks", keys.CHUNK.encode(bytes.fromhex(digest)), lambda r: r[:-1] + b"?"),
        "event": ("events", keys.EVENT.encode("broken-1", 1), lambda r: b"\x07" + r[1:]),
        "ordinal": ("ordinals", keys.ORDINAL.encode(ordinal), lambda r: r[:1] + b"{oops"),
    }
    family, key, change = targets[what]
    damage(cw_home, family, key, change)
    code, report = doctor_json()
    assert code == 1
    records = report["checks"]["records"]
    assert records["corrupt"] == 1, records
    assert records["examples"][0].startswith(
        expected.format(doc=doc, digest=digest, ordinal=ordinal)
    )
    # The typed report carries the failed checks back whole (compared as parsed JSON).
    with Archive.open(cw_home, embedded=True) as archive:
        raw = archive.call("doctor")
    typed = DoctorReport.from_json(raw)
    assert json.dumps(typed.to_json(), sort_keys=True) == json.dumps(raw, sort_keys=True)
    assert not typed.healthy and typed.checks.records.advice == raw["checks"]["records"]["advice"]
    if what == "ordinal":  # index verify cannot read past it: that check says so, the report stays
        index = report["checks"]["index"]
        assert index["ok"] is False and " is corrupt (" in index["examples"][0]
        assert typed.checks.index.checked == 0 and typed.checks.index.problems == 1
        human = run_cw("doctor")
        assert human.returncode == 1 and "not checked" in human.stdout


def test_doctor_reports_through_the_daemon(
    cw_home: Path, archived: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    damage(cw_home, "scopes", keys.SESSION.encode("broken-1"), new_version)
    with real_daemon_env(cw_home, monkeypatch) as env:
        done = run_cw("doctor", "--json", env=env)
        assert done.returncode == 1, done.stderr
        assert json.loads(done.stdout)["checks"]["records"]["corrupt"] == 1
        shown = run_cw("show", "broken-1", env=env)
        assert (shown.returncode, shown.stderr) == (5, f"cw: {SESSION_MESSAGE}\n")


def test_retention_leaves_a_session_it_cannot_read(cw_home: Path, archived: dict[str, Any]) -> None:
    from dataclasses import replace

    from cwcore.config import load

    damage(cw_home, "scopes", keys.SESSION.encode("broken-1"), new_version)
    with Archive.open(cw_home, embedded=True) as archive:
        engine = engine_of(archive)
        settings, _ = load(cw_home)
        # Every session is older than a day.
        report = engine.retention.expire(replace(settings, retention_session_days=1))
        assert report.sessions == 1  # intact-2 expired; broken-1 stays, its age unknown
        with pytest.raises(CorruptRecord, match="session record of 'broken-1'"):
            archive.show("broken-1")

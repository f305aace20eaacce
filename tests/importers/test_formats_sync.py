"""Every newer format: found by ``cw sync`` under a fake home at its producer's location, a
second sync adds nothing, and a live session that grows gives its last turn a new version
(``extended``); ``cw import --format auto`` detects the fixture."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cwcore.api import Archive
from cwcore.importers import base
from cwcore.store import codec, keys
from tests.importers.formats_support import CASES, Case
from tests.importers.golden_support import FIXTURES
from tests.support import store_of


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.format}:{Path(c.fixture).name}")
def test_sync_finds_imports_once_and_extends(
    case: Case, tmp_path: Path, cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "user"
    placed = case.install(home)
    if case.project:  # a per-repository log: found through the syncProjects setting
        monkeypatch.setenv("CW_SYNC_PROJECTS", str(home / case.project))
    assert base.detect(placed) is not None and base.detect(placed).name == case.format  # type: ignore[union-attr]
    with Archive.open(cw_home, embedded=True) as archive:
        _sync_grow_and_check(case, home, placed, archive)


def _sync_grow_and_check(case: Case, home: Path, placed: Path, archive: Archive) -> None:
    first = archive.sync(home=str(home))
    assert first.files >= 1 and first.imported > 0
    assert [e for e in first.errors if e.line is None] == []
    rows = archive.sources(home=str(home)).sources
    row = max(
        (r for r in rows if r.format == case.format and placed.is_relative_to(r.path)),
        key=lambda r: len(r.path),
    )
    assert row.found and row.sessions >= 1 and row.messages == first.messages
    again = archive.sync(home=str(home))
    assert (again.files, again.imported) == (0, 0)
    sessions, _ = archive.sessions(limit=100)
    before = {s.sessionId: s.messages for s in sessions}
    case.grow(placed)
    grown = archive.sync(home=str(home))
    assert grown.imported >= 1
    sessions, _ = archive.sessions(limit=100)
    after = {s.sessionId: s.messages for s in sessions}
    assert sum(after.values()) == sum(before.values()) + 1
    docs = [d for sid in after for d in archive.show(sid).documents]
    grown_ids = {d.document_id for d in docs if d.version == 2 and d.state == "live"}
    assert len(grown_ids) == 1, docs  # the last turn, and only it, has a second version
    store = store_of(archive)
    record = store.get("supersession", keys.SUPERSESSION.encode(grown_ids.pop(), 1))
    assert record is not None
    assert codec.decode_record(record, "supersession")["reason"] == "extended"
    assert (archive.sync(home=str(home)).imported) == 0


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.format}:{Path(c.fixture).name}")
def test_import_auto_detects_the_fixture(case: Case, tmp_path: Path, archive: Archive) -> None:
    placed = case.install(tmp_path / "user")
    summary = archive.import_paths([placed])
    assert summary.sessions >= 1 and summary.imported > 0
    assert [e for e in summary.errors if e.line is None] == []


def test_sync_reads_the_project_folders_the_setting_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cw_home: Path
) -> None:
    project = tmp_path / "src" / "websockets"
    (project / ".crush").mkdir(parents=True)
    shutil.copy(FIXTURES / "crush" / ".crush" / "crush.db", project / ".crush" / "crush.db")
    monkeypatch.setenv("CW_SYNC_PROJECTS", str(project))
    with Archive.open(cw_home, embedded=True) as archive:
        first = archive.sync(home=str(tmp_path / "user"))
        assert first.sessions == 1 and first.errors == []
        sessions, _ = archive.sessions(limit=10)
        assert [(s.agent, s.project) for s in sessions] == [("crush", "websockets")]
        rows = archive.sources(home=str(tmp_path / "user")).sources
        row = next(r for r in rows if r.path == str(project / ".crush"))
        assert row.found and row.files == 1 and row.sessions == 1
        assert archive.sync(home=str(tmp_path / "user")).files == 0

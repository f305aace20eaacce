"""Retention by archive kind: agent sessions by their age, Markdown documents by theirs, and
search leases that keep what a still-valid locator names."""

from __future__ import annotations

from pathlib import Path

import pytest

from cwcore.api import Archive
from cwcore.markdown import ingest
from cwcore.store import retention
from tests.helpers import conversation, write_jsonl
from tests.support import maintenance_step

#: conversation() sessions end at 2026-11-01T10:01Z; with 30 days of retention they expire
#: from 2026-12-01T10:01Z.
BEFORE_EXPIRY = "2026-12-01T09:50:00Z"
PAST_EXPIRY = "2026-12-01T10:05:00Z"  # within the 30-minute lease of a search at 09:50
PAST_LEASE = "2026-12-01T10:25:00Z"


@pytest.fixture
def aged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cw_home: Path) -> Archive:
    monkeypatch.setenv("CW_RETENTION_SESSION_DAYS", "30")
    monkeypatch.setenv("CW_NOW", BEFORE_EXPIRY)
    archive = Archive.open(cw_home, embedded=True)
    write_jsonl(tmp_path / "a.jsonl", conversation("s1", 2))
    archive.import_paths([tmp_path / "a.jsonl"])
    return archive


def test_a_live_lease_keeps_its_documents_from_expiry(
    aged: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    with aged:
        hits = aged.search({"query": "parseConfig", "limit": 5}).results
        assert hits
        locator = hits[0].locator
        monkeypatch.setenv("CW_NOW", PAST_EXPIRY)
        report = maintenance_step(aged)
        assert report["sessions"] == 0 and hits[0].document_id in report["skippedLeased"]
        assert aged.recall(locator).status == "resolved"
        # Once the lease is over, retention proceeds.
        monkeypatch.setenv("CW_NOW", PAST_LEASE)
        report = maintenance_step(aged)
        assert report["sessions"] == 1 and report["skippedLeased"] == []
        assert aged.recall(locator).status == "lease-expired"
        assert aged.sessions()[0] == []


def test_without_a_lease_the_session_expires(
    aged: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    with aged:
        monkeypatch.setenv("CW_NOW", PAST_EXPIRY)
        assert maintenance_step(aged)["sessions"] == 1


def _markdown(root: Path, name: str, text: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / name).write_text(text, encoding="utf-8")
    return root


def test_markdown_documents_expire_by_their_own_age(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cw_home: Path
) -> None:
    docs = tmp_path / "docs"
    _markdown(docs, "old.md", "# Old\n\nThe KEYSPACE_NOTE describes tags.\n")
    monkeypatch.setenv("CW_NOW", "2026-10-01T00:00:00Z")
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([docs], fmt="markdown")
    monkeypatch.setenv("CW_NOW", "2026-11-15T00:00:00Z")
    _markdown(docs, "new.md", "# New\n\nThe FRESH_NOTE is recent.\n")
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([docs], fmt="markdown")  # old.md unchanged: not renewed
    monkeypatch.setenv("CW_NOW", "2026-11-20T00:00:00Z")
    # The session age does not apply to Markdown roots (the root was created 50 days ago).
    monkeypatch.setenv("CW_RETENTION_SESSION_DAYS", "30")
    with Archive.open(cw_home, embedded=True) as archive:
        assert maintenance_step(archive)["documents"] == 0
        assert "old.md" in _found(archive, "KEYSPACE_NOTE")
    monkeypatch.setenv("CW_RETENTION_MARKDOWN_DAYS", "30")
    monkeypatch.setenv("CW_NOW", "2026-11-20T01:00:00Z")  # the search's lease is over
    with Archive.open(cw_home, embedded=True) as archive:
        report = maintenance_step(archive)
        assert (report["documents"], report["sessions"]) == (1, 0)
        assert "old.md" not in _found(archive, "KEYSPACE_NOTE")
        assert "new.md" in _found(archive, "FRESH_NOTE")
        # Importing the folder again brings the expired file back.
        archive.import_paths([docs], fmt="markdown")
        assert "old.md" in _found(archive, "KEYSPACE_NOTE")


def _found(archive: Archive, query: str) -> set[str]:
    hits = archive.search({"query": query}).hits()
    return {h.extra["markdown"]["relativePath"] for h in hits if h.extra.get("markdown")}


def test_the_markdown_agent_name_is_the_importers() -> None:
    assert retention.MARKDOWN_AGENT == ingest.AGENT

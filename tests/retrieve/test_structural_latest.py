"""Structural search without a query lists the latest spans first by message time (not by
import order), and the request's scope applies before the cut of relation postings."""

from __future__ import annotations

from pathlib import Path

import pytest

from cwcore.api import Archive
from cwcore.retrieve import lexical
from tests.hints.helpers import load, row

NEVER = {"semanticPolicy": "never"}


def test_latest_is_by_message_time_not_import_order(tmp_path: Path, archive: Archive) -> None:
    asked = row("new", "u1", "user", "How do we rotate the signing keys?", days=1)
    load(archive, tmp_path, [asked])
    # Imported second (higher window ids) but asked long before.
    load(
        archive,
        tmp_path,
        [row("old", "u1", "user", "How do we rotate the backup tapes?", days=20)],
        name="b",
    )
    body = archive.search({"relation": "question", **NEVER})
    sessions = [h.source.session_id for h in body.results]
    assert sessions[:2] == ["new", "old"], sessions
    assert body.results[0].score > body.results[1].score


def test_the_scope_applies_before_the_cut(
    tmp_path: Path, archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = [row("mine", "u1", "user", "Why does the reaper crash on shutdown?", days=3)]
    others = [
        row(f"other{i}", "u1", "user", f"Why does widget {i} spin?", project="beta", days=1)
        for i in range(6)
    ]
    load(archive, tmp_path, mine)
    load(archive, tmp_path, others, name="b")  # newer windows, another project
    monkeypatch.setattr(lexical, "RELATION_SCAN", 3)  # fewer than the other project's spans
    body = archive.search({"relation": "question", "project": "alpha", **NEVER})
    assert [h.source.session_id for h in body.results] == ["mine"]

"""Stores that an earlier cw wrote with two agents' sessions merged into one are split at open.

The merged store is made as the earlier admission made it: an OpenClaw session ``quote-123``
admitted into the Codex session ``quote-123`` (the record keeps ``codex``; events and documents
of both conversations under one id), at schema 2, before the identity index existed."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.config import load
from cwcore.engine import store_path
from cwcore.importers import base
from cwcore.importers.documents import build_documents, session_spec
from cwcore.store import keys
from cwcore.store.admission import Admission
from cwcore.store.rocks import Store
from tests.helpers import REPO
from tests.test_session_identity import SID, codex_rollout, openclaw_session

MOVED = f"openclaw:{SID}"


@pytest.fixture(autouse=True)
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's home, where OpenClaw keeps the session file (how the upgrade tells OpenClaw's
    pi-shaped lines from pi's own)."""
    monkeypatch.setenv("HOME", str(tmp_path / "claw"))
    return tmp_path / "claw"


def merged_home(tmp_path: Path) -> Path:
    """A CW_HOME holding the merged session, as a schema-2 cw left it."""
    home = tmp_path / "home"
    rollout = codex_rollout(tmp_path / "codex")
    claw = openclaw_session(tmp_path / "claw")
    with Archive.open(home, embedded=True) as archive:
        archive.import_paths([rollout])
    settings, _ = load(home)
    with Store(store_path(home)) as store:
        parsed = base.get("openclaw").parse(claw).sessions[0]
        # The old admission: the second agent's conversation under the first one's record.
        # (The earlier cw kept the record's agent and project and took the documents in.)
        parsed = dataclasses.replace(parsed, agent="codex", project="quotes")
        docs = build_documents(parsed, segment_bytes=settings.segment_bytes)
        Admission(store).admit(session_spec(parsed), parsed.events, docs)
        batch = store.batch()
        for key, _ in store.scan("scopes", keys.SESSION_NATIVE.prefix()):
            batch.delete("scopes", key)
        store.meta_put(batch, "schema", {"version": 2})
        store.meta_put(batch, "identity-split", {})
        store.meta_put(batch, "identity-backfill", {})
        store.commit(batch)
    return home


def state(home: Path) -> dict[str, Any]:
    """What a user sees: the sessions, their messages, and where each old document went."""
    with Archive.open(home, embedded=True) as archive:
        rows, _ = archive.sessions(limit=10)
        out: dict[str, Any] = {"sessions": {}, "documents": {}}
        for row in rows:
            name = f"{row.agent}:{row.nativeId or row.sessionId}"  # a bare shared id is ambiguous
            transcript = archive.show(name, hide_superseded=True)
            out["sessions"][row.sessionId] = {
                "agent": row.agent,
                "messages": row.messages,
                "turns": row.turns,
                "text": sorted(m.text for m in transcript.messages),
            }
        full = archive.show(f"codex:{SID}")
        for message in full.messages:
            why = message.supersession
            out["documents"][message.document_id] = {
                "superseded": message.superseded,
                "supersession": why.to_json() if why is not None else None,
            }
        return out


def test_a_merged_session_is_split_at_open(tmp_path: Path) -> None:
    home = merged_home(tmp_path)
    with Archive.open(home, embedded=True) as archive:
        before = {r.sessionId: r.messages for r in archive.sessions(limit=10)[0]}
    # Opening runs the upgrade: it is the first open after the merge was written.
    assert before == {SID: 2, MOVED: 2}
    result = state(home)
    codex, claw = result["sessions"][SID], result["sessions"][MOVED]
    assert (codex["agent"], claw["agent"]) == ("codex", "openclaw")
    assert (codex["messages"], claw["messages"]) == (2, 2)
    assert not any("Osteria" in t for t in codex["text"])
    assert any("Osteria" in t for t in claw["text"])
    # The moved documents stay auditable in the old session, superseded, naming where they went.
    moved = [d for d in result["documents"].values() if d["superseded"]]
    assert moved and all(d["supersession"]["reason"] == f"moved to {MOVED}" for d in moved)
    assert all(d["supersession"]["by"] for d in moved)
    assert all(d["supersession"].pop("at") for d in moved)  # times differ between runs
    # The old session no longer shows OpenClaw's lines among its events.
    with Archive.open(home, embedded=True) as archive:
        events = archive.show(f"codex:{SID}", include_all=True)
        raw = json.dumps([e.to_json() for e in events.events or ()])
        assert "Osteria" not in raw
        assert archive.resolve_session(f"codex:{SID}").sessionId == SID


def test_a_locator_to_a_moved_document_still_answers(tmp_path: Path) -> None:
    home = merged_home(tmp_path)
    # A search before the upgrade (held back for it), whose locator the user keeps.
    with Store(store_path(home)) as store:
        batch = store.batch()
        store.meta_put(batch, "identity-split", {"done": True})
        store.commit(batch)
    with Archive.open(home, embedded=True) as archive:
        archive.index_run(wait=True)
        hits = archive.search({"query": "Osteria", "limit": 3}).results
        assert hits and hits[0].source.session_id == SID
        locator = hits[0].locator
    with Store(store_path(home)) as store:
        batch = store.batch()
        store.meta_put(batch, "identity-split", {})
        store.commit(batch)
    with Archive.open(home, embedded=True) as archive:
        recalled = archive.recall(locator)
        assert recalled.status == "superseded"
        assert f"moved to {MOVED}" in (recalled.message or "")
        assert recalled.superseded_by
        moved = archive.recall(recalled.superseded_by)
        assert moved.status == "resolved" and "Osteria" in json.dumps(moved.to_json())
        archive.index_run(wait=True)
        again = archive.search({"query": "Osteria", "limit": 3}).results
        assert [h.source.session_id for h in again] == [MOVED]


def test_without_a_file_pi_lines_are_pi(tmp_path: Path) -> None:
    home = merged_home(tmp_path)
    shutil.rmtree(tmp_path / "claw" / ".openclaw")
    assert set(state(home)["sessions"]) == {SID, f"pi:{SID}"}


def test_a_store_without_merges_is_untouched(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Archive.open(home, embedded=True) as archive:
        archive.import_paths([codex_rollout(tmp_path / "codex")])
        first = archive.sessions(limit=10)[0]
    with Store(store_path(home)) as store:
        assert (store.meta_get("identity-split") or {}).get("done") is True
    with Archive.open(home, embedded=True) as archive:
        assert archive.sessions(limit=10)[0] == first


_CHILD = """
import os, signal, sys
from pathlib import Path
from cwcore.store.rocks import Store
limit = int(sys.argv[2])
real = Store.commit
count = [0]
def commit(self, batch):
    real(self, batch)
    count[0] += 1
    if count[0] >= limit:
        os.kill(os.getpid(), signal.SIGKILL)
Store.commit = commit
from cwcore.api import Archive
with Archive.open(Path(sys.argv[1]), embedded=True):
    pass
"""


@pytest.mark.slow
def test_the_upgrade_survives_a_kill_at_every_commit(tmp_path: Path) -> None:
    template = merged_home(tmp_path)
    clean = tmp_path / "clean"
    shutil.copytree(template, clean)
    expected = state(clean)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    killed = 0
    for step in range(1, 200):
        home = tmp_path / f"k{step}"
        shutil.copytree(template, home)
        run = subprocess.run(
            [sys.executable, "-c", _CHILD, str(home), str(step)], env=env, capture_output=True
        )
        if run.returncode == 0:
            break
        assert run.returncode == -signal.SIGKILL, run.stderr.decode()
        killed += 1
        assert state(home) == expected, f"killed after commit {step}"
        shutil.rmtree(home)
    assert killed >= 3  # the backfill, each split step and the cursor were all interrupted


def test_the_upgrade_keeps_hints_and_earlier_supersessions(tmp_path: Path) -> None:
    """Losing no hint and no supersession: the upgrade adds records, it rewrites neither."""
    home = merged_home(tmp_path)
    with Store(store_path(home)) as store:
        batch = store.batch()
        batch.put("hints", keys.HINT.encode(SID, "user:L2"), b'{"decision": "kept"}')
        store.commit(batch)
        before = {family: dict(store.scan(family, b"")) for family in ("hints", "supersession")}
    state(home)  # opens, upgrades
    with Store(store_path(home)) as store:
        after = {family: dict(store.scan(family, b"")) for family in ("hints", "supersession")}
    assert after["hints"] == before["hints"]
    assert before["supersession"].items() <= after["supersession"].items()
    assert len(after["supersession"]) > len(before["supersession"])  # the moves were recorded

"""A supersede (or its undo) that committed answers the same result when its request is retried
with the same id, even by a daemon started after the one that committed it (issue 32: the
client's transparent retry got ``conflict``; spec 003: duplicate requests are idempotent by
request id). Real daemon subprocesses."""

from __future__ import annotations

import os
import signal
import uuid
from pathlib import Path

import pytest

from cwcore.api import Archive
from cwcore.daemon.client import connect, wait_for_exit
from cwcore.errors import Conflict, InvalidInput
from tests.helpers import REPO, real_daemon_env, write_jsonl


def _archive(home: Path, tmp_path: Path) -> list[str]:
    """Two sessions imported in-process; their document ids."""
    rows = [
        {"session": s, "id": f"{s}-{i}", "role": role, "text": f"{s} decision {i} text"}
        for s in ("s1", "s2")
        for i, role in enumerate(("user", "assistant"))
    ]
    with Archive.open(home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
        return [
            d["documentId"] for s in ("s1", "s2") for d in archive.show(s).to_json()["documents"]
        ]


def _kill(pid: int | None) -> None:
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_for_exit(pid, 15)


def test_a_retried_supersede_answers_its_result_after_a_restart(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, *_ = _archive(cw_home, tmp_path)
    params = {"documentId": first, "reason": "reversed"}
    rid, undo_rid = uuid.uuid4().hex, uuid.uuid4().hex
    with real_daemon_env(cw_home, monkeypatch):
        with connect(cw_home) as client:
            done = client.call("supersede", params, request_id=rid)
            assert done["state"] == "superseded"
            pid = client.pid
        _kill(pid)  # the daemon's in-memory replay cache is gone
        with connect(cw_home) as client:
            assert client.pid != pid
            assert client.call("supersede", params, request_id=rid) == done
            # A new request (another id) for the same document is still a conflict.
            with pytest.raises(Conflict, match="already superseded"):
                client.call("supersede", params)
            # The id names its request: reused for another method, it is refused.
            with pytest.raises(InvalidInput, match="already used"):
                client.call("supersede.undo", {"documentId": first}, request_id=rid)
            undone = client.call("supersede.undo", {"documentId": first}, request_id=undo_rid)
            assert undone["state"] == "live"
            pid = client.pid
        _kill(pid)
        with connect(cw_home) as client:
            assert client.call("supersede.undo", {"documentId": first}, request_id=undo_rid) == (
                undone
            )
            with pytest.raises(Conflict):
                client.call("supersede.undo", {"documentId": first})
    with Archive.open(cw_home, embedded=True) as archive:
        versions = archive.show_document(first, include_superseded=True).to_json()
    assert versions  # readable; one supersession and one undo, not two of either


def test_the_clients_transparent_retry_after_a_kill_between_commit_and_answer(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, third = _archive(cw_home, tmp_path)
    marker = tmp_path / "died"
    with real_daemon_env(
        cw_home,
        monkeypatch,
        CW_DAEMON_SERVICE="tests.faults.dies_after_commit:make_service",
        CW_TEST_DIE_AFTER="supersede",
        CW_TEST_DIE_MARKER=str(marker),
    ) as env:
        for name in ("CW_DAEMON_SERVICE", "CW_TEST_DIE_AFTER", "CW_TEST_DIE_MARKER"):
            monkeypatch.setenv(name, env[name])
        monkeypatch.setenv("PYTHONPATH", str(REPO))
        with connect(cw_home) as client:
            pid = client.pid
            # One call: the daemon commits, dies before answering; the client starts another
            # and retries with the same request id, which answers the committed result.
            done = client.call("supersede", {"documentId": first, "by": third})
            assert marker.exists() and client.pid != pid
            assert done["state"] == "superseded" and done["by"] == third
    with Archive.open(cw_home, embedded=True) as archive:
        hits = archive.search({"query": "s1 decision 0"}).results
    assert first not in {h.document_id for h in hits}

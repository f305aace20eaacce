"""Every write retried with its request id after a daemon restart answers as the first did
(issue 32; spec 003: duplicate client requests are idempotent by source key or request id).

``forget``, ``memory.add``, ``memory.contest``, ``memory.deprecate`` and ``memory.delete`` record
their answer by request id in the batch of their change (``cwcore.store.request_ids``, the
mechanism ``supersede`` uses): a retry after ``kill -9`` gets that answer, never ``not-found``,
``conflict`` or a second memory record. ``import``, ``sync``, ``index.rebuild`` and
``hints.rotate`` are idempotent by what they write: a retry changes nothing more and fails on
nothing. Real daemon subprocesses; ``tests/faults/test_supersede_retry.py`` covers supersede.
"""

from __future__ import annotations

import os
import signal
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from cwcore import clock
from cwcore.api import Archive
from cwcore.daemon.client import Client, connect, wait_for_exit
from cwcore.engine import store_path
from cwcore.errors import InvalidInput, NotFound
from cwcore.store import codec, keys, request_ids
from cwcore.store.rocks import Store
from tests.helpers import REPO, conversation, real_daemon_env, write_jsonl
from tests.importers.formats_support import CASES


def _archive(home: Path, tmp_path: Path) -> dict[str, list[str]]:
    """Three sessions imported in-process: their document ids by session."""
    rows = [r for s in ("s1", "s2", "s3") for r in conversation(s, 2)]
    with Archive.open(home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
        return {
            s: [d["documentId"] for d in archive.show(s).to_json()["documents"]]
            for s in ("s1", "s2", "s3")
        }


def _kill(client: Client) -> None:
    pid = client.pid
    assert pid is not None
    client.close()
    os.kill(pid, signal.SIGKILL)
    assert wait_for_exit(pid, 15)


def _memory_count(home: Path) -> int:
    with Archive.open(home, embedded=True) as archive:
        return len(archive.memory_list(status=None, limit=10_000).to_json()["records"])


def test_each_write_retried_after_a_restart_answers_as_the_first(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _archive(cw_home, tmp_path)
    done: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = []
    with real_daemon_env(cw_home, monkeypatch):
        with connect(cw_home) as client:

            def write(method: str, params: dict[str, Any]) -> dict[str, Any]:
                rid = uuid.uuid4().hex
                answer = client.call(method, params, request_id=rid)
                done.append((method, params, rid, answer))
                return answer

            added = write("memory.add", {"statement": "Prefer bounded queues in the pool."})
            write("memory.add", {"statement": "Run ruff before committing.", "id": "mem_x"})
            write("memory.contest", {"id": "mem_x", "reason": "disputed"})
            write("memory.deprecate", {"id": added["id"], "reason": "outdated"})
            write("memory.delete", {"id": "mem_x"})  # the contest's retry must not see this
            write("forget", {"target": docs["s2"][0]})
            write("forget", {"target": "s1"})
            _kill(client)  # the daemon's in-memory replay cache is gone
        with connect(cw_home) as client:
            for method, params, rid, answer in done:
                assert client.call(method, params, request_id=rid) == answer, method
            # A new request (another id) is a new write: the session is gone now.
            with pytest.raises(NotFound):
                client.call("forget", {"target": "s1"})
            # The id names its request: reused for another method, it is refused.
            with pytest.raises(InvalidInput, match="already used"):
                client.call("memory.add", {"statement": "another"}, request_id=done[-1][2])
    assert _memory_count(cw_home) == 2  # two adds, never a third record from a retry
    assert [a for m, _, _, a in done if m == "forget"][1]["target"]["id"] == "s1"


@pytest.mark.slow
@pytest.mark.parametrize(
    "method", ["forget", "memory.add", "memory.contest", "memory.deprecate", "memory.delete"]
)
def test_the_clients_transparent_retry_after_a_kill_between_commit_and_answer(
    method: str, cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = _archive(cw_home, tmp_path)
    with Archive.open(cw_home, embedded=True) as archive:
        archive.memory_add("Keep retries bounded.", id="mem_r")
    params: dict[str, Any] = {
        "forget": {"target": "s1"},
        "memory.add": {"statement": "Prefer small pull requests."},
        "memory.contest": {"id": "mem_r", "reason": "disputed"},
        "memory.deprecate": {"id": "mem_r"},
        "memory.delete": {"id": "mem_r"},
    }[method]
    marker = tmp_path / "died"
    extra = {
        "CW_DAEMON_SERVICE": "tests.faults.dies_after_commit:make_service",
        "CW_TEST_DIE_AFTER": method,
        "CW_TEST_DIE_MARKER": str(marker),
    }
    with real_daemon_env(cw_home, monkeypatch, **extra):
        for name, value in extra.items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("PYTHONPATH", str(REPO))
        with connect(cw_home) as client:
            pid = client.pid
            # One call: the daemon commits, dies before answering; the client starts another
            # and retries with the same request id, which answers the committed result.
            answer = client.call(method, params)
            assert marker.exists() and client.pid != pid
    if method == "forget":
        assert answer["target"]["id"] == "s1" and answer["documents"] == len(docs["s1"])
    elif method == "memory.add":
        assert answer["statement"] == "Prefer small pull requests."
        assert _memory_count(cw_home) == 2
    else:
        status = {"contest": "contested", "deprecate": "deprecated", "delete": "deleted"}
        assert answer["status"] == status[method.split(".")[1]]


def test_import_sync_rebuild_and_rotate_are_idempotent_by_what_they_write(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """These record no answer: a retry after a restart runs again, writes nothing new and
    fails on nothing. An import or sync admits by source key and content digest (a retry
    counts its documents unchanged); a rebuild resets the derived indexes and queues every
    live document again (the same count); a rotation keeps exactly the active keys (a retry
    keeps the same hints and budget; ``dropped`` lists what this call removed: none)."""
    user = tmp_path / "user"
    next(c for c in CASES if c.format == "qwen").install(user)
    path = write_jsonl(tmp_path / "s.jsonl", conversation("s1", 3))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("import", {"paths": [str(path)]}),
        ("sync", {"home": str(user)}),
        ("index.rebuild", {"wait": True}),
        ("preflight", {"message": "what did s1 decide?", "session": "h", "messageKey": "user:k0"}),
        ("hints.rotate", {"session": "h", "active": []}),
    ]
    first: dict[str, dict[str, Any]] = {}
    rids = {method: uuid.uuid4().hex for method, _ in calls}
    with real_daemon_env(cw_home, monkeypatch):
        with connect(cw_home) as client:
            for method, params in calls:
                first[method] = client.call(method, params, request_id=rids[method])
            sessions = client.call("sessions", {"limit": 100})["sessions"]
            _kill(client)
        with connect(cw_home) as client:
            again = {m: client.call(m, p, request_id=rids[m]) for m, p in calls if m != "preflight"}
            assert client.call("sessions", {"limit": 100})["sessions"] == sessions
    assert first["import"]["imported"] > 0 and again["import"]["imported"] == 0
    assert again["import"]["skipped"] >= first["import"]["imported"]
    assert first["sync"]["imported"] > 0 and again["sync"]["imported"] == 0
    assert again["index.rebuild"]["queued"] == first["index.rebuild"]["queued"] > 0
    rotated = {k: v for k, v in first["hints.rotate"].items() if k != "dropped"}
    assert {k: v for k, v in again["hints.rotate"].items() if k != "dropped"} == rotated
    assert again["hints.rotate"]["dropped"] == []


def test_recorded_answers_are_bounded_by_age_and_count(tmp_path: Path) -> None:
    """The ``requests`` family does not grow without bound: a sweep (the daemon's periodic
    maintenance) drops answers older than a day, then the oldest beyond the count bound;
    a record of an older cw (no instant) counts as the oldest."""
    now = clock.parse_time("2026-11-20T12:00:00Z")
    with Store(store_path(tmp_path / "home")) as store:
        batch = store.batch()
        for i in range(6):
            at = now - timedelta(hours=30 - i * 6)  # 30, 24, 18, 12, 6, 0 hours ago
            request_ids.record(batch, f"r{i}", "memory.add", None, {"n": i}, at)
        legacy = codec.encode_record({"op": "supersede", "project": None, "answer": {}})
        batch.put("requests", keys.REQUEST.encode("legacy"), legacy)
        store.commit(batch)
        assert request_ids.answered(store, "r0", "memory.add") == {"n": 0}
        assert request_ids.expire(store, now) == 1  # r0 is past a day; r1 is exactly a day
        assert request_ids.answered(store, "r0", "memory.add") is None
        assert request_ids.expire(store, now, max_records=3) == 3  # legacy, r1, r2
        left = {keys.REQUEST.decode(k)[0] for k, _ in store.scan("requests", b"")}
        assert left == {"r3", "r4", "r5"}
        with pytest.raises(InvalidInput, match="already used"):
            request_ids.answered(store, "r5", "forget")


@pytest.mark.parametrize(
    "params",
    [
        {"statement": "passed \ud83d"},
        {"statement": "ok", "tags": ["\udc00"]},
        {"statement": "ok", "scope": "project:\udc00"},
        {"statement": "ok", "doesNotApplyWhen": ["\udc00 here"]},
    ],
)
def test_a_memory_write_with_a_lone_surrogate_is_refused_in_one_line(
    cw_home: Path, params: dict[str, Any]
) -> None:
    """Text that is not valid Unicode cannot be stored: ``invalid-input`` naming the field,
    nothing written (it ended in ``internal``: UnicodeEncodeError at the record's encoding)."""
    with Archive.open(cw_home, embedded=True) as archive:
        with pytest.raises(InvalidInput, match="lone surrogate"):
            archive.call("memory.add", params)
        archive.memory_add("Keep retries bounded.", id="mem_r")
        with pytest.raises(InvalidInput, match="lone surrogate"):
            archive.call("memory.contest", {"id": "mem_r", "reason": "\udc00"})
        assert [r["id"] for r in archive.memory_list().to_json()["records"]] == ["mem_r"]

"""The indexing lifecycle end to end: kill -9 and replay, rebuild, verify, status on real logs.

A *canonical dump* of the derived state names everything by ``(documentId, version, window
index)``, never by wid, so two stores that indexed the same input in different page boundaries
(or after a rebuild, which assigns wids in another order) compare equal exactly when they publish
the same windows, exact and relation postings, importance priors, outcomes and BM25 scores.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from cwcore.config import Settings
from cwcore.engine import store_path
from cwcore.importers.pipeline import import_paths
from cwcore.index import bm25, derived
from cwcore.index.derived import EXACT, IMPORTANCE, RELATION
from cwcore.index.worker import IndexWorker
from cwcore.model import DocumentPart, DocumentSpec, SessionSpec
from cwcore.store import codec, keys
from cwcore.store.admission import Admission
from cwcore.store.reader import Reader
from cwcore.store.rocks import Store
from cwcore.text.tokenize import tokens
from cwtui.cli import app
from tests.helpers import conversation, write_jsonl
from tests.support import die_before_publication

LOGS = Path(__file__).resolve().parents[3] / "shared/data/agent-logs"
QUERIES = [
    "parseConfig",
    "question about parseConfig",
    "ERR_0003",
    "src/config/load_2.py",
    "answer edit",
    "follow-up retry backoff",
    "load_4",
]
runner = CliRunner()


def cli(*args: str) -> tuple[int, Any]:
    result = runner.invoke(app, list(args))
    lines = [json.loads(x) for x in result.stdout.splitlines() if x.strip().startswith("{")]
    return result.exit_code, (lines[-1] if lines else result.stdout)


# -- input and canonical dump ------------------------------------------------------------------


def _write_input(tmp: Path, sessions: int) -> list[Path]:
    """Two cw-jsonl files: ``sessions`` sessions of 6 turns, then every 5th session grown by a
    reply to its last turn (a new version superseding it: ``extended``) and one more turn."""
    first: list[dict[str, Any]] = []
    for s in range(sessions):
        first += conversation(f"sess-{s:04d}", 6, project=f"proj-{s % 3}")
    grown: list[dict[str, Any]] = []
    for s in range(0, sessions, 5):
        rows = conversation(f"sess-{s:04d}", 6, project=f"proj-{s % 3}")
        rows.append({**rows[-1], "id": "a5-more", "text": "follow-up: retry with backoff"})
        rows.append({**rows[0], "id": "u6", "text": "why does the retry never back off?"})
        rows.append({**rows[1], "id": "a6", "text": "because backoff_ms is zero by default"})
        grown += rows
    return [write_jsonl(tmp / "a.jsonl", first), write_jsonl(tmp / "b.jsonl", grown)]


def _admit_pending(home: Path, files: list[Path]) -> int:
    """Admit through the pipeline without indexing: the outbox stays pending."""
    with Store(store_path(home)) as store:
        admission = Admission(store)
        imported = 0
        for path in files:
            summary = import_paths(admission, [path], fmt="cw-jsonl", settings=Settings())
            assert not summary.errors
            imported += summary.imported
        assert IndexWorker(store, Settings()).depth() > imported  # index + retire entries
    return imported


def canonical_dump(store: Store) -> dict[str, Any]:
    """The derived state of every live document, keyed by (documentId, version, window)."""
    gen = derived.generation(store)
    max_wid = int(gen["maxWid"])
    where: dict[int, tuple[str, int, int]] = {}
    docs: dict[str, Any] = {}
    for _, raw in store.scan("documents", keys.DOC_HEAD.prefix()):
        head = codec.decode_record(raw, "head")
        if head.get("state") != "live":
            continue
        ordinal = int(head["ordinal"])
        mark = derived.marker(store, ordinal)
        assert mark is not None, f"{head['documentId']} was never indexed"
        first, n = int(mark["firstWid"]), int(mark["windows"])
        assert first + n - 1 <= max_wid, "a live window is beyond the published generation"
        windows = []
        wids = list(range(first, first + n))
        for wid, record in zip(wids, derived.window_records(store, wids), strict=True):
            assert record is not None
            where[wid] = (record["documentId"], int(record["version"]), int(record["index"]))
            windows.append(record)
        raw_prior = store.get(
            "importance", IMPORTANCE.encode(derived.IMPORTANCE_NAMESPACE, ordinal)
        )
        docs[head["documentId"]] = {
            "version": head["version"],
            "ordinal": ordinal,
            "outcomes": mark["outcomes"],
            "windows": windows,
            "importance": derived.unpack_float(raw_prior) if raw_prior else None,
        }
    exact, relations = [], []
    for key, value in store.scan("exact", EXACT.prefix()):
        digest, at, start = EXACT.decode(key)
        if int(at) in where:  # postings of live documents (superseded ones stay, hidden)
            exact.append((cast(bytes, digest).hex(), *where[int(at)], int(start), value.hex()))
    for key, value in store.scan("relations", RELATION.prefix()):
        relation, at, start = RELATION.decode(key)
        if int(at) in where:
            relations.append((str(relation), *where[int(at)], int(start), value.hex()))
    exact.sort()
    relations.sort()
    index = IndexWorker(store, Settings()).bm25
    manifest = index.manifest()
    searches = {}
    for query in QUERIES:
        hits = bm25.search(index.reader(), tokens(query), k=100_000)
        searches[query] = {
            where[int(o)]: float(s)
            for o, s in zip(hits.ordinals, hits.scores, strict=True)
            if int(o) in where
        }
        assert len(searches[query]) == len(hits), "a search returned a window of no live document"
    return {
        "documents": docs,
        "exact": exact,
        "relations": relations,
        "bm25": {"live": manifest.live_docs, "avgdl": manifest.avgdl, "searches": searches},
        "outbox_depth": IndexWorker(store, Settings()).depth(),
    }


def assert_same_dump(got: dict[str, Any], want: dict[str, Any]) -> None:
    assert got["outbox_depth"] == want["outbox_depth"] == 0
    assert got["documents"].keys() == want["documents"].keys()
    for doc_id, body in want["documents"].items():
        assert got["documents"][doc_id] == body, doc_id
    assert got["exact"] == want["exact"]
    assert got["relations"] == want["relations"]
    assert got["bm25"]["live"] == want["bm25"]["live"]
    assert got["bm25"]["avgdl"] == pytest.approx(want["bm25"]["avgdl"], rel=1e-12)
    for query, scores in want["bm25"]["searches"].items():
        assert scores, f"{query!r} matches nothing: a useless probe"
        assert got["bm25"]["searches"][query] == pytest.approx(scores, rel=1e-9), query


def _dump_home(home: Path) -> dict[str, Any]:
    with Store(store_path(home)) as store:
        return canonical_dump(store)


def _drain_home(home: Path) -> None:
    with Store(store_path(home)) as store:
        IndexWorker(store, Settings()).drain()


# -- kill -9 ---------------------------------------------------------------------------------------

# A worker with small pages that stops after every store commit: it prints whether tablets are
# staged past the published generation ("orphan") or not ("clean"), then waits for a line on
# stdin. The test kills it while it waits, so each kill lands exactly where the test chose,
# whatever the load on the machine.
_STEPPED_INDEXER = """
import sys
from pathlib import Path
from cwcore.config import Settings
from cwcore.index import derived
from cwcore.index.worker import IndexWorker
from cwcore.store.rocks import Store
store = Store(Path(sys.argv[1]))
worker = IndexWorker(store, Settings())
commit = store.commit

def commit_then_wait(batch):
    commit(batch)
    staged = int((store.meta_get("index-state") or {"nextWid": 1})["nextWid"]) - 1
    orphan = staged > int(derived.generation(store)["maxWid"])
    print("orphan" if orphan else "clean", flush=True)
    sys.stdin.readline()

store.commit = commit_then_wait
print("ready", flush=True)
while worker.run_once(max_entries=int(sys.argv[2])):
    pass
store.close()
print("done", flush=True)
"""


def _kill_at_a_commit(home: Path, page: int, skip: int) -> bool:
    """Index ``home`` in a stepped subprocess (pages of ``page`` entries) and SIGKILL it at the
    first commit after ``skip`` commits that leaves tablets staged past the published
    generation; True if it was killed there (False: it finished first)."""
    env = {**os.environ, "CW_HOME": str(home), "CW_EMBEDDED": "1"}
    cmd = [sys.executable, "-c", _STEPPED_INDEXER, str(store_path(home)), str(page)]
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    killed = False
    for commits, line in enumerate(proc.stdout):
        if line.strip() == "orphan" and commits >= skip:
            os.kill(proc.pid, signal.SIGKILL)  # it is blocked on stdin: mid-page, by design
            killed = True
            break
        proc.stdin.write("\n")
        proc.stdin.flush()
    proc.wait()
    proc.stdin.close()
    proc.stdout.close()
    return killed


def _run_cli_and_kill(home: Path, delay: float) -> None:
    """``cw index --wait`` in a subprocess, SIGKILLed ``delay`` s after it starts (or after it
    finished): a kill at an arbitrary instruction, wherever the timing puts it."""
    env = {**os.environ, "CW_HOME": str(home), "CW_EMBEDDED": "1"}
    cmd = [sys.executable, "-m", "cwtui.cli", "index", "--wait", "--lexical", "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    # A timed kill: where it lands varies with the load, which is the point of this trial; no
    # assertion depends on where.
    time.sleep(delay)
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


# Crash trials: six subprocess runs over a 930-document corpus.
@pytest.mark.slow
def test_kill_9_during_indexing_then_restart_publishes_the_same_postings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = _write_input(tmp_path, sessions=150)
    killed_home, clean_home = tmp_path / "killed", tmp_path / "clean"
    assert _admit_pending(killed_home, files) == _admit_pending(clean_home, files)

    started = time.perf_counter()
    _drain_home(clean_home)  # the uninterrupted run
    clean_seconds = time.perf_counter() - started
    want = _dump_home(clean_home)
    assert len(want["documents"]) == 150 * 6 + 30  # 6 turns a session, +1 turn in every 5th

    rng = random.Random(20261120)
    # Stepped kills first, each a few commits into a page of its own size: each certainly lands
    # mid-page with tablets committed past the publication (the state replay must finish).
    for page in (5, 37, 120):
        assert _kill_at_a_commit(killed_home, page, skip=rng.randrange(1, 30)), page
    with Store(store_path(killed_home)) as store:
        staged = int((store.meta_get("index-state") or {"nextWid": 1})["nextWid"]) - 1
        assert staged > int(derived.generation(store)["maxWid"]), "no tablet left orphaned"
    # Then timed kills of the real command, at points no test chose.
    for _ in range(3):
        _run_cli_and_kill(killed_home, 0.6 + rng.uniform(0.03, 0.45) * clean_seconds)
    _drain_home(killed_home)  # restart: replay finishes what the kills interrupted
    assert_same_dump(_dump_home(killed_home), want)
    monkeypatch.setenv("CW_HOME", str(killed_home))
    code, body = cli("index", "verify", "--json")
    assert code == 0 and body["ok"], body


# -- rebuild and verify -------------------------------------------------------------------------


@pytest.fixture
def indexed_home(cw_home: Path, tmp_path: Path) -> Iterator[Path]:
    files = _write_input(tmp_path, sessions=20)
    _admit_pending(cw_home, files)
    code, status = cli("index", "--wait", "--lexical", "--json")
    assert code == 0 and status["outbox"]["depth"] == 0
    yield cw_home


def test_rebuild_reproduces_the_derived_state(indexed_home: Path) -> None:
    before = _dump_home(indexed_home)
    code, body = cli("index", "rebuild", "--wait", "--json")
    assert code == 0
    assert body["queued"] == len(before["documents"]) and body["outbox"]["depth"] == 0
    after = _dump_home(indexed_home)
    assert_same_dump(after, before)
    code, body = cli("index", "verify", "--json")
    assert code == 0 and body["ok"]


def _first_live(store: Store) -> tuple[dict[str, Any], dict[str, Any]]:
    reader = Reader(store)
    for _, raw in store.scan("documents", keys.DOC_HEAD.prefix()):
        head = codec.decode_record(raw, "head")
        if head.get("state") == "live":
            return head, reader.manifest(head["documentId"])
    raise AssertionError("no live document")


def test_verify_reports_injected_inconsistencies(indexed_home: Path) -> None:
    code, body = cli("index", "verify", "--json")
    assert code == 0 and body["ok"] and body["problems"] == [] and body["checked"] > 0

    store_dir = store_path(indexed_home)
    # 1. A window record goes missing.
    with Store(store_dir) as store:
        head, _ = _first_live(store)
        mark = derived.marker(store, int(head["ordinal"]))
        assert mark is not None
        wid = int(mark["firstWid"])
        batch = store.batch()
        batch.delete("windows", derived.WINDOW.encode(wid))
        store.commit(batch)
    code, body = cli("index", "verify", "--json")
    assert code == 1 and not body["ok"]
    assert any(f"window {wid} is missing" in p for p in body["problems"]), body["problems"]

    # 2. An ordinal loses its session membership.
    with Store(store_dir) as store:
        _, manifest = _first_live(store)
        batch = store.batch()
        batch.delete("scopes", keys.SESSION_DOC.encode(manifest["session"], int(head["ordinal"])))
        store.commit(batch)
    code, body = cli("index", "verify", "--json")
    assert code == 1
    assert any(f"no membership in session {manifest['session']}" in p for p in body["problems"])

    # 3. A live ordinal is tombstoned.
    with Store(store_dir) as store:
        batch = store.batch()
        batch.put(
            "ordinals",
            keys.TOMBSTONE.encode(int(head["ordinal"])),
            codec.encode_record({"reason": "injected", "at": "2026-11-20T12:00:00Z"}),
        )
        store.commit(batch)
    code, body = cli("index", "verify", "--json")
    assert code == 1
    assert any("live head but tombstoned" in p for p in body["problems"]), body["problems"]
    assert len(body["problems"]) == 3

    # Rebuild repairs derived records only: the window comes back, the canonical damage stays.
    cli("index", "rebuild", "--wait", "--json")
    code, body = cli("index", "verify", "--json")
    assert not any("is missing" in p for p in body["problems"])
    assert any("no membership" in p for p in body["problems"])


# -- generation counts across a crash -----------------------------------------------------------


def _notes_store(path: Path, n: int) -> Store:
    store = Store(path)
    session = SessionSpec("s-notes", "proj", "test")
    specs = [
        DocumentSpec(
            f"n{i}",
            "note",
            "s-notes",
            "proj",
            "test",
            (DocumentPart(f"user:m{i}", "user", "text", f"hello world {i}"),),
        )
        for i in range(n)
    ]
    Admission(store).admit(session, (), specs)
    return store


def test_outcome_counts_survive_a_crash_before_publication(tmp_path: Path) -> None:
    with _notes_store(tmp_path / "clean", 5) as clean:
        IndexWorker(clean, Settings()).drain()
        want = derived.generation(clean)["handlers"]
    assert want["bm25"]["complete"] == 5
    with _notes_store(tmp_path / "crashed", 5) as store:
        worker = IndexWorker(store, Settings())
        die_before_publication(worker, "killed after the tablets committed, before publication")
        with pytest.raises(KeyboardInterrupt):
            worker.run_once()
        IndexWorker(store, Settings()).drain()  # restart
        assert derived.generation(store)["handlers"] == want


def test_forget_counts_survive_a_crash_before_publication(tmp_path: Path) -> None:
    from cwcore.store.retention import Retention

    want = {}
    for crash in (False, True):
        with _notes_store(tmp_path / f"db-{crash}", 5) as store:
            IndexWorker(store, Settings()).drain()
            assert Retention(store).forget("n1").documents == 1
            worker = IndexWorker(store, Settings())
            if crash:
                die_before_publication(worker, "killed after the retirement, before publication")
                with pytest.raises(KeyboardInterrupt):
                    worker.run_once()
            IndexWorker(store, Settings()).drain()
            want[crash] = derived.generation(store)["handlers"]
    assert want[False]["bm25"]["complete"] == 4
    assert want[True] == want[False]


def test_published_scores_do_not_move_before_publication(tmp_path: Path) -> None:
    with _notes_store(tmp_path / "db", 5) as store:
        worker = IndexWorker(store, Settings())
        worker.drain()
        published = derived.generation(store)
        before = bm25.search(worker.bm25.reader(), ["hello"], k=10)
        Admission(store).admit(
            SessionSpec("s-notes", "proj", "test"),
            (),
            [
                DocumentSpec(
                    f"x{i}",
                    "note",
                    "s-notes",
                    "proj",
                    "test",
                    (DocumentPart(f"user:x{i}", "user", "text", "other words"),),
                )
                for i in range(20)
            ],
        )

        die_before_publication(worker, "killed after the page's flush, before publication")
        with pytest.raises(KeyboardInterrupt):
            worker.run_once()
        assert derived.generation(store) == published  # nothing new was published...
        after = bm25.search(IndexWorker(store, Settings()).bm25.reader(), ["hello"], k=10)
        assert after.n_docs == before.n_docs  # ...so the statistics searches see must not move
        assert list(after.scores) == pytest.approx(list(before.scores))


def test_a_page_publishes_only_its_own_windows_after_a_crash(tmp_path: Path) -> None:
    with _notes_store(tmp_path / "db", 5) as store:
        worker = IndexWorker(store, Settings())
        die_before_publication(worker, "killed after the tablets committed, before publication")
        with pytest.raises(KeyboardInterrupt):
            worker.run_once()  # stages all five tablets, publishes nothing
        restarted = IndexWorker(store, Settings())
        assert restarted.run_once(max_entries=1) == 1
        assert restarted.depth() == 4
        reader = Reader(store)
        pending = [int(e["ordinal"]) for _, e in reader.outbox()]
        max_wid = int(derived.generation(store)["maxWid"])
        for ordinal in pending:  # still in the outbox: none of their windows may be visible
            mark = derived.marker(store, ordinal)
            assert mark is not None and int(mark["firstWid"]) > max_wid


def test_rebuild_during_a_page_in_flight_keeps_counts_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's worker may be in the middle of a page when ``cw index rebuild`` arrives."""
    import threading

    from cwcore.index import maintenance
    from cwcore.index import worker as worker_module

    with _notes_store(tmp_path / "db", 6) as store:
        worker = IndexWorker(store, Settings())
        worker.drain()
        Admission(store).admit(
            SessionSpec("s-notes", "proj", "test"),
            (),
            [
                DocumentSpec(
                    "late",
                    "note",
                    "s-notes",
                    "proj",
                    "test",
                    (DocumentPart("user:late", "user", "text", "late note"),),
                )
            ],
        )
        entered, release = threading.Event(), threading.Event()
        real_prepare = worker_module.prepare

        def paused_prepare(*args: Any, **kwargs: Any) -> Any:
            entered.set()
            release.wait(10)
            return real_prepare(*args, **kwargs)

        monkeypatch.setattr(worker_module, "prepare", paused_prepare)
        page = threading.Thread(target=worker.run_once)
        page.start()
        assert entered.wait(10)
        rebuild = threading.Thread(target=maintenance.rebuild, args=(store, worker))
        rebuild.start()
        rebuild.join(0.3)  # the rebuild deletes and re-enqueues while the page is in flight
        monkeypatch.setattr(worker_module, "prepare", real_prepare)
        release.set()
        page.join()
        rebuild.join()
        worker.drain()
        counts = derived.generation(store)["handlers"]
        assert counts["bm25"] == {"complete": 7, "partial": 0, "skipped": 0}


# -- real agent logs -----------------------------------------------------------------------------


@pytest.mark.skipif(not LOGS.is_dir(), reason="shared/data/agent-logs is absent")
def test_agent_logs_index_wait_drains_and_status_shows_outcomes(cw_home: Path) -> None:
    with Store(store_path(cw_home)) as store:
        summary = import_paths(Admission(store), [LOGS], settings=Settings())
    assert summary.imported > 0 and not summary.errors
    code, status = cli("index", "status", "--json")
    assert code == 0 and status["outbox"]["depth"] == summary.imported
    assert status["outbox"]["lag_s"] >= 0

    code, status = cli("index", "--wait", "--lexical", "--json")
    assert code == 0
    assert status["outbox"] == {"depth": 0, "lag_s": 0.0}
    code, status = cli("index", "status", "--json")
    assert code == 0
    assert {"outbox", "generation", "handlers"} <= set(status)
    assert set(status["outbox"]) == {"depth", "lag_s"} and status["generation"] >= 1
    assert set(status["handlers"]) == {"exact", "bm25", "structural", "importance"}
    for name, counts in status["handlers"].items():
        assert set(counts) == {"complete", "partial", "skipped"}
        assert sum(counts.values()) == summary.imported, name
    assert status["handlers"]["importance"]["complete"] == summary.imported
    code, body = cli("index", "verify", "--json")
    assert code == 0 and body["ok"] and body["checked"] == summary.imported

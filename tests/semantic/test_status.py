"""Embedding progress in ``cw index status`` (embedded and through a real daemon)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.daemon.paths import daemon_paths
from cwcore.daemon.runner import read_pid
from cwcore.semantic import index as handler
from cwcore.store.rocks import Store
from cwtui.cli import app
from tests.helpers import real_daemon_env, write_jsonl
from tests.semantic.conftest import FakeEmbedder, topic_rows
from tests.support import engine_of


def _semantic(archive: Archive) -> dict[str, Any]:
    return dict(archive.index_status().to_json()["semantic"])


def test_index_status_reports_embedding_progress(
    topics: Archive, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = engine_of(topics)
    waiting = _semantic(topics)
    assert waiting == {
        **waiting,
        "embedded": 0,
        "total": 6,
        "pending": 6,
        "progress": 0.0,
        "state": "waiting",
        "partial": False,
        "model": None,
        "mode": "window",
    }

    handler.embed_pending(engine.store, engine.reader, 4, embedder=fake_embedder)
    partial = _semantic(topics)
    assert partial == {
        **partial,
        "embedded": 4,
        "total": 6,
        "pending": 2,
        "progress": 0.6667,
        "state": "embedding",
        "partial": True,
        "model": "fake:1",
    }
    assert topics.call("semantic.status")["state"] == "embedding"

    # Cheap: two point reads, never a scan of the vectors or windows (the outbox's lag is
    # one bounded seek).
    scan = Store.scan

    def no_scan(self: Store, family: str, *args: Any, **kwargs: Any) -> Any:
        assert family == "outbox", f"index status scanned {family}"
        return scan(self, family, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(Store, "scan", no_scan)
        assert _semantic(topics)["embedded"] == 4

    handler.embed_pending(engine.store, engine.reader, 16, embedder=fake_embedder)
    done = _semantic(topics)
    assert done == {**done, "embedded": 6, "pending": 0, "progress": 1.0, "state": "complete"}
    assert done["partial"] is False


def test_disabled_semantic_retrieval_says_so(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CW_SEMANTIC_RETRIEVAL", "false")
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "t.jsonl", topic_rows())], fmt="cw-jsonl")
        status = _semantic(archive)
        assert status["state"] == "disabled" and status["partial"] is False
        assert status["pending"] == 6
        sem = archive.call("semantic.status")
        assert sem["enabled"] is False and sem["state"] == "disabled"


def test_cli_index_status_shows_progress(topics: Archive, fake_embedder: FakeEmbedder) -> None:
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 4, embedder=fake_embedder)
    topics.close()
    runner = CliRunner()
    result = runner.invoke(app, ["index", "status"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "Semantic  4 / 6 windows embedded (67%) · 2 pending" in result.output
    assert "partial: search uses the vectors embedded so far" in result.output
    assert "model fake:1 (window mode)" in result.output
    result = runner.invoke(app, ["index", "status", "--json"])
    body = json.loads(result.output.strip().splitlines()[-1])
    assert body["semantic"]["embedded"] == 4 and body["semantic"]["partial"] is True


@pytest.fixture
def daemon_env(cw_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    # The daemon's own embedding worker stays off: it would replace the fake vectors with
    # MiniLM's while the test reads them.
    with real_daemon_env(
        cw_home, monkeypatch, CW_DAEMON_GRACE_SECONDS="20", CW_SEMANTIC_RETRIEVAL="false"
    ) as env:
        yield env


def test_index_status_through_the_daemon(
    topics: Archive, fake_embedder: FakeEmbedder, daemon_env: dict[str, str]
) -> None:
    engine = engine_of(topics)
    handler.embed_pending(engine.store, engine.reader, 4, embedder=fake_embedder)
    topics.close()
    done = subprocess.run(
        [sys.executable, "-m", "cwtui.cli", "index", "status", "--json"],
        env=daemon_env,
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    body = json.loads(done.stdout.decode().strip().splitlines()[-1])
    sem = body["semantic"]
    assert sem == {**sem, "embedded": 4, "total": 6, "pending": 2, "model": "fake:1"}
    assert sem["state"] == "disabled"  # the daemon was started with semanticRetrieval off
    assert read_pid(daemon_paths(Path(daemon_env["CW_HOME"])).pidfile)  # it did go through one


@pytest.mark.slow
def test_an_archive_left_alone_is_embedded_to_the_end(
    topics: Archive, cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Imported, then nobody connects: the daemon started once stays past its 1 s grace while
    windows wait for a vector (the real model embeds them, niced), then exits by itself with
    every window embedded. It used to exit at the end of its grace whatever was pending."""
    topics.close()
    with real_daemon_env(cw_home, monkeypatch, CW_DAEMON_GRACE_SECONDS="1") as env:
        started = subprocess.run(
            [sys.executable, "-m", "cwtui.cli", "daemon", "start"],
            env=env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert started.returncode == 0, started.stderr
        pid = read_pid(daemon_paths(cw_home).pidfile)
        assert pid
        from cwcore.daemon.client import wait_for_exit

        assert wait_for_exit(pid, 300), "the daemon never finished its background work"
    log = daemon_paths(cw_home).log.read_text()
    with Archive.open(cw_home, embedded=True) as again:
        sem = dict(again.index_status().to_json()["semantic"])
    assert sem == {**sem, "state": "complete", "embedded": 6, "pending": 0, "eta_s": None}, log
    assert sem["rate"], sem


def test_background_pending_names_embedding_work_while_it_moves(
    topics: Archive, fake_embedder: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What holds an idle daemon past its grace: pending windows, not a failing model, not
    work that stopped moving, never in an engine whose workers were not started."""
    from cwcore import engine as engine_module

    engine = engine_of(topics)
    assert engine.background_pending() is None  # embedded: no workers
    monkeypatch.setattr(engine, "background", True)
    monkeypatch.setattr(engine, "_workers", [engine.semantic_worker])  # as started (not run)
    assert engine.background_pending() == "embedding 6 windows"
    handler.embed_pending(engine.store, engine.reader, 4, embedder=fake_embedder)
    assert engine.background_pending() == "embedding 2 windows"
    engine.semantic_error = "model-missing: no embedding model"
    assert engine.background_pending() is None  # a failing model does not hold it
    engine.semantic_error = None
    monkeypatch.setattr(engine_module, "BACKGROUND_STALL_S", -1.0)
    assert engine.background_pending() is None  # no progress within the stall bound
    monkeypatch.setattr(engine_module, "BACKGROUND_STALL_S", 600.0)
    handler.embed_pending(engine.store, engine.reader, 16, embedder=fake_embedder)
    assert engine.background_pending() is None  # done


def test_cli_search_says_when_search_is_lexical_only(
    topics: Archive, fake_embedder: FakeEmbedder
) -> None:
    """The `cw search` footer while windows wait for a vector (nothing said once complete);
    `--json` stays the engine's answer alone."""
    engine = engine_of(topics)
    topics.close()
    runner = CliRunner()
    result = runner.invoke(app, ["search", "sourdough bread"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "search is lexical only: no window embedded yet (6 windows to embed)" in result.output
    with Archive.open(engine.home, embedded=True) as again:
        engine = engine_of(again)
        handler.embed_pending(engine.store, engine.reader, 4, embedder=fake_embedder)
    result = runner.invoke(app, ["search", "sourdough bread"], terminal_width=200)
    assert "semantic search covers the newest 4 of 6 windows; the rest is lexical only" in (
        result.output
    )
    assert "about " in result.output and " left)" in result.output  # the handler's pace is known
    result = runner.invoke(app, ["search", "sourdough bread", "--json"])
    assert "embedding" not in json.loads(result.output.strip().splitlines()[-1])
    with Archive.open(engine.home, embedded=True) as again:
        engine = engine_of(again)
        handler.embed_pending(engine.store, engine.reader, 16, embedder=fake_embedder)
    result = runner.invoke(app, ["search", "sourdough bread"], terminal_width=200)
    assert "lexical only" not in result.output


def test_cli_search_says_when_imported_documents_wait_for_the_index(
    topics: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Right after a large import the daemon indexes in the background: `cw search` says the
    answer covers the published part (an empty page no longer reads as "nothing archived");
    nothing is said once the outbox is empty, and `--json` stays the engine's answer."""
    from dataclasses import replace

    real = Archive.index_status
    depth = {"n": 1234}

    def pending(self: Archive, document: str | None = None) -> Any:
        return replace(real(self, document), outbox_depth=depth["n"])

    topics.close()
    monkeypatch.setattr(Archive, "index_status", pending)
    runner = CliRunner()
    result = runner.invoke(app, ["search", "sourdough bread"], terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "1,234 imported entries are not indexed yet: search covers what is published" in (
        result.output
    )
    result = runner.invoke(app, ["search", "sourdough bread", "--json"])
    assert "indexed" not in result.output
    depth["n"] = 0
    result = runner.invoke(app, ["search", "sourdough bread"], terminal_width=200)
    assert "not indexed yet" not in result.output

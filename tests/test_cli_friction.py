"""Issue 34's everyday CLI friction, each as a user meets it through a pipe (Typer's runner:
stdout and stderr are not terminals)."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from typer.testing import CliRunner

from cwcore.api import Archive
from cwcore.contract.imports import ImportReport
from cwcore.contract.index import IndexStatus, PartialDocument, SemanticProgress
from cwcore.daemon.results import DaemonStatus
from cwcore.errors import ModelUnavailable
from cwcore.importers import summary as summary_mod
from cwcore.importers.summary import FileOutcome, ImportSummary
from cwcore.index import prepare as index_prepare
from cwcore.index import windows as index_windows
from cwtui.cli import app
from cwtui.commands import daemon as daemon_cmd
from cwtui.commands import index as index_cmd
from cwtui.screens import partial as partial_screen
from tests.helpers import conversation, write_jsonl

runner = CliRunner()
FIXTURES = Path(__file__).parent / "importers" / "fixtures"


def _status(service: dict[str, Any]) -> DaemonStatus:
    return DaemonStatus(
        pid=4242,
        protocol=1,
        uptime_s=3725.5,
        started_at="2026-11-20T11:00:00Z",
        store="/home/u/.cw",
        socket="/run/user/1/cw-1/abc.sock",
        log="/home/u/.cw/daemon.log",
        build="0.1.0+02263d7a9aedc5fc",
        factory="cwcore.methods:make_service",
        capabilities=("archive/1", "browse/1"),
        connections=2,
        max_connections=16,
        in_flight=1,
        running_requests=1,
        replay_entries=3,
        input_reserved_bytes=0,
        output_reserved_bytes=2048,
        small_output_reserved_bytes=0,
        grace_s=300.0,
        stopping=False,
        service=MappingProxyType(service),
    )


ENGINE_SERVICE = {
    "store": "/home/u/.cw/store",
    "outbox_depth": 17,
    "rocksdb_bytes": 267489,
    "pending_compaction_bytes": 0,
    "workers": {
        "index": {"runs": 4, "busy": True, "last_run": 1e9 - 2, "last_error": None},
        "semantic": {"runs": 1, "busy": False, "last_run": 1e9 - 90, "last_error": "boom"},
    },
    "semantic_error": None,
    "extra_thing": {"nested": [1, 2], "flag": True},
}


def test_daemon_status_reads_as_words_not_python_dicts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 34: ``cw daemon status`` printed the service's workers as a raw Python dict
    (``{'index': {'runs': 3, 'busy': False, ...}}``) and ``None``; every fact is now a line of
    words, and ``--json`` carries the same facts as the daemon answered them."""
    status = _status(ENGINE_SERVICE)
    monkeypatch.setattr(daemon_cmd.control, "status", lambda: status)
    monkeypatch.setattr(daemon_cmd.time, "time", lambda: 1e9)
    shown = runner.invoke(app, ["daemon", "status"])
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    for raw in ("{", "}", "'", "None", "True", "False"):
        assert raw not in out, (raw, out)
    lines = {line.split("  ")[0]: line for line in out.splitlines()}
    assert "4242" in lines["pid"]
    assert "0.1.0+02263d7a9aedc5fc" in lines["build"]
    assert "1 h 2 min" in lines["uptime"]
    assert "/run/user/1/cw-1/abc.sock" in lines["socket"]
    assert "/home/u/.cw/store" in lines["store"]
    assert "2 connected" in lines["clients"] and "1 request(s) in flight" in lines["clients"]
    assert "17 document(s)" in lines["queue"]
    assert "busy, 4 run(s), last 2 s ago" in lines["background: index"]
    assert "idle" in lines["background: semantic"]
    assert "last error: boom" in lines["background: semantic"]
    assert "nested 1, 2, flag yes" in lines["extra thing"]
    assert lines["embedding"].split()[-1] == "ok"
    as_json = runner.invoke(app, ["daemon", "status", "--json"])
    assert json.loads(as_json.stdout) == status.to_json()


def test_daemon_status_of_a_service_that_did_not_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        daemon_cmd.control, "status", lambda: _status({"error": "timed out after 2 s"})
    )
    out = runner.invoke(app, ["daemon", "status"]).stdout
    assert "did not answer: timed out after 2 s" in out and "{" not in out


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (59.9, "59 s"),
        (60, "1 min"),
        (61, "1 min 1 s"),
        (7260, "2 h 1 min"),
        (90000, "1 d 1 h"),
    ],
)
def test_duration_words(seconds: float, text: str) -> None:
    assert daemon_cmd.duration(seconds) == text


BATCH = (
    '{"id": "a", "query": "REAP_DRAIN"}\nnot json\n{"id": 7, "query": "x", "limit": 0}\n'
    '["REAP_DRAIN"]\n{"id": "z", "query": "REAP_DRAIN"}\n'
)


def test_search_batch_errors_on_stderr_without_json(tmp_path: Path) -> None:
    """Issue 34: ``cw search --batch`` without ``--json`` put a failing line's error object
    among the results on stdout. Now each failure is one line on stderr (naming the line and
    its id), stdout holds only responses, and the exit code says a line failed; with
    ``--json`` the error objects stay in place, byte for byte, exit 0."""
    src = write_jsonl(
        tmp_path / "a.jsonl",
        [{**m, "text": "REAP_DRAIN prevents the reaper"} for m in conversation("s1", 1)],
    )
    assert runner.invoke(app, ["import", str(src)]).exit_code == 0
    batch = tmp_path / "q.jsonl"
    batch.write_text(BATCH)
    plain = runner.invoke(app, ["search", "--batch", str(batch)])
    assert plain.exit_code == 2
    answers = [json.loads(line) for line in plain.stdout.splitlines()]
    assert [a.get("id") for a in answers] == ["a", "z"]
    assert all("error" not in a and a["results"] for a in answers)
    errors = plain.stderr.splitlines()
    assert len(errors) == 3
    assert errors[0].startswith("cw: line 2: invalid JSON")
    assert errors[1] == "cw: line 3 (id 7): limit must be an integer from 1 to 100"
    assert errors[2] == "cw: line 4: a search request must be a JSON object"
    as_json = runner.invoke(app, ["search", "--batch", str(batch), "--json"])
    assert as_json.exit_code == 0 and as_json.stderr == ""
    rows = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [r.get("id") for r in rows] == ["a", None, 7, None, "z"]
    assert rows[2] == {
        "id": 7,
        "error": {"code": "invalid-input", "message": "limit must be an integer from 1 to 100"},
    }
    # A batch that cannot start is one line on stderr too (it used to be JSON on stdout).
    missing = runner.invoke(app, ["search", "--batch", str(tmp_path / "none.jsonl")])
    assert missing.exit_code == 2 and missing.stdout == ""
    assert missing.stderr.startswith("cw: cannot read ") and len(missing.stderr.splitlines()) == 1


def test_sync_json_lists_each_file_beside_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: ``cw sync --json`` printed only the summary, so a script could not tell which
    file was imported, unchanged or skipped. Now one line per file comes before the summary
    line, whose fields stay what they were."""
    home = tmp_path / "user"
    folder = home / ".claude" / "projects" / "-home-dev-app"
    folder.mkdir(parents=True)
    fixture = sorted((FIXTURES / "claude_code").glob("*.jsonl"))[0]
    log = folder / fixture.name
    shutil.copy(fixture, log)
    junk = folder / "notes.jsonl"
    junk.write_text('{"hello": "not a claude line"}\n')
    monkeypatch.setenv("HOME", str(home))

    def sync() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
        result = runner.invoke(app, ["sync", "--json"])
        rows = [json.loads(line) for line in result.stdout.splitlines()]
        *files, summary = rows
        assert all(set(f) == {"path", "format", "outcome", "messages", "problem"} for f in files)
        return {f["path"]: f for f in files}, summary

    files, summary = sync()
    assert files[str(log)]["outcome"] == "imported" and files[str(log)]["format"] == "claude-code"
    assert files[str(log)]["messages"] == summary["messages"] > 0
    assert files[str(junk)]["outcome"] == "skipped"
    assert files[str(junk)]["problem"] == "not a claude-code file"
    # The summary line keeps its fields (other tools read them), without repeating the files.
    assert {"files", "imported", "skipped", "sessions", "messages", "errors"} <= set(summary)
    assert "file_outcomes" not in summary and summary["file_outcomes_truncated"] == 0
    again, summary = sync()
    assert again[str(log)]["outcome"] == "unchanged"
    assert again[str(log)]["messages"] == files[str(log)]["messages"]
    assert summary["files"] == 0 and summary["imported"] == 0


def test_import_summary_json_is_unchanged_and_outcomes_round_trip() -> None:
    """The per-file list is additive: an import's summary (no file outcomes) keeps exactly its
    keys, and a sync's list survives the daemon's JSON both ways, bounded."""
    plain = ImportSummary(files=1, imported=2)
    assert "file_outcomes" not in plain.to_json()
    synced = ImportSummary()
    for n in range(summary_mod.MAX_LISTED + 5):
        synced.file_outcome(FileOutcome(f"/p/{n}.jsonl", "codex", "unchanged", n))
    body = synced.to_json()
    assert len(body["file_outcomes"]) == summary_mod.MAX_LISTED
    assert body["file_outcomes_truncated"] == 5
    assert ImportReport.from_json(body).to_json() == body


def _sem(embedded: int, total: int = 100, state: str = "embedding") -> SemanticProgress:
    return SemanticProgress(
        embedded=embedded,
        rows=embedded,
        pending=total - embedded,
        cursor=embedded,
        max_wid=total,
        total=total,
        progress=round(embedded / total, 4),
        state="complete" if embedded == total else state,
        partial=embedded < total,
        model="minilm",
        mode="window",
    )


class _FakeArchive:
    """An embedded archive whose embedding steps move 25 windows at a time (or fail, or are
    interrupted by Ctrl-C at the ``interrupt_at``-th step)."""

    embedded = True

    def __init__(self, real: Archive, *, fail: bool = False, interrupt_at: int = 0) -> None:
        self.base = real.index_status()
        self.done, self.steps = 0, 0
        self.fail, self.interrupt_at = fail, interrupt_at

    def __enter__(self) -> _FakeArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def index_run(self, *, wait: bool = False, on_event: Any = None) -> IndexStatus:
        return self.index_status()

    def index_status(self) -> IndexStatus:
        return dataclasses.replace(self.base, semantic=_sem(self.done))

    def embed_pending(self, *, max_windows: int) -> None:
        self.steps += 1
        if self.fail:
            raise ModelUnavailable("the embedding model is not installed (cw models install)")
        if self.steps == self.interrupt_at:
            raise KeyboardInterrupt
        self.done = min(100, self.done + 25)


def _wait(monkeypatch: pytest.MonkeyPatch, fake: _FakeArchive, *args: str) -> Any:
    monkeypatch.setattr(index_cmd.Archive, "open", staticmethod(lambda: fake))
    monkeypatch.setattr(index_cmd, "LINE_EVERY_S", 0.0)  # every step a line: no clock involved
    return runner.invoke(app, ["index", "--wait", *args])


def test_index_wait_shows_embedding_progress_when_asked(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: ``cw index --wait`` returned once the lexical outbox was empty and showed no
    embedding progress. It now waits for the embeddings; with ``--progress`` (stderr is not a
    terminal here) each step is a line of windows embedded / total, and a note ends it."""
    fake = _FakeArchive(archive)
    shown = _wait(monkeypatch, fake, "--progress")
    assert shown.exit_code == 0, shown.output
    lines = shown.stderr.splitlines()
    assert lines[0].startswith("embedding 0 / 100 windows (0%)")
    assert any(line.startswith("embedding 75 / 100 windows (75%)") for line in lines)
    assert lines[-1] == "embedding complete: 100 / 100 windows"
    assert "Semantic  100 / 100 windows embedded" in shown.stdout
    # In a pipe and not asked: quiet, and the same end.
    quiet = _wait(monkeypatch, _FakeArchive(archive))
    assert quiet.exit_code == 0 and quiet.stderr == ""
    assert "Semantic  100 / 100 windows embedded" in quiet.stdout
    lexical = _FakeArchive(archive)
    assert _wait(monkeypatch, lexical, "--lexical").exit_code == 0
    assert lexical.steps == 0  # the lexical index only: no embedding waited for


def test_index_wait_ends_with_one_line_on_ctrl_c_or_without_a_model(
    archive: Archive, monkeypatch: pytest.MonkeyPatch
) -> None:
    stopped = _wait(monkeypatch, _FakeArchive(archive, interrupt_at=3))
    assert stopped.exit_code == 130
    assert stopped.stderr.splitlines() == ["stopped waiting at 50 / 100 windows"]
    missing = _wait(monkeypatch, _FakeArchive(archive, fail=True), "--json")
    assert missing.exit_code == 0
    assert missing.stderr.splitlines() == [
        "embedding stopped: the embedding model is not installed (cw models install); "
        "search stays lexical"
    ]
    assert json.loads(missing.stdout)["semantic"]["embedded"] == 0


def test_embedding_line_and_rate() -> None:
    rate = index_cmd.Rate()
    assert rate.per_second is None
    rate.add(0.0, 0)
    rate.add(10.0, 100)
    assert rate.per_second == 10.0
    line = index_cmd.embedding_line(_sem(40), rate.per_second)
    assert line == "embedding 40 / 100 windows (40%) · 10.0 windows/s · about 6 s left"


def test_partial_list_names_the_limit_hit_and_the_markdown_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34: the PARTIAL list gave every limit a handler has ("at most 16,000 token
    occurrences, 256 unique terms or ...") and a Markdown document only by its id. The indexer
    now records which limit it hit, and the list (CLI and TUI) names it and the file."""
    monkeypatch.setattr(index_windows, "MAX_WINDOWS", 2)
    monkeypatch.setattr(index_prepare, "MAX_EXACT_POSTINGS", 3)
    notes = tmp_path / "notes"
    notes.mkdir()
    words = " ".join(f"word{n} src/mod{n % 40}/file{n}.py" for n in range(3000))
    (notes / "design-notes.md").write_text(f"# Design\n\n{words}\n")
    imported = runner.invoke(app, ["import", str(notes), "--format", "markdown"])
    assert imported.exit_code == 0, imported.output
    body = json.loads(runner.invoke(app, ["index", "partial", "--json"]).stdout)
    [doc] = body["documents"]
    assert doc["path"] == str(notes / "design-notes.md")
    assert doc["caps"]["bm25"] == "more than 2 windows: the rest of the text is not indexed"
    assert doc["caps"]["exact"].endswith("exact postings, more than the 3 kept")
    # Words, whatever width the runner's console has (COLUMNS may be set around the tests).
    shown = " ".join(runner.invoke(app, ["index", "partial"]).stdout.split())
    assert "design-notes.md" in shown and "more than the 3 kept" in shown
    option = partial_screen.document_option(PartialDocument.from_json(doc)).plain
    assert option.startswith("design-notes.md")
    assert "bm25 partial: more than 2 windows" in option
    assert "more than the 3 kept" in option

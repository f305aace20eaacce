"""The CLI as a user runs it: JSON shapes, one-line errors, exit codes, idempotent re-import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cwtui.cli import app
from tests.helpers import conversation, write_jsonl

runner = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def lines(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_import_json_stream_then_summary(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "a.jsonl", conversation("s1", 3) + conversation("s2", 2))
    code, out, _ = run("import", str(src), "--format", "cw-jsonl", "--json")
    assert code == 0
    rows = lines(out)
    acks, summary = rows[:-1], rows[-1]
    assert len(acks) == 5
    assert set(acks[0]) == {"documentId", "version", "sessionId", "kind"}
    assert summary["files"] == 1 and summary["imported"] == 5 and summary["errors"] == []
    code, out, _ = run("import", str(src), "--json")
    assert lines(out) == [{**summary, "imported": 0, "skipped": 5}]


def test_malformed_line_reported_rest_imported(tmp_path: Path) -> None:
    src = tmp_path / "b.jsonl"
    good = json.dumps(conversation("s1", 1)[0])
    src.write_text(f"{good}\n{{broken\n" + json.dumps({"session": "s1", "id": "x"}) + "\n")
    code, out, _ = run("import", str(src), "--format", "cw-jsonl", "--json")
    summary = lines(out)[-1]
    assert code == 2 and summary["imported"] == 1  # reported, and the exit code says so
    assert summary["error"]["code"] == "import-errors"
    assert [(e["line"], e["reason"][:12]) for e in summary["errors"]] == [
        (2, "not JSON: Ex"),
        (3, "missing fiel"),
    ]


def test_missing_and_unrecognized_files_are_errors(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("just text\n")
    code, _, err = run("import", str(tmp_path / "nope.jsonl"), str(notes))
    assert code == 2
    assert "no such file" in err and "not a recognized session log" in err
    assert "Traceback" not in err


def test_unknown_format_json_error(tmp_path: Path) -> None:
    src = write_jsonl(tmp_path / "a.jsonl", conversation("s1", 1))
    code, out, _ = run("import", str(src), "--format", "nonsense", "--json")
    assert code == 2
    assert lines(out) == [
        {"error": {"code": "unknown-format", "message": lines(out)[0]["error"]["message"]}}
    ]


def test_sessions_doctor_show_export(tmp_path: Path) -> None:
    write_jsonl(
        tmp_path / "a.jsonl", conversation("s1", 2) + conversation("s2", 1, project="other")
    )
    run("import", str(tmp_path / "a.jsonl"))
    code, out, _ = run("sessions", "--json")
    body = json.loads(out)
    assert code == 0 and body["next_cursor"] is None
    row = {r["sessionId"]: r for r in body["sessions"]}["s1"]
    assert {
        k: row[k] for k in ("project", "agent", "messages", "turns", "toolCalls", "parent")
    } == {
        "project": "proj",
        "agent": "cw-jsonl",
        "messages": 4,
        "turns": 2,
        "toolCalls": 0,
        "parent": None,
    }
    assert set(row) >= {
        "sessionId",
        "project",
        "agent",
        "started",
        "ended",
        "messages",
        "turns",
        "toolCalls",
        "parent",
    }
    code, out, _ = run("sessions", "--project", "other", "--json")
    assert [r["sessionId"] for r in json.loads(out)["sessions"]] == ["s2"]
    code, out, _ = run("sessions", "--limit", "1", "--json")
    page = json.loads(out)
    assert len(page["sessions"]) == 1 and page["next_cursor"]
    code, out, _ = run("sessions", "--limit", "1", "--cursor", page["next_cursor"], "--json")
    assert json.loads(out)["sessions"][0]["sessionId"] != page["sessions"][0]["sessionId"]
    code, out, _ = run("doctor", "--json")
    doctor = json.loads(out)
    assert set(doctor) >= {"store", "version", "sizes", "counts"}
    assert doctor["counts"] == {**doctor["counts"], "sessions": 2, "documents": 3, "messages": 6}
    code, out, _ = run("show", "s1")
    assert "question 1 about parseConfig" in out
    code, out, _ = run("export", "s1", "--format", "jsonl")
    exported = lines(out)
    assert [r["id"] for r in exported] == ["u0", "a0", "u1", "a1"]


def test_export_round_trips_through_import(tmp_path: Path, monkeypatch) -> None:
    write_jsonl(tmp_path / "a.jsonl", conversation("s1", 2))
    run("import", str(tmp_path / "a.jsonl"))
    _, exported, _ = run("export", "s1", "--format", "jsonl")
    (tmp_path / "again.jsonl").write_text(exported)
    monkeypatch.setenv("CW_HOME", str(tmp_path / "second"))
    run("import", str(tmp_path / "again.jsonl"))
    _, exported2, _ = run("export", "s1", "--format", "jsonl")
    assert exported2 == exported


def test_show_unknown_session_one_line_error() -> None:
    code, _, err = run("show", "missing")
    assert code == 3 and err.strip() == "cw: no session 'missing'"


def test_bad_option_values() -> None:
    code, _, err = run("sessions", "--limit", "0")
    assert code == 2 and "--limit" in err
    code, _, err = run("sessions", "--since", "yesterday-ish")
    assert code == 2 and "ISO-8601" in err
    code, _, err = run("sessions", "--cursor", "@@@")
    assert code == 2 and "cursor" in err


def test_config_sources(monkeypatch, cw_home: Path) -> None:
    cw_home.mkdir(parents=True, exist_ok=True)
    (cw_home / "config.toml").write_text("leaseMinutes = 5\nrerankerEnabled = false\n")
    monkeypatch.setenv("CW_LEASE_MINUTES", "7")
    code, out, _ = run("config", "--json")
    settings = json.loads(out)["settings"]
    assert settings["leaseMinutes"] == {
        "value": 7.0,
        "source": "CW_LEASE_MINUTES",
        "env": "CW_LEASE_MINUTES",
    }
    assert settings["rerankerEnabled"]["value"] is False
    assert settings["rerankerEnabled"]["source"] == "config.toml"
    assert settings["semanticRetrieval"]["source"] == "default"
    (cw_home / "config.toml").write_text("noSuchSetting = 1\n")
    code, _, err = run("config")
    assert code == 2 and "noSuchSetting" in err


def test_version_and_an_empty_filtered_listing(tmp_path: Path) -> None:
    """Issue 34: ``cw --version`` exists; a filter that matches nothing says so instead of
    asking to import sessions that are already there."""
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.startswith("cw ")
    src = write_jsonl(tmp_path / "s.jsonl", conversation("s1", 2))
    assert runner.invoke(app, ["import", str(src)]).exit_code == 0
    none = runner.invoke(app, ["sessions", "--agent", "nosuch"])
    assert none.exit_code == 0
    assert none.stdout.strip() == "No session matches these filters."


def test_import_says_when_the_daemon_is_still_indexing(tmp_path: Path, monkeypatch) -> None:
    """Through a daemon the import returns once its documents are admitted and the worker
    publishes them after: the text summary says so, where a search right after would answer
    from the published part only. (Embedded, the import publishes before it returns.)"""
    import dataclasses

    from cwtui import cli

    class Indexing:  # the real archive, as a daemon still indexing three entries shows it
        embedded = False

        def __init__(self, inner) -> None:
            self.inner = inner

        def __getattr__(self, name: str):
            return getattr(self.inner, name)

        def __enter__(self):
            self.inner.__enter__()
            return self

        def __exit__(self, *exc: object) -> None:
            self.inner.__exit__(*exc)

        def index_status(self):
            return dataclasses.replace(self.inner.index_status(), outbox_depth=3)

    src = write_jsonl(tmp_path / "a.jsonl", conversation("s1", 3))
    real = cli.open_archive
    monkeypatch.setattr(cli, "open_archive", lambda: Indexing(real()))
    code, out, _ = run("import", str(src))
    assert code == 0
    said = " ".join(out.split())
    assert "3 imported entries are not indexed yet" in said and "cw index --wait" in said
    code, out, _ = run("import", str(src))  # nothing new: nothing to say about indexing
    assert code == 0 and "not indexed" not in out
    code, out, _ = run("import", str(src), "--json")  # the JSON summary is unchanged
    assert code == 0 and "not indexed" not in out

    class Gone(Indexing):  # the daemon went away after admitting the import
        def index_status(self):
            from cwcore.errors import DaemonError

            raise DaemonError("the daemon is not running")

    monkeypatch.setattr(cli, "open_archive", lambda: Gone(real()))
    more = write_jsonl(tmp_path / "b.jsonl", conversation("s2", 1))
    code, out, _ = run("import", str(more))
    assert code == 0 and "1 document(s) imported" in out and "not indexed" not in out


def test_import_wait_publishes_what_was_imported(tmp_path: Path, monkeypatch) -> None:
    """--wait runs the index to the end (cw index --wait --lexical) after an import that
    admitted something, and not after one that admitted nothing."""
    from cwcore.api import Archive

    waits: list[bool] = []
    real = Archive.index_run

    def index_run(self, *, wait: bool = False, on_event=None):
        waits.append(wait)
        return real(self, wait=wait, on_event=on_event)

    monkeypatch.setattr(Archive, "index_run", index_run)
    src = write_jsonl(tmp_path / "a.jsonl", conversation("s1", 2))
    code, out, _ = run("import", str(src), "--wait")
    assert code == 0 and "2 document(s) imported" in out and waits == [True]
    code, out, _ = run("import", str(src), "--wait", "--json")
    assert code == 0 and lines(out)[-1]["skipped"] == 2 and waits == [True]  # nothing new


@pytest.mark.slow
def test_import_wait_through_a_daemon_leaves_nothing_to_index(
    cw_home: Path, tmp_path: Path, monkeypatch
) -> None:
    """Through a real daemon: once `cw import --wait` returns, the outbox is empty and search
    finds what it imported (without --wait the daemon's worker publishes it later)."""
    import subprocess
    import sys

    from tests.helpers import real_daemon_env

    src = write_jsonl(tmp_path / "a.jsonl", conversation("s1", 30))
    with real_daemon_env(cw_home, monkeypatch, CW_SEMANTIC_RETRIEVAL="false") as env:

        def cw(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "cwtui.cli", *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )

        done = cw("import", str(src), "--wait")
        assert done.returncode == 0, done.stderr
        assert "not indexed" not in done.stdout
        status = json.loads(cw("index", "status", "--json").stdout)
        assert status["outbox"]["depth"] == 0
        found = json.loads(cw("search", "ERR_0029", "--json", "--semantic", "never").stdout)
        assert found["results"] and "ERR_0029" in found["results"][0]["snippet"]

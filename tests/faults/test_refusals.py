"""Small truths of the CLI: a request certain to be refused opens nothing (no ``CW_HOME``, no
daemon), recall says what removed a source, and an import summary counts only the sessions it
admitted. ``cw`` runs in-process through its root command, with a real daemon's environment
where a daemon must not start.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.helpers import cw_env, json_lines, run_cw
from tests.helpers import conversation, real_daemon_env, write_jsonl

MiB = 1024 * 1024


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("search", "x", "--limit", "1000"), "limit must be an integer from 1 to 100"),
        (("search", "x", "--scope", "everywhere"), "scope must be one of session, project, all"),
        (
            ("search", "--relation", "gossip"),
            "relation must be one of question, request, correction, answer, decision",
        ),
        (
            ("search", "x", "--since", "last tuesday"),
            "not an ISO-8601 date or time: 'last tuesday'",
        ),
        (("search", "x", "--scope", "session"), "scope session needs at least one session"),
        (("gather", "x", "--neighbors", "9"), "neighbors must be from 0 to 8"),
        (("recall", "cwl2.x.y", "--neighbors", "99"), "neighbors must be from 0 to 32"),
        (("sessions", "--limit", "0"), "--limit must be between 1 and 10000"),
        (("sessions", "--cursor", "%%%"), "not a cursor from cw sessions: '%%%'"),
        (("export", "s1", "--format", "pdf"), "--format must be md or jsonl"),
        (("import", "x.jsonl", "--format", "word"), "unknown format 'word'; known: auto, "),
    ],
)
def test_a_certain_refusal_creates_no_home_and_starts_no_daemon(
    cw_home: Path, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...], message: str
) -> None:
    assert not cw_home.exists()
    with real_daemon_env(cw_home, monkeypatch) as env:
        if args[0] == "export":  # no --json there: one line on stderr
            done = run_cw(*args, env=env)
            assert (done.returncode, done.stderr) == (2, f"cw: {message}\n")
        else:
            done = run_cw(*args, "--json", env=env)
            assert done.returncode == 2, done.stdout + done.stderr
            error = json_lines(done.stdout)[-1]["error"]
            assert error["message"].startswith(message), error
        assert not cw_home.exists(), "the home was created for a request refused anyway"
        runtime = Path(os.environ["XDG_RUNTIME_DIR"])
        assert not list(runtime.rglob("*.sock")), "a daemon was started"


def test_recall_after_forget_says_the_source_was_removed(tmp_path: Path) -> None:
    imported = run_cw("import", write_jsonl(tmp_path / "s.jsonl", conversation("s1", 2)))
    assert imported.returncode == 0, imported.stderr
    hits = json_lines(run_cw("search", "parseConfig", "--json").stdout)[0]["results"]
    assert run_cw("forget", "s1", "--yes").returncode == 0
    answer = run_cw("recall", hits[0]["locator"], env=cw_env(COLUMNS="200"))
    assert answer.returncode == 3
    assert answer.stdout.splitlines() == [
        "expired: the source was removed (forgotten or expired by retention); search again"
    ]


def test_a_markdown_file_refused_for_size_counts_no_session(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    big = notes / "big.md"
    big.write_bytes(b"# big\n" + b"x" * (8 * MiB))
    refused = run_cw("import", big, "--json")
    assert refused.returncode == 2
    summary = json_lines(refused.stdout)[-1]
    assert (summary["sessions"], summary["imported"], summary["files"]) == (0, 0, 1)
    assert "a document holds at most" in summary["errors"][0]["reason"]

    (notes / "small.md").write_text("# small\n\nkept\n", encoding="utf-8")
    mixed = json_lines(run_cw("import", notes, "--format", "markdown", "--json").stdout)[-1]
    assert (mixed["sessions"], mixed["imported"]) == (1, 1)
    again = json_lines(run_cw("import", notes, "--format", "markdown", "--json").stdout)[-1]
    assert (again["sessions"], again["imported"], again["skipped"]) == (1, 0, 1)

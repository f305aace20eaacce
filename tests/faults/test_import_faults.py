"""``cw import`` and ``cw sync`` on hostile input: every rejected line or file is reported, the
rest is imported, the exit code says so, and memory stays bounded by the line limit. The cases
run ``cw`` in-process through its root command (the daemon cases through a real daemon); the
oversized-line cases run the real ``cw`` in a subprocess, whose peak memory they measure.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from cwcore.importers.summary import MAX_LISTED
from cwcore.store.limits import MAX_LINE_BYTES, MiB
from tests.conftest import FIXED_NOW
from tests.faults.helpers import cw_env, json_lines, run_cw
from tests.helpers import conversation, real_daemon_env, write_jsonl

#: Deeper than any JSON parser's recursion limit.
DEEP = 100_000


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def _cw_jsonl(path: Path, bad: str) -> Path:
    good = [json.dumps(r) for r in conversation("s-deep", 1)]
    return _lines(path.with_suffix(".jsonl"), [good[0], bad, good[1]])


def _claude(path: Path, bad: str) -> Path:
    base = {"type": "user", "sessionId": "c-deep", "timestamp": "2026-11-01T10:00:00Z"}
    first = {**base, "uuid": "u1", "parentUuid": None, "message": {"role": "user", "content": "hi"}}
    last = {**base, "uuid": "u3", "parentUuid": "u1", "message": {"role": "user", "content": "ok"}}
    return _lines(path.with_suffix(".jsonl"), [json.dumps(first), bad, json.dumps(last)])


def _codex(path: Path, bad: str, session: str = "0199aaaa-bbbb-cccc-dddd-eeeeeeeeeeee") -> Path:
    meta = {
        "timestamp": "2026-11-01T10:00:00Z",
        "type": "session_meta",
        "payload": {"id": session, "cwd": "/x/p"},
    }
    said = {
        "timestamp": "2026-11-01T10:00:01Z",
        "type": "response_item",
        "payload": {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi"}],
        },
    }
    return _lines(path.with_suffix(".jsonl"), [json.dumps(meta), bad, json.dumps(said)])


def _pi(path: Path, bad: str) -> Path:
    header = {"type": "session", "id": "p-deep", "timestamp": "2026-11-01T10:00:00Z", "cwd": "/x/p"}
    said = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "timestamp": "2026-11-01T10:00:00Z",
        "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]},
    }
    return _lines(path.with_suffix(".jsonl"), [json.dumps(header), bad, json.dumps(said)])


def _gemini(path: Path, bad: str) -> Path:
    header = {"sessionId": "g-deep", "projectHash": "abc", "startTime": "2026-11-01T10:00:00Z"}
    said = {
        "id": "m1",
        "type": "user",
        "timestamp": "2026-11-01T10:00:00Z",
        "content": [{"text": "hi"}],
    }
    return _lines(path.with_suffix(".jsonl"), [json.dumps(header), bad, json.dumps(said)])


def _lines(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    return path


Builder = Callable[[Path, str], Path]
FORMATS: dict[str, Builder] = {
    "cw-jsonl": _cw_jsonl,
    "claude-code": _claude,
    "codex": _codex,
    "pi": _pi,
    "gemini": _gemini,
}


# -- exit codes and the summary ----------------------------------------------------------------


def test_a_rejected_line_exits_2_after_the_whole_summary(tmp_path: Path) -> None:
    src = tmp_path / "mixed.jsonl"
    good = [json.dumps(r) for r in conversation("s1", 1)]
    _lines(src, [good[0], "{broken", good[1]])
    human = run_cw("import", src)
    assert human.returncode == 2
    assert human.stdout.splitlines() == [
        "1 file(s), 1 session(s), 2 message(s): 1 document(s) imported, 0 unchanged"
    ]
    assert human.stderr.splitlines() == [
        f"{src}:2: not JSON: Expecting property name enclosed in double quotes: line 1 column 2 "
        "(char 1)"
    ]
    again = run_cw("import", src, "--json")
    assert again.returncode == 2
    summary = json_lines(again.stdout)[-1]
    assert summary["skipped"] == 1 and [e["line"] for e in summary["errors"]] == [2]
    assert summary["errors_truncated"] == 0
    assert summary["error"] == {
        "code": "import-errors",
        "message": "1 line(s) and 0 file(s) rejected; everything else was imported",
    }


def test_a_missing_file_is_the_summary_then_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "missing.jsonl"
    done = run_cw("import", missing)
    assert done.returncode == 2
    assert done.stdout == (
        "0 file(s), 0 session(s), 0 message(s): 0 document(s) imported, 0 unchanged\n"
    )
    assert done.stderr == f"{missing}: no such file or directory\n"


def test_a_forced_format_that_does_not_match_writes_nothing(tmp_path: Path) -> None:
    claude = _claude(tmp_path / "good", json.dumps({"type": "summary", "summary": "t"}))
    human = run_cw("import", claude, "--format", "codex")
    assert human.returncode == 2
    assert human.stderr == (
        f"cw: {claude} is not a codex log (it looks like claude-code); nothing was imported\n"
    )
    machine = run_cw("import", claude, "--format", "codex", "--json")
    assert json_lines(machine.stdout)[0]["error"]["code"] == "unknown-format"
    assert json_lines(run_cw("sessions", "--json").stdout)[0]["sessions"] == []
    assert run_cw("import", claude, "--format", "claude-code").returncode == 0


@pytest.mark.parametrize("forced", [False, True], ids=["auto", "forced"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_deeply_nested_line_is_one_error_and_the_rest_imports(
    tmp_path: Path, fmt: str, forced: bool
) -> None:
    bad = '{"type": "user", "session": "x", "id": "x", "role": "user", "text": ' + _nested(DEEP)
    src = FORMATS[fmt](tmp_path / f"deep-{fmt}", bad + "}")
    args = ["import", str(src), "--json", *(["--format", fmt] if forced else [])]
    done = run_cw(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    summary = json_lines(done.stdout)[-1]
    assert [(e["line"], e["reason"]) for e in summary["errors"]] == [
        (2, "not JSON: nested too deeply")
    ]
    assert summary["sessions"] == 1 and summary["imported"] >= 1


def test_many_malformed_lines_through_the_daemon_keep_the_summary(
    tmp_path: Path, cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20,000 bad lines: their reasons alone are over the daemon's 1 MiB result bound, which
    turned the whole answer into ``limit-exceeded`` and lost the summary."""
    src = tmp_path / "noisy.jsonl"
    good = json.dumps(conversation("s-noisy", 1)[0])
    with src.open("w", encoding="utf-8") as fh:
        fh.write(good + "\n")
        for n in range(20_000):
            fh.write(f"{{this line {n} is not JSON at all, and says so at some length\n")
    with real_daemon_env(cw_home, monkeypatch) as env:
        done = run_cw("import", src, "--json", env=cw_env(env))
    assert done.returncode == 2, done.stdout[-500:] + done.stderr
    summary = json_lines(done.stdout)[-1]
    assert summary["imported"] == 1
    assert len(summary["errors"]) == MAX_LISTED
    assert summary["errors_truncated"] == 20_000 - MAX_LISTED
    assert summary["error"]["code"] == "import-errors"


def test_sync_keeps_going_past_a_bad_file_and_reports_it(tmp_path: Path) -> None:
    """A deeply nested first line in one rollout used to stop ``cw sync`` before anything was
    imported, on every run."""
    home = tmp_path / "user"
    day = home / ".codex" / "sessions" / "2026" / "11" / "01"
    day.mkdir(parents=True)
    first, second = "0199aaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "0199aaaa-bbbb-cccc-dddd-ffffffffffff"
    bad = _codex(day / f"rollout-2026-11-01T10-00-00-{first}", _nested(DEEP), first)
    token = {"timestamp": "2026-11-01T11:00:00Z", "type": "event_msg", "payload": {}}
    _codex(day / f"rollout-2026-11-01T11-00-00-{second}", json.dumps(token), second)
    done = run_cw("sync", "--json", env=cw_env(HOME=str(home)))
    assert done.returncode == 2, done.stdout + done.stderr
    summary = json_lines(done.stdout)[-1]
    assert summary["files"] == 2 and summary["sessions"] == 2
    assert [(e["path"], e["line"]) for e in summary["errors"]] == [(str(bad), 2)]
    again = run_cw("sync", "--json", env=cw_env(HOME=str(home)))
    assert again.returncode == 0  # nothing changed, nothing re-read, nothing re-reported
    assert json_lines(again.stdout)[-1]["files"] == 0


# -- memory ------------------------------------------------------------------------------------

#: A single line this long is over the line limit by far: holding it would show in the peak RSS.
LONG_LINE = 96 * MiB
_PEAK = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(done.returncode, peak)
print(done.stdout, end="")
print(done.stderr, end="", file=sys.stderr)
"""


def _peak_import(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, int, str, str]:
    """``cw import ARGS`` run by a fresh parent, so RUSAGE_CHILDREN sees this import alone:
    its exit code, its peak RSS in bytes, its stdout and stderr."""
    cmd = [sys.executable, "-m", "cwtui.cli", "import", *map(str, args)]
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, *cmd],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env or cw_env(),
        timeout=600,
        check=False,
    )
    head, _, out = done.stdout.partition("\n")
    code, peak = map(int, head.split())
    return code, peak, out, done.stderr


@pytest.fixture(scope="module")
def small_import_peak(tmp_path_factory: pytest.TempPathFactory) -> int:
    """The peak RSS of importing a one-message file into a fresh home: the same for every
    format case, so measured once per module."""
    folder = tmp_path_factory.mktemp("small-import")
    small = write_jsonl(folder / "small.jsonl", conversation("s-small", 1))
    env = cw_env(CW_HOME=str(folder / "cw-home"), CW_EMBEDDED="1", CW_NOW=FIXED_NOW)
    code, peak, out, err = _peak_import(small, env=env)
    assert code == 0, out + err
    return peak


@pytest.fixture(scope="module")
def long_line_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A file whose second line is 96 MiB with no newline in it, written once per module (the
    cases only read it)."""
    src = tmp_path_factory.mktemp("long-line") / "long.jsonl"
    before, after = (json.dumps(r) for r in conversation("s-long", 1))
    with src.open("w", encoding="utf-8") as fh:
        fh.write(before + "\n")
        block = "x" * MiB
        for _ in range(LONG_LINE // MiB):
            fh.write(block)  # one line of 96 MiB, no newline in it
        fh.write("\n" + after + "\n")
    return src


@pytest.mark.parametrize("fmt", ["auto", "cw-jsonl", "markdown"])
def test_an_oversized_line_is_skipped_without_being_held(
    tmp_path: Path, fmt: str, small_import_peak: int, long_line_file: Path
) -> None:
    baseline = small_import_peak
    src = tmp_path / ("long.md" if fmt == "markdown" else "long.jsonl")
    src.hardlink_to(long_line_file)  # the same bytes under the name the format case needs
    code, peak, out, err = _peak_import(src, "--format", fmt)
    assert code == 2, out + err
    assert peak - baseline < LONG_LINE // 4, (peak, baseline)  # far below the line's size
    if fmt == "markdown":
        assert err.splitlines() == [
            f"{src}: {src.stat().st_size} bytes; a document holds at most {8 * MiB}"
        ]
        return
    assert err.splitlines() == [
        f"{src}:2: line is {LONG_LINE:,} bytes; the limit is {MAX_LINE_BYTES:,} (skipped)"
    ]
    assert out.startswith("1 file(s), 1 session(s), 2 message(s): 1 document(s) imported")

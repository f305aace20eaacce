"""How a daemon start reaches the user, with real ``cw`` and daemon processes: the daemon's own
error (one line, its code and exit status), the notices of the open, and one daemon per store
whatever socket directory a client computes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.daemon.paths import store_hash
from cwcore.errors import UnsafeSocket
from cwcore.store.rocks import SCHEMA_VERSION
from tests.helpers import REPO, conversation, real_daemon_env, write_jsonl

#: The file in CW_HOME through which the running daemon's socket is found.
ADVERT_NAME = "daemon.json"


def cw(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cwtui.cli", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def ok_json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.splitlines()[-1]))


def set_schema(home: Path, version: int) -> None:
    """What a newer cw leaves behind: a store whose schema this build does not know."""
    from cwcore.store.rocks import Store

    store = Store(home / "store")
    batch = store.batch()
    store.meta_put(batch, "schema", {"version": version})
    store.commit(batch)
    store.close()


@pytest.fixture
def imported(cw_home: Path, tmp_path: Path) -> Path:
    """An archive of two sessions, written in-process (no daemon)."""
    with Archive.open(cw_home, embedded=True) as archive:
        rows = conversation("s1", 2) + conversation("s2", 2)
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", rows)])
        archive.search({"query": "parseConfig"})  # makes locator.key
    return cw_home


# -- a start failure is the daemon's own error, in one line (item 1) ---------------------------


def test_a_store_newer_than_cw_is_store_version_through_the_daemon(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_schema(imported, 99)
    expected = (
        f"the store at {imported / 'store'} has schema 99; "
        f"this cw knows up to {SCHEMA_VERSION}: upgrade cw"
    )
    with real_daemon_env(imported, monkeypatch) as env:
        for args in (["doctor"], ["sessions"], ["show", "s1"]):
            done = cw(env, *args)
            assert done.returncode == 5, done.stderr
            assert done.stderr.splitlines() == [f"cw: {expected}"]
            assert done.stdout == ""
        as_json = cw(env, "doctor", "--json")
        assert as_json.returncode == 5
        assert json.loads(as_json.stdout) == {
            "error": {"code": "store-version", "message": expected}
        }
        # The log's tail is there for whoever asks for it.
        debug = cw({**env, "CW_DEBUG": "1"}, "doctor")
        assert debug.returncode == 5
        assert debug.stderr.splitlines()[0] == f"cw: {expected}"
        assert "daemon.log (tail)" in debug.stderr and "daemon failed" in debug.stderr
        status = ok_json(cw(env, "daemon", "status", "--json"))
        assert status["running"] is False and status["log"] == str(imported / "daemon.log")
        assert any("schema 99" in line for line in status["logTail"])
        shown = cw(env, "daemon", "status")
        assert shown.returncode == 0 and "not running" in shown.stdout
        assert "schema 99" in shown.stdout


def test_a_failure_of_the_daemon_itself_stays_a_daemon_error(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with real_daemon_env(imported, monkeypatch, CW_DAEMON_SERVICE="no_such_module:factory") as env:
        done = cw(env, "sessions", "--json")
        assert done.returncode == 6
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "daemon"
        assert error["message"].startswith("the cw daemon failed to start: cannot load service")
        assert "\n" not in error["message"]


# -- the notices of an open reach every command that starts the daemon (item 2) ----------------


def _loosen(home: Path) -> None:
    (home / "locator.key").chmod(0o644)


def _tightened(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "tightened permissions" in line]


def test_daemon_start_and_restart_print_the_tightened_notice_once(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with real_daemon_env(imported, monkeypatch) as env:
        notice = (
            f"cw: tightened permissions of 1 file(s) and folder(s) under {imported} "
            "(now owner only)"
        )
        _loosen(imported)
        started = cw(env, "daemon", "start")
        assert started.returncode == 0, started.stderr
        assert _tightened(started.stderr) == [notice]
        again = cw(env, "daemon", "start")  # already running: nothing was opened
        assert again.returncode == 0 and _tightened(again.stderr) == []

        _loosen(imported)
        restarted = cw(env, "daemon", "restart", "--force")
        assert restarted.returncode == 0, restarted.stderr
        assert _tightened(restarted.stderr) == [notice]
        assert (imported / "locator.key").stat().st_mode & 0o777 == 0o600

        _loosen(imported)
        as_json = cw(env, "daemon", "restart", "--force", "--json")
        assert ok_json(as_json)["restarted"] is True
        assert _tightened(as_json.stderr) == [notice]  # stderr: stdout stays one JSON object


# -- one daemon per store, whatever socket directory a client computes (item 5) ----------------


@pytest.fixture
def second_runtime() -> Iterator[Path]:
    runtime = Path(tempfile.mkdtemp(prefix="cwu", dir="/tmp"))
    yield runtime
    shutil.rmtree(runtime, ignore_errors=True)


def test_clients_with_another_runtime_dir_find_the_running_daemon(
    imported: Path, monkeypatch: pytest.MonkeyPatch, second_runtime: Path
) -> None:
    with real_daemon_env(imported, monkeypatch) as env:
        first = ok_json(cw(env, "daemon", "start", "--json"))
        other = {**env, "XDG_RUNTIME_DIR": str(second_runtime)}
        listed = ok_json(cw(other, "sessions", "--json"))
        assert sorted(s["sessionId"] for s in listed["sessions"]) == ["s1", "s2"]
        hits = ok_json(cw(other, "search", "parseConfig", "--json"))["results"]
        assert hits
        status = ok_json(cw(other, "daemon", "status", "--json"))
        assert status["pid"] == first["pid"] and status["socket"] == first["socket"]
        advert = imported / ADVERT_NAME
        assert advert.stat().st_mode & 0o777 == 0o600
        assert json.loads(advert.read_text()) == {"socket": first["socket"], "pid": first["pid"]}
        # The hook client finds it too (its own lean path, then the advertisement).
        prompt = json.dumps({"session": "s1", "message": "where is parseConfig?"})
        hook = subprocess.run(
            [sys.executable, "-m", "cwcore.hosts.hook_client"],
            env={**other, "CW_DEBUG": "1"},
            input=prompt,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert hook.returncode == 0 and "did not start" not in hook.stderr, hook.stderr
        assert ok_json(cw(env, "daemon", "status", "--json"))["pid"] == first["pid"]

        assert ok_json(cw(other, "daemon", "stop", "--json")) == {"stopped": True}
        assert advert.read_text() == ""  # emptied at exit
        assert ok_json(cw(env, "daemon", "status", "--json"))["running"] is False


def test_two_starts_from_two_runtime_dirs_at_once_share_one_daemon(
    imported: Path, monkeypatch: pytest.MonkeyPatch, second_runtime: Path
) -> None:
    with real_daemon_env(imported, monkeypatch) as env:
        other = {**env, "XDG_RUNTIME_DIR": str(second_runtime)}
        cmd = [sys.executable, "-m", "cwtui.cli", "daemon", "start", "--json"]
        procs = [
            subprocess.Popen(cmd, env=e, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
            for e in (env, other)
        ]  # fmt: skip
        outcomes = [p.communicate(timeout=120) for p in procs]
        for proc, (_out, err) in zip(procs, outcomes, strict=True):
            assert proc.returncode == 0, err
        pids = {json.loads(out)["pid"] for out, _ in outcomes}
        assert len(pids) == 1  # whichever came first serves both
        # Stopped from the other side than the one whose pid file the teardown reads.
        assert ok_json(cw(other, "daemon", "stop", "--json")) == {"stopped": True}
        assert ok_json(cw(env, "daemon", "status", "--json"))["running"] is False


@pytest.fixture
def short_dir() -> Iterator[Path]:
    """A private directory with a short path: a socket path must fit sun_path, and pytest's
    per-worker tmp paths can be longer than that."""
    directory = Path(tempfile.mkdtemp(prefix="cw-adv-", dir="/tmp"))
    directory.chmod(0o700)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)
    directory.with_name(directory.name + "-link").unlink(missing_ok=True)


def test_an_advertisement_is_checked_before_it_is_used(short_dir: Path, cw_home: Path) -> None:
    from cwcore.daemon.paths import advertised_socket

    home = cw_home.resolve()
    home.mkdir(parents=True)
    directory = short_dir
    mine = directory / f"{store_hash(home)}.sock"

    def advertise(path: Path | str) -> None:
        (home / ADVERT_NAME).write_text(json.dumps({"socket": str(path), "pid": 1}))

    assert advertised_socket(home) is None  # no file
    (home / ADVERT_NAME).write_text("")
    assert advertised_socket(home) is None  # emptied by a daemon that stopped
    advertise(mine)
    assert advertised_socket(home) == mine
    advertise(directory / "0123456789abcdef.sock")  # another store's socket
    assert advertised_socket(home) is None
    advertise(f"relative/{mine.name}")
    assert advertised_socket(home) is None
    advertise(short_dir / "gone" / mine.name)  # its directory no longer exists
    assert advertised_socket(home) is None
    advertise(mine)
    directory.chmod(0o755)
    with pytest.raises(UnsafeSocket, match="it must be 0700"):
        advertised_socket(home)
    directory.chmod(0o700)
    link = short_dir.with_name(short_dir.name + "-link")
    link.symlink_to(directory)
    advertise(link / mine.name)
    with pytest.raises(UnsafeSocket, match="symlink"):
        advertised_socket(home)


def test_the_launcher_reports_a_failure_as_json_for_the_client(
    imported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    set_schema(imported, 99)
    with real_daemon_env(imported, monkeypatch) as env:
        base = [sys.executable, "-m", "cwcore.daemon", "--home", str(imported)]
        for report, check in (
            ("json", lambda err: json.loads(err)["error"]["code"] == "store-version"),
            ("text", lambda err: err.startswith("cw daemon: the store at ")),
        ):
            done = subprocess.run(
                [*base, "--report", report],
                env={**env, "PYTHONPATH": str(REPO)},
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            assert done.returncode == 5
            assert len(done.stderr.splitlines()) == 1 and check(done.stderr), done.stderr

"""``cw daemon status|start|stop|restart`` through Typer's runner against real daemons."""

from __future__ import annotations

import json
import os
from typing import Any

from daemon_helpers import DaemonEnv, alive
from typer.testing import CliRunner

from cwcore.errors import UnsafeSocket
from cwtui.commands.daemon import app

runner = CliRunner()


def _json(args: list[str]) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_status_start_restart_stop(env: DaemonEnv) -> None:
    log = str(env.home / "daemon.log")
    assert _json(["status"]) == {"running": False, "log": log, "logTail": []}
    shown = runner.invoke(app, ["status"])
    assert shown.exit_code == 0 and "not running" in shown.stdout

    started = runner.invoke(app, ["start"])
    assert started.exit_code == 0 and "running (pid" in started.stdout
    status = _json(["status"])
    assert status["running"] is True and status["pid"] == env.pid()
    table = runner.invoke(app, ["status"])
    assert table.exit_code == 0
    for label in ("pid", "uptime", "socket", "capabilities", "fake calls"):
        assert label in table.stdout

    warned = runner.invoke(app, ["restart"])
    assert warned.exit_code == 0 and "--force" in warned.stderr
    assert _json(["status"])["pid"] == status["pid"]
    assert _json(["restart"])["restarted"] is False

    replaced = _json(["restart", "--force"])
    assert replaced["restarted"] is True and replaced["pid"] != status["pid"]
    assert not alive(status["pid"])

    assert _json(["stop"]) == {"stopped": True}
    assert not alive(replaced["pid"])
    stopped = runner.invoke(app, ["stop"])
    assert stopped.exit_code == 0 and "not running" in stopped.stdout
    # No daemon: the status shows why the last one stopped.
    after = _json(["status"])
    assert after["running"] is False and after["logTail"][-1].endswith("INFO stopped")
    assert f"last lines of {log}" in runner.invoke(app, ["status"]).stdout


def test_errors_are_one_line_or_json(env: DaemonEnv) -> None:
    directory = env.runtime / f"cw-{os.getuid()}"
    directory.mkdir(mode=0o700)
    directory.chmod(0o777)
    plain = runner.invoke(app, ["status"])
    assert plain.exit_code == UnsafeSocket.exit_code
    assert plain.stdout == "" and len(plain.stderr.strip().splitlines()) == 1
    as_json = runner.invoke(app, ["status", "--json"])
    assert as_json.exit_code == UnsafeSocket.exit_code
    assert json.loads(as_json.stdout)["error"]["code"] == "unsafe-socket"

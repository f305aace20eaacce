"""``python -m cwcore.daemon [--home DIR] [--service module:factory] [--foreground] [--report F]``.

Without ``--foreground`` the process forks: the child starts a new session, sends its standard
streams to ``CW_HOME/daemon.log`` and serves; the parent waits until the child reports over a pipe
that it listens (exit 0), that another daemon already serves the store (exit 0), or that it failed
(the error's exit code). A launcher (the client's autostart) therefore needs no polling: it waits
for this short-lived parent. Notices of the service's open (permissions it tightened) come before
the outcome, one line each on the parent's stderr. A failure is one line on stderr too:
``cw daemon: MESSAGE`` for people, or with ``--report json`` (what the client passes)
``{"error": {"code", "message"}}``, so the client raises the daemon's own error — a store newer
than this cw stays ``store-version`` (exit 5), not a generic start failure. The default service
factory is ``CW_DAEMON_SERVICE`` or ``cwcore.methods:make_service``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import traceback
from pathlib import Path
from typing import NoReturn

from cwcore import errors
from cwcore.daemon.paths import LOG_NAME, resolve_home
from cwcore.daemon.runner import configure_logging, open_log, run_daemon
from cwcore.daemon.service import DEFAULT_SERVICE
from cwcore.errors import CwError, DaemonError

log = logging.getLogger("cwcore.daemon")

#: Characters of a start failure's message sent to the launcher: with JSON's escapes (at most
#: six bytes a character) the report line stays under the pipe report's byte bound.
REPORT_MESSAGE_CHARS = 600


class PipeReporter:
    """Reports the start-up outcome once over a pipe to the waiting parent."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd

    def _send(self, line: str) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.write(self.fd, line.encode("utf-8", "replace")[:4000])
            os.close(self.fd)
        self.fd = None

    def notice(self, text: str) -> None:
        """A line the launching client shows its user (the log alone may go unread)."""
        if self.fd is None:
            return
        line = "notice " + " ".join(text.split()) + "\n"
        with contextlib.suppress(OSError):
            os.write(self.fd, line.encode("utf-8", "replace")[:4000])

    def ok(self) -> None:
        self._send(f"ok {os.getpid()}\n")

    def already_running(self) -> None:
        self._send("running\n")

    def failed(self, err: CwError) -> None:
        """The error itself (code and message, one line of JSON), so the client raises it."""
        message = " ".join(err.message.split())[:REPORT_MESSAGE_CHARS]
        body = json.dumps({"code": err.code, "message": message})  # ASCII: never cut mid-character
        self._send(f"error {body}\n")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m cwcore.daemon", description=__doc__)
    parser.add_argument("--home", type=Path, default=None, help="store home (default CW_HOME)")
    parser.add_argument(
        "--service",
        default=os.environ.get("CW_DAEMON_SERVICE") or DEFAULT_SERVICE,
        help="service factory as module:attribute",
    )
    parser.add_argument("--foreground", action="store_true", help="do not detach")
    parser.add_argument(
        "--report",
        choices=("text", "json"),
        default="text",
        help="how a start failure is written on stderr (json: for the client that launched it)",
    )
    return parser.parse_args(argv)


def _serve(home: Path, spec: str, reporter: PipeReporter) -> int:
    try:
        return run_daemon(home, spec, reporter)
    except CwError as err:
        log.error("daemon failed: %s", err.message)
        reporter.failed(err)
        return err.exit_code
    except Exception as exc:
        log.error("daemon crashed: %s", traceback.format_exc())
        reporter.failed(
            DaemonError(f"the daemon crashed while starting: {type(exc).__name__}: {exc}")
        )
        return DaemonError.exit_code
    finally:
        reporter.failed(DaemonError(f"the daemon exited before listening; see {home / LOG_NAME}"))


def _report_failure(err: CwError, as_json: bool) -> int:
    """Write a start failure as one line on stderr and return its exit code."""
    if as_json:
        body = {"error": {"code": err.code, "message": err.message}}
        sys.stderr.write(json.dumps(body, ensure_ascii=False) + "\n")
    else:
        sys.stderr.write(f"cw daemon: {err.message}\n")
    return err.exit_code


def _wait_for_child(fd: int, as_json: bool) -> int:
    """Parent side: read the child's one-line report until the pipe closes."""
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    lines = b"".join(chunks).decode("utf-8", "replace").strip().splitlines() or [""]
    for notice in lines[:-1]:
        if notice.startswith("notice "):
            sys.stderr.write(notice.removeprefix("notice ") + "\n")
    line = lines[-1]
    if line.startswith(("ok", "running")):
        return 0
    if line.startswith("error "):
        try:
            body = json.loads(line.removeprefix("error "))
            err = errors.from_json(body)
        except (ValueError, AttributeError):
            err = DaemonError(f"unreadable start-up report: {line[:200]}")
        return _report_failure(err, as_json)
    return _report_failure(DaemonError("the daemon died during start-up"), as_json)


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    # Everything this process creates under CW_HOME (its log, RocksDB's files from background
    # threads) is the owner's only: the umask is the one control over files RocksDB makes.
    os.umask(0o077)
    home = resolve_home(args.home)
    try:
        home.mkdir(parents=True, exist_ok=True)
        log_fd = open_log(home / LOG_NAME)
    except OSError as exc:
        failure = DaemonError(f"cannot open {home / LOG_NAME}: {exc.strerror or exc}")
        return _report_failure(failure, args.report == "json")
    if args.foreground:
        configure_logging(log_fd, also_stderr=True)
        code = _serve(home, args.service, PipeReporter(None))
        _exit(code)

    read_fd, write_fd = os.pipe()
    if os.fork() > 0:
        os.close(write_fd)
        os.close(log_fd)
        return _wait_for_child(read_fd, args.report == "json")
    # Child: detach from the launcher's session and terminal; keep only the report pipe.
    os.close(read_fd)
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)  # tracebacks of a crash land in the log too
    os.close(devnull)
    configure_logging(log_fd, also_stderr=False)
    _exit(_serve(home, args.service, PipeReporter(write_fd)))


def _exit(code: int) -> NoReturn:
    """Flush and exit now: a call stuck in the service after the drain deadline (a worker
    thread) must not keep the process alive, as a normal interpreter exit would."""
    logging.shutdown()
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    sys.exit(main())

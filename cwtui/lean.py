"""The lean path of ``cw search --json``: a warm daemon's answer without loading the CLI.

Scripts and agents call ``cw search --json`` once per question, and the full CLI spends about
0.35–0.4 s of CPU importing Typer, Rich and the engine's client modules before it does anything:
20–100 times what the daemon takes to answer. This module answers the common case with the
standard library, the daemon client (:mod:`cwcore.daemon.client`) and
:mod:`cwcore.large_results` only:

* the arguments are exactly those of ``cw search`` (a query, the request options, ``--json``),
  each option as ``--name value`` or ``--name=value``; anything else — ``--help``, ``--batch``,
  an unknown or repeated option, a value that is not a number where one is due, a second query —
  is left to the full CLI, which explains it;
* a daemon must already be running for the store (it is not started here): otherwise, and with
  ``CW_EMBEDDED`` set, the full CLI runs, which validates the request before it creates
  ``CW_HOME`` or starts a daemon;
* the request goes to the engine as the mapping of public fields the full CLI builds; the
  engine runs the same checks as the CLI's edge (:mod:`cwcore.precheck`), so a refused request
  is the same error — code, message and exit status — printed the same way (``{"error": …}`` on
  stdout, as ``--json`` asks);
* the answer is the engine's JSON, printed as the full CLI prints it (``SearchResponse.to_json``
  is that JSON byte for byte): ``tests/cli/test_lean_search.py`` compares the two paths.

:func:`search` returns the exit status, or None to hand the command to the full CLI.
"""

from __future__ import annotations

import json
import os
import re
import sys
from typing import Any

#: Options with a value, by flag, and the request field each fills.
VALUED = {
    "--limit": "limit",
    "--scope": "scope",
    "--session": "sessions",
    "--project": "project",
    "--agent": "agent",
    "--since": "since",
    "--until": "until",
    "--role": "role",
    "--kind": "kind",
    "--relation": "relation",
    "--semantic": "semanticPolicy",
    "--group": "group",
}
#: Flags without a value, and the field and value each sets (``--json`` sets none).
FLAGS = {"--no-rerank": ("rerank", False), "--strict": ("strict", True), "--json": None}
#: The fields in the order the full CLI builds them (the engine reads a mapping: order is only
#: kept so that both paths send the same bytes).
ORDER = (
    "limit",
    "scope",
    "semanticPolicy",
    "query",
    "project",
    "agent",
    "since",
    "until",
    "role",
    "kind",
    "relation",
    "group",
    "sessions",
    "rerank",
    "strict",
)
_INT = re.compile(r"[+-]?\d+")
_JSON_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff]")


def parse(argv: list[str]) -> dict[str, Any] | None:
    """The search request fields of ``cw search`` arguments (after ``search``), or None when the
    arguments are not the simple kind this path takes (see the module docstring)."""
    fields: dict[str, Any] = {"limit": 10, "scope": "all"}
    seen: set[str] = set()
    sessions: list[str] = []
    query: str | None = None
    json_flag = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in FLAGS:
                if eq or name in seen:
                    return None
                seen.add(name)
                flag = FLAGS[name]
                if flag is None:
                    json_flag = True
                else:
                    fields[flag[0]] = flag[1]
                continue
            if name not in VALUED:
                return None
            if not eq:
                if i >= len(argv) or argv[i].startswith("-"):
                    return None
                value = argv[i]
                i += 1
            if name == "--session":
                sessions.append(value)
                continue
            if name in seen:
                return None
            seen.add(name)
            if name == "--limit":
                if not _INT.fullmatch(value.strip()):
                    return None
                fields["limit"] = int(value)
            else:
                fields[VALUED[name]] = value
        elif arg.startswith("-") or query is not None:
            return None  # a short option, "--" or a second query: the full CLI says what it is
        else:
            query = arg
    if not json_flag:
        return None
    if query is not None:
        fields["query"] = query
    if sessions:
        fields["sessions"] = sessions
    return {k: fields[k] for k in ORDER if k in fields}


def emit(body: Any) -> None:
    """One JSON document on one line of stdout, as :func:`cwtui.output.emit_json` writes it."""
    text = json.dumps(body, ensure_ascii=False)
    sys.stdout.write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    sys.stdout.flush()


def search(argv: list[str]) -> int | None:
    """Run ``cw search`` with ``argv`` (the arguments after ``search``) on a running daemon and
    return its exit status; None when the full CLI must run it instead."""
    if os.environ.get("CW_EMBEDDED", "").lower() in ("1", "true", "yes"):
        return None
    fields = parse(argv)
    if fields is None:
        return None
    from cwcore import config, large_results
    from cwcore.daemon.client import Client, DaemonNotRunning
    from cwcore.errors import CwError

    try:
        home = config.default_home().expanduser().resolve()
        if not home.is_dir():
            return None
        # As Archive.open does: a config.toml broken since the daemon started is reported.
        config.load(home)
        client = Client(home, autostart=False)
        try:
            collector = large_results.Collector(None)
            body = collector.result(client.call("search", fields, on_event=collector))
        finally:
            client.close()
    except DaemonNotRunning:
        return None
    except CwError as exc:
        emit({"error": {"code": exc.code, "message": exc.message}})
        return exc.exit_code
    except KeyboardInterrupt:
        emit({"error": {"code": "interrupted", "message": "interrupted"}})
        return 130
    except Exception as exc:  # as cwtui.output.guard: no traceback for users
        if os.environ.get("CW_DEBUG"):
            raise
        emit(
            {
                "error": {
                    "code": "internal",
                    "message": f"internal error: {type(exc).__name__}: {exc}",
                }
            }
        )
        return 1
    try:
        emit(body)
    except BrokenPipeError:
        # The reader closed the pipe: not an error (as the full CLI treats it).
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    return 0

"""The lean path of the calls scripts make: a warm daemon's answer without loading the CLI.

Scripts and agents call ``cw search --json`` (and ``cw recall … --json``, ``cw preflight …
--json``, ``cw sessions --json``) once per question, and the full CLI spends about 0.35–0.4 s
of CPU importing Typer, Rich and the engine's client modules before it does anything: 20–100
times what the daemon takes to answer. This module answers those calls with the standard
library, the daemon client (:mod:`cwcore.daemon.client`) and :mod:`cwcore.large_results` only:

* the arguments are exactly those of the command (its one argument, its options, ``--json``),
  each option as ``--name value`` or ``--name=value``; anything else — ``--help``, ``--batch``,
  an unknown or repeated option, a value that is not a number where one is due, a second
  argument, a missing required option — is left to the full CLI, which explains it;
* a daemon must already be running for the store (it is not started here): otherwise, and with
  ``CW_EMBEDDED`` set, the full CLI runs, which validates the request before it creates
  ``CW_HOME`` or starts a daemon (standard input, for an argument of ``-``, is read only once
  the daemon answered, so the full CLI still finds it);
* the request goes to the engine as the mapping of fields the full CLI builds; the engine runs
  the same checks as the CLI's edge (:mod:`cwcore.precheck`), so a refused request is the same
  error — code, message and exit status — printed the same way (``{"error": …}`` on stdout, as
  ``--json`` asks);
* the answer is the engine's JSON, printed as the full CLI prints it (each typed answer's
  ``to_json`` is that JSON; ``cw sessions`` prints the answer's ``sessions`` and
  ``next_cursor``), with the full CLI's exit status: ``tests/test_cli_lean.py`` compares the
  two paths through a real daemon.

:func:`run` returns the exit status, or None to hand the command to the full CLI.
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Command:
    """The arguments of one CLI command this path takes, and how they become method params."""

    method: str
    #: The field of the one positional argument (None: the command takes none), and whether it
    #: must be given.
    positional: str | None
    positional_required: bool
    #: ``--flag value`` options: flag -> field (a list field when ``repeated``).
    valued: dict[str, str]
    repeated: frozenset[str] = frozenset()
    integers: frozenset[str] = frozenset()
    #: Value-less flags: flag -> (field, value); ``--json`` is handled by the caller.
    flags: dict[str, tuple[str, Any]] = field(default_factory=dict)
    #: Fields sent even when not given (the full CLI's defaults), first, in this order.
    defaults: dict[str, Any] = field(default_factory=dict)
    #: Fields the full CLI leaves out of its request when they hold this value.
    omitted: dict[str, Any] = field(default_factory=dict)
    #: The answer's fields the full CLI prints, in its order (empty: the whole answer).
    printed: tuple[str, ...] = ()
    #: Options the full CLI requires (a missing one is its usage error to report).
    required: frozenset[str] = frozenset()
    #: The positional ``-`` reads standard input (stripped when ``strip_stdin``).
    stdin_dash: bool = False
    strip_stdin: bool = False
    #: The field order of the full CLI's request (the engine reads a mapping; kept so both
    #: paths send the same bytes).
    order: tuple[str, ...] = ()


COMMANDS = {
    "search": Command(
        method="search",
        positional="query",
        positional_required=False,
        valued={
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
        },
        repeated=frozenset({"--session"}),
        integers=frozenset({"--limit"}),
        flags={"--no-rerank": ("rerank", False), "--strict": ("strict", True)},
        defaults={"limit": 10, "scope": "all"},
        order=(
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
        ),
    ),
    "recall": Command(
        method="recall",
        positional="locator",
        positional_required=True,
        valued={"--neighbors": "neighbors", "--max-tokens": "maxTokens", "--session": "sessionIds"},
        repeated=frozenset({"--session"}),
        integers=frozenset({"--neighbors", "--max-tokens"}),
        defaults={"neighbors": 1, "maxTokens": 3000, "sessionIds": []},
        stdin_dash=True,
        strip_stdin=True,
        order=("locator", "neighbors", "maxTokens", "sessionIds"),
    ),
    "preflight": Command(
        method="preflight",
        positional="message",
        positional_required=True,
        valued={
            "--session": "session",
            "--message-key": "messageKey",
            "--visible": "excludeVisibleSourceKeys",
            "--max-results": "maxResults",
        },
        repeated=frozenset({"--visible"}),
        integers=frozenset({"--max-results"}),
        required=frozenset({"--session"}),
        stdin_dash=True,
        order=("message", "session", "messageKey", "excludeVisibleSourceKeys", "maxResults"),
    ),
    # As cwcore.api.Archive.sessions builds it: the limit always, a filter when given, the sort
    # when not the default, ascending only when asked.
    "sessions": Command(
        method="sessions",
        positional=None,
        positional_required=False,
        valued={
            "--project": "project",
            "--agent": "agent",
            "--since": "since",
            "--limit": "limit",
            "--cursor": "cursor",
            "--sort": "sort",
            "--match": "match",
        },
        integers=frozenset({"--limit"}),
        flags={"--asc": ("ascending", True)},
        defaults={"limit": 50},
        omitted={"sort": "started"},
        printed=("sessions", "next_cursor"),
        order=("limit", "project", "agent", "since", "cursor", "match", "sort", "ascending"),
    ),
}
_INT = re.compile(r"[+-]?\d+")
#: A span back from now, as ``cwcore.retrieve.filters`` reads it (not imported: this path stays
#: lean; a test holds the two patterns equal).
_SPAN = re.compile(r"(\d{1,6})([mhdw])")
#: What ``cwtui.output.json_safe`` escapes (a test holds the two patterns equal).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\ud800-\udfff\u2028\u2029]")


def parse(argv: list[str], command: Command = COMMANDS["search"]) -> dict[str, Any] | None:
    """The method params of ``command``'s arguments (those after its name), or None when the
    arguments are not the simple kind this path takes (see the module docstring)."""
    fields: dict[str, Any] = dict(command.defaults)
    seen: set[str] = set()
    lists: dict[str, list[str]] = {}
    positional: str | None = None
    json_flag = False
    i = 0
    while i < len(argv):
        arg = argv[i]
        i += 1
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name == "--json" or name in command.flags:
                if eq or name in seen:
                    return None
                seen.add(name)
                if name == "--json":
                    json_flag = True
                else:
                    key, flag_value = command.flags[name]
                    fields[key] = flag_value
                continue
            if name not in command.valued:
                return None
            if not eq:
                if i >= len(argv) or argv[i].startswith("-"):
                    return None
                value = argv[i]
                i += 1
            key = command.valued[name]
            if name in command.repeated:
                lists.setdefault(key, []).append(value)
                continue
            if name in seen:
                return None
            seen.add(name)
            if name in command.integers:
                if not _INT.fullmatch(value.strip()):
                    return None
                fields[key] = int(value)
            else:
                fields[key] = value
        elif (
            (arg.startswith("-") and arg != "-")
            or positional is not None
            or command.positional is None
        ):
            return None  # a short option, "--" or a second argument: the full CLI says what
        else:
            positional = arg
    if not json_flag or not command.required <= seen:
        return None
    if positional is None and command.positional_required:
        return None
    if positional is not None and command.positional is not None:
        fields[command.positional] = positional
    fields.update(lists)
    if any(
        isinstance(fields.get(k), str) and _SPAN.fullmatch(fields[k].strip().lower())
        for k in ("since", "until")
    ):
        return None  # the full CLI turns a span (7d) into an instant from its clock
    for key, value in command.omitted.items():
        if key in fields and fields[key] == value:
            del fields[key]
    return {k: fields[k] for k in command.order if k in fields}


def exit_status(method: str, body: dict[str, Any]) -> int:
    """The exit status of an answer, as the full CLI gives it: a recall that did not resolve
    exits as ``cwtui.commands.recall.recall_exit_code`` says (2 for an invalid locator, 3 for
    every other unresolved status); everything else 0."""
    from cwcore.errors import InvalidInput, NotFound

    if method != "recall" or body.get("status") == "resolved":
        return 0
    return InvalidInput.exit_code if body.get("status") == "locator-invalid" else NotFound.exit_code


def emit(body: Any) -> None:
    """One JSON document on one line of stdout, as :func:`cwtui.output.emit_json` writes it."""
    text = json.dumps(body, ensure_ascii=False)
    sys.stdout.write(_JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n")
    sys.stdout.flush()


def run(name: str, argv: list[str]) -> int | None:
    """Run the command ``name`` (a key of :data:`COMMANDS`) with ``argv`` (the arguments after
    its name) on a running daemon and return its exit status; None when the full CLI must run
    it instead."""
    command = COMMANDS.get(name)
    if command is None or os.environ.get("CW_EMBEDDED", "").lower() in ("1", "true", "yes"):
        return None
    if "--json" not in argv:
        return None
    fields = parse(argv, command)
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
            client.open()  # DaemonNotRunning before anything is read from stdin
            if (
                command.stdin_dash
                and command.positional is not None
                and fields.get(command.positional) == "-"
            ):
                text = sys.stdin.read()
                fields[command.positional] = text.strip() if command.strip_stdin else text
            collector = large_results.Collector(None)
            body = collector.result(client.call(command.method, fields, on_event=collector))
            if command.printed:
                body = {key: body.get(key) for key in command.printed}
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
    return exit_status(command.method, body)

"""``cw hooks install|show|uninstall HOST``: connect Claude Code, Codex or pi to cw."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from cwcore.hosts import hooks as installer
from cwtui.output import console, emit_json, err_console, guard, safe

NAME = "hooks"
app = typer.Typer(
    help="Install cw's prompt hint and session-import hooks into an agent host.",
    no_args_is_help=True,
)

HostArg = Annotated[str, typer.Argument(help="claude-code, codex or pi.")]
SettingsOpt = Annotated[
    Path | None,
    typer.Option(
        "--settings",
        help="The host's settings file (default: ~/.claude/settings.json, "
        "$CODEX_HOME/config.toml, ~/.pi/agent/extensions/cw.ts).",
    ),
]
DryRunOpt = Annotated[
    bool, typer.Option("--dry-run", help="Print the file as it would be written; write nothing.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def _report(change: installer.Change, verb: str, dry_run: bool, as_json: bool) -> None:
    if as_json:
        emit_json({**change.to_json(), "dryRun": dry_run})
    elif dry_run:
        if change.after is None:
            action = "would delete" if change.before is not None else "nothing to remove at"
            err_console.print(f"{action} {change.path}", markup=False)
        else:
            state = "would write" if change.changed else "unchanged (already installed):"
            err_console.print(f"{state} {change.path}", markup=False)
            sys.stdout.write(safe(change.after))
            sys.stdout.flush()
    elif not change.changed:
        state = "already installed in" if verb == "install" else "no cw entries in"
        console.print(f"{change.host}: {state} {escape(str(change.path))}")
    elif change.after is None:
        console.print(f"{change.host}: removed {escape(str(change.path))} (only cw's entries)")
    else:
        console.print(f"{change.host}: {verb}ed cw's entries in {escape(str(change.path))}")
    for note in change.notes:
        err_console.print(f"note: {note}", markup=False)


@app.command("install")
def install(
    host: HostArg,
    settings: SettingsOpt = None,
    project: Annotated[
        str | None,
        typer.Option(
            help="codex: the project its MCP server is bound to (default: the current one)."
        ),
    ] = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Add cw's hooks to HOST's settings, keeping everything else (installing twice is a no-op)."""
    with guard(as_json):
        change = installer.plan_install(host, settings, project=project)
        if not dry_run:
            installer.apply(change)
        _report(change, "install", dry_run, as_json)


@app.command("uninstall")
def uninstall(
    host: HostArg,
    settings: SettingsOpt = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Remove exactly the entries `cw hooks install` added."""
    with guard(as_json):
        change = installer.plan_uninstall(host, settings)
        if not dry_run:
            installer.apply(change)
        _report(change, "uninstall", dry_run, as_json)


@app.command("show")
def show(host: HostArg, settings: SettingsOpt = None, as_json: JsonOpt = False) -> None:
    """Show whether cw's hooks are installed for HOST and what they run."""
    with guard(as_json):
        body = installer.show(host, settings)
        if as_json:
            emit_json(body)
            return
        if not body["installed"]:
            state = "not installed"
        else:
            state = "installed" if body["current"] else "installed (outdated: install again)"
        console.print(f"{host}: {state} · {escape(body['path'])}")
        for entry in body["entries"]:
            console.print(f"  {entry['event']}: {escape(entry['command'])}")

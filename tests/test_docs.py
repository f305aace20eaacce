"""Every CLI command (and sub-command) is documented in docs/cli.md and has --help text."""

from __future__ import annotations

from pathlib import Path

import typer
from typer.main import get_command

from cwtui.cli import app

DOCS = (Path(__file__).parent.parent / "docs" / "cli.md").read_text(encoding="utf-8")


def _commands(group, prefix: str = "cw") -> list[tuple[str, object]]:
    out = []
    for name, cmd in sorted(getattr(group, "commands", {}).items()):
        path = f"{prefix} {name}"
        out.append((path, cmd))
        out += _commands(cmd, path)
    return out


def test_every_command_documented_and_helped() -> None:
    root = get_command(app)
    commands = _commands(root)
    assert commands, "no commands found"
    for path, cmd in commands:
        assert f"`{path}" in DOCS, f"{path} is not documented in docs/cli.md"
        assert (cmd.help or "").strip(), f"{path} has no --help text"


def test_typer_app_is_typer() -> None:
    assert isinstance(app, typer.Typer)

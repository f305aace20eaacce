"""``cw NAME …`` builds only the command it runs (:func:`cwtui.cli.only`), and nothing a user sees
changes: every command's help, a bad option's one-line error and an unknown name's suggestion
read the same as from the whole command tree."""

from __future__ import annotations

import typer.main
from typer.testing import CliRunner

from cwtui import cli

runner = CliRunner()
NAMES = sorted(
    [cli._command_name(c) for c in cli.app.registered_commands]
    + [str(g.name) for g in cli.app.registered_groups]
)


def _run(app: typer.Typer, args: list[str]) -> tuple[int, str]:
    result = runner.invoke(app, args, prog_name="cw")
    return result.exit_code, result.output


def test_each_name_builds_only_its_command() -> None:
    for name in NAMES:
        pruned = cli.only([name, "--help"])
        assert pruned is not cli.app
        built = typer.main.get_command(pruned)
        assert list(built.commands) == [name]  # type: ignore[attr-defined]


def test_help_and_errors_are_the_same_as_from_the_whole_tree() -> None:
    for name in NAMES:
        for args in ([name, "--help"], [name, "--no-such-option"]):
            assert _run(cli.only(args), args) == _run(cli.app, args), args


def test_what_needs_every_command_gets_every_command() -> None:
    for argv in ([], ["--help"], ["-h"], ["--version"], ["sesions"], ["no-such-command"]):
        assert cli.only(argv) is cli.app

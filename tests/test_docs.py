"""Every CLI command (and sub-command) is documented in docs/cli.md and has --help text, and
docs/operations.md's failure table states the exit codes cw really uses."""

from __future__ import annotations

import re
from pathlib import Path

import typer
from typer.main import get_command

from cwcore.errors import EXIT_CODES
from cwtui.cli import app
from cwtui.commands.recall import recall_exit_code

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


# -- docs/operations.md: the failure table tells the exit codes cw really uses ----------------

ROOT = Path(__file__).parent.parent
OPERATIONS = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
FAILURE_HEADER = "| failure | what you see | exit code | what to do |"
RECALL_STATUSES = ("locator-invalid", "lease-expired", "expired", "missing", "superseded")


def _failure_rows() -> list[list[str]]:
    """The cells of each row of the table "failure → what you see → exit code → what to do"."""
    lines = OPERATIONS.splitlines()
    start = lines.index(FAILURE_HEADER) + 2  # past the header and its separator
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split(" | ")]
        assert len(cells) == 4, f"a failure row needs four cells: {line[:120]}"
        rows.append(cells)
    return rows


def _exit_claims(cell: str) -> list[tuple[int, list[str]]]:
    """``2 (`import-errors`)`` → [(2, ["import-errors"])]; several are separated by ``;``;
    "that of the command" (the failure does not change the exit code) claims nothing."""
    claims = []
    for part in cell.split(";"):
        part = part.strip()
        if part == "that of the command":
            continue
        match = re.fullmatch(r"(\d+)(?: \((.*)\))?", part)
        assert match, f"not an exit code: {part!r}"
        claims.append((int(match.group(1)), re.findall(r"`([a-z-]+)`", match.group(2) or "")))
    return claims


def test_the_failure_table_states_each_codes_own_exit_code() -> None:
    rows = _failure_rows()
    assert len(rows) > 20
    named: set[str] = set()
    statuses: set[str] = set()
    for failure, seen, exit_cell, _ in rows:
        for code, names in _exit_claims(exit_cell):
            for name in names:
                assert name in EXIT_CODES, f"{failure}: unknown error code {name}"
                assert EXIT_CODES[name] == code, f"{failure}: {name} exits {EXIT_CODES[name]}"
                named.add(name)
            for status in re.findall(r"`(" + "|".join(RECALL_STATUSES) + r"): ", seen):
                assert recall_exit_code(status) == code, f"{failure}: recall {status}"
                statuses.add(status)
    # Every error code cw can exit with has its row (a new code needs its line here too).
    assert named == set(EXIT_CODES), sorted(set(EXIT_CODES) - named)
    assert statuses == set(RECALL_STATUSES), statuses


def test_operations_is_linked_from_the_readme_and_the_exit_codes() -> None:
    assert "(docs/operations.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
    exit_codes = DOCS.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    assert "(operations.md)" in exit_codes

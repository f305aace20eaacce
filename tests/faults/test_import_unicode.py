"""Text that is not valid Unicode never stops an import (issue 32).

A lone UTF-16 surrogate in a JSON string (``"passed \\ud83d"``: a tool output cut inside an emoji)
used to escape admission as ``UnicodeEncodeError``: exit 1, the summary lost, and a folder import
(every ``cw sync``) stopped at that file. The rule (``cwcore/importers/surrogates.py``): the
source line is kept byte-exact, every derived string shows U+FFFD, and the import says how many.
"""

from __future__ import annotations

import copy
import json
import random
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from cwcore.config import Settings
from cwcore.importers import base
from cwcore.importers.pipeline import import_paths
from cwcore.store import codec, keys
from cwcore.store.admission import Admission
from cwcore.store.rocks import Store
from cwtui.cli import app
from tests.helpers import examples, write_jsonl
from tests.importers.golden_support import FIXTURES

runner = CliRunner()
LONE = "\ud83d"


def claude_lines(session: str, odd: str) -> list[dict[str, Any]]:
    """A Claude Code session whose every derived string can carry ``odd``."""
    base_line = {"sessionId": session, "cwd": "/home/dev/app", "version": "2.0.0"}
    return [
        {"type": "summary", "summary": f"title {odd}", "leafUuid": "u3"},
        {
            **base_line,
            "type": "user",
            "uuid": "u1",
            "parentUuid": None,
            "timestamp": "2026-03-01T10:00:00Z",
            "message": {"role": "user", "content": f"run the tests {odd}"},
        },
        {
            **base_line,
            "type": "assistant",
            "uuid": "u2",
            "parentUuid": "u1",
            "timestamp": "2026-03-01T10:00:01Z",
            "message": {
                "id": "m1",
                "role": "assistant",
                "model": f"claude {odd}",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "call-1",
                        "name": f"Bash{odd}",
                        "input": {f"command{odd}": f"pytest {odd}"},
                    }
                ],
            },
        },
        {
            **base_line,
            "type": "user",
            "uuid": "u3",
            "parentUuid": "u2",
            "timestamp": "2026-03-01T10:00:02Z",
            "message": {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call-1", "content": f"passed {odd}"}
                ],
            },
        },
    ]


def test_a_lone_surrogate_in_every_field_imports_and_the_folder_goes_on(
    tmp_path: Path, cw_home: Path
) -> None:
    folder = tmp_path / "projects"
    folder.mkdir()
    odd = folder / "a-odd.jsonl"
    write_jsonl(odd, claude_lines("a-odd", LONE))  # json.dumps writes "\ud83d" escapes
    assert b"\\ud83d" in odd.read_bytes()
    write_jsonl(folder / "b-good.jsonl", claude_lines("b-good", "ok"))
    result = runner.invoke(app, ["import", str(folder), "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["sessions"] == 2 and summary["errors"] == []
    assert any("lone surrogate(s)" in n and "a-odd.jsonl" in n for n in summary["notices"])
    shown = json.loads(runner.invoke(app, ["show", "a-odd", "--json"]).stdout)
    assert shown["session"]["title"] == "title \ufffd"
    texts = [m["text"] for m in shown["messages"]]
    assert "passed \ufffd" in texts and "run the tests \ufffd" in texts
    # The evidence keeps the source lines as they were.
    with Store(cw_home / "store") as store:
        raws = [
            codec.decode_event(v)[3] for _, v in store.scan("events", keys.EVENT.prefix("a-odd"))
        ]
    assert raws == odd.read_bytes().splitlines()


def test_a_session_keeps_its_project(tmp_path: Path, cw_home: Path) -> None:
    first = write_jsonl(tmp_path / "s1.jsonl", claude_lines("s1", "one")[:2])
    grown = tmp_path / "grown" / "s1.jsonl"
    grown.parent.mkdir()
    write_jsonl(grown, claude_lines("s1", "one"))
    assert runner.invoke(app, ["import", str(first), "--project", "alpha"]).exit_code == 0
    result = runner.invoke(app, ["import", str(grown), "--project", "beta", "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert any("belongs to project alpha" in n for n in summary["notices"])
    rows = json.loads(runner.invoke(app, ["sessions", "--json"]).stdout)["sessions"]
    assert [(r["sessionId"], r["project"]) for r in rows] == [("s1", "alpha")]
    hits = json.loads(
        runner.invoke(app, ["search", "pytest", "--project", "alpha", "--json"]).stdout
    )
    assert hits["results"] and all(h["source"]["project"] == "alpha" for h in hits["results"])
    beta = json.loads(
        runner.invoke(app, ["search", "pytest", "--project", "beta", "--json"]).stdout
    )
    assert beta["results"] == []


def _json_fixtures() -> list[Path]:
    """The first JSON-lines fixture of every line-based format (one file per format keeps the
    fast tier fast; the slow tier runs the same files with more examples)."""
    out: dict[str, Path] = {}
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        head = path.read_bytes().splitlines()[:1]
        fmt = path.relative_to(FIXTURES).parts[0]
        if head and head[0].lstrip().startswith(b"{") and fmt not in out:
            out[fmt] = path
    return sorted(out.values())


@pytest.fixture(scope="module")
def fuzz_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Admission]:
    """One store for every example of a worker: opening RocksDB per example would cost more
    than the import it checks."""
    with Store(tmp_path_factory.mktemp("fuzz-store") / "store") as store:
        yield Admission(store)


JSON_FIXTURES = _json_fixtures()


def _strings(value: Any, trail: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, str):
        return [trail]
    if isinstance(value, dict):
        return [t for k, v in value.items() for t in _strings(v, (*trail, k))]
    if isinstance(value, list):
        return [t for i, v in enumerate(value) for t in _strings(v, (*trail, i))]
    return []


def _set(value: Any, trail: tuple[Any, ...], new: Any) -> None:
    for step in trail[:-1]:
        value = value[step]
    value[trail[-1]] = new


def _spoil(fixture: Path, seed: int, values: list[Any], where: Path) -> Path:
    """``fixture`` with three of its string values (chosen by ``seed``) replaced by ``values``
    items, written under ``where`` at the fixture's own relative path."""
    rng = random.Random(seed)
    rows = []
    for raw in fixture.read_bytes().splitlines():
        try:
            rows.append(json.loads(raw))
        except ValueError:
            continue
    for _ in range(3):
        row = rng.choice(rows)
        trails = _strings(row)
        if trails:
            _set(row, rng.choice(trails), copy.deepcopy(rng.choice(values)))
    target = where / fixture.relative_to(FIXTURES)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return target


def _import(admission: Admission, target: Path, fixture: Path) -> Any:
    importer = base.detect(fixture)
    assert importer is not None
    return import_paths(admission, [target], fmt=importer.name, settings=Settings())


@pytest.mark.parametrize("fixture", JSON_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
@settings(max_examples=examples(60), suppress_health_check=list(HealthCheck), deadline=None)
# NUL is left out of the junk: a NUL in a session or message id is refused by design (the key
# codec takes no NUL; tests/faults/test_hostile_inputs.py pins it), and Hypothesis found that a
# cursor file whose only message id drew one failed as a session, which is that rule, not this.
@given(
    seed=st.integers(0, 2**32 - 1),
    junk=st.text(st.characters(exclude_characters="\x00"), max_size=8),
)
def test_lone_surrogates_anywhere_import_cleanly(
    tmp_path_factory: pytest.TempPathFactory,
    fuzz_store: Admission,
    fixture: Path,
    seed: int,
    junk: str,
) -> None:
    """A real file of each format with strings cut inside a surrogate pair: every session the
    file holds still imports (no file- or session-level failure), U+FFFD in place."""
    where = tmp_path_factory.mktemp("odd")
    values = [f"{junk}{LONE}", f"\udc00{junk}", f"{junk}\ud800x"]
    summary = _import(fuzz_store, _spoil(fixture, seed, values, where), fixture)
    assert summary.files == 1
    assert not [e for e in summary.errors if e.line is None], summary.errors
    shutil.rmtree(where)


@pytest.mark.parametrize("fixture", JSON_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
@settings(max_examples=examples(60), suppress_health_check=list(HealthCheck), deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    value=st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
        ),
        max_leaves=8,
    ),
)
def test_arbitrary_values_never_stop_an_import(
    tmp_path_factory: pytest.TempPathFactory,
    fuzz_store: Admission,
    fixture: Path,
    seed: int,
    value: Any,
) -> None:
    """The same files with arbitrary JSON in place of strings: the import always ends with its
    summary (a value an importer cannot read is at worst a one-line problem of that file)."""
    where = tmp_path_factory.mktemp("odd")
    summary = _import(fuzz_store, _spoil(fixture, seed, [value], where), fixture)
    assert summary.files == 1
    assert all("\n" not in e.reason for e in summary.errors)
    shutil.rmtree(where)

"""The hostile-input suite (issue 32): one table of inputs by class, each ending in a one-line
error with its documented exit code (docs/cli.md, ``cwcore/errors.py``) or kept as data that reads
back whole, with nothing lost beside it and no traceback.

Classes (the ``CLASS`` of each row; docs/testing.md lists them with their counts):

- ``malformed-json``, ``invalid-unicode``, ``nul``, ``huge-deep``, ``odd-id``: one hostile line of
  a cw-jsonl file between two good sessions. A rejected line is exit 2 (``import-errors``) and
  exactly one stderr line ``file:3: reason``; a kept one is exit 0 with at most one notice and
  its text reads back through ``cw show --json``. Both good sessions always read back.
- ``cli-arg``: hostile command-line values (NUL, lone surrogates as a shell's undecodable bytes
  arrive, 10 MB values, markup, escapes) to the commands that take ids, queries and projects:
  one ``cw:`` line on stderr and the documented exit code, or an answer.
- ``path``: symlinks (loop, dangling, to a file, to a folder), FIFOs (named and inside a folder),
  a device, a missing path — one ``path: reason`` line, or imported; never a hang.
- ``locator``: a real locator tampered with (payload, MAC, prefix, segments), another store's
  locator, oversized ones: ``locator-invalid`` (exit 2), never a traceback.
- ``escape``: file names, titles, ids and texts with terminal escapes and Textual / Rich markup,
  through the CLI into a pipe and through the TUI (markup shown as text, never applied).

Open-ended inputs (session arguments, project names, locator strings) run under Hypothesis.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cwcore.api import Archive
from cwtui.screens.sessions import SessionsScreen
from cwtui.screens.transcript import TranscriptScreen
from tests.faults.helpers import cw_env, json_lines, run_cw
from tests.helpers import REPO, HomeCache, conversation, examples
from tests.tui.conftest import SIZE, AppFactory, settle, type_text

TRACEBACK = "Traceback (most recent call last)"
MB = 1024 * 1024


def assert_clean(result: subprocess.CompletedProcess[str]) -> None:
    for stream in (result.stdout, result.stderr):
        assert TRACEBACK not in stream, stream[-2000:]
        assert "internal error" not in stream, stream[-2000:]
    assert result.returncode != 1, (result.stdout[-500:], result.stderr[-500:])


def one_error_line(result: subprocess.CompletedProcess[str], exit_code: int) -> str:
    """The one stderr line of a refused command (``cw: …``), its exit code checked."""
    assert_clean(result)
    assert result.returncode == exit_code, (result.returncode, result.stderr[:500])
    lines = result.stderr.splitlines()
    assert len(lines) == 1, lines[:5]
    assert len(lines[0]) < 8192, len(lines[0])
    return lines[0]


def _row(session: str, mid: str, role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {
        "session": session,
        "id": mid,
        "role": role,
        "project": "proj",
        "text": text,
        "timestamp": "2026-11-01T10:00:00Z",
        **extra,
    }


def _line(row: dict[str, Any]) -> bytes:
    return json.dumps(row).encode() + b"\n"


def _hostile(**fields: Any) -> bytes:
    """A cw-jsonl row of session ``hostile`` with ``fields`` over its defaults."""
    return _line({**_row("hostile", "h1", "user", "hostile row"), **fields})


def _raw(template: str, value: bytes) -> bytes:
    """A row written byte by byte: ``template`` with ``@@`` replaced by ``value`` (raw bytes
    that ``json.dumps`` would escape or refuse)."""
    return template.encode().replace(b"@@", value) + b"\n"


SESSION = ": session hostile: "
ROW = '{"session": "hostile", "id": "h1", "role": "user", "project": "proj", "text": "@@"}'


def _deep(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


@dataclass(frozen=True)
class LineCase:
    """One hostile line (line 3 of its file, after a good two-line session)."""

    cls: str
    name: str
    line: Callable[[], bytes]
    #: 0: kept (and ``kept`` reads back); 2: the line is a problem, the rest imports.
    exit: int
    #: Text the hostile session's messages must hold once kept.
    kept: str | None = None
    #: Where the problem line points: the line, or (a refused project) the session.
    where: str = ":3: "


LINE_CASES = [
    # malformed JSON
    LineCase("malformed-json", "truncated", lambda: b'{"session": "hostile", "id":\n', 2),
    LineCase("malformed-json", "array", lambda: b"[1, 2, 3]\n", 2),
    LineCase("malformed-json", "string", lambda: b'"just a string"\n', 2),
    LineCase("malformed-json", "number", lambda: b"42\n", 2),
    LineCase("malformed-json", "null", lambda: b"null\n", 2),
    LineCase("malformed-json", "trailing-garbage", lambda: _hostile()[:-1] + b" xyz\n", 2),
    LineCase("malformed-json", "bad-escape", lambda: _raw(ROW, b"\\q"), 2),
    LineCase("malformed-json", "unterminated-string", lambda: _raw(ROW, b"abc\\"), 2),
    LineCase(
        "malformed-json", "nan-value", lambda: _hostile()[:-2] + b', "x": NaN}\n', 0, "hostile row"
    ),
    LineCase("malformed-json", "text-not-a-string", lambda: _hostile(text={"a": [1]}), 2),
    LineCase("malformed-json", "role-unknown", lambda: _hostile(role="wizard"), 2),
    LineCase(
        "malformed-json",
        "duplicate-keys",
        lambda: _raw(ROW, b"first").replace(b'"text"', b'"text": "dup", "text"'),
        0,
        "first",
    ),
    LineCase(
        "malformed-json", "crlf", lambda: _hostile(text="crlf kept")[:-1] + b"\r\n", 0, "crlf kept"
    ),
    # invalid Unicode
    LineCase("invalid-unicode", "raw-0xff", lambda: _raw(ROW, b"bad \xff byte"), 2),
    LineCase("invalid-unicode", "overlong", lambda: _raw(ROW, b"over \xc0\xaf long"), 2),
    # UTF-8 of a surrogate (CESU-8) decodes as the lone surrogate it spells: kept, shown U+FFFD.
    LineCase(
        "invalid-unicode",
        "cesu-surrogate",
        lambda: _raw(ROW, b"cesu \xed\xa0\x80"),
        0,
        "cesu \ufffd",
    ),
    LineCase(
        "invalid-unicode",
        "lone-surrogate-text",
        lambda: _hostile(text="cut \ud83d here"),
        0,
        "cut \ufffd here",
    ),
    LineCase(
        "invalid-unicode",
        "lone-surrogate-title",
        lambda: _hostile(text="titled", title="t \udc00"),
        0,
        "titled",
    ),
    LineCase("invalid-unicode", "lone-surrogate-id", lambda: _hostile(id="h\udc00"), 2),
    LineCase(
        "invalid-unicode", "bom-mid-file", lambda: b"\xef\xbb\xbf" + _hostile(), 0, "hostile row"
    ),
    LineCase(
        "invalid-unicode",
        "noncharacters",
        lambda: _hostile(text="\ufffe\uffff\U0010ffff"),
        0,
        "\ufffe\uffff\U0010ffff",
    ),
    # NUL
    LineCase("nul", "nul-in-text", lambda: _hostile(text="a\x00b"), 0, "a\x00b"),
    LineCase("nul", "nul-in-session-id", lambda: _hostile(session="hos\x00tile"), 2),
    LineCase("nul", "nul-in-message-id", lambda: _hostile(id="h\x001"), 2),
    LineCase("nul", "nul-in-project", lambda: _hostile(project="p\x00q"), 2, where=SESSION),
    LineCase("nul", "raw-nul-byte", lambda: _raw(ROW, b"raw \x00 nul"), 2),
    LineCase("nul", "nul-line", lambda: b"\x00" * 64 + b"\n", 2),
    # huge and deep values
    LineCase("huge-deep", "nested-100k-line", lambda: _deep(100_000) + b"\n", 2),
    LineCase(
        "huge-deep",
        "nested-100k-value",
        lambda: _hostile()[:-2] + b', "m": ' + _deep(100_000) + b"}\n",
        2,
    ),
    LineCase(
        "huge-deep",
        "object-100k-deep",
        lambda: b'{"a":' * 100_000 + b"1" + b"}" * 100_000 + b"\n",
        2,
    ),
    LineCase("huge-deep", "line-50mb", lambda: _hostile(text="x" * (50 * MB)), 2),
    LineCase("huge-deep", "session-id-10mb", lambda: _hostile(session="s" * (10 * MB)), 2),
    LineCase("huge-deep", "message-id-10mb", lambda: _hostile(id="m" * (10 * MB)), 2),
    LineCase("huge-deep", "project-1mb", lambda: _hostile(project="p" * MB), 2, where=SESSION),
    LineCase(
        "huge-deep",
        "key-1mb",
        lambda: _hostile()[:-2] + b', "' + b"k" * MB + b'": 1}\n',
        0,
        "hostile row",
    ),
    LineCase(
        "huge-deep",
        "number-100k-digits",
        lambda: _hostile()[:-2] + b', "n": ' + b"9" * 100_000 + b"}\n",
        2,
    ),
    # odd ids and project names (kept as given: ids are data)
    LineCase(
        "odd-id", "dotdot-slash", lambda: _hostile(session="../../etc/passwd"), 0, "hostile row"
    ),
    LineCase("odd-id", "spaces-only", lambda: _hostile(session="   "), 0, "hostile row"),
    LineCase("odd-id", "empty-session", lambda: _hostile(session=""), 2),
    LineCase("odd-id", "dash-option", lambda: _hostile(session="--help"), 0, "hostile row"),
    LineCase(
        "odd-id", "rtl-and-zwj", lambda: _hostile(session="\u202eevil\u200d"), 0, "hostile row"
    ),
    LineCase("odd-id", "id-512-bytes", lambda: _hostile(session="é" * 256), 0, "hostile row"),
    LineCase("odd-id", "id-513-bytes", lambda: _hostile(session="é" * 256 + "x"), 2),
    LineCase("odd-id", "id-a-number", lambda: _hostile(session=12345), 2),
    LineCase("odd-id", "project-markup", lambda: _hostile(project="[bold]p[/]"), 0, "hostile row"),
    LineCase("odd-id", "project-newline", lambda: _hostile(project="p\nq"), 0, "hostile row"),
]


def _session_of(case: LineCase) -> str:
    """The hostile row's session as the store lists it (ids are data; ``12345`` is a string)."""
    row = json.loads(case.line())
    return str(row["session"]) if isinstance(row, dict) else "hostile"


@pytest.mark.parametrize("case", LINE_CASES, ids=lambda c: f"{c.cls}:{c.name}")
def test_a_hostile_line_is_one_error_or_kept(tmp_path: Path, case: LineCase) -> None:
    source = tmp_path / "mixed.jsonl"
    before = conversation("good-before", 1)
    after = conversation("good-after", 1)
    with source.open("wb") as out:
        out.writelines(_line(r) for r in before)
        out.write(case.line())
        out.writelines(_line(r) for r in after)

    done = run_cw("import", source)
    assert_clean(done)
    assert done.returncode == case.exit, (done.stdout[-500:], done.stderr[-1000:])
    problems = done.stderr.splitlines()
    if case.exit == 2:
        assert len(problems) == 1, problems[:5]
        assert problems[0].startswith(f"{source}{case.where}"), problems[0][:300]
        assert len(problems[0]) < 8192
    else:
        assert len(problems) <= 1, problems  # a notice (lone surrogates replaced), no more

    # Nothing beside it was lost: both good sessions read back whole.
    for session, rows in (("good-before", before), ("good-after", after)):
        shown = run_cw("show", session, "--json")
        assert shown.returncode == 0, shown.stderr
        texts = [m["text"] for m in json_lines(shown.stdout)[0]["messages"]]
        assert texts == [r["text"] for r in rows], session

    listed = json_lines(run_cw("sessions", "--json").stdout)[0]["sessions"]
    ids = {s["sessionId"] for s in listed}
    if case.kept is None:
        assert ids == {"good-before", "good-after"}
        return
    (hostile,) = ids - {"good-before", "good-after"}
    with Archive.open(embedded=True) as archive:
        transcript = archive.show(hostile)
    texts = [m.text for m in transcript.messages]
    assert any(case.kept in (t or "") for t in texts), texts
    if case.name.startswith("project") or case.cls == "odd-id":
        expected = _session_of(case)
        assert hostile == expected, (hostile, expected)


# -- command-line values -------------------------------------------------------------------------


#: The locator :func:`_build_archived` found, filled when this process builds the archive.
_LOCATOR: dict[str, str] = {}


def _build_archived(home: Path) -> None:
    rows = conversation("sess-1", 2)
    source = home.parent / "s.jsonl"
    source.write_bytes(b"".join(_line(r) for r in rows))
    env = cw_env(CW_HOME=str(home))
    assert run_cw("import", source, env=env).returncode == 0
    found = json_lines(run_cw("search", "parseConfig", "--json", env=env).stdout)[0]["results"]
    _LOCATOR["sess-1"] = str(found[0]["locator"])


@pytest.fixture
def archived(cw_home: Path, home_cache: HomeCache) -> str:
    """One imported session (a copy of an archive built once per test process, signing key
    included); returns a real locator of it."""
    home_cache.clone("hostile-archived", _build_archived, cw_home)
    return _LOCATOR["sess-1"]


HUGE = "q" * (10 * MB)


@dataclass(frozen=True)
class ArgCase:
    cls: str
    name: str
    args: tuple[str, ...]
    exit: int


ARG_CASES = [
    ArgCase("cli-arg", "show-nul", ("show", "sess\x00-1"), 3),
    ArgCase("cli-arg", "show-surrogate", ("show", "sess-\udcff"), 3),
    ArgCase("cli-arg", "show-10mb", ("show", HUGE), 3),
    ArgCase("cli-arg", "show-markup", ("show", "[bold]x[/]"), 3),
    ArgCase("cli-arg", "show-escape", ("show", "\x1b]0;pwned\x07"), 3),
    ArgCase("cli-arg", "show-empty", ("show", ""), 2),
    ArgCase("cli-arg", "export-nul", ("export", "a\x00b"), 2),
    ArgCase("cli-arg", "forget-10mb", ("forget", HUGE, "--yes"), 2),
    ArgCase("cli-arg", "search-10mb", ("search", HUGE), 2),
    ArgCase("cli-arg", "search-nul", ("search", "pars\x00eConfig"), 0),
    ArgCase("cli-arg", "search-surrogate", ("search", "parse\udcffConfig"), 0),
    ArgCase("cli-arg", "search-project-nul", ("search", "x", "--project", "a\x00b"), 0),
    ArgCase("cli-arg", "sessions-project-10mb", ("sessions", "--project", HUGE), 0),
    ArgCase("cli-arg", "sessions-since-garbage", ("sessions", "--since", "\x00\udcff"), 2),
    ArgCase("cli-arg", "sessions-cursor-garbage", ("sessions", "--cursor", "[/]\x1b"), 2),
    ArgCase("cli-arg", "sessions-match-surrogate", ("sessions", "--match", "\udc00"), 0),
    ArgCase("cli-arg", "recall-10mb", ("recall", HUGE), 2),
    ArgCase("cli-arg", "recall-session-nul", ("recall", "x", "--session", "a\x00"), 2),
    ArgCase("cli-arg", "memory-add-nul", ("memory", "add", "a\x00b"), 2),
]


@pytest.mark.parametrize("case", ARG_CASES, ids=lambda c: f"{c.cls}:{c.name}")
def test_a_hostile_argument_is_one_line_or_an_answer(archived: str, case: ArgCase) -> None:
    result = run_cw(*case.args)
    assert_clean(result)
    if case.exit == 0:
        assert result.returncode == 0, result.stderr[:500]
        assert len(result.stderr.splitlines()) <= 1, result.stderr[:500]
    elif case.args[0] == "recall":
        # recall answers its status on stdout (``locator-invalid: …``), like --json.
        assert result.returncode == case.exit, result.stdout[:500]
        assert result.stdout.startswith("locator-invalid: ")
        assert len(result.stdout) < 8192
    else:
        line = one_error_line(result, case.exit)
        assert line.startswith("cw: ")
    machine = run_cw(*case.args, "--json")
    assert_clean(machine)
    assert machine.returncode == case.exit
    assert len(machine.stdout) < 16 * 1024 or case.exit == 0


# -- tampered and foreign locators ---------------------------------------------------------------


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _flip(text: str, at: int) -> str:
    ch = text[at]
    return text[:at] + ("A" if ch != "A" else "B") + text[at + 1 :]


TAMPERS: dict[str, Callable[[str], str]] = {
    "payload-byte": lambda loc: _flip(loc, 8),
    "mac-byte": lambda loc: _flip(loc, len(loc) - 3),
    # The last character of a 16-byte MAC carries 2 bits and 4 unused ones: change only those.
    "mac-unused-bits": lambda loc: loc[:-1] + _B64[_B64.index(loc[-1]) ^ 1],
    "space-inside": lambda loc: loc[:10] + " " + loc[10:],
    "mac-dropped": lambda loc: loc.rsplit(".", 1)[0],
    "extra-segment": lambda loc: loc + ".AAAA",
    "old-prefix": lambda loc: "cwl1" + loc[4:],
    "prefix-only": lambda loc: "cwl2.",
    "payload-swapped": lambda loc: ".".join(
        [loc.split(".")[0], "eyJkIjoiZmFrZSJ9", loc.split(".")[2]]
    ),
    "payload-not-base64": lambda loc: "cwl2.!!!!.AAAA",
    "payload-not-json": lambda loc: "cwl2.bm90IGpzb24.AAAAAAAAAAAAAAAAAAAAAA",
    "unicode-lookalike": lambda loc: loc.replace("c", "\u0441", 1),
    "nul-inside": lambda loc: loc[:10] + "\x00" + loc[10:],
    "surrogate-inside": lambda loc: loc[:10] + "\udcff" + loc[10:],
    "doubled": lambda loc: loc + loc,
    "huge-payload": lambda loc: "cwl2." + "A" * (2 * MB) + ".AAAA",
}


@pytest.mark.parametrize("tamper", sorted(TAMPERS), ids=lambda t: f"locator:{t}")
def test_a_tampered_locator_is_invalid(archived: str, tamper: str) -> None:
    target = TAMPERS[tamper](archived)
    human = run_cw("recall", target)
    assert_clean(human)
    assert human.returncode == 2, (human.stdout[:300], human.stderr[:300])
    assert human.stdout.startswith("locator-invalid: "), human.stdout[:300]
    assert human.stdout.count("\n") == 1 and human.stderr == ""
    machine = run_cw("recall", target, "--json")
    assert machine.returncode == 2
    assert json_lines(machine.stdout)[0]["status"] == "locator-invalid"
    # The genuine locator still resolves: nothing was damaged by the attempts.
    assert run_cw("recall", archived).returncode == 0


def test_a_locator_of_another_store_is_invalid(tmp_path: Path, archived: str) -> None:
    """Each store signs its locators with its own key: the same text in another store's
    session, imported there, does not make this store's locator valid."""
    other = tmp_path / "other-home"
    env = cw_env(CW_HOME=str(other), CW_EMBEDDED="1")
    rows = conversation("sess-1", 2)
    source = tmp_path / "again.jsonl"
    source.write_bytes(b"".join(_line(r) for r in rows))
    assert run_cw("import", source, env=env).returncode == 0
    answer = run_cw("recall", archived, "--json", env=env)
    assert_clean(answer)
    assert answer.returncode == 2
    assert json_lines(answer.stdout)[0]["status"] == "locator-invalid"


# -- paths: symlinks, FIFOs, devices -------------------------------------------------------------

GOOD = REPO / "tests" / "fixtures" / "peers" / "claude-code" / "agentsview-valid_session.jsonl"


def _good_copy(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "good.jsonl"
    target.write_bytes(GOOD.read_bytes())
    return target


def _loop(tmp: Path) -> Path:
    loop = tmp / "loop.jsonl"
    os.symlink(loop, loop)
    return loop


def _dangling(tmp: Path) -> Path:
    link = tmp / "dangling.jsonl"
    os.symlink(tmp / "nowhere.jsonl", link)
    return link


def _link_to_file(tmp: Path) -> Path:
    link = tmp / "link.jsonl"
    os.symlink(_good_copy(tmp / "real"), link)
    return link


def _link_to_folder(tmp: Path) -> Path:
    _good_copy(tmp / "real")
    link = tmp / "linked-folder"
    os.symlink(tmp / "real", link)
    return link


def _folder_with_loop_and_fifo(tmp: Path) -> Path:
    folder = tmp / "logs"
    _good_copy(folder)
    os.symlink(folder / "self.jsonl", folder / "self.jsonl")
    os.mkfifo(folder / "pipe.jsonl")
    os.symlink(folder, folder / "again")  # a folder loop
    return folder


def _fifo(tmp: Path) -> Path:
    fifo = tmp / "pipe.jsonl"
    os.mkfifo(fifo)
    return fifo


def _link_to_fifo(tmp: Path) -> Path:
    link = tmp / "to-pipe.jsonl"
    os.symlink(_fifo(tmp), link)
    return link


def _missing(tmp: Path) -> Path:
    return tmp / "no-such-file.jsonl"


def _dev_null(tmp: Path) -> Path:
    return Path("/dev/null")


def _dev_zero(tmp: Path) -> Path:
    return Path("/dev/zero")


#: (builder, exit code, sessions imported). A path that cannot be imported is one problem line.
PATH_CASES: dict[str, tuple[Callable[[Path], Path], int, int]] = {
    "symlink-loop": (_loop, 2, 0),
    "symlink-dangling": (_dangling, 2, 0),
    "symlink-to-file": (_link_to_file, 0, 1),
    "symlink-to-folder": (_link_to_folder, 0, 1),
    "folder-with-loops-and-fifo": (_folder_with_loop_and_fifo, 0, 1),
    "fifo-named": (_fifo, 2, 0),
    "symlink-to-fifo": (_link_to_fifo, 2, 0),
    "missing": (_missing, 2, 0),
    "dev-null": (_dev_null, 2, 0),
    "dev-zero": (_dev_zero, 2, 0),
}


#: A link that dangles or leads to a FIFO is named as the user typed it (cwcore/api.py
#: ``_absolute`` resolved it first, and the problem named a target the user never typed).
_PATH_PARAMS = [pytest.param(n, id=f"path:{n}") for n in sorted(PATH_CASES)]


@pytest.mark.parametrize("name", _PATH_PARAMS)
def test_a_hostile_path_is_one_line_and_never_hangs(
    tmp_path: Path, cw_home: Path, name: str
) -> None:
    build, exit_code, sessions = PATH_CASES[name]
    path = build(tmp_path)
    # A real process with a deadline: a FIFO or a device read in-process would hang the test.
    run = subprocess.run(
        [sys.executable, "-m", "cwtui.cli", "import", str(path)],
        env=cw_env(CW_HOME=str(cw_home), CW_EMBEDDED="1"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,  # a fail-safe only: every case answers at once
        check=False,
    )
    assert_clean(run)
    assert run.returncode == exit_code, (run.stdout, run.stderr)
    lines = run.stderr.splitlines()
    if exit_code == 2:
        assert len(lines) == 1 and lines[0].startswith(f"{path}: "), lines
    listed = json_lines(run_cw("sessions", "--json").stdout)[0]["sessions"]
    assert len(listed) == sessions


# -- open-ended values (Hypothesis) --------------------------------------------------------------

#: Text as a shell hands it over (undecodable bytes as lone surrogates), NUL and controls included.
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=40)
_counter = itertools.count()


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=ANY_TEXT)
@example(value="--help")
def test_any_session_argument_is_one_line(archived: str, value: str) -> None:
    # After ``--`` the value is the argument even when it reads as an option (``--help``, which
    # Hypothesis found: it printed forget's help and exited 0).
    for command in (
        ("show", "--", value),
        ("export", "--", value),
        ("forget", "--yes", "--", value),
    ):
        result = run_cw(*command)
        assert_clean(result)
        if result.returncode == 0:  # a prefix of the one session (forget is last: it is kept)
            assert command[0] != "forget" or value == "", value
            continue
        line = one_error_line(result, result.returncode)
        assert result.returncode in (2, 3), line
        assert line.startswith("cw: ")


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=ANY_TEXT)
@example(value="-")  # the stdin form, with nothing on stdin
@example(value="--help")
def test_any_locator_string_is_locator_invalid_or_not_found(archived: str, value: str) -> None:
    for target in (value, f"cwl2.{value}", f"{archived[:-4]}{value}"):
        result = run_cw("recall", "--json", "--", target)  # ``--``: even "--help" is the locator
        assert_clean(result)
        if target.strip() in ("", archived) or archived.startswith(target.strip()):
            continue
        assert result.returncode in (2, 3), (target, result.stdout[:300])
        body = json_lines(result.stdout)[0]
        if "error" in body:  # `-` reads the locator from stdin, empty here: one clear refusal
            assert body["error"]["code"] == "invalid-input", (target, body)
            continue
        assert body["status"] in ("locator-invalid", "expired", "missing")


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(project=ANY_TEXT)
@example(project="")  # fell back to the file's project: the caller asked for one, got another
@example(project="  ")
@example(project="\ud800")  # a lone surrogate was stored as U+FFFD: neither kept nor refused
@example(project="a\u2028b\u2029c")  # written raw, they split the JSON line for splitlines()
def test_any_project_name_is_kept_exactly_or_refused_in_one_line(
    tmp_path: Path, project: str
) -> None:
    session = f"proj-session-{next(_counter)}"
    source = tmp_path / f"{session}.jsonl"
    source.write_bytes(b"".join(_line(r) for r in conversation(session, 1)))
    done = run_cw("import", source, "--project", project)
    assert_clean(done)
    mine = [
        s
        for s in json_lines(run_cw("sessions", "--json", "--limit", "500").stdout)[0]["sessions"]
        if s["sessionId"] == session
    ]
    if done.returncode == 0:
        (row,) = mine
        assert row["project"] == project.strip() or row["project"] == project, (row, project)
        scoped = run_cw("sessions", "--json", "--project", row["project"])
        assert session in {s["sessionId"] for s in json_lines(scoped.stdout)[0]["sessions"]}
    else:
        assert done.returncode == 2, done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert mine == []


# -- escapes and markup through the TUI ----------------------------------------------------------

MARKUP = "[bold]loud[/] [/] [red]x [link=https://evil.example]click[/link] [@click=app.quit]q[/]"
ESCAPES = "\x1b[31mred\x1b]0;pwned\x07\r"


@pytest.fixture
def markup_home(tmp_path: Path, cw_home: Path) -> Path:
    rows = [
        _row("[/]", "u1", "user", f"{MARKUP} {ESCAPES} needle", title=f"{MARKUP} {ESCAPES}"),
        _row(
            "[/]",
            "a1",
            "assistant",
            f"answer {MARKUP}",
            model=f"[b]{ESCAPES}",
            project=f"proj{ESCAPES}",
        ),
        # Older than "[/]", which Enter opens (the listing is newest first).
        _row(
            f"s[bold]2{ESCAPES}",
            "u1",
            "user",
            "[/bold] closes nothing",
            project="[red]p[/]",
            timestamp="2026-10-01T10:00:00Z",
        ),
    ]
    source = tmp_path / f"{ESCAPES}[bold].jsonl"
    source.write_bytes(b"".join(_line(r) for r in rows))
    with Archive.open(cw_home, embedded=True) as archive:
        summary = archive.import_paths([source])
    assert not summary.errors, summary.errors
    return cw_home


def _screen_text(app: Any) -> str:
    """What the screen shows, as plain text (every visible line of the current screen)."""
    return "\n".join(strip.text for strip in app.screen._compositor.render_strips())


@pytest.mark.anyio
async def test_markup_and_escapes_in_the_tui_render_as_text(
    markup_home: Path, app_for: AppFactory
) -> None:
    """Titles, ids, projects and texts holding Textual markup (``[bold]``, an unbalanced
    ``[/]``, ``[@click=…]``) are shown as those characters: no crash, no style, no action; and no
    escape sequence of the data reaches the terminal (the sessions list, the transcript, the
    search results and their preview, the recall view)."""
    app = app_for(markup_home)
    seen: dict[str, str] = {}
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, SessionsScreen)
        seen["sessions"] = _screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, TranscriptScreen)
        seen["transcript"] = _screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        await pilot.press("alt+2")
        await settle(pilot)
        await type_text(pilot, "needle")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        seen["search"] = _screen_text(app)
        await pilot.press("enter")
        await settle(pilot)
        seen["recall"] = _screen_text(app)
    assert app._exception is None, app._exception
    assert "[/]" in seen["sessions"], seen["sessions"]
    assert "[bold]loud[/]" in seen["transcript"], seen["transcript"]
    assert "needle" in seen["search"], seen["search"]
    for where, text in seen.items():
        assert "\x1b" not in text and "\x07" not in text and "\r" not in text, (where, text)

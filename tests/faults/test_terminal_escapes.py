"""File names, ids, projects and texts with escape sequences never reach a terminal raw
(issue 32): every console of the CLI shows a control character escaped (``\\x1b``), and
``--json`` stays exact JSON (its escapes decode to the original value).

The end-to-end tests run the real ``cw`` in a subprocess, its stdout and stderr through pipes,
over a folder whose file names, session ids, project and texts carry ESC, BEL, CR and C1 bytes.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from cwtui.output import emit_json, safe, shown_id
from tests.faults.helpers import cw_env, run_cw, run_cw_process

RED = "\x1b[31m"
#: A terminal title change (OSC ... BEL), a carriage return, a one-byte CSI and DEL.
TITLE = "\x1b]0;pwned\x07"
HOSTILE = f"{RED}red{TITLE}\r\x9b2J\x7f"
SESSION = f"sess-{RED}evil"
PROJECT = f"proj{RED}x"
#: What must never be in a byte stream the CLI writes: ESC, BEL, CR, DEL and C1 controls
#: (UTF-8 encodes U+0080..U+009F as C2 80..C2 9F).
RAW_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def _no_raw_control(data: str) -> None:
    found = RAW_CONTROL.search(data.encode("utf-8", "surrogateescape"))
    assert found is None, f"raw control {found.group()!r} in {data!r}"


def _strings(value: object) -> list[str]:
    """Every string in a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (*_strings(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _archive_folder(tmp_path: Path) -> Path:
    folder = tmp_path / f"logs{RED}dir"
    folder.mkdir()
    good = folder / f"good{HOSTILE}.jsonl"
    rows = [
        {"session": SESSION, "id": "m1", "role": "user", "project": PROJECT,
         "text": f"needle in {HOSTILE} text", "title": f"title {HOSTILE}"},
        {"session": SESSION, "id": "m2", "role": "assistant", "project": PROJECT,
         "text": f"answer {TITLE} done"},
    ]  # fmt: skip
    good.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    # A line the importer rejects: the error names the file (and its line).
    (folder / f"bad{HOSTILE}.jsonl").write_text(
        json.dumps(rows[0]) + "\n" + "{not json\n", encoding="utf-8"
    )
    (folder / f"unknown{HOSTILE}.log").write_text("nothing cw reads\n", encoding="utf-8")
    return folder


def _cw(home: Path, *args: str | Path, process: bool = False) -> subprocess.CompletedProcess[str]:
    """``cw ARGS`` over ``home``: in this process (the CLI's consoles write into the captured
    streams exactly as into a pipe), or with ``process`` the real ``cw`` in a subprocess,
    stdout and stderr through pipes. Either way no raw control may be in what it wrote."""
    env = cw_env(CW_EMBEDDED="1", CW_HOME=str(home), COLUMNS="200")
    env.pop("NO_COLOR", None)
    result = run_cw_process(*args, env=env) if process else run_cw(*args, env=env)
    _no_raw_control(result.stdout)
    _no_raw_control(result.stderr)
    return result


def test_file_names_ids_and_texts_reach_no_terminal_raw(tmp_path: Path) -> None:
    home = tmp_path / "home"
    folder = _archive_folder(tmp_path)

    imported = _cw(home, "import", folder, process=True)
    assert imported.returncode == 2, imported.stderr  # import-errors: the bad line
    assert "\\x1b[31m" in imported.stderr and "bad" in imported.stderr
    as_json = _cw(home, "import", folder, "--json")
    body = json.loads(as_json.stdout.splitlines()[-1])
    assert any(HOSTILE in e["path"] for e in body["errors"])  # exact in JSON

    for args in (
        ("sessions",),
        ("show", SESSION, "--full"),
        ("search", "needle"),
        ("gather", "needle"),
        ("sources",),
        ("doctor",),
        ("export", SESSION, "--format", "md"),
    ):
        shown = _cw(home, *args)
        assert shown.returncode == 0, (args, shown.stderr)
    shown = _cw(home, "show", SESSION, process=True)
    assert shown.returncode == 0 and "\\x1b]0;pwned\\x07" in shown.stdout, shown.stderr
    listed = _cw(home, "sessions", "--json")
    sessions = json.loads(listed.stdout)["sessions"]
    assert [(s["sessionId"], s["project"]) for s in sessions] == [(SESSION, PROJECT)]
    transcript = _cw(home, "show", SESSION, "--json")
    assert any(f"{RED}red{TITLE}" in text for text in _strings(json.loads(transcript.stdout)))
    hits = json.loads(_cw(home, "search", "needle", "--json").stdout)["results"]
    assert hits and hits[0]["source"]["sessionId"] == SESSION

    # Errors name the hostile value escaped, on one line.
    missing = _cw(home, "show", f"nope{RED}")
    assert missing.returncode == 3 and len(missing.stderr.splitlines()) == 1
    unknown = _cw(home, "import", folder / f"unknown{HOSTILE}.log")
    assert unknown.returncode != 0 and "unknown" in unknown.stderr


def test_a_store_path_with_escapes_is_shown_escaped(tmp_path: Path) -> None:
    home = tmp_path / f"home{RED}{TITLE}"
    result = _cw(home, "config", process=True)
    assert result.returncode == 0, result.stderr
    assert "\\x1b[31m" in result.stdout
    status = _cw(home, "doctor")
    assert status.returncode == 0, status.stderr


def test_safe_keeps_text_and_escapes_only_controls() -> None:
    assert safe("plain é 会话 🙂\tand\nlines") == "plain é 会话 🙂\tand\nlines"
    assert safe(HOSTILE) == "\\x1b[31mred\\x1b]0;pwned\\x07\\x0d\\x9b2J\\x7f"
    assert safe("a\tb\nc", one_line=True) == "a\\x09b\\x0ac"
    assert safe("cut \ud83d") == "cut \\ud83d"
    assert shown_id(f"{RED}[/]") == "\\x1b[31m\\[/]"


TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF))


@given(TEXT)
def test_safe_output_has_no_control_and_is_stable(text: str) -> None:
    shown = safe(text)
    _no_raw_control(shown)
    assert safe(shown) == shown  # applying it twice (string, then segment) changes nothing
    assert "\n" not in safe(text, one_line=True)
    if RAW_CONTROL.search(text.encode("utf-8", "surrogatepass")) is None and not any(
        0xD800 <= ord(ch) <= 0xDFFF for ch in text
    ):
        assert shown == text


@given(st.dictionaries(TEXT, TEXT, max_size=4))
def test_json_output_is_exact_and_has_no_raw_control(body: dict[str, str]) -> None:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        emit_json(body)
    out = buffer.getvalue()
    _no_raw_control(out.rstrip("\n"))
    assert json.loads(out) == body

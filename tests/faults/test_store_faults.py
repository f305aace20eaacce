"""Fault and bad-input sweep of the store and admission: hostile ids, oversize messages, modes.

Each test here failed on the code before its fix (issue 15 items 1, 5 and 6).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cwcore.api import Archive
from cwcore.store import keys
from tests.helpers import REPO

# -- ids are data (item 6) ----------------------------------------------------------------------

#: Any id the store accepts: non-empty text without NUL or lone surrogates, at most 512 bytes.
IDS = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=160,
).filter(lambda s: len(s.encode("utf-8")) <= keys.MAX_ID_BYTES)

HOSTILE_IDS = [
    "conv-50/session_30",
    "../../etc/passwd",
    "a\\b",
    " padded ",
    "tab\there\nnewline",
    "\x1b[31mred",
    "x[/]y [red]z",
    "会话/🙂",
    "é" * 254,  # 508 bytes: with "/m8" its message id is 511, just under the limit
]


def cli(home: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``cw ARGS`` in a subprocess over ``home`` (embedded unless ``env`` says otherwise)."""
    run_env = env or {**os.environ, "CW_EMBEDDED": "1", "PYTHONPATH": str(REPO)}
    run_env = {**run_env, "CW_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "cwtui.cli", *args],
        env=run_env,
        capture_output=True,
        timeout=300,
    )


def one_line_session(path: Path, session: str, message_id: str, text: str) -> Path:
    row = {"session": session, "id": message_id, "role": "user", "text": text}
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    return path


@given(IDS, IDS)
def test_any_id_round_trips_through_the_key_encoding(session: str, message_id: str) -> None:
    assert keys.check_id(session) == session
    assert keys.SESSION.decode(keys.SESSION.encode(session)) == (session,)
    key = f"assistant:{message_id}"
    assert keys.MESSAGE_DOC.decode(keys.MESSAGE_DOC.encode(session, key)) == (session, key)
    assert keys.EVENT.decode(keys.EVENT.encode(session, 7)) == (session, 7)
    assert keys.SESSION_ORDER.decode(keys.SESSION_ORDER.encode("", session)) == ("", session)
    # A string field is exact: one id is never a key prefix of another that extends it.
    assert not keys.SESSION.encode(session + "x").startswith(keys.SESSION.prefix(session))


@pytest.mark.parametrize("bad", ["", "nul\x00inside", "\x00", "\ud800", "y" * 513])
def test_nul_surrogates_empty_and_long_ids_are_refused(bad: str) -> None:
    with pytest.raises(keys.UnsafeKey):
        keys.check_id(bad)


def test_any_id_round_trips_through_import_show_and_export(tmp_path: Path, cw_home: Path) -> None:
    with Archive.open(cw_home, embedded=True) as archive:

        @settings(max_examples=40, deadline=None)
        @given(session=IDS)
        def round_trip(session: str) -> None:
            # One message whose id is the session id: a text drawn twice re-imports as a no-op.
            path = one_line_session(tmp_path / "one.jsonl", session, session, "round trip body")
            summary = archive.import_paths([path])
            assert summary.errors == []
            body = archive.show(session)
            assert body["session"]["sessionId"] == session
            assert [(m["messageKey"], m["text"]) for m in body["messages"]] == [
                (f"user:{session}", "round trip body")
            ]
            # JSONL lines end at "\n" only (str.splitlines would also cut at U+0085, U+2028...).
            text = archive.export(session, "jsonl")
            exported = [json.loads(line) for line in text.split("\n") if line]
            assert [(r["session"], r["id"], r["text"]) for r in exported] == [
                (session, session, "round trip body")
            ]
            assert f"# Session {session}" in archive.export(session, "md")

        round_trip()


def _hostile_source(tmp_path: Path) -> Path:
    rows = [
        {"session": s, "id": f"{s}/m{i}", "role": "user", "text": f"needle{i} parseConfig"}
        for i, s in enumerate(HOSTILE_IDS)
    ]
    source = tmp_path / "hostile.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return source


def _exported_row(session: str, i: int) -> dict[str, str]:
    return {
        "session": session,
        "id": f"{session}/m{i}",
        "role": "user",
        "text": f"needle{i} parseConfig",
        "project": "default",
        "agent": "cw-jsonl",
    }


def test_hostile_ids_round_trip_through_the_archive(tmp_path: Path, archive: Archive) -> None:
    summary = archive.import_paths([_hostile_source(tmp_path)])
    assert summary.errors == [] and summary.imported == len(HOSTILE_IDS)
    rows, _ = archive.sessions()
    assert {r.sessionId for r in rows} == set(HOSTILE_IDS)
    for i, session in enumerate(HOSTILE_IDS):
        messages = archive.show(session)["messages"]
        assert [m["messageKey"] for m in messages] == [f"user:{session}/m{i}"]
        hits = archive.search({"query": f"needle{i}", "sessions": [session]})["results"]
        assert hits and {h["source"]["sessionId"] for h in hits} == {session}
        lines = archive.export(session, "jsonl").split("\n")
        assert [json.loads(line) for line in lines if line] == [_exported_row(session, i)]
    report = archive.forget("../../etc/passwd")
    assert report["sessions"] == 1
    assert {r.sessionId for r in archive.sessions()[0]} == set(HOSTILE_IDS) - {"../../etc/passwd"}


def test_hostile_ids_through_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    imported = cli(home, "import", str(_hostile_source(tmp_path)), "--json")
    assert imported.returncode == 0, imported.stderr
    summary = json.loads(imported.stdout.splitlines()[-1])
    assert summary["errors"] == [] and summary["imported"] == len(HOSTILE_IDS)

    listed = cli(home, "sessions", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {s["sessionId"] for s in json.loads(listed.stdout)["sessions"]} == set(HOSTILE_IDS)
    table = cli(home, "sessions")  # for people: an id is neither markup nor terminal control
    assert table.returncode == 0, table.stderr
    assert b"conv-50/session_30" in table.stdout and b"\x1b[31m" not in table.stdout

    i, session = 6, "x[/]y [red]z"
    assert HOSTILE_IDS[i] == session
    shown = cli(home, "show", session)
    assert shown.returncode == 0, shown.stderr
    assert f"user:{session}/m{i}".encode() in shown.stdout
    found = cli(home, "search", f"needle{i}", "--session", session, "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert hits and {h["source"]["sessionId"] for h in hits} == {session}
    exported = cli(home, "export", session, "--format", "jsonl")
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.split(b"\n")
    assert [json.loads(line) for line in lines if line] == [_exported_row(session, i)]

    gone = cli(home, "forget", "conv-50/session_30", "--yes", "--json")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)["sessions"] == 1
    after = cli(home, "show", "conv-50/session_30", "--json")
    assert after.returncode != 0
    assert json.loads(after.stdout)["error"]["code"] == "not-found"


def test_nul_in_an_id_is_a_line_error_and_the_rest_imports(tmp_path: Path, archive: Any) -> None:
    rows = [
        {"session": "s/ok", "id": "m1", "role": "user", "text": "kept"},
        {"session": "s/ok", "id": "m\x002", "role": "user", "text": "refused"},
        {"session": "bad\x00session", "id": "m3", "role": "user", "text": "refused"},
    ]
    path = tmp_path / "nul.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    summary = archive.import_paths([path])
    assert sorted((e.line, "NUL" in e.reason) for e in summary.errors) == [(2, True), (3, True)]
    assert [m["text"] for m in archive.show("s/ok")["messages"]] == ["kept"]

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
from cwcore.importers.documents import PIECE_BYTES
from cwcore.store import keys
from tests.faults.helpers import cw_env, run_cw_bytes
from tests.helpers import REPO
from tests.support import engine_of, store_of

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


def cli_here(home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """:func:`cli` (embedded, over ``home``) run in this process through the root command."""
    return run_cw_bytes(*args, env=cw_env(CW_EMBEDDED="1", CW_HOME=str(home), COLUMNS="200"))


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
            assert body.session.sessionId == session
            assert [(m.message_key, m.text) for m in body.messages] == [
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
        messages = archive.show(session).messages
        assert [m.message_key for m in messages] == [f"user:{session}/m{i}"]
        hits = archive.search({"query": f"needle{i}", "sessions": [session]}).results
        assert hits and {h.source.session_id for h in hits} == {session}
        lines = archive.export(session, "jsonl").split("\n")
        assert [json.loads(line) for line in lines if line] == [_exported_row(session, i)]
    report = archive.forget("../../etc/passwd")
    assert report.sessions == 1
    assert {r.sessionId for r in archive.sessions()[0]} == set(HOSTILE_IDS) - {"../../etc/passwd"}


def test_hostile_ids_through_the_cli(tmp_path: Path) -> None:
    home = tmp_path / "home"
    imported = cli_here(home, "import", str(_hostile_source(tmp_path)), "--json")
    assert imported.returncode == 0, imported.stderr
    summary = json.loads(imported.stdout.splitlines()[-1])
    assert summary["errors"] == [] and summary["imported"] == len(HOSTILE_IDS)

    listed = cli_here(home, "sessions", "--json")
    assert listed.returncode == 0, listed.stderr
    assert {s["sessionId"] for s in json.loads(listed.stdout)["sessions"]} == set(HOSTILE_IDS)
    table = cli_here(home, "sessions")  # for people: an id is neither markup nor terminal control
    assert table.returncode == 0, table.stderr
    assert b"conv-50/session_30" in table.stdout and b"\x1b[31m" not in table.stdout

    i, session = 6, "x[/]y [red]z"
    assert HOSTILE_IDS[i] == session
    shown = cli_here(home, "show", session)
    assert shown.returncode == 0, shown.stderr
    assert f"user:{session}/m{i}".encode() in shown.stdout
    found = cli_here(home, "search", f"needle{i}", "--session", session, "--json")
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)["results"]
    assert hits and {h["source"]["sessionId"] for h in hits} == {session}
    exported = cli_here(home, "export", session, "--format", "jsonl")
    assert exported.returncode == 0, exported.stderr
    lines = exported.stdout.split(b"\n")
    assert [json.loads(line) for line in lines if line] == [_exported_row(session, i)]

    gone = cli_here(home, "forget", "conv-50/session_30", "--yes", "--json")
    assert gone.returncode == 0, gone.stderr
    assert json.loads(gone.stdout)["sessions"] == 1
    after = cli_here(home, "show", "conv-50/session_30", "--json")
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
    assert [m.text for m in archive.show("s/ok").messages] == ["kept"]


# -- a message larger than one admission (item 1) -----------------------------------------------

MiB = 1024 * 1024
#: 9 UTF-8 bytes of 2-, 3- and 4-byte characters: no cut at the byte budget lands on a boundary.
WIDE = "é€🙂"


def wide_text(size: int, tail: str = "") -> str:
    """About ``size`` UTF-8 bytes of multi-byte characters (no JSON escapes), then ``tail``."""
    return WIDE * (size // len(WIDE.encode())) + tail


def parsed_session(session: str, *messages: tuple[str, str, str]) -> Any:
    """A parsed cw-jsonl session of ``(id, role, text)`` messages (user messages open turns)."""
    from cwcore.model import Message, ParsedSession, SourceEvent

    kinds = {"user": "text", "assistant": "text", "tool": "tool-result"}
    built = tuple(
        Message(mid, role, kinds[role], text, lines=(n,), real_user=role == "user")  # type: ignore[arg-type]
        for n, (mid, role, text) in enumerate(messages, start=1)
    )
    events = tuple(SourceEvent(m.lines[0], m.message_id.encode(), True, m.role) for m in built)
    return ParsedSession(session, "cw-jsonl", "default", events, built)


def admit_parsed(archive: Archive, parsed: Any) -> list[Any]:
    from cwcore.importers.documents import build_documents, session_spec

    engine = engine_of(archive)
    result = engine.admission.admit(session_spec(parsed), parsed.events, build_documents(parsed))
    assert result.rejected == []
    engine.after_admission(len(result.acks))
    return list(result.acks)


# The 20 MiB cut is slow (a large message); the 8.5 MiB one keeps cutting in the fast tier.
@pytest.mark.parametrize("size", [int(8.5 * MiB), pytest.param(20 * MiB, marks=pytest.mark.slow)])
def test_cut_pieces_rejoin_exactly_with_distinct_ids(size: int) -> None:
    from cwcore.importers.documents import PIECE_BYTES, build_documents, cut_text
    from cwcore.store.limits import MAX_SOURCE_BYTES, document_text

    text = wide_text(size, tail="\nlast line")
    pieces = cut_text(text, PIECE_BYTES)
    assert "".join(pieces) == text  # the old cut dropped the bytes of a split character
    assert all(len(p.encode()) <= PIECE_BYTES for p in pieces)

    parsed = parsed_session(
        "s", ("u1", "user", "q"), ("a1", "assistant", text), ("t1", "tool", text)
    )
    docs = build_documents(parsed)
    assert docs == build_documents(parsed)  # deterministic: a re-import is a no-op
    ids = [d.document_id for d in docs]
    assert len(set(ids)) == len(ids)
    # Each cut message is in its own run of documents, and nowhere else.
    for kind, key in (("turn", "assistant:a1"), ("tool-result", "tool:t1")):
        holders = [d for d in docs if any(p.message_key == key for p in d.parts)]
        assert {d.kind for d in holders} == {kind}
        assert [d.metadata["split"]["piece"] for d in holders] == list(range(len(pieces)))
        assert {tuple(d.metadata["split"]["documents"]) for d in holders} == {
            tuple(d.document_id for d in holders)
        }
        joined = "".join(p.text for d in holders for p in d.parts if p.message_key == key)
        assert joined == text
        assert all(len(document_text(d).encode()) <= MAX_SOURCE_BYTES for d in holders)
        assert all(d.metadata.get("continues") == ids[0] for d in holders)


def test_a_key_like_a_piece_id_never_collides() -> None:
    from cwcore.importers.documents import build_documents

    big = wide_text(9 * MiB)
    parsed = parsed_session(
        "s", ("m", "user", big), ("m#1", "user", "a message whose key looks like a piece")
    )
    ids = [d.document_id for d in build_documents(parsed, piece_bytes=5 * MiB)]
    assert len(set(ids)) == len(ids) == 3


# Slow at both sizes: indexing 8.5 MiB of text is about 25 s of tokenizing on this machine. The
# fast tier still reads a multi-piece message back through the archive in the issue repro below.
@pytest.mark.slow
@pytest.mark.parametrize("size", [int(8.5 * MiB), 20 * MiB])
def test_an_oversize_message_reads_back_byte_identical(archive: Archive, size: int) -> None:
    text = wide_text(size, tail=" end")
    parsed = parsed_session(
        "big/s", ("u1", "user", "what is in the log?"), ("a1", "assistant", text)
    )
    acks = admit_parsed(archive, parsed)
    ids = [a.document_id for a in acks]
    from cwcore.importers.documents import PIECE_BYTES, cut_text

    assert len(set(ids)) == len(ids) == 1 + len(cut_text(text, PIECE_BYTES))
    assert all(a.version == 1 for a in acks)

    body = archive.show("big/s")  # over one frame for 20 MiB: it arrives in parts
    assert [m.message_key for m in body.messages] == ["user:u1", "assistant:a1"]
    assert body.messages[1].text == text
    split = body.messages[1].split
    assert split is not None and list(split.document_ids) == ids[1:]
    assert body.session.messages == 2

    rows = [json.loads(line) for line in archive.export("big/s", "jsonl").split("\n") if line]
    assert [r["text"] for r in rows] == ["what is in the log?", text]
    assert f"\n{text}\n" in archive.export("big/s", "md")

    pieces = [archive.show_document(d).versions[0] for d in ids[1:]]
    assert "".join(v.text for v in pieces) == text
    assert [v.split.piece if v.split else None for v in pieces] == list(range(len(pieces)))
    read = archive.call("recall", {"locator": ids[-1]})  # a direct read of the last piece
    assert read["split"]["documents"] == ids[1:] and read["continues"] == ids[0]
    hits = archive.search({"query": "end"}).results  # the last word: in the last piece
    assert [h.document_id for h in hits] == [ids[-1]]
    recalled = archive.recall(hits[0].locator)  # and it says where the rest of it is
    split = recalled.source.split if recalled.source is not None else None
    assert recalled.status == "resolved" and split is not None and list(split.documents) == ids[1:]

    assert archive.index_verify().ok
    assert archive.doctor().checks.index.ok
    assert all(not a.new for a in admit_parsed(archive, parsed))  # re-admission: no-op


def test_the_issue_repro_imports_two_documents_and_verifies(
    tmp_path: Path, archive: Archive
) -> None:
    # The reported case: one cw-jsonl line whose text is 8,388,808 bytes.
    from cwcore.importers.documents import PIECE_BYTES

    text = "x" * 8_388_808
    pieces = -(-len(text) // PIECE_BYTES)
    path = one_line_session(tmp_path / "big.jsonl", "s1", "m1", text)
    acks: list[dict[str, Any]] = []
    summary = archive.import_paths([path], on_event=acks.append)
    assert summary.errors == [] and summary.imported == pieces
    assert len({a["documentId"] for a in acks if a.get("type") == "ack"}) == pieces
    assert archive.show("s1").messages[0].text == text
    assert archive.index_verify().ok
    again = archive.import_paths([path])
    assert (again.imported, again.skipped) == (0, pieces)


def test_a_result_over_one_frame_travels_in_parts() -> None:
    from cwcore import large_results
    from cwcore.errors import DaemonError

    body = {"text": 'é€🙂"\\\n' * 1000, "n": 1}
    events: list[dict[str, Any]] = []
    sent = large_results.send(body, events.append, inline_chars=100)
    assert sent == {"resultParts": len(events)} and len(events) == 1
    forwarded: list[dict[str, Any]] = []
    collector = large_results.Collector(forwarded.append)
    collector({"type": "progress", "done": 1})
    for event in events:
        collector(event)
    assert collector.result(sent) == body and forwarded == [{"type": "progress", "done": 1}]
    assert large_results.send(body, events.append) is body  # small: inline, nothing emitted
    with pytest.raises(DaemonError, match="0 of 1 parts"):
        large_results.Collector().result(sent)  # a replay after a reconnect has no parts


def test_doctor_fails_whenever_index_verify_fails(cw_home: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from cwcore.store import codec
    from cwtui.cli import app

    runner = CliRunner()
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([one_line_session(tmp_path / "s.jsonl", "s", "m", "hello")])
    assert runner.invoke(app, ["doctor", "--json"]).exit_code == 0
    with Archive.open(cw_home, embedded=True) as archive:
        # An ordinal whose document version is gone: what the overwritten split left behind.
        store = store_of(archive)
        batch = store.batch()
        ref = codec.encode_record({"documentId": "t-0", "version": 1})
        batch.put("ordinals", keys.ORDINAL.encode(99), ref)
        store.commit(batch)
        assert not archive.index_verify().ok
    report = runner.invoke(app, ["doctor", "--json"])
    assert report.exit_code == 1
    check = json.loads(report.stdout)["checks"]["index"]
    assert check["ok"] is False and check["problems"] == 1 and "ordinal 99" in check["examples"][0]
    table = runner.invoke(app, ["doctor"])
    assert table.exit_code == 1 and "cw index verify" in table.stdout


# Slow: 20 MiB messages through the CLI and a real daemon process (large messages).
@pytest.mark.slow
def test_oversize_messages_through_the_cli_and_a_real_daemon(
    tmp_path: Path, cw_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers import real_daemon_env

    # The reported size (8,388,808 bytes) in multi-byte characters, then a session whose
    # export is over one 16 MiB frame (five messages of 4 MiB): it must arrive in parts.
    big = wide_text(8_388_808, tail="!" * (8_388_808 % len(WIDE.encode())))
    assert len(big.encode()) == 8_388_808
    rows = [{"session": "conv/big", "id": "m1", "role": "user", "text": big}]
    rows += [
        {"session": "conv/long", "id": f"m{i}", "role": "user", "text": wide_text(4 * MiB, str(i))}
        for i in range(5)
    ]
    source = tmp_path / "big.jsonl"
    source.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "utf-8")
    with real_daemon_env(cw_home, monkeypatch) as env:
        imported = cli(cw_home, "import", str(source), "--json", env=env)
        assert imported.returncode == 0, imported.stderr
        lines = [json.loads(line) for line in imported.stdout.splitlines()]
        big_acks = [a["documentId"] for a in lines[:-1] if a.get("sessionId") == "conv/big"]
        total = len(lines) - 1
        assert len(big_acks) == len(set(big_acks)) == -(-len(big.encode()) // PIECE_BYTES)
        assert lines[-1]["errors"] == [] and lines[-1]["imported"] == total

        for session in ("conv/big", "conv/long"):
            exported = cli(cw_home, "export", session, "--format", "jsonl", env=env)
            assert exported.returncode == 0, exported.stderr
            back = [json.loads(line) for line in exported.stdout.split(b"\n") if line]
            assert [r["text"] for r in back] == [r["text"] for r in rows if r["session"] == session]
        md = cli(cw_home, "export", "conv/big", "--format", "md", env=env)
        assert md.returncode == 0 and f"\n{big}\n".encode() in md.stdout
        shown = cli(cw_home, "show", "conv/big", "--json", env=env)
        assert shown.returncode == 0, shown.stderr
        assert [m["text"] for m in json.loads(shown.stdout)["messages"]] == [big]
        pieces = [
            json.loads(cli(cw_home, "show", d, "--json", env=env).stdout)["versions"][0]["text"]
            for d in big_acks
        ]
        assert "".join(pieces) == big

        verify = cli(cw_home, "index", "verify", "--json", env=env)
        assert verify.returncode == 0, verify.stdout
        doctor = cli(cw_home, "doctor", "--json", env=env)
        assert doctor.returncode == 0 and json.loads(doctor.stdout)["checks"]["index"]["ok"]
        again = cli(cw_home, "import", str(source), "--json", env=env)
        summary = json.loads(again.stdout.splitlines()[-1])
        assert (summary["imported"], summary["skipped"]) == (0, total)


# -- the store is its owner's only (item 5) -------------------------------------------------------


def loose_paths(home: Path) -> list[str]:
    """Every path under ``home`` (itself included, links aside) with a group or other bit."""
    found = []
    for root, _dirs, files in os.walk(home):
        for path in [root, *(os.path.join(root, f) for f in files)]:
            if not os.path.islink(path) and os.lstat(path).st_mode & 0o077:
                found.append(f"{path} {os.lstat(path).st_mode & 0o777:o}")
    return found


@pytest.fixture
def open_umask() -> Any:
    """The process umask of a typical user (022) for the test, restored after."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_fresh_store_is_owner_only(cw_home: Path, tmp_path: Path, open_umask: None) -> None:
    from cwcore.retrieve.locator import load_key

    source = write_rows(tmp_path / "s.jsonl", [("s", f"m{i}", "text " * 40) for i in range(20)])
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([source])
        archive.search({"query": "text"})  # creates the locator key
        store_of(archive).flush()  # a new SST besides the WAL, LOG and MANIFEST
        names = {p.name for p in (cw_home / "store").iterdir()}
        assert any(n.endswith(".sst") for n in names) and any(n.endswith(".log") for n in names)
        assert {"LOG", "CURRENT"} <= names and any(n.startswith("MANIFEST") for n in names)
        assert (cw_home / "locator.key").exists()
        assert loose_paths(cw_home) == []
        assert archive.doctor().checks.permissions.to_json() == {
            "ok": True, "loose": 0, "examples": [], "tightened": 0, "tightenedAt": None
        }  # fmt: skip
    assert os.umask(0o022) == 0o022  # closing the embedded store restored the caller's umask
    assert load_key(cw_home) == load_key(cw_home)


def write_rows(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    body = [{"session": s, "id": m, "role": "user", "text": t} for s, m, t in rows]
    path.write_text("".join(json.dumps(r) + "\n" for r in body), encoding="utf-8")
    return path


def test_an_open_store_tightens_an_old_one_and_says_so_once(
    cw_home: Path, tmp_path: Path, open_umask: None
) -> None:
    source = write_rows(tmp_path / "s.jsonl", [("s", "m1", "hello world")])
    assert cli(cw_home, "import", str(source)).returncode == 0
    outside = tmp_path / "outside.txt"
    outside.write_text("not cw's")
    outside.chmod(0o644)
    (cw_home / "link").symlink_to(outside)  # a link in CW_HOME is neither followed nor changed
    for root, _dirs, files in os.walk(cw_home):  # what a store made by an older cw looks like
        os.chmod(root, 0o755)
        for name in files:
            if name != "link":
                os.chmod(os.path.join(root, name), 0o644)
    before = len(loose_paths(cw_home))
    assert before > 5

    first = cli(cw_home, "sessions", "--json")
    assert first.returncode == 0, first.stderr
    notices = [line for line in first.stderr.decode().splitlines() if "tightened" in line]
    assert notices == [
        f"cw: tightened permissions of {before} file(s) and folder(s) under {cw_home} "
        "(now owner only)"
    ]
    assert loose_paths(cw_home) == []
    assert outside.stat().st_mode & 0o777 == 0o644
    second = cli(cw_home, "sessions", "--json")
    assert b"tightened" not in second.stderr  # only when something changed
    doctor = json.loads(cli(cw_home, "doctor", "--json").stdout)["checks"]["permissions"]
    assert doctor["ok"] and doctor["tightened"] == before and doctor["tightenedAt"]


def test_doctor_fails_on_a_path_others_can_read(cw_home: Path, tmp_path: Path) -> None:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_rows(tmp_path / "s.jsonl", [("s", "m1", "hello")])])
        leak = cw_home / "notes.txt"
        leak.write_text("copied in while the store was open")
        leak.chmod(0o644)
        check = archive.doctor().checks.permissions
    assert not check.ok and check.loose == 1 and str(leak) in check.examples[0]


def test_a_daemon_keeps_the_store_owner_only(
    cw_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers import real_daemon_env

    source = write_rows(tmp_path / "s.jsonl", [("s", f"m{i}", "needle " * 50) for i in range(50)])
    cw_home.mkdir()
    cw_home.chmod(0o755)
    (cw_home / "config.toml").write_text("")
    (cw_home / "config.toml").chmod(0o644)
    with real_daemon_env(cw_home, monkeypatch) as env:
        # The client and so the daemon it starts inherit a umask of 022.
        run_env = {**env, "CW_HOME": str(cw_home)}
        proc = subprocess.run(
            [sys.executable, "-m", "cwtui.cli", "import", str(source)],
            env=run_env, capture_output=True, timeout=300, umask=0o022,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert b"tightened permissions of 2 file(s) and folder(s)" in proc.stderr
        found = subprocess.run(
            [sys.executable, "-m", "cwtui.cli", "search", "needle", "--json"],
            env=run_env, capture_output=True, timeout=300, umask=0o022,
        )  # fmt: skip
        assert found.returncode == 0, found.stderr
        assert (cw_home / "daemon.log").exists() and (cw_home / "locator.key").exists()
        assert loose_paths(cw_home) == []


def test_faces_treat_ids_as_text() -> None:
    from textual.widgets._data_table import default_cell_formatter

    from cwcore.contract.sessions import SessionInfo
    from cwtui.output import shown_id
    from cwtui.screens.export import default_path
    from cwtui.widgets.sessions_table import row_cells

    row = SessionInfo("x[/]y [red]z", "p[/]", "a[b]", None, None, 1, 1, 0, None, title="[/] t")
    cells = row_cells(row)  # by column key
    rendered = {key: default_cell_formatter(cell) for key, cell in cells.items()}  # no MarkupError
    assert str(rendered["session"]) == "x[/]y [red]z" and str(rendered["title"]) == "[/] t"
    assert shown_id("\x1b[31mred\tx[/]") == "\\x1b[31mred\\x09x\\[/]"
    # A file name made from an id is sanitized where it is made, never in the key layer.
    assert default_path("conv-50/session_30", "md") == "./conv-50_session_30.md"
    assert "/" not in default_path("../../etc/passwd", "jsonl")[2:]


def test_one_batch_never_holds_one_document_id_twice(tmp_path: Path) -> None:
    from cwcore.model import DocumentPart, DocumentSpec, SessionSpec
    from cwcore.store.admission import Admission
    from cwcore.store.reader import Reader
    from cwcore.store.rocks import Store

    def doc(text: str) -> DocumentSpec:
        part = DocumentPart("user:m1", "user", "text", text)
        return DocumentSpec("t-same", "turn", "s", "p", "cw-jsonl", (part,), starts_turn=True)

    with Store(tmp_path / "db") as store:
        result = Admission(store).admit(SessionSpec("s", "p", "cw-jsonl"), (), [doc("a"), doc("b")])
        assert [a.document_id for a in result.acks] == ["t-same"]
        assert [r.error.code for r in result.rejected] == ["invalid-input"]
        assert "twice" in result.rejected[0].error.message
        assert Reader(store).text(Reader(store).manifest("t-same")) == "a"  # the first is kept


def test_doctor_repair_retires_an_ordinal_left_by_the_overwrite(
    cw_home: Path, tmp_path: Path
) -> None:
    from typer.testing import CliRunner

    from cwcore.store import codec
    from cwtui.cli import app

    with Archive.open(cw_home, embedded=True) as archive:
        summary = archive.import_paths([one_line_session(tmp_path / "s.jsonl", "s", "m", "hi")])
        doc_id = archive.show("s").messages[0].document_id
        # What the old split left: a second ordinal naming a version whose manifest is another's.
        store = store_of(archive)
        batch = store.batch()
        ref = codec.encode_record({"documentId": doc_id, "version": 1})
        batch.put("ordinals", keys.ORDINAL.encode(7), ref)
        store.commit(batch)
        assert summary.imported == 1 and not archive.index_verify().ok
    runner = CliRunner()
    assert runner.invoke(app, ["doctor"]).exit_code == 1
    repaired = runner.invoke(app, ["doctor", "--repair", "--json"])
    assert repaired.exit_code == 0, repaired.stdout
    assert json.loads(repaired.stdout)["checks"]["index"] == {
        "ok": True, "checked": 2, "problems": 0, "examples": [], "retired": 1
    }  # fmt: skip
    assert runner.invoke(app, ["index", "verify"]).exit_code == 0
    again = json.loads(runner.invoke(app, ["doctor", "--json"]).stdout)["checks"]["index"]
    assert again["ok"] and again["retired"] == 0
    with Archive.open(cw_home, embedded=True) as archive:
        assert [m.text for m in archive.show("s").messages] == ["hi"]
        assert archive.search({"query": "hi"}).results

"""The session-order index: key order, listing equivalence with a full sort, maintenance through
admission, re-import, forget and retention, and the migration of stores written without it."""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cwcore import browse
from cwcore.clock import parse_time
from cwcore.contract.sessions import SessionInfo
from cwcore.errors import InvalidInput, NotFound, StoreError
from cwcore.model import DocumentPart, DocumentSpec, SessionSpec
from cwcore.store import codec, keys, rocks, session_order
from cwcore.store.admission import Admission
from cwcore.store.admission import project_digest as admission_digest
from cwcore.store.reader import Reader
from cwcore.store.retention import Retention
from cwcore.store.rocks import Store
from tests.helpers import conversation, write_jsonl
from tests.support import store_of

SAFE_CHARS = st.characters(blacklist_categories=("Cc", "Cs"), blacklist_characters="/\\")
safe_ids = st.text(SAFE_CHARS, min_size=1, max_size=20).filter(lambda s: s == s.strip() and s)


def reference(
    records: list[dict[str, Any]],
    *,
    project: str | None = None,
    agent: str | None = None,
    since: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
) -> dict[str, Any]:
    """The listing as it was before the index: filter every record, sort them all, page."""
    since_dt = parse_time(since) if since else None
    rows = []
    for record in records:
        if project is not None and record["project"] != project:
            continue
        if agent is not None and record["agent"] != agent:
            continue
        if since_dt is not None:
            last = record.get("ended") or record.get("started")
            if not last or parse_time(last) < since_dt:
                continue
        rows.append(SessionInfo.from_record(record))
    rows.sort(key=lambda r: (r.started or "", r.sessionId), reverse=True)
    if cursor:
        after = browse._cursor_decode(cursor)
        rows = [r for r in rows if (r.started or "", r.sessionId) < after]
    page = rows[:limit]
    next_cursor = browse._cursor_encode(page[-1]) if len(rows) > limit else None
    return {"sessions": [r.to_json() for r in page], "next_cursor": next_cursor}


def pages(fn: Any, **kw: Any) -> list[dict[str, Any]]:
    out, cursor = [], None
    while True:
        page = fn(cursor=cursor, **kw)
        out.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return out


def assert_equivalent(store: Store, filters: dict[str, Any], limit: int) -> None:
    reader = Reader(store)
    records = list(reader.sessions())
    got = pages(lambda **kw: browse.list_sessions(reader, **kw).to_json(), limit=limit, **filters)
    want = pages(lambda **kw: reference(records, **kw), limit=limit, **filters)
    assert got == want


# -- keys ------------------------------------------------------------------------------------


@given(st.lists(st.tuples(st.text(max_size=12), safe_ids), min_size=1, max_size=25, unique=True))
def test_desc_keys_sort_in_reverse_string_order(pairs: list[tuple[str, str]]) -> None:
    encoded = sorted(keys.SESSION_ORDER.encode(*p) for p in pairs)
    assert [keys.SESSION_ORDER.decode(k) for k in encoded] == sorted(pairs, reverse=True)


@given(st.text(max_size=40), st.text(max_size=40))
def test_desc_field_round_trip(started: str, session: str) -> None:
    key = keys.SESSION_ORDER.encode(started, session)
    assert keys.SESSION_ORDER.decode(key) == (started, session)


def test_desc_field_edges() -> None:
    # NUL is escaped, the empty string sorts last (largest first), a prefix sorts after.
    ordered = ["b", "a\x00x", "a\x00", "a", ""]
    encoded = sorted(keys.SESSION_ORDER.encode(s, "x") for s in ordered)
    assert [keys.SESSION_ORDER.decode(k)[0] for k in encoded] == ordered
    for bad in (b"", keys.SESSION_ORDER.encode("a", "b")[:-1], b"\x46\x01\xff"):
        with pytest.raises(keys.UnsafeKey):
            keys.SESSION_ORDER.decode(bad)
    long = "2026-11-01T00:00:00Z" + "9" * 400
    assert session_order.clip_started(long) == long[:256]
    assert session_order.order_key(long, "s") == session_order.order_key(long + "x", "s")


# -- listing equivalence ---------------------------------------------------------------------

STAMPS = [f"2026-11-{d:02d}T10:{m:02d}:00.000Z" for d in (1, 2, 3) for m in (0, 30)]
session_specs = st.lists(
    st.tuples(
        st.sampled_from(["s1", "s2", "s3", "a", "b", "zz", "s10", "é", "S"]),
        st.sampled_from(["p1", "p2", "/home/dev/p3"]),
        st.sampled_from(["codex", "pi"]),
        st.none() | st.sampled_from(STAMPS),  # the session's own start (a header)
        st.lists(st.none() | st.sampled_from(STAMPS), min_size=1, max_size=3),  # messages
    ),
    min_size=0,
    max_size=9,
    unique_by=lambda t: t[0],
)
filters = st.fixed_dictionaries(
    {},
    optional={
        "project": st.sampled_from(["p1", "p2", "/home/dev/p3", "none"]),
        "agent": st.sampled_from(["codex", "pi"]),
        "since": st.sampled_from(["2026-11-02", "2026-11-03T10:15:00Z", "2030-01-01"]),
    },
)


def admit(adm: Admission, spec: tuple[Any, ...], tag: str = "") -> None:
    sid, project, agent, started, stamps = spec
    parts = tuple(
        DocumentPart(f"user:m{tag}{i}", "user", "text", f"text {i}{tag}", timestamp=ts)
        for i, ts in enumerate(stamps)
    )
    adm.admit_one(
        SessionSpec(sid, project, agent, started=started),
        DocumentSpec(f"{sid}-d{tag}", "turn", sid, project, agent, parts),
    )


# Slow: a long property run, each example a fresh store with many sessions (a soak).
@pytest.mark.slow
@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    session_specs,
    st.lists(filters, min_size=1, max_size=3),
    st.integers(1, 4),
    st.lists(st.tuples(st.integers(0, 8), st.sampled_from(STAMPS)), max_size=3),
    st.lists(st.integers(0, 8), max_size=2),
)
def test_listing_matches_a_full_sort(
    specs: list[tuple[Any, ...]],
    filter_sets: list[dict[str, Any]],
    limit: int,
    regrow: list[tuple[int, str]],
    forget: list[int],
) -> None:
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "db") as store:
        adm = Admission(store)
        for spec in specs:
            admit(adm, spec)
        for f in filter_sets:
            assert_equivalent(store, f, limit)
        cursors = [p["next_cursor"] for p in pages(lambda **kw: browse.list_sessions(
            Reader(store), **kw).to_json(), limit=1)][:-1]  # fmt: skip
        # Re-imports that move a session's start (earlier messages) or its end.
        for n, (index, stamp) in enumerate(regrow):
            if specs:
                sid, project, agent, _, _ = specs[index % len(specs)]
                admit(adm, (sid, project, agent, None, [stamp]), tag=f"r{n}")
        for index in forget:
            if specs and index < len(specs):
                try:
                    Retention(store).forget_session(specs[index][0])
                except NotFound:  # already forgotten by an earlier index
                    pass
        assert session_order.verify(store) == []
        for f in filter_sets:
            assert_equivalent(store, f, limit)
        # Cursors handed out before the changes still resume at their place.
        reader, records = Reader(store), list(Reader(store).sessions())
        for cursor in cursors:
            assert browse.list_sessions(reader, limit=limit, cursor=cursor).to_json() == reference(
                records, limit=limit, cursor=cursor
            )


def test_bad_cursors_are_invalid_input(archive: Any) -> None:
    reader = Reader(store_of(archive))
    too_long = base64.urlsafe_b64encode(json.dumps(["", "x" * 600]).encode()).decode()
    for cursor in ("@@@", "bm90IGpzb24", too_long):
        with pytest.raises(InvalidInput, match="not a cursor"):
            browse.list_sessions(reader, cursor=cursor)


def test_a_page_reads_only_its_records(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Store(tmp_path / "db") as store:
        adm = Admission(store)
        for i in range(30):
            admit(adm, (f"s{i:02d}", "p", "pi", f"2026-11-01T10:{i:02d}:00Z", [None]))
        reader = Reader(store)
        monkeypatch.setattr(Reader, "sessions", lambda self: pytest.fail("full scan"))
        read: list[int] = []
        original = Reader.sessions_by_id
        monkeypatch.setattr(
            Reader,
            "sessions_by_id",
            lambda self, ids: read.append(len(ids)) or original(self, ids),
        )
        page = browse.list_sessions(reader, limit=5)
        assert [r.sessionId for r in page.sessions] == [f"s{i:02d}" for i in (29, 28, 27, 26, 25)]
        assert read == [5]


# -- maintenance through the archive ---------------------------------------------------------


def listed(archive: Any, **kw: Any) -> list[tuple[str, str | None]]:
    rows, _ = archive.sessions(limit=100, **kw)
    return [(r.sessionId, r.started) for r in rows]


def test_maintained_through_import_reimport_forget_and_retention(
    archive: Any, tmp_path: Path
) -> None:
    from cwcore.config import Settings

    store = store_of(archive)
    write_jsonl(
        tmp_path / "a.jsonl",
        conversation("s1", 2, start_minute=10)
        + conversation("s2", 2, start_minute=20)
        + conversation("s3", 1, start_minute=30, project="other"),
    )
    archive.import_paths([tmp_path / "a.jsonl"])
    assert [s for s, _ in listed(archive)] == ["s3", "s2", "s1"]
    assert session_order.verify(store) == []
    # Re-import s1 with an earlier message and s2 with a much later one: both move.
    early = {"session": "s1", "id": "u-early", "role": "user", "text": "first",
             "timestamp": "2026-10-01T08:00:00Z", "project": "proj"}  # fmt: skip
    late = {"session": "s2", "id": "u-late", "role": "user", "text": "later",
            "timestamp": "2026-11-05T08:00:00Z", "project": "proj"}  # fmt: skip
    write_jsonl(tmp_path / "b.jsonl", [early, late])
    archive.import_paths([tmp_path / "b.jsonl"])
    assert listed(archive) == [
        ("s3", "2026-11-01T10:30:00.000Z"),
        ("s2", "2026-11-01T10:20:00.000Z"),
        ("s1", "2026-10-01T08:00:00.000Z"),
    ]
    # s2's end moved: the since filter sees it through the index summary.
    assert [s for s, _ in listed(archive, since="2026-11-04")] == ["s2"]
    assert [s for s, _ in listed(archive, project="other")] == ["s3"]
    assert session_order.verify(store) == []
    archive.forget("s3")
    assert [s for s, _ in listed(archive)] == ["s2", "s1"]
    assert session_order.verify(store) == []
    # Retention (CW_NOW is 2026-11-20): s1 ended on 2026-11-01, s2 on 2026-11-05.
    report = Retention(store).expire(Settings(retention_session_days=17))
    assert report.sessions == 1
    assert [s for s, _ in listed(archive)] == ["s2"]
    assert session_order.verify(store) == []
    assert len(list(store.scan("scopes", keys.SESSION_ORDER.prefix()))) == 1


def test_entries_hold_project_agent_and_end(tmp_path: Path) -> None:
    with Store(tmp_path / "db") as store:
        admit(Admission(store), ("s1", "p", "pi", "2026-11-01T00:00:00Z", ["2026-11-02T00:00:00Z"]))
        [(key, value)] = store.scan("scopes", keys.SESSION_ORDER.prefix())
        assert keys.SESSION_ORDER.decode(key) == ("2026-11-01T00:00:00Z", "s1")
        [(pkey, pvalue)] = store.scan("scopes", keys.PROJECT_SESSION_ORDER.prefix())
        assert keys.PROJECT_SESSION_ORDER.decode(pkey) == (
            admission_digest("p"),
            "2026-11-01T00:00:00Z",
            "s1",
        )
        assert pvalue == value
        admit(Admission(store), ("s2", "q", "pi", "2026-11-03T00:00:00Z", [None]))
        admit(Admission(store), ("s3", "p", "pi", "2026-11-02T00:00:00Z", [None]))
        assert [e.session_id for e in session_order.scan(store)] == ["s2", "s3", "s1"]
        assert [e.session_id for e in session_order.scan(store, project="p")] == ["s3", "s1"]
        after = ("2026-11-02T00:00:00Z", "s3")
        assert [e.session_id for e in session_order.scan(store, after, project="p")] == ["s1"]
        assert list(session_order.scan(store, project="nothing")) == []
        assert codec.decode_record(value) == {
            "id": "s1",
            "started": "2026-11-01T00:00:00Z",
            "project": "p",
            "agent": "pi",
            "ended": "2026-11-02T00:00:00Z",
            "messages": 1,
        }


# -- migration -------------------------------------------------------------------------------


def make_v1_store(path: Path, sessions: int = 12) -> None:
    """A store as a schema-1 cw wrote it: session records, no session-order entries."""
    with Store(path) as store:
        adm = Admission(store)
        for i in range(sessions):
            admit(
                adm, (f"s{i:02d}", f"p{i % 3}", "pi", f"2026-11-{1 + i % 5:02d}T00:00:00Z", [None])
            )
        with store.lock:
            batch = store.batch()
            for key, _ in store.scan("scopes", keys.SESSION_ORDER.prefix()):
                batch.delete("scopes", key)
            store.meta_put(batch, "schema", {"version": 1})
            store.commit(batch)
        assert session_order.verify(store) != []


def test_a_store_without_the_index_gets_it_on_open(tmp_path: Path) -> None:
    make_v1_store(tmp_path / "db", sessions=12)
    with Store(tmp_path / "db") as store:
        assert store.schema_version == rocks.SCHEMA_VERSION
        assert session_order.verify(store) == []
        assert_equivalent(store, {}, 5)
        assert_equivalent(store, {"project": "p1"}, 2)


def test_summaries_without_message_counts_get_them_on_open(tmp_path: Path) -> None:
    """Schema 3 wrote summaries without the message count the facets now read: migration 3 → 4
    rebuilds them, so the counts are right on the first open."""
    from cwcore.facets import facets

    with Store(tmp_path / "db") as store:
        adm = Admission(store)
        for i in range(6):
            admit(
                adm, (f"s{i}", f"p{i % 2}", "pi", f"2026-11-0{1 + i}T00:00:00Z", [None] * (i + 1))
            )
        expected = facets(Reader(store))
        with store.lock:
            batch = store.batch()
            for key, value in store.scan("scopes", keys.SESSION_ORDER.prefix()):
                body = codec.decode_record(value, "session order")
                del body["messages"]
                batch.put("scopes", key, codec.encode_record(body))
            store.meta_put(batch, "schema", {"version": 3})
            store.commit(batch)
        assert session_order.verify(store) != []
        assert facets(Reader(store)).messages == 0
    with Store(tmp_path / "db") as store:
        assert store.schema_version == rocks.SCHEMA_VERSION == 4
        assert session_order.verify(store) == []
        assert facets(Reader(store)) == expected and expected.messages > 0


def test_rebuild_is_bounded_and_repeatable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_order, "REBUILD_BATCH", 4)  # several batches
    make_v1_store(tmp_path / "db", sessions=10)
    with Store(tmp_path / "db") as store:
        assert session_order.verify(store) == []
        # A stale entry (a session that no longer exists) is dropped by a rebuild.
        with store.lock:
            batch = store.batch()
            batch.put("scopes", session_order.order_key("2030-01-01", "ghost"), b"\x01{}")
            store.commit(batch)
        assert session_order.verify(store) != []
        assert session_order.rebuild(store) == 10
        assert session_order.verify(store) == []


def test_an_interrupted_migration_runs_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_v1_store(tmp_path / "db")

    def boom(store: Store) -> None:
        raise StoreError("interrupted")

    monkeypatch.setitem(rocks.MIGRATIONS, 1, boom)
    with pytest.raises(StoreError, match="interrupted"):
        Store(tmp_path / "db")
    monkeypatch.undo()
    # The failed open released the store and left it at schema 1; this open migrates it.
    with Store(tmp_path / "db") as store:
        assert store.schema_version == rocks.SCHEMA_VERSION
        assert session_order.verify(store) == []


def cli_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any, Path]:
    """A CW_HOME with two sessions imported through the CLI: (runner, app, store directory)."""
    from typer.testing import CliRunner

    from cwtui.cli import app

    home = tmp_path / "home"
    monkeypatch.setenv("CW_HOME", str(home))
    runner = CliRunner()
    write_jsonl(tmp_path / "a.jsonl", conversation("s1", 1) + conversation("s2", 1, start_minute=5))
    assert runner.invoke(app, ["import", str(tmp_path / "a.jsonl")]).exit_code == 0
    return runner, app, next(p.parent for p in home.rglob("CURRENT"))


def drop_order_entries(
    store_dir: Path, limit: int | None = None, schema: int | None = None
) -> None:
    with Store(store_dir) as store, store.lock:
        batch = store.batch()
        for key, _ in store.scan("scopes", keys.SESSION_ORDER.prefix(), limit=limit):
            batch.delete("scopes", key)
        if schema is not None:
            store.meta_put(batch, "schema", {"version": schema})
        store.commit(batch)


def test_listing_through_the_cli_after_migration(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, app, store_dir = cli_store(tmp_path, monkeypatch)
    drop_order_entries(store_dir, schema=1)
    out = runner.invoke(app, ["sessions", "--json"])
    assert out.exit_code == 0, out.stderr
    assert [r["sessionId"] for r in json.loads(out.stdout)["sessions"]] == ["s2", "s1"]


def test_doctor_finds_and_repairs_a_stale_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, app, store_dir = cli_store(tmp_path, monkeypatch)
    healthy = runner.invoke(app, ["doctor", "--json"])
    assert healthy.exit_code == 0, healthy.stderr
    assert json.loads(healthy.stdout)["checks"]["sessionOrder"]["ok"] is True
    drop_order_entries(store_dir, limit=1)
    broken = runner.invoke(app, ["doctor"])
    assert broken.exit_code == 1 and "cw doctor --repair" in broken.stdout
    fixed = runner.invoke(app, ["doctor", "--repair", "--json"])
    assert fixed.exit_code == 0, fixed.stderr
    check = json.loads(fixed.stdout)["checks"]["sessionOrder"]
    assert check == {"ok": True, "problems": 0, "examples": [], "repaired": True}
    assert runner.invoke(app, ["doctor"]).exit_code == 0

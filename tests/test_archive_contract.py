"""The archive's methods declared in the contract catalogue (issue 37): each request is checked
at the edge (a wrong type names the key; a bound is refused by the request record, before a store
is opened or a request sent) and each answer comes back as its declared record."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from cwcore import large_results
from cwcore.api import Archive
from cwcore.contract import methods
from cwcore.contract.context import MAX_CONTEXT, ContextRequest, DocumentContext
from cwcore.contract.doctor import CountsRequest, DoctorReport, DoctorRequest, StoreCounts
from cwcore.contract.imports import FileOutcome, ImportReport, ImportRequest, SyncRequest
from cwcore.contract.retention import (
    ForgetRequest,
    ForgetResolveRequest,
    ForgetTarget,
    Forgotten,
)
from cwcore.contract.sessions import (
    ResolvedSession,
    ResolveSessionRequest,
    SessionsPage,
    SessionsRequest,
)
from cwcore.contract.views import (
    DocumentView,
    Exported,
    ExportRequest,
    ShowDocumentRequest,
    ShowRequest,
    Transcript,
)
from cwcore.errors import InvalidInput
from cwcore.importers.summary import ImportSummary
from cwcore.methods import archive as archive_methods
from cwcore.methods.registry import typed
from tests.helpers import write_jsonl


def _rows(sid: str, n: int) -> list[dict[str, Any]]:
    return [
        {
            "session": sid,
            "id": f"m{i}",
            "role": "user" if i % 2 == 0 else "assistant",
            "text": f"message {i} of {sid} about the archive contract",
            "timestamp": f"2026-11-18T09:{i:02d}:00Z",
            "project": "alpha",
            "agent": "codex",
        }
        for i in range(n)
    ]


@pytest.fixture
def arch(cw_home: Path, tmp_path: Path) -> Iterator[Archive]:
    with Archive.open(cw_home, embedded=True) as archive:
        archive.import_paths([write_jsonl(tmp_path / "s.jsonl", _rows("sess-one", 5))])
        yield archive


def _refused(archive: Archive, method: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        archive.call(method, params)


def test_the_archive_methods_are_declared() -> None:
    """Every method of the archive's table is answered through its contract (``supersede``
    and ``supersede.undo`` are the MCP tools' and declared with them)."""
    declared = {spec.name for spec in methods.DECLARED}
    mine = {method.name for method in archive_methods.METHODS} - {"supersede", "supersede.undo"}
    assert {"doctor", "counts", "show", "export", "import", "sync"} <= mine <= declared


def test_doctor_and_counts_answer_their_records(arch: Archive) -> None:
    _refused(arch, "doctor", {"repair": "yes"}, r"^repair must be true or false$")
    report = arch.ask(methods.DOCTOR, DoctorRequest())
    assert isinstance(report, DoctorReport) and report.healthy
    counts = arch.ask(methods.COUNTS, CountsRequest())
    assert isinstance(counts, StoreCounts) and counts.sessions == 1 and counts.messages == 5
    assert report.counts == counts == arch.counts()
    assert methods.COUNTS.passive and not methods.DOCTOR.passive


def test_context_bounds_are_the_request_records(cw_home: Path) -> None:
    # Refused by the record a face builds: nothing is sent and no store is opened.
    with pytest.raises(InvalidInput, match=rf"^neighbors must be from 0 to {MAX_CONTEXT}$"):
        ContextRequest("doc", neighbors=MAX_CONTEXT + 1)
    with pytest.raises(InvalidInput, match=r"^documentId is required$"):
        ContextRequest("")
    with pytest.raises(InvalidInput, match=r"^neighbors must be an integer$"):
        ContextRequest.parse({"documentId": "d", "neighbors": True})
    assert not cw_home.exists()


def test_context_answers_the_neighbours(arch: Archive) -> None:
    _refused(arch, "context", {"documentId": "x", "neighbors": -1}, r"^neighbors must be from")
    _refused(arch, "context", {"documentId": 3}, r"^documentId must be a string$")
    _refused(arch, "context", {}, r"^documentId is required$")
    hit = arch.search({"query": "message 2 of sess-one"}).results[0]
    found = arch.context(hit.document_id, neighbors=2)
    assert isinstance(found, DocumentContext) and found.session == "sess-one"
    assert found == arch.ask(methods.CONTEXT, ContextRequest(hit.document_id, 2))
    assert len(found.before) + len(found.after) >= 1


def test_sessions_requests_are_checked_by_their_record(cw_home: Path) -> None:
    with pytest.raises(InvalidInput, match=r"^--limit must be between 1 and 10000$"):
        SessionsRequest(limit=0)
    with pytest.raises(InvalidInput, match=r"^sort must be one of started, ended"):
        SessionsRequest(sort="nowhere")
    with pytest.raises(InvalidInput, match=r"^not an ISO-8601 date or time: 'yesterday-ish'"):
        SessionsRequest(since="yesterday-ish")
    with pytest.raises(InvalidInput, match=r"^ascending must be true or false$"):
        Archive.check("sessions", {"ascending": "yes"})
    with pytest.raises(InvalidInput, match=r"^session \(a session id or unique prefix\)"):
        ResolveSessionRequest("")
    # The order is sent only when it is not the default (as the lean CLI sends it).
    assert SessionsRequest().to_json() == {"limit": 50}
    assert SessionsRequest(sort="messages", ascending=True, match="x").to_json() == {
        "limit": 50,
        "sort": "messages",
        "ascending": True,
        "match": "x",
    }
    assert not cw_home.exists()


def test_sessions_and_resolve_answer_their_records(arch: Archive) -> None:
    _refused(arch, "sessions", {"limit": "5"}, r"^limit must be an integer$")
    _refused(arch, "sessions", {"project": 5}, r"^project must be a string$")
    _refused(arch, "sessions", {"cursor": "@@@"}, r"^not a cursor from cw sessions")
    _refused(arch, "sessions.resolve", {"session": 1}, r"^session must be a string$")
    page = arch.ask(methods.SESSIONS, SessionsRequest(limit=10))
    assert isinstance(page, SessionsPage) and page.next_cursor is None
    assert [row.sessionId for row in page.sessions] == ["sess-one"]
    assert arch.call("sessions", {"limit": 10}) == page.to_json()
    assert page.to_json()["next_cursor"] is None  # the key is always there
    resolved = arch.ask(methods.SESSIONS_RESOLVE, ResolveSessionRequest("sess"))
    assert isinstance(resolved, ResolvedSession) and resolved.session == page.sessions[0]
    assert arch.resolve_session("sess-one") == page.sessions[0]


def test_forget_and_its_resolve_answer_their_records(arch: Archive) -> None:
    with pytest.raises(InvalidInput, match=r"^target \(a session or document id\) is required$"):
        ForgetRequest("")
    _refused(arch, "forget.resolve", {"target": "sess-one", "prefix": 1}, r"^prefix must be true")
    _refused(arch, "forget", {"target": ["sess-one"]}, r"^target must be a string$")
    _refused(arch, "forget", {"target": ""}, r"^target \(a session or document id\) is required$")
    target = arch.ask(methods.FORGET_RESOLVE, ForgetResolveRequest("sess", prefix=True))
    assert isinstance(target, ForgetTarget) and target.id == "sess-one"
    assert target.messages == 5 and arch.counts().sessions == 1  # nothing removed yet
    gone = arch.ask(methods.FORGET, ForgetRequest("sess-one"))
    assert isinstance(gone, Forgotten) and gone.target == target and gone.sessions == 1
    assert arch.counts().sessions == 0


def test_show_export_and_document_requests_are_checked_by_their_record(cw_home: Path) -> None:
    with pytest.raises(InvalidInput, match=r"^--format must be md or jsonl$"):
        ExportRequest("sess", "pdf")
    with pytest.raises(InvalidInput, match=r"^--format must be md or jsonl$"):
        Archive.check("export", {"format": "pdf"})
    with pytest.raises(InvalidInput, match=r"^session is required$"):
        ShowRequest("")
    with pytest.raises(InvalidInput, match=r"^documentId is required$"):
        ShowDocumentRequest("")
    with pytest.raises(InvalidInput, match=r"^all must be true or false$"):
        ShowRequest.parse({"session": "s", "all": 1})
    # ``hideSuperseded`` wins; without it the older ``includeSuperseded`` decides (default:
    # superseded messages are listed).
    assert not ShowRequest("s").hides_superseded
    assert ShowRequest.parse({"session": "s", "includeSuperseded": False}).hides_superseded
    assert not ShowRequest.parse(
        {"session": "s", "includeSuperseded": False, "hideSuperseded": False}
    ).hides_superseded
    assert ShowRequest("s", hide_superseded=True).to_json() == {
        "session": "s",
        "all": False,
        "hideSuperseded": True,
    }
    assert not cw_home.exists()


def test_show_export_and_document_answer_their_records(arch: Archive) -> None:
    _refused(arch, "show", {"session": "sess-one", "all": "yes"}, r"^all must be true or false$")
    _refused(arch, "export", {"session": "sess-one", "format": 3}, r"^format must be a string$")
    _refused(arch, "show.document", {"documentId": ""}, r"^documentId is required$")
    shown = arch.ask(methods.SHOW, ShowRequest("sess-one"))
    assert isinstance(shown, Transcript) and len(shown.messages) == 5
    assert shown == arch.show("sess-one")
    exported = arch.ask(methods.EXPORT, ExportRequest("sess-one", "jsonl"))
    assert isinstance(exported, Exported) and exported.text == arch.export("sess-one", "jsonl")
    assert len(exported.text.splitlines()) == 5
    document = shown.messages[0].document_id
    view = arch.ask(methods.SHOW_DOCUMENT, ShowDocumentRequest(document))
    assert isinstance(view, DocumentView) and view == arch.show_document(document)
    for spec in (methods.SHOW, methods.SHOW_DOCUMENT, methods.EXPORT):
        assert spec.output_bytes == large_results.MAX_INLINE_BYTES


def test_a_large_answer_travels_in_parts_and_is_joined() -> None:
    big = Exported("x" * (large_results.INLINE_CHARS + 10))
    method = typed(methods.Spec("t.big", CountsRequest, Exported), lambda e, r: big, parts=True)
    events: list[dict[str, Any]] = []
    sent = method.handler(cast(Any, None), {}, events.append, threading.Event())
    assert set(sent) == {large_results.MARKER} and events
    collector = large_results.Collector()
    for event in events:
        collector(event)
    assert Exported.from_json(collector.result(sent)) == big
    inline = typed(methods.Spec("t.small", CountsRequest, Exported), lambda e, r: Exported("x"))
    assert inline.handler(cast(Any, None), {}, events.append, threading.Event()) == {"text": "x"}


def test_import_and_sync_requests_are_checked_by_their_record(cw_home: Path) -> None:
    with pytest.raises(InvalidInput, match=r"^paths must be a non-empty list of strings$"):
        ImportRequest(())
    with pytest.raises(InvalidInput, match=r"^project name is empty$"):
        ImportRequest(("/x",), project="  ")
    with pytest.raises(InvalidInput, match=r"^paths must be a string$"):
        ImportRequest.parse({"paths": ["/x", 3]})
    with pytest.raises(InvalidInput, match=r"^not an ISO-8601 date or time: 'soon'"):
        SyncRequest(since="soon")
    assert SyncRequest().to_json() == {}
    assert ImportRequest(("/x",)).to_json() == {"paths": ["/x"], "format": "auto"}
    assert not cw_home.exists()


def test_import_reports_progress_and_answers_its_report(cw_home: Path, tmp_path: Path) -> None:
    log = write_jsonl(tmp_path / "s.jsonl", _rows("sess-two", 3))
    events: list[dict[str, Any]] = []
    with Archive.open(cw_home, embedded=True) as archive:
        _refused(archive, "import", {"paths": str(log)}, r"^paths must be a list$")
        _refused(archive, "import", {"paths": [str(log)], "format": "nope"}, r"^unknown format")
        _refused(archive, "sync", {"home": 3}, r"^home must be a string$")
        report = archive.ask(methods.IMPORT, ImportRequest((str(log),)), events.append)
        assert isinstance(report, ImportReport)
        assert (report.files, report.sessions, report.messages) == (1, 1, 3)
        assert report.errors == [] and report.error_count == 0
        assert "file_outcomes" not in report.to_json()  # an import's answer keeps its keys
        assert any(event.get("type") == "progress" for event in events)
        synced = archive.ask(methods.SYNC, SyncRequest(home=str(tmp_path / "nobody")))
        assert isinstance(synced, ImportReport) and synced.imported == 0


def test_an_import_report_keeps_its_lists_and_outcomes_through_json() -> None:
    summary = ImportSummary(files=2)
    summary.error("/a", None, "not a log")
    summary.error("/b", 3, "invalid JSON")
    summary.file_outcome(FileOutcome("/a", "codex", "failed", 0, "not a log"))
    report = summary.report()
    assert report.error_count == 2 and report.file_errors == 1
    assert report.to_json() == summary.to_json()
    assert ImportReport.from_json(report.to_json()) == report
    assert ImportReport.from_json(report.to_json()).file_outcomes[0].outcome == "failed"

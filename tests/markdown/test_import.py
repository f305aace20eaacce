"""``cw import --format markdown``: documents, exact CRLF offsets, skip-unchanged, supersession."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from cwcore.api import Archive
from cwcore.importers import base
from cwcore.markdown import fingerprint as fp
from cwcore.markdown import ingest
from tests.markdown.conftest import cli, key_counts, write
from tests.support import engine_of, store_of, store_sequence

RAW = (
    "\ufeff# Guide\r\n\r\nCafé au lait — naïve façade.\r\n\r\n"
    "## Setup 🎉\r\n\r\nRun `cw import` twice.\r\n中文的段落也在这里。\r\n\r\n"
    "### Details\r\n\r\nlast line without newline"
).encode()


def tree(root: Path) -> Path:
    write(root / "guide.md", RAW)
    write(root / "sub" / "notes.markdown", "# Notes\n\nzebrafish migration plan\n")
    write(root / "sub" / "data.json", '{"a": 1}\n')
    write(root / ".hidden" / "skip.md", "# hidden\n")
    return root


def test_sniff_is_by_extension(tmp_path: Path) -> None:
    for name in ("a.md", "b.MARKDOWN", "c.markdown"):
        path = write(tmp_path / name, '{"session": "s", "id": "1", "role": "user", "text": "x"}')
        importer = base.detect(path)
        assert importer is not None and importer.name == "markdown"
    assert base.detect(write(tmp_path / "d.txt", "# Title\n")) is None


def test_folder_import_makes_markdown_documents(archive: Archive, tmp_path: Path) -> None:
    root = tree(tmp_path / "handbook")
    events: list[dict] = []
    summary = archive.import_paths([root], fmt="markdown", on_event=events.append)
    assert summary.errors == [] and summary.imported == 2 and summary.files == 2
    assert any("data.json" in n and "not a Markdown file" in n for n in summary.notices)
    acks = [e for e in events if e["type"] == "ack"]
    assert {a["kind"] for a in acks} == {"markdown"}
    session = fp.session_id(root)
    assert {a["sessionId"] for a in acks} == {session}
    rows, _ = archive.sessions()
    [row] = [r for r in rows if r.sessionId == session]
    assert row.project == "handbook" and row.agent == "markdown"
    doc = fp.document_id(root, "sub/notes.markdown")
    shown = archive.show_document(doc)
    assert shown.kind == "markdown"
    assert shown.versions[0].message_keys == ("system:sub%2Fnotes.markdown",)
    manifest = engine_of(archive).reader.manifest(doc)
    assert manifest["metadata"]["markdown"]["relativePath"] == "sub/notes.markdown"
    assert manifest["metadata"]["sections"][0]["headingPath"] == ["Notes"]


def test_crlf_offsets_round_trip_to_the_original_bytes(archive: Archive, tmp_path: Path) -> None:
    root = tree(tmp_path / "handbook")
    archive.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "guide.md")
    text = RAW.decode("utf-8")
    manifest = engine_of(archive).reader.manifest(doc)
    assert manifest["metadata"]["markdown"]["lineEnding"] == "crlf"
    stored = engine_of(archive).reader.read_bytes(manifest)
    assert stored == RAW  # BOM, CRLF, accents, emoji and CJK byte for byte
    for start, end in [(0, len(text)), (0, 1), (3, 20), (text.index("🎉"), text.index("🎉") + 1)]:
        body = archive.call("markdown.read-entry", {"entry": f"{doc}#md:{start}:{end}"})
        assert body["text"] == text[start:end]
        assert RAW[body["byteStart"] : body["byteEnd"]] == body["text"].encode("utf-8")
    # every section's recorded character and byte ranges name the same bytes
    for section in manifest["metadata"]["sections"]:
        chars = text[section["start"] : section["end"]].encode("utf-8")
        assert RAW[section["byteStart"] : section["byteEnd"]] == chars
        assert RAW.split(b"\n")[section["line"] - 1].lstrip(b"\xef\xbb\xbf").startswith(b"#")


def test_reimport_of_an_unchanged_tree_writes_nothing(archive: Archive, tmp_path: Path) -> None:
    root = tree(tmp_path / "handbook")
    first = archive.import_paths([root], fmt="markdown")
    store = store_of(archive)
    before, seq = key_counts(store), store_sequence(store)
    again = archive.import_paths([root], fmt="markdown")
    assert again.imported == 0 and again.skipped == first.imported and not again.errors
    assert key_counts(store) == before
    assert store_sequence(store) == seq  # not a single write, not even a rewrite
    # the files named one by one (auto-detected) are unchanged too
    again = archive.import_paths([root / "guide.md", root / "sub" / "notes.markdown"])
    assert again.imported == 0 and again.skipped == 2 and store_sequence(store) == seq
    # a file named on its own belongs to the folder it was imported with: still unchanged
    single = archive.import_paths([root / "sub" / "notes.markdown"], fmt="markdown")
    assert single.imported == 0 and single.skipped == 1 and store_sequence(store) == seq


def test_unchanged_files_are_skipped_before_parsing(
    archive: Archive, tmp_path: Path, monkeypatch
) -> None:
    root = tree(tmp_path / "handbook")
    archive.import_paths([root], fmt="markdown")
    calls: list[str] = []

    def spy(text: str) -> None:
        calls.append(text)
        raise AssertionError("an unchanged file was parsed")

    monkeypatch.setattr(ingest, "analyze", spy)
    archive.import_paths([root], fmt="markdown")
    assert calls == []


def test_changed_file_supersedes_its_previous_version(archive: Archive, tmp_path: Path) -> None:
    root = tree(tmp_path / "handbook")
    archive.import_paths([root], fmt="markdown")
    doc = fp.document_id(root, "sub/notes.markdown")
    hits = archive.search({"query": "zebrafish"}).hits()
    assert [h.document_id for h in hits] == [doc]

    write(root / "sub" / "notes.markdown", "# Notes\n\nthe plan now uses salamanders\n")
    events: list[dict] = []
    summary = archive.import_paths([root], fmt="markdown", on_event=events.append)
    assert summary.imported == 1 and summary.skipped == 1
    assert [(e["documentId"], e["version"]) for e in events if e["type"] == "ack"] == [(doc, 2)]

    assert archive.search({"query": "zebrafish"}).hits() == ()
    assert [h.document_id for h in archive.search({"query": "salamanders"}).hits()] == [doc]
    with_old = archive.show_document(doc, include_superseded=True)
    old, new = with_old.versions
    assert old.superseded is not None and "zebrafish" in old.text
    assert old.superseded["reason"] == "changed"
    assert old.superseded["byVersion"] == 2 and new.current
    assert "salamanders" in new.text
    # the old version stays readable for audit by its pinned entry id
    body = archive.call("markdown.read-entry", {"entry": f"{doc}@v1#md:0:34"})
    assert "zebrafish" in body["text"] and body["current"] is False


def test_auto_format_imports_a_markdown_file_named_explicitly(
    archive: Archive, tmp_path: Path
) -> None:
    alone = write(tmp_path / "elsewhere" / "one.md", "# One\n\nsolitary page\n")
    summary = archive.import_paths([alone])
    assert summary.imported == 1 and summary.files == 1
    doc = fp.document_id(alone.parent, "one.md")
    assert archive.show_document(doc).session == fp.session_id(alone.parent)


def test_project_option_and_membership(archive: Archive, tmp_path: Path) -> None:
    root = tree(tmp_path / "handbook")
    archive.import_paths([root], fmt="markdown", project="docs-site")
    rows, _ = archive.sessions()
    assert {r.project for r in rows} == {"docs-site"}
    write(root / "new.md", "# New\n")
    summary = archive.import_paths([root], fmt="markdown", project="other")
    assert summary.imported == 1
    assert any("docs-site" in n and "ignored" in n for n in summary.notices)
    rows, _ = archive.sessions()
    assert {r.project for r in rows} == {"docs-site"}


def test_errors_are_reported_and_the_rest_imports(tmp_path: Path) -> None:
    root = tmp_path / "bad"
    write(root / "good.md", "# Good\n")
    write(root / "latin1.md", b"caf\xe9\n")
    code, summary, _ = cli(
        "import", str(root), str(tmp_path / "missing"), "--format", "markdown", "--json"
    )
    assert code == 2  # a path named explicitly could not be read
    assert summary["imported"] == 1
    reasons = sorted((Path(e["path"]).name, e["reason"]) for e in summary["errors"])
    assert reasons == [
        ("latin1.md", "not UTF-8 text (byte 3)"),
        ("missing", "no such file or directory"),
    ]


def test_preparing_a_folder_is_locked(archive: Archive, tmp_path: Path, cw_home: Path) -> None:
    """While one import holds a folder's lock, another import of it waits."""
    root = tree(tmp_path / "handbook")
    done: list[float] = []
    with ingest.folder_lock(cw_home, fp.session_id(root)):

        def run() -> None:
            archive.import_paths([root], fmt="markdown")
            done.append(time.time())

        worker = threading.Thread(target=run)
        worker.start()
        time.sleep(0.5)
        assert done == [] and worker.is_alive()
        released = time.time()
    worker.join(30)
    assert done and done[0] >= released
    assert (cw_home / "locks" / f"{fp.session_id(root)}.lock").exists()


def test_concurrent_imports_of_one_folder_admit_each_file_once(
    archive: Archive, tmp_path: Path
) -> None:
    root = tree(tmp_path / "handbook")
    results = []

    def run() -> None:
        results.append(archive.import_paths([root], fmt="markdown"))

    threads = [threading.Thread(target=run) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(r.imported for r in results) == [0, 0, 2]
    assert sum(r.skipped for r in results) == 4

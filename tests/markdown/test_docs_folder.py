"""The project's own ``docs/`` folder imports as Markdown and is searchable by its headings."""

from __future__ import annotations

from pathlib import Path

from cwcore.api import Archive
from cwcore.markdown import fingerprint as fp
from cwcore.markdown.hits import markdown_fields
from cwcore.markdown.parse import analyze
from tests.markdown.conftest import cli, windows_of
from tests.support import engine_of

DOCS = Path(__file__).resolve().parents[2] / "docs"
QUERY = "Secret scrubbing"  # docs/importers.md: "## Secret scrubbing (`scrub.py`)"
PATH = ["Importers", "Secret scrubbing (`scrub.py`)"]


def import_docs() -> None:
    code, summary, _ = cli("import", str(DOCS), "--format", "markdown", "--json")
    assert code == 0 and summary["errors"] == []
    assert summary["imported"] == summary["files"] == len(list(DOCS.glob("*.md")))


def importers_hit(query: str) -> dict:
    code, body, _ = cli("search", query, "--json")
    assert code == 0
    doc = fp.document_id(DOCS, "importers.md")
    hits = [h for h in body["results"] if h["documentId"] == doc]
    assert hits, f"docs/importers.md not found for {query!r}"
    return hits[0]


def test_docs_folder_is_searchable_by_a_heading() -> None:
    import_docs()
    hit = importers_hit(QUERY)
    assert hit["kind"] == "markdown" and hit["source"]["agent"] == "markdown"
    assert hit["source"]["project"] == "docs"
    code, body, _ = cli("read-markdown", "importers.md", "--heading", QUERY, "--json")
    assert code == 0 and body["headingPath"] == PATH
    assert body["text"].startswith("## Secret scrubbing (`scrub.py`)\n")


def test_markdown_fields_of_the_docs_hit(archive: Archive) -> None:
    """What search.py's one-line call computes for the hit, reproduced from its locator."""
    archive.import_paths([DOCS], fmt="markdown")
    engine = engine_of(archive)
    doc = fp.document_id(DOCS, "importers.md")
    [hit] = [h for h in archive.search({"query": QUERY}).hits() if h.document_id == doc]
    locator = engine.search_context().signer.verify(hit.locator)
    manifest = engine.reader.manifest(doc, hit.version)
    record = windows_of(engine.store, int(engine.reader.head(doc)["ordinal"]))[locator.window]
    fields = markdown_fields(manifest, record, locator.start)
    md = fields["markdown"]
    text = engine.reader.text(manifest)  # the file's text (its one secret-like example scrubbed)
    structure = analyze(text)
    section = structure.section_at(md["start"])
    assert section is not None and fields["headingPath"] == list(section.path)
    assert fields["headingPath"] == PATH
    assert md["lines"] == [
        structure.line_at(md["start"]),
        structure.last_line(md["start"], md["end"]),
    ]
    body = archive.call("markdown.read-entry", {"entry": fields["evidenceId"]})
    assert body["text"] == text[md["start"] : md["end"]]


def test_cw_search_hit_carries_the_heading_path() -> None:
    import_docs()
    hit = importers_hit(QUERY)
    assert hit["headingPath"] == PATH
    assert hit["evidenceId"].startswith(f"{hit['documentId']}#md:")
    md = hit["markdown"]
    assert md["relativePath"] == "importers.md" and md["page"] is None
    assert md["end"] - md["start"] <= 3_000
    code, body, _ = cli("read-entry", hit["evidenceId"], "--json")
    assert code == 0 and body["headingPath"] == PATH

"""The keyspace registry: one place allocates every key tag, tags never collide, the bytes on
disk never change, and every key a real archive holds belongs to a layout of its family."""

from __future__ import annotations

import re
from pathlib import Path

from cwcore.api import Archive
from cwcore.engine import store_path
from cwcore.hints import frozen
from cwcore.index import derived
from cwcore.index.postings import layout as postings
from cwcore.markdown import fingerprint
from cwcore.memory import records
from cwcore.retrieve import importance, locator
from cwcore.semantic import store as vectors
from cwcore.store import keys
from cwcore.store.rocks import FAMILIES, Store
from tests.helpers import conversation, write_jsonl

ROOT = Path(__file__).resolve().parents[1]

#: Every tag as archives written so far hold it. A change here breaks existing archives.
PINNED_TAGS = {
    "meta": 0x01,
    "event": 0x10,
    "event-source": 0x11,
    "document": 0x20,
    "document-head": 0x21,
    "message-document": 0x22,
    "chunk": 0x30,
    "chunk-owner": 0x31,
    "session": 0x40,
    "project-session": 0x41,
    "session-document": 0x42,
    "bucket-session": 0x43,
    "project": 0x44,
    "subject-live": 0x45,
    "session-order": 0x46,
    "project-session-order": 0x47,
    "session-native": 0x48,
    "ordinal": 0x50,
    "tombstone": 0x51,
    "outbox": 0x60,
    "request": 0x70,
    "supersession": 0x80,
    "unsupersession": 0x81,
    "bm25-term": 0x90,
    "bm25-block": 0x91,
    "bm25-manifest": 0x92,
    "bm25-doc": 0x93,
    "bm25-retired": 0x94,
    "window": 0xA0,
    "doc-windows": 0xA1,
    "exact": 0xA2,
    "relation": 0xA3,
    "importance": 0xA4,
    "session-wids": 0xA5,
    "lease": 0xB0,
    "recall-feedback": 0xB1,
    "hint": 0xC0,
    "hint-session": 0xC1,
    "hint-exposure": 0xC2,
    "hint-expiry": 0xC3,
    "hint-memory": 0xC4,
    "hint-meta": 0xCF,
    "memory": 0xD0,
    "memory-meta": 0xDF,
    "vector": 0xE0,
    "vector-content": 0xE1,
    "vector-state": 0xE2,
    "md-file": 0xF0,
    "md-root": 0xF1,
    "md-unit": 0xF2,
    "md-term": 0xF3,
    "md-stats": 0xF4,
}


def test_the_registry_is_a_safe_keyspace() -> None:
    assert keys.keyspace_problems() == []
    assert {e.family for e in keys.KEYSPACE} == set(FAMILIES) | {"default"}


def test_tags_and_versions_keep_their_bytes() -> None:
    assert {e.layout.name: e.layout.tag for e in keys.KEYSPACE} == PINNED_TAGS
    assert all(e.layout.version == 1 for e in keys.KEYSPACE)
    # Whole keys, byte for byte: tag, layout version, then the fields.
    assert keys.META.encode("schema") == bytes.fromhex("0101") + b"\x00\x06schema"
    assert keys.EVENT.encode("s", 7) == bytes.fromhex("1001 0001 73 0000000000000007")
    assert derived.WINDOW.encode(5) == bytes.fromhex("a001 00000005")
    assert postings.TERM.encode(2, 3, bytes(16)) == bytes.fromhex(
        "9001 00000002 0000000000000003" + "00" * 16
    )
    assert frozen.HINT.encode("s", "user:u") == bytes.fromhex("c001 0001 73 0006") + b"user:u"
    assert fingerprint.MD_STATS.encode("e") == bytes.fromhex("f401 0001 65")


def test_feature_modules_take_their_layouts_from_the_registry() -> None:
    assert (derived.WINDOW, derived.EXACT, derived.SESSION_WIDS) == (
        keys.WINDOW,
        keys.EXACT,
        keys.SESSION_WIDS,
    )
    assert postings.TERM is keys.BM25_TERM and postings.DOC is keys.BM25_DOC
    assert frozen.EXPOSURE is keys.HINT_EXPOSURE and frozen.MEMORY_TURN is keys.HINT_MEMORY
    assert records.MEMORY is keys.MEMORY and vectors.CONTENT is keys.VECTOR_CONTENT
    assert locator.LEASE is keys.LEASE and importance.FEEDBACK is keys.RECALL_FEEDBACK
    assert fingerprint.MD_TERM is keys.MD_TERM
    # No layout is defined anywhere else: a new one must be registered (and checked) here.
    outside = [
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "cwcore").rglob("*.py"))
        if path.name != "keys.py" and re.search(r"\bKeyLayout\(", path.read_text("utf-8"))
    ]
    assert outside == []


def _entry(family: str, name: str, tag: int, version: int = 1) -> keys.Namespace:
    layout = keys.KeyLayout(name, tag, ("str",), version)
    return keys.Namespace(family, layout, "-", "store" if tag < 0x90 else "")


def test_the_check_refuses_collisions() -> None:
    assert keys.keyspace_problems([_entry("a", "x", 0x10), _entry("a", "y", 0x11)]) == []
    same_tag = keys.keyspace_problems([_entry("a", "x", 0x10), _entry("b", "y", 0x10)])
    assert any("0x10" in p for p in same_tag)
    # A second version of one tag in one family: each head is two bytes, so they do not prefix
    # each other, but the tag is still taken twice.
    versions = keys.keyspace_problems([_entry("a", "x", 0x10), _entry("a", "y", 0x10, 2)])
    assert versions and all("prefix" not in p for p in versions)
    same_head = keys.keyspace_problems([_entry("a", "x", 0x10), _entry("a", "y", 0x10)])
    assert any("'x' keys are a prefix of 'y' keys" in p for p in same_head)
    assert keys.keyspace_problems([_entry("a", "x", 0x10), _entry("b", "x", 0x11)]) == [
        "layout name 'x' is registered twice"
    ]
    assert "no owner's range" in keys.keyspace_problems([_entry("a", "z", 0xF9)])[0]


def test_every_key_of_a_real_archive_belongs_to_its_family(cw_home: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "plan.md").write_text("# Plan\n\nparseConfig moves to src/config\n", "utf-8")
    with Archive.open(cw_home, embedded=True) as arch:
        arch.import_paths([write_jsonl(tmp_path / "a.jsonl", conversation("s1", 4))])
        arch.import_paths([notes], fmt="markdown")
        hits = arch.search({"query": "parseConfig ERR_0001"}).results
        assert hits
        assert arch.recall(hits[0].locator).status == "resolved"
        arch.supersede(hits[0].document_id, reason="reversed")
        arch.unsupersede(hits[0].document_id, reason="restored")
        arch.memory_add("Prefer bounded queues in the worker pool.")
        arch.preflight("where does parseConfig live now?", session="s2")
    heads = {(e.family, e.layout.prefix()) for e in keys.KEYSPACE}
    store = Store(store_path(cw_home))
    try:
        seen: set[str] = set()
        for family in FAMILIES:
            for key, _ in store.scan(family, b""):
                assert (family, key[:2]) in heads, f"{family} holds an unregistered key {key[:8]!r}"
                seen.add(family)
    finally:
        store.close()
    # The archive really exercised the layouts of most families (vectors need the model).
    # The archive exercised the layouts of every family but these: the outbox is drained, no
    # text here has relation spans, no request carried an id, and vectors need the model.
    assert set(FAMILIES) - seen == {"outbox", "relations", "requests", "vectors"}


START, END = "<!-- keyspace:start -->", "<!-- keyspace:end -->"


def keyspace_table() -> str:
    """The keyspace table of docs/architecture.md, rendered from the registry: families in
    store order (``default`` last), layouts by tag."""
    order = {family: n for n, family in enumerate((*FAMILIES, "default"))}
    rows = sorted(keys.KEYSPACE, key=lambda e: (order[e.family], e.layout.tag))
    lines = [
        "| family | tag | layout | fields | key → value | owner |",
        "|---|---|---|---|---|---|",
    ]
    for e in rows:
        fields = ", ".join(e.layout.fields)
        lines.append(
            f"| {e.family} | 0x{e.layout.tag:02X} | `{e.layout.name}` | {fields} | "
            f"{e.holds.replace('->', '→')} | {e.owner} |"
        )
    return "\n".join(lines)


def test_architecture_doc_shows_the_registry() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text("utf-8")
    shown = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert shown == keyspace_table(), (
        "docs/architecture.md's keyspace table is stale; replace it with the output of "
        "`.venv/bin/python -m tests.test_keyspace`"
    )


if __name__ == "__main__":
    print(keyspace_table())

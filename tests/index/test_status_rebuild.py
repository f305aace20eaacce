"""Index status stays consistent while a rebuild republishes, and partial documents drill down."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from cwcore.contract.index import PartialDocuments
from cwcore.engine import Engine
from cwcore.index import maintenance
from cwcore.methods import make_service
from cwcore.methods.index import index_status
from cwcore.semantic import store as vstore
from cwcore.store import codec
from cwcore.store.keys import KeyLayout
from tests.helpers import conversation, write_jsonl


def _engine(home: Path, tmp_path: Path, sessions: int = 3) -> Engine:
    engine = make_service(home)
    rows: list[dict[str, Any]] = []
    for n in range(sessions):
        rows += conversation(f"s{n}", 3)
    engine.call(
        "import",
        {"paths": [str(write_jsonl(tmp_path / "s.jsonl", rows))]},
        lambda e: None,
        __import__("threading").Event(),
    )
    return engine


def _embedded_everything(engine: Engine) -> int:
    """Pretend the semantic handler embedded every published window (its stored state)."""
    status = index_status(engine).to_json()
    total = int(status["windows"])
    batch = engine.store.batch()
    vstore.put_state(
        batch, {"cursor": total, "model": "m", "mode": "window", "windows": total, "rows": total}
    )
    engine.store.commit(batch)
    return total


def test_status_during_a_rebuild_never_claims_more_than_it_has(
    cw_home: Path, tmp_path: Path
) -> None:
    engine = _engine(cw_home, tmp_path)
    try:
        total = _embedded_everything(engine)
        before = index_status(engine).to_json()
        assert before["complete"] and before.get("rebuild") is None
        assert before["semantic"]["embedded"] == total > 0

        queued = maintenance.rebuild(engine.store, engine.indexer)
        during = index_status(engine).to_json()
        # Nothing republished yet: never "N / 0 windows embedded (100%)", never complete.
        sem = during["semantic"]
        assert sem["embedded"] <= sem["total"] == 0
        assert sem["state"] == "revalidating" and sem["progress"] == 0.0
        assert during["complete"] is False
        # The rebuild says how far it is.
        assert during.get("rebuild") == {
            "queued": queued,
            "done": 0,
            "started": during["rebuild"]["started"],
        }

        engine.indexer.run_once(max_entries=1)
        midway = index_status(engine).to_json()
        assert midway["complete"] is False and midway["rebuild"]["done"] == 1
        assert midway["semantic"]["embedded"] <= midway["semantic"]["total"]
        assert midway["semantic"]["state"] == "revalidating"

        engine.indexer.drain()
        after = index_status(engine).to_json()
        assert after["complete"] is True and after["rebuild"] is None
        assert after["documents"] == before["documents"]
    finally:
        engine.close()


def test_partial_documents_list_their_outcomes_and_caps(cw_home: Path, tmp_path: Path) -> None:
    engine = _engine(cw_home, tmp_path, sessions=4)
    try:
        assert maintenance.partial_documents(engine.store).documents == ()
        # Mark two applied markers partial / skipped, as a capped document would leave them.
        family = "windows"
        from cwcore.index.derived import DOC_WINDOWS

        layout: KeyLayout = DOC_WINDOWS
        markers = list(engine.store.scan(family, layout.prefix()))
        assert len(markers) >= 3
        batch = engine.store.batch()
        for (key, value), outcomes in zip(
            markers[:2],
            ({"bm25": "partial"}, {"exact": "skipped", "structural": "skipped"}),
            strict=False,
        ):
            mark = codec.decode_record(value)
            mark["outcomes"] = {**mark["outcomes"], **outcomes}
            batch.put(family, key, codec.encode_record(mark))
        engine.store.commit(batch)

        body = maintenance.partial_documents(engine.store)
        docs = body.documents
        assert [d.ordinal for d in docs] == [int(layout.decode(k)[0]) for k, _ in markers[:2]]
        assert dict(docs[0].outcomes)["bm25"] == "partial"
        assert "16,000" in dict(docs[0].caps)["bm25"]
        assert {h for h, _ in docs[1].caps} == {"exact", "structural"}
        assert docs[0].state == "live" and body.next is None
        # Bounded: one at a time, resuming from ``next``.
        first = maintenance.partial_documents(engine.store, limit=1)
        assert len(first.documents) == 1 and first.next is not None
        rest = maintenance.partial_documents(engine.store, limit=1, after=first.next)
        assert rest.documents[0].document_id == docs[1].document_id
        scan_capped = maintenance.partial_documents(engine.store, max_scan=1)
        assert scan_capped.scanned == 1 and scan_capped.next is not None
        through_engine = engine.call(
            "index.partial", {"limit": 5}, lambda e: None, __import__("threading").Event()
        )
        assert len(through_engine["documents"]) == 2
        assert PartialDocuments.from_json(through_engine).to_json() == through_engine
    finally:
        engine.close()

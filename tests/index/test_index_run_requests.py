"""``index.run`` and ``index.rebuild`` as declared methods: ``wait`` is checked (a wrong type
names the key), the answer is the index status, and ``index.run`` reports its progress to the
caller as it goes."""

from __future__ import annotations

from typing import Any

import pytest

from cwcore.api import Archive
from cwcore.contract.index import IndexRunRequest, IndexStatus, RebuildRequest
from cwcore.errors import InvalidInput


@pytest.mark.parametrize("method", ["index.run", "index.rebuild"])
def test_wait_must_be_a_boolean(archive: Archive, method: str) -> None:
    with pytest.raises(InvalidInput, match=r"^wait must be true or false$"):
        archive.call(method, {"wait": "yes"})


def test_run_reports_progress_and_answers_the_status(archive: Archive) -> None:
    events: list[dict[str, Any]] = []
    status = archive.index_run(wait=True, on_event=events.append)
    assert isinstance(status, IndexStatus) and status.queued is None
    assert [e["type"] for e in events if e.get("type") == "progress"]
    assert status.to_json() == archive.call("index.run", {})  # nothing left: the same status


def test_rebuild_answers_what_it_queued(archive: Archive) -> None:
    status = archive.index_rebuild(wait=True)
    assert status.queued == 0 and status.complete
    assert archive.call("index.rebuild", {"wait": True})["queued"] == 0


def test_the_wire_keys_are_kept() -> None:
    assert IndexRunRequest().to_json() == {"wait": False}
    assert RebuildRequest.parse({"wait": True}) == RebuildRequest(True)

"""Locators bind content identity: after ``cw forget`` and a re-import of other text under the same
ids (versions restart at 1), an old locator answers ``expired`` — never the new bytes."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

from cwcore.api import Archive
from cwcore.retrieve.locator import load_key
from tests.helpers import write_jsonl


def _rows(text: str) -> list[dict[str, Any]]:
    return [
        {
            "session": "s1",
            "id": "u1",
            "role": "user",
            "text": text,
            "project": "p",
            "timestamp": "2026-11-10T10:00:00Z",
        },
        {
            "session": "s1",
            "id": "a1",
            "role": "assistant",
            "text": "noted",
            "timestamp": "2026-11-10T10:01:00Z",
        },
    ]


OLD = "the reaper uses REAP_DRAIN before shutdown"
NEW = "REAP_DRAIN is now a password field: hunter2-secret"


def _reimport(archive: Archive, tmp_path: Path, text: str, name: str) -> None:
    archive.forget("s1")
    archive.import_paths([write_jsonl(tmp_path / name, _rows(text))])


def _as_first_format(locator: str, home: Path) -> str:
    """The same pointer as a ``cwl1`` locator (no digest, MAC over the payload alone), as cw
    issued them before content identity was bound."""
    _, body, _ = locator.split(".")
    payload = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    payload.pop("h", None)
    raw = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    mac = hmac.new(load_key(home), raw, hashlib.sha256).digest()[:16]

    def b64(data: bytes) -> str:
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

    return f"cwl1.{b64(raw)}.{b64(mac)}"


def test_old_locator_after_forget_and_reimport_of_other_text_is_expired(
    archive: Archive, tmp_path: Path, cw_home: Path
) -> None:
    archive.import_paths([write_jsonl(tmp_path / "old.jsonl", _rows(OLD))])
    hit = archive.search({"query": "REAP_DRAIN"}).results[0]
    assert archive.recall(hit.locator).status == "resolved"
    first_format = _as_first_format(hit.locator, cw_home)
    assert archive.recall(first_format).status == "resolved"  # old locators still work

    _reimport(archive, tmp_path, NEW, "new.jsonl")
    again = archive.search({"query": "REAP_DRAIN"}).results[0]
    assert (again.document_id, again.version) == (hit.document_id, hit.version)

    for locator in (hit.locator, first_format):
        body = archive.recall(locator, max_tokens=100_000)
        assert body.status in ("expired", "missing"), body
        assert "hunter2" not in json.dumps(body.to_json())
    fresh = archive.recall(again.locator).source  # the new locator is fine
    assert fresh is not None and "hunter2" in fresh.text


def test_reimport_of_the_same_text_keeps_the_old_locator_valid(
    archive: Archive, tmp_path: Path
) -> None:
    archive.import_paths([write_jsonl(tmp_path / "old.jsonl", _rows(OLD))])
    hit = archive.search({"query": "REAP_DRAIN"}).results[0]
    _reimport(archive, tmp_path, OLD, "same.jsonl")
    body = archive.recall(hit.locator)
    assert body.status == "resolved" and body.source is not None and OLD in body.source.text


def test_continuation_locators_bind_the_same_content(archive: Archive, tmp_path: Path) -> None:
    long_text = " ".join(f"word{i} REAP_DRAIN" if i == 400 else f"word{i}" for i in range(800))
    archive.import_paths([write_jsonl(tmp_path / "long.jsonl", _rows(long_text))])
    hit = archive.search({"query": "REAP_DRAIN"}).results[0]
    body = archive.recall(hit.locator, max_tokens=60)
    after = body.continuation.after
    assert after
    assert archive.recall(after).status == "resolved"
    _reimport(archive, tmp_path, long_text.replace("word", "other"), "other.jsonl")
    assert archive.recall(after).status in ("expired", "missing")

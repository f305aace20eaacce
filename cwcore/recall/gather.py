"""Gather: anchor evidence from explicit search plus its chronological neighbours.

Each anchor is a search hit (score, band, match type, locator); ``before``/``after`` hold the
neighbouring live documents of the same session in order (the messages just before and after
the hit: the rest of its turn, or the turns around it), as context: they carry no score or
band. Neighbour text is cut to :data:`NEIGHBOR_CHARS` characters.
"""

from __future__ import annotations

from typing import Any

from cwcore.retrieve.request import SearchRequest
from cwcore.retrieve.search import SearchContext, search
from cwcore.store.reader import Reader

NEIGHBOR_CHARS = 1_200


def neighbor(reader: Reader, head: dict[str, Any]) -> dict[str, Any]:
    """A neighbouring turn as context: its id, kind, time, message keys and its text's start
    (cut to :data:`NEIGHBOR_CHARS` characters, ``truncated`` saying so)."""
    manifest = reader.manifest(head["documentId"], int(head["version"]))
    data = reader.read_bytes(manifest, 0, NEIGHBOR_CHARS * 4)
    text = data.decode("utf-8", "ignore")
    return {
        "documentId": head["documentId"],
        "kind": head["kind"],
        "created": manifest["created"],
        "messageKeys": [p["key"] for p in manifest["parts"]],
        "text": text[:NEIGHBOR_CHARS],
        "truncated": len(text) > NEIGHBOR_CHARS or int(manifest["bytes"]) > len(data),
        "historical": True,
    }


def gather(ctx: SearchContext, req: SearchRequest, around: int = 1) -> dict[str, Any]:
    found = search(ctx, req).to_json()
    evidence = []
    cache: dict[str, list[dict[str, Any]]] = {}
    for hit in found["results"]:
        session = hit["source"]["sessionId"]
        if session not in cache:
            cache[session] = [
                h
                for h in ctx.reader.session_heads(session)
                if h["kind"] in ("turn", "tool-result", "decision")
            ]
        turns = cache[session]
        index = next((i for i, h in enumerate(turns) if h["documentId"] == hit["documentId"]), None)
        before: list[dict[str, Any]] = []
        after: list[dict[str, Any]] = []
        if index is not None and around:
            before = [neighbor(ctx.reader, h) for h in turns[max(0, index - around) : index]]
            after = [neighbor(ctx.reader, h) for h in turns[index + 1 : index + 1 + around]]
        evidence.append({**hit, "before": before, "after": after})
    return {**found, "results": evidence}

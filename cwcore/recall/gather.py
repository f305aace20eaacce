"""Gather: anchor evidence from explicit search plus its chronological neighbours.

Each anchor is a search hit (score, band, match type, locator); ``before``/``after`` hold the
neighbouring live documents of the same session in order (the messages just before and after
the hit: the rest of its turn, or the turns around it), as context: they carry no score or
band. Neighbour text is cut to :data:`NEIGHBOR_CHARS` characters.
"""

from __future__ import annotations

from typing import Any

from cwcore.contract.context import Neighbor
from cwcore.contract.gather import GatherAnchor, GatherResponse
from cwcore.contract.search import SearchHit, SearchRequest
from cwcore.retrieve.search import SearchContext, search
from cwcore.store.reader import Reader
from cwcore.store.records import DocumentHead

NEIGHBOR_CHARS = 1_200


def neighbor(reader: Reader, head: DocumentHead) -> Neighbor:
    """A neighbouring turn as context: its id, kind, time, message keys and its text's start
    (cut to :data:`NEIGHBOR_CHARS` characters, ``truncated`` saying so)."""
    manifest = reader.manifest(head["documentId"], int(head["version"]))
    data = reader.read_bytes(manifest, 0, NEIGHBOR_CHARS * 4)
    text = data.decode("utf-8", "ignore")
    return Neighbor(
        document_id=head["documentId"],
        kind=head["kind"],
        created=manifest["created"],
        message_keys=tuple(p["key"] for p in manifest["parts"]),
        text=text[:NEIGHBOR_CHARS],
        truncated=len(text) > NEIGHBOR_CHARS or int(manifest["bytes"]) > len(data),
    )


def gather(ctx: SearchContext, req: SearchRequest, around: int = 1) -> GatherResponse:
    """The search of ``req`` with up to ``around`` neighbours on each side of every hit."""
    found = search(ctx, req)
    # Window hits first, then the Markdown evidence that filled a short page: the search's order.
    rows: list[tuple[SearchHit | None, dict[str, Any] | None, str, str]] = [
        (hit, None, hit.source.session_id, hit.document_id) for hit in found.results
    ] + [(None, e, e["source"]["sessionId"], e["documentId"]) for e in found.evidence]
    anchors = []
    cache: dict[str, list[DocumentHead]] = {}
    for hit, evidence, session, document_id in rows:
        if session not in cache:
            cache[session] = [
                h
                for h in ctx.reader.session_heads(session)
                if h["kind"] in ("turn", "tool-result", "decision")
            ]
        turns = cache[session]
        index = next((i for i, h in enumerate(turns) if h["documentId"] == document_id), None)
        before: tuple[Neighbor, ...] = ()
        after: tuple[Neighbor, ...] = ()
        if index is not None and around:
            before = tuple(neighbor(ctx.reader, h) for h in turns[max(0, index - around) : index])
            after = tuple(neighbor(ctx.reader, h) for h in turns[index + 1 : index + 1 + around])
        anchors.append(GatherAnchor(hit, before, after, evidence=evidence))
    return GatherResponse(found, tuple(anchors))

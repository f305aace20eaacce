"""Markdown evidence in explicit search: paragraphs the windows do not cover.

A window keeps every term it holds, so the only Markdown text the window index cannot find is a
document's tail past its 4,096th window. Those paragraphs are kept as lexical evidence units
(:mod:`cwcore.markdown.evidence`). When the window hits leave a page short of ``limit``, the
evidence units that match fill it — after every window hit, as lexical evidence only — within
the evidence search's own bounds (the engine's :class:`~cwcore.markdown.limits.Limits`: by
default 30 units ranked; at most 20 returned, 3,000 characters an excerpt, 16,000 in all). Each
gets the hit contract's fields and a locator over its exact byte range, which recall
materializes directly.
"""

from __future__ import annotations

from typing import Any

from cwcore.contract.search import SearchRequest
from cwcore.markdown.limits import Limits
from cwcore.retrieve.locator import Locator, Signer, create_lease
from cwcore.retrieve.scope import Scope
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.store.rocks import Store

#: The most evidence hits one page takes (the evidence search's own cap).
MAX_EVIDENCE = 20


def applies(req: SearchRequest) -> bool:
    """Evidence units are whole Markdown paragraphs: no role, relation or non-Markdown kind."""
    return (
        bool(req.query)
        and req.relation is None
        and req.role is None
        and req.kind
        in (
            None,
            "markdown",
        )
    )


def evidence_hits(
    store: Store,
    reader: Reader,
    signer: Signer,
    lease_minutes: float,
    req: SearchRequest,
    scope: Scope,
    wanted: int,
    generation: int,
    taken: set[str],
    limits: Limits | None = None,
) -> list[dict[str, Any]]:
    """Up to ``wanted`` evidence hits (JSON, the search hit contract) for documents not in
    ``taken``."""
    from cwcore.markdown import evidence

    if wanted <= 0 or not evidence.stats(store)["units"]:
        return []
    sessions = sorted(scope.sessions) if scope.sessions is not None else None
    found = evidence.search(
        store,
        reader,
        req.query or "",
        project=scope.project,
        sessions=sessions,
        limit=min(MAX_EVIDENCE, wanted + len(taken)),
        limits=limits,
    )["results"]
    hits = [h for h in found if h["documentId"] not in taken][:wanted]
    if not hits:
        return []
    lease, expires = create_lease(store, lease_minutes, [h["documentId"] for h in hits])
    out = []
    for hit in hits:
        manifest = reader.manifest(hit["documentId"], int(hit["version"]))
        span = hit["markdown"]
        start, end = _bytes_of(reader, manifest, int(span["start"]), int(span["end"]))
        key = manifest["parts"][0]["key"] if manifest["parts"] else ""
        locator = signer.sign(
            Locator(
                hit["documentId"],
                int(hit["version"]),
                -1,  # no window holds it: recall reads the match range itself
                start,
                end,
                generation,
                lease,
                expires,
                manifest["project"],
                manifest["session"],
                req.scope,
                str(manifest["digest"]),
            )
        )
        source = dict(hit.get("source") or {})
        source.update(
            {
                "turnId": hit["documentId"],
                "messageKey": key,
                "timestamp": manifest.get("created"),
            }
        )
        out.append(
            {
                **hit,
                "margin": 0.0,
                "highlights": [],
                "historical": True,
                "superseded": False,
                "locator": locator,
                "reranked": False,
                "expandedTerms": [],
                "source": source,
            }
        )
    return out


def _bytes_of(reader: Reader, manifest: Manifest, start: int, end: int) -> tuple[int, int]:
    """UTF-8 byte offsets of a character range of the document text."""
    text = reader.text(manifest)
    lo = len(text[:start].encode("utf-8", "surrogatepass"))
    return lo, lo + len(text[start:end].encode("utf-8", "surrogatepass"))

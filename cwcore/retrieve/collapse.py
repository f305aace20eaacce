"""Distinct source locations: one hit per document, no copies.

Candidates arrive in their final tier order (exact, structural, then the fused lexical/semantic
tier). A candidate is dropped when an earlier one already stands for the same source:

* the same document: each document is one hit, its best-ranked window (so two overlapping
  windows of a document never both appear);
* an old-layout tool-result document and its turn: the turn's text repeats the tool output's
  bytes (the same physical chunks);
* exactly the same text: the windows' text digests are equal (the same message imported twice,
  or copied between sessions).

The collapse runs before the reranker, so the cross-encoder's candidates are distinct sources.
"""

from __future__ import annotations

from collections.abc import Iterable

from cwcore.retrieve.results import Ranked


def collapse(ordered: Iterable[Ranked]) -> list[Ranked]:
    kept: list[Ranked] = []
    docs: set[str] = set()
    texts: set[str] = set()
    for item in ordered:
        record = item.record
        doc = record["documentId"]
        alias = record["turn"] if record.get("alias") else None
        digest = record.get("textDigest")
        if doc in docs or (alias and alias in docs) or (digest and digest in texts):
            continue
        docs.add(doc)
        if alias:
            docs.add(alias)
        if digest:
            texts.add(digest)
        kept.append(item)
    return kept

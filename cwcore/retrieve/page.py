"""The page of explicit search: the collapsed candidates made into :class:`SearchHit` records.

:func:`materialize` reads each hit's window once (through the request's text reader), builds
its snippet around the matched spans, leaves out a hit whose snippet reads exactly as an earlier
one's (the same tool output read four times shows once; the next candidate takes its place),
signs the locators under one lease for the whole page, and attaches the score breakdown
(:func:`score_metadata`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cwcore.contract.search import (
    SearchHit,
    Source,
)
from cwcore.index.derived import StoredWindow
from cwcore.retrieve.candidates import Candidate
from cwcore.retrieve.locator import Locator, Signer, create_lease
from cwcore.retrieve.snippets import (
    SNIPPET_CHARS,
    fit_snippet,
    form_spans,
    literal_spans,
    make_snippet,
    term_spans,
    with_forms,
)
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.store.rocks import Store

TIER = {"exact": 0, "structural": 1, "lexical": 2, "semantic": 2}


@dataclass(frozen=True)
class _Draft:
    """A page hit before its locator: the window's manifest, its snippet and where it matched."""

    item: Ranked
    manifest: Manifest
    snippet: str
    highlights: list[list[int]]
    lo: int  # the first match's character span in the window's text
    hi: int
    text: str
    #: The snippet at the full width, whatever the page's budget: what "reads the same" compares
    #: ("" when the page keeps repeats).
    reads: str


@dataclass(frozen=True)
class Ranked:
    """A candidate that survived the collapse, with its window record and fusion trace."""

    cand: Candidate
    record: StoredWindow
    trace: dict[str, Any] = field(default_factory=dict)


def materialize(
    store: Store,
    reader: Reader,
    signer: Signer,
    lease_minutes: float,
    ranked: list[Ranked],
    *,
    generation: int,
    scope: str,
    search_terms: list[str],
    idfs: dict[str, float],
    stems: Sequence[str] = (),
    budget_tokens: int | None = None,
    texts: Callable[[int], tuple[Manifest, str]] | None = None,
    hit_chars: int | None = None,
    result_chars: int | None = None,
    limit: int | None = None,
    distinct: bool = True,
    stages: dict[str, Any] | None = None,
) -> tuple[SearchHit, ...]:
    """Snippets, locators (one lease for the page) and provenance for the first ``limit`` hits
    of ``ranked`` (default: all). With ``distinct``, a hit whose snippet reads exactly as an
    earlier one's at the full snippet width (:data:`SNIPPET_CHARS`, white space aside, whatever
    width a budget leaves the page) is left out and the next of ``ranked`` is taken: it would
    show the reader nothing new (the collapse already dropped windows of equal text; this catches
    the same passage in windows that differ elsewhere). Each window's text is read once.
    ``budget_tokens`` (the request's ``hintBudgetTokens``) bounds the page's snippets together,
    by the conservative token estimator: each hit's snippet gets an equal share and is narrowed
    until it fits. ``texts`` (the search's
    :meth:`~cwcore.retrieve.candidates.Visible.text`) serves windows another stage already
    read. ``hit_chars`` caps each snippet and ``result_chars`` all of them together (spec 004:
    per-hit 3,000, result 16,000 characters): each gets an equal share of the result's.
    ``stems``: the search's stem terms, whose words are highlighted beside the search terms.
    ``stages`` (the search's trace) gets ``repeatedPassages``, the hits left out as repeats,
    when there were any."""
    slots = len(ranked) if limit is None else min(limit, len(ranked))
    if not slots:
        return ()
    share = None if budget_tokens is None else budget_tokens // slots
    cap = 1 << 62  # the hard cap of one snippet, characters
    if hit_chars is not None:
        cap = min(cap, hit_chars)
    if result_chars is not None:
        cap = min(cap, result_chars // slots)
    drafts: list[_Draft] = []
    shown: set[str] = set()
    repeated = 0
    for item in ranked:
        if len(drafts) >= slots:
            break
        draft = _draft(item, reader, texts, search_terms, stems, idfs, share, cap, distinct)
        if distinct:
            reads = " ".join(draft.reads.split())
            if reads in shown:
                repeated += 1
                continue
            shown.add(reads)
        drafts.append(draft)
    if repeated and stages is not None:
        stages["repeatedPassages"] = repeated
    lease, expires = create_lease(
        store, lease_minutes, [d.item.record["documentId"] for d in drafts]
    )
    scores = [d.item.cand.score for d in drafts]
    hits = []
    for i, draft in enumerate(drafts):
        cand, record, manifest = draft.item.cand, draft.item.record, draft.manifest
        snippet, highlights, lo, hi = draft.snippet, draft.highlights, draft.lo, draft.hi
        if not draft.text.isascii():  # character offsets to byte offsets
            lo = len(draft.text[:lo].encode("utf-8", "surrogatepass"))
            hi = len(draft.text[:hi].encode("utf-8", "surrogatepass"))
        match_start, match_end = record["byteStart"] + lo, record["byteStart"] + hi
        message_key = _message_at(manifest, match_start) or (
            record["keys"][0] if record["keys"] else ""
        )
        others = [s for j, s in enumerate(scores) if j != i]
        locator = signer.sign(
            Locator(
                record["documentId"],
                int(record["version"]),
                int(record["index"]),
                match_start,
                match_end,
                generation,
                lease,
                expires,
                record["project"],
                record["session"],
                scope,
                str(manifest["digest"]),
            )
        )
        extra: dict[str, Any] = {}
        if record["kind"] == "markdown":
            from cwcore.markdown.hits import markdown_fields

            extra = markdown_fields(manifest, record, match_start)
        hits.append(
            SearchHit(
                document_id=record["documentId"],
                version=int(record["version"]),
                kind=record["kind"],
                score=cand.score,
                match_type=cand.match_type,
                margin=round(max(0.0, cand.score - max(others, default=0.0)), 4),
                snippet=snippet,
                highlights=tuple((int(a), int(b)) for a, b in highlights),
                locator=locator,
                reranked=cand.reranked,
                matched_terms=tuple(cand.matched_terms),
                expanded_terms=tuple(cand.expanded_terms),
                score_metadata=score_metadata(cand, draft.item.trace),
                source=Source(
                    session_id=record["session"],
                    turn_id=record.get("turn") or record["documentId"],
                    message_key=message_key,
                    message_keys=tuple(record["keys"]),
                    project=record["project"],
                    agent=record["agent"],
                    timestamp=_timestamp(manifest, message_key) or record["created"],
                ),
                extra=extra,
            )
        )
    return tuple(hits)


def _draft(
    item: Ranked,
    reader: Reader,
    texts: Callable[[int], tuple[Manifest, str]] | None,
    search_terms: list[str],
    stems: Sequence[str],
    idfs: dict[str, float],
    share: int | None,
    cap: int,
    compare: bool,
) -> _Draft:
    """One hit's window read, its matched spans found and its snippet made (see
    :func:`materialize` for the arguments); with ``compare``, also what it reads as at the full
    snippet width."""
    cand, record = item.cand, item.record
    if texts is not None:
        manifest, text = texts(cand.wid)
    else:
        manifest = reader.manifest(record["documentId"], int(record["version"]))
        data = reader.read_bytes(manifest, record["byteStart"], record["byteEnd"])
        text = data.decode("utf-8", "surrogatepass")
    if cand.literals:
        spans = literal_spans(text, cand.literals)
    elif cand.spans:
        spans = [
            (s - record["start"], e - record["start"])
            for s, e in cand.spans
            if record["start"] <= s < record["end"]
        ]
    else:
        spans = term_spans(text, search_terms or cand.matched_terms)
        if stems:  # the other forms the stem terms matched
            spans = with_forms(spans, form_spans(text, stems))
    if share is None:
        snippet, highlights = make_snippet(
            text, spans, width=max(1, min(SNIPPET_CHARS, cap)), weights=idfs
        )
    else:
        snippet, highlights = fit_snippet(text, spans, share, weights=idfs)
    snippet, highlights = _capped(snippet, highlights, cap)
    reads = snippet if compare else ""
    if compare and (share is not None or cap < SNIPPET_CHARS):
        reads = make_snippet(text, spans, width=SNIPPET_CHARS, weights=idfs)[0]
    lo, hi = spans[0] if spans else (0, 0)
    return _Draft(item, manifest, snippet, highlights, lo, hi, text, reads)


def _capped(snippet: str, highlights: list[list[int]], cap: int) -> tuple[str, list[list[int]]]:
    """At most ``cap`` characters: a snippet widened to whole words (and its ellipses) past a
    cap narrower than :data:`SNIPPET_CHARS` is cut back; highlights past the cut are dropped."""
    if len(snippet) <= cap:
        return snippet, highlights
    return snippet[:cap], [h for h in highlights if h[1] <= cap]


def _message_at(manifest: Manifest, byte_pos: int) -> str | None:
    for part in manifest["parts"]:
        if part["start"] <= byte_pos < max(part["end"], part["start"] + 1):
            return str(part["key"])
    return None


def _timestamp(manifest: Manifest, key: str) -> str | None:
    for part in manifest["parts"]:
        if part["key"] == key:
            ts = part.get("ts")
            return str(ts) if ts is not None else None
    return None


def score_metadata(cand: Candidate, trace: dict[str, Any]) -> dict[str, Any]:
    """Each stage's value with its type and direction (``score_metadata``: every stage states
    whether higher or lower is better and what kind of number it is)."""
    raw_type = {
        "exact": "anchor-coverage",
        "lexical": "bm25f",
        "structural": "bm25f",
        "semantic": "cosine",
    }[cand.mode]
    stages: list[dict[str, Any]] = [
        {
            "stage": cand.mode,
            "type": raw_type,
            "direction": "higher-is-better",
            "value": round(cand.raw, 6),
        },
        {
            "stage": "calibrated",
            "type": "calibrated-confidence",
            "direction": "higher-is-better",
            "value": cand.score,
        },
    ]
    if trace:
        stages += [
            {
                "stage": "fusion",
                "type": "rrf-blend",
                "direction": "higher-is-better",
                "value": trace["fused"],
                "ranks": trace["ranks"],
            },
            {
                "stage": "importance",
                "type": "multiplier",
                "direction": "higher-is-better",
                "value": trace["importance"],
            },
        ]
    return {"mode": cand.mode, "tier": TIER[cand.mode], "presented": "calibrated", "stages": stages}

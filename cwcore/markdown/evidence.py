"""Lexical evidence for Markdown paragraphs the search windows do not cover.

The BM25 index (:mod:`cwcore.index.windows`, :mod:`cwcore.index.fields`) cuts a document into
windows of at most ``window_tokens`` tokens and 256 distinct terms that overlap by
``window_overlap`` (900 and 15 %), and keeps at most 4,096 windows per document. A window keeps
every term it holds, so an occurrence of a term is *uncovered* when it lies past the last
window (or, defensively, when an analysis cap dropped its term from every window holding it).
A query for such a term would not find the paragraph through the windows.

This module re-runs the index's own analysis (the same tokenizer, :func:`~cwcore.index.windows.cut`
and :func:`~cwcore.index.fields.analyze` with the store's window settings) when a Markdown
document is imported, and keeps the uncovered occurrences as **evidence units**:

1. An occurrence is *covered* when ANY window whose analyzed token range contains it kept its
   term. Coverage is decided per occurrence over all windows at once, so the 15 % overlap —
   where a paragraph sits in two windows — never yields two decisions or two copies.
2. Uncovered occurrences are grouped by paragraph block (:mod:`cwcore.markdown.parse`; blocks
   tile the text, so each occurrence belongs to exactly one block).
3. Blocks holding uncovered occurrences that are contiguous (block ``i`` and ``i + 1``) are
   merged into one unit (up to :data:`~cwcore.markdown.limits.RESULT_CHARS` characters, split
   at block boundaries beyond that). Units are therefore disjoint character ranges: no text
   is indexed twice, neither across window boundaries nor across units.
4. A unit's terms are its *uncovered occurrences only*: an occurrence some window indexes is
   never indexed again here. Window postings plus unit postings count every token occurrence
   of the text at least once, and each uncovered one exactly once.

Units are stored per document version (``md-unit``/``md-term`` keys, see
:mod:`cwcore.markdown.fingerprint`), replaced when a new version is admitted, and searched by
:func:`search` with plain BM25 over units (a unit's length is its uncovered occurrence count).
A hit on a superseded or forgotten version is never returned: each unit is checked against the
live document head.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any

from cwcore.index import fields as index_fields
from cwcore.index.windows import cut
from cwcore.markdown import fingerprint as fp
from cwcore.markdown import hits as md_hits
from cwcore.markdown.limits import RESULT_CHARS, Limits, clamp_hits
from cwcore.store import codec, keys
from cwcore.store.reader import Reader
from cwcore.store.records import DocumentHead, Manifest, decode_head
from cwcore.store.rocks import Batch, Store
from cwcore.text.tokenize import Token, tokens, tokens_with_offsets

#: Units kept per document version, and term-unit postings per document version.
MAX_UNITS = 4_096
MAX_POSTINGS = 65_536
#: Postings read per query term (newest documents are not preferred: key order is by digest).
MAX_TERM_SCAN = 20_000
MAX_QUERY_TERMS = 64
K1 = 1.2
B = 0.75


@dataclass(frozen=True)
class Unit:
    start: int  # character offsets
    end: int
    terms: dict[str, int]
    byte_start: int = 0
    byte_end: int = 0

    @property
    def length(self) -> int:
        return sum(self.terms.values())


@dataclass
class Coverage:
    units: list[Unit] = field(default_factory=list)
    tokens: int = 0
    uncovered: int = 0
    windows: int = 0
    truncated: bool = False  # the index keeps fewer windows than the text needs
    partial: bool = False  # unit or posting limits dropped some evidence

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "uncovered": self.uncovered,
            "windows": self.windows,
            "units": len(self.units),
            "windowsTruncated": self.truncated,
            "partial": self.partial,
        }


def covered_mask(
    toks: list[Token], text: str, window_tokens: int, overlap: float
) -> tuple[bytearray, int, bool]:
    """1 for each token occurrence some window indexes, as the index itself analyzes them."""
    windows, truncated = cut(
        text, toks, window_tokens, overlap, max_unique=index_fields.MAX_UNIQUE_TERMS
    )
    spans = [index_fields.PartSpan(0, len(text), "system", "text")]
    analyzed = index_fields.analyze(
        toks, windows, spans, [], kind="markdown", decision_candidate=False
    )
    mask = bytearray(len(toks))
    for window, terms in zip(windows, analyzed, strict=True):
        kept = terms.tfs
        last = min(window.last_token, window.first_token + index_fields.MAX_OCCURRENCES)
        for i in range(window.first_token, last):
            if not mask[i] and toks[i][0] in kept:
                mask[i] = 1
    return mask, len(windows), truncated


def merge_blocks(
    blocks: list[int], text_end: int, marked: list[int], max_chars: int = RESULT_CHARS
) -> list[tuple[int, int, list[int]]]:
    """Merge contiguous marked block indexes into ``(start, end, block indexes)`` ranges."""
    out: list[tuple[int, int, list[int]]] = []
    for b in marked:
        start = blocks[b]
        end = blocks[b + 1] if b + 1 < len(blocks) else text_end
        if out and out[-1][2][-1] == b - 1 and end - out[-1][0] <= max_chars:
            out[-1] = (out[-1][0], end, [*out[-1][2], b])
        else:
            out.append((start, end, [b]))
    return out


def uncovered_units(
    text: str, blocks: list[int], *, window_tokens: int, window_overlap: float
) -> Coverage:
    """The evidence units of ``text`` (see the module docstring)."""
    toks = tokens_with_offsets(text)
    mask, windows, truncated = covered_mask(toks, text, window_tokens, window_overlap)
    result = Coverage(tokens=len(toks), windows=windows, truncated=truncated)
    if not blocks:
        return result
    per_block: dict[int, dict[str, int]] = {}
    for i, (term, start, _end) in enumerate(toks):
        if mask[i]:
            continue
        b = bisect.bisect_right(blocks, start) - 1
        counts = per_block.setdefault(b, {})
        counts[term] = counts.get(term, 0) + 1
        result.uncovered += 1
    ranges = merge_blocks(blocks, len(text), sorted(per_block))
    byte_at = _byte_offsets(text, sorted({p for s, e, _ in ranges for p in (s, e)}))
    postings = 0
    for start, end, members in ranges:
        terms: dict[str, int] = {}
        for b in members:
            for term, n in per_block[b].items():
                terms[term] = terms.get(term, 0) + n
        if len(result.units) >= MAX_UNITS or postings + len(terms) > MAX_POSTINGS:
            result.partial = True
            break
        postings += len(terms)
        result.units.append(Unit(start, end, terms, byte_at[start], byte_at[end]))
    return result


def _byte_offsets(text: str, positions: list[int]) -> dict[int, int]:
    out: dict[int, int] = {}
    size = last = 0
    for pos in positions:
        size += len(text[last:pos].encode("utf-8", "surrogatepass"))
        last = pos
        out[pos] = size
    return out


def term_digest(term: str) -> bytes:
    return keys.digest16("md-term", term)


# -- storage ---------------------------------------------------------------------------------


def stats(store: Store) -> dict[str, int]:
    record = fp.get(store, fp.MD_STATS, "evidence") or {}
    return {"units": int(record.get("units", 0)), "length": int(record.get("length", 0))}


def replace_units(
    store: Store,
    batch: Batch,
    document_id: str,
    version: int,
    units: list[Unit],
    totals: dict[str, int],
) -> None:
    """Stage: drop the document's previous units and postings, write ``units`` for
    ``version``; ``totals`` (the evidence stats) is updated in place."""
    for key, value in store.scan(fp.FAMILY, fp.MD_UNIT.prefix(document_id)):
        number = int(fp.MD_UNIT.decode(key)[1])
        old = codec.decode_record(value, fp.MD_UNIT.name)
        for term in old.get("terms", {}):
            batch.delete(fp.FAMILY, fp.MD_TERM.encode(term_digest(term), document_id, number))
        batch.delete(fp.FAMILY, key)
        totals["units"] = max(0, totals["units"] - 1)
        totals["length"] = max(0, totals["length"] - int(old.get("length", 0)))
    for number, unit in enumerate(units):
        batch.put(
            fp.FAMILY,
            fp.MD_UNIT.encode(document_id, number),
            codec.encode_record(
                {
                    "version": version,
                    "start": unit.start,
                    "end": unit.end,
                    "byteStart": unit.byte_start,
                    "byteEnd": unit.byte_end,
                    "length": unit.length,
                    "terms": unit.terms,
                }
            ),
        )
        for term, tf in unit.terms.items():
            batch.put(
                fp.FAMILY,
                fp.MD_TERM.encode(term_digest(term), document_id, number),
                tf.to_bytes(4, "big"),
            )
        totals["units"] += 1
        totals["length"] += unit.length
    batch.put(fp.FAMILY, fp.MD_STATS.encode("evidence"), codec.encode_record(totals))


# -- search ----------------------------------------------------------------------------------


def _idf(n: int, df: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


def search(
    store: Store,
    reader: Reader,
    query: str,
    *,
    project: str | None = None,
    sessions: list[str] | None = None,
    limit: int | None = None,
    limits: Limits | None = None,
) -> dict[str, Any]:
    """Markdown evidence units matching ``query`` (plain BM25 over units), as hits.

    With ``limits`` (default: the spec's defaults; the engine passes its settings) at most
    ``limits.lexical`` (30) units are ranked, ``limit`` (default ``limits.final``, 6; at most 20)
    are returned; each excerpt holds at most ``limits.hit_chars`` (3,000) characters and all
    excerpts together at most ``limits.result_chars`` (16,000; each gets ``result_chars //
    limit`` when that is less, so every hit asked for fits).
    """
    limits = limits or Limits()
    final = clamp_hits(limit, limits.final)
    terms = list(dict.fromkeys(tokens(query)))[:MAX_QUERY_TERMS]
    totals = stats(store)
    n = max(1, totals["units"])
    avgdl = totals["length"] / n if totals["units"] else 1.0
    postings: dict[tuple[str, int], dict[str, int]] = {}
    idfs: dict[str, float] = {}
    for term in terms:
        found = 0
        for key, value in store.scan(
            fp.FAMILY, fp.MD_TERM.prefix(term_digest(term)), limit=MAX_TERM_SCAN
        ):
            _, doc, unit = fp.MD_TERM.decode(key)
            postings.setdefault((str(doc), int(unit)), {})[term] = int.from_bytes(value, "big")
            found += 1
        idfs[term] = _idf(n, found)
    unit_keys = list(postings)
    records = store.get_many(fp.FAMILY, [fp.MD_UNIT.encode(d, u) for d, u in unit_keys])
    heads: dict[str, DocumentHead | None] = {}
    scored: list[tuple[float, str, int, dict[str, Any], DocumentHead, list[str]]] = []
    for (doc, unit), raw in zip(unit_keys, records, strict=True):
        if raw is None:
            continue
        record = codec.decode_record(raw, fp.MD_UNIT.name)
        if doc not in heads:
            head_raw = store.get("documents", keys.DOC_HEAD.encode(doc))
            heads[doc] = decode_head(head_raw) if head_raw else None
        head = heads[doc]
        if head is None or head.get("state") != "live":
            continue
        if int(head["version"]) != int(record["version"]):
            continue
        if project is not None and head.get("project") != project:
            continue
        if sessions and head.get("session") not in sessions:
            continue
        tfs = postings[(doc, unit)]
        dl = max(1, int(record.get("length", 1)))
        score = sum(
            idfs[t] * tf * (K1 + 1) / (tf + K1 * (1 - B + B * dl / avgdl)) for t, tf in tfs.items()
        )
        scored.append((score, doc, unit, record, head, sorted(tfs, key=terms.index)))
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    scored = scored[: limits.lexical]
    upper = sum(idf * (K1 + 1) for idf in idfs.values()) or 1.0
    total_idf = sum(idfs.values()) or 1.0
    results: list[dict[str, Any]] = []
    budget = limits.result_chars
    per_hit = min(limits.hit_chars, limits.result_chars // final)  # every hit asked for fits
    for raw_score, doc, _unit, record, head, matched in scored:
        if len(results) >= final or budget <= 0:
            break
        coverage = sum(idfs[t] for t in matched) / total_idf
        calibrated = round(math.sqrt(min(1.0, raw_score / upper)) * coverage, 4)
        manifest = reader.manifest(doc, int(record["version"]))
        hit = _materialize(reader, manifest, record, matched, min(per_hit, budget))
        budget -= hit["markdown"]["end"] - hit["markdown"]["start"]
        from cwcore.contract.bands import band

        hit.update(
            {
                "documentId": doc,
                "version": int(record["version"]),
                "kind": head.get("kind", "markdown"),
                "score": calibrated,
                "band": band(calibrated),
                "matchType": "lexical",
                "matchedTerms": matched,
                "score_metadata": {
                    "mode": "markdown-evidence",
                    "presented": "calibrated",
                    "stages": [
                        {
                            "stage": "lexical",
                            "type": "bm25",
                            "direction": "higher-is-better",
                            "value": round(raw_score, 6),
                        },
                        {
                            "stage": "calibrated",
                            "type": "calibrated-confidence",
                            "direction": "higher-is-better",
                            "value": calibrated,
                        },
                    ],
                },
                "source": {
                    "sessionId": head.get("session"),
                    "project": head.get("project"),
                    "agent": manifest.get("agent"),
                    "messageKeys": [p["key"] for p in manifest["parts"]],
                },
            }
        )
        results.append(hit)
    return {
        "query": query,
        "results": results,
        "retrieval_status": "ok" if results else "empty",
        "semantic_search_used": False,
    }


def _materialize(
    reader: Reader,
    manifest: Manifest,
    record: dict[str, Any],
    matched: list[str],
    max_chars: int,
) -> dict[str, Any]:
    """The unit's excerpt around its first matched occurrence, with the Markdown fields."""
    start = int(record["start"])
    data = reader.read_bytes(manifest, int(record["byteStart"]), int(record["byteEnd"]))
    text = data.decode("utf-8", "surrogatepass")
    wanted = set(matched)
    first = next((s for t, s, _ in tokens_with_offsets(text) if t in wanted), 0)
    lo = 0
    hi = len(text)
    truncated = False
    if hi - lo > max_chars:
        lo = max(0, min(first - max_chars // 4, hi - max_chars))
        hi = lo + max_chars
        truncated = True
    meta = manifest.get("metadata") or {}
    first_line = record_line = md_hits.line_of(meta, start)
    if record_line is not None:
        first_line = record_line + text.count("\n", 0, lo)
    last_line = None if first_line is None else first_line + text.count("\n", lo, max(lo, hi - 1))
    lines = None if first_line is None or last_line is None else [first_line, last_line]
    hit = md_hits.fields(manifest, start + lo, start + hi, truncated=truncated, lines=lines)
    hit["snippet"] = text[lo:hi]
    return hit

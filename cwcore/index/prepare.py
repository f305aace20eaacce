"""Per-document index preparation: windows, BM25F terms, exact anchors, relations, importance.

Everything here is computed from one document version's manifest and text alone, under limits
that bound temporary memory, not archive size: source read in 256 KiB segments and never more than
512 KiB at once; at most 4,096 windows, 4,500 staged mutations and 8 MiB of staged data per
document; exact ranks at most 8,000 anchors and publishes at most 1,000 postings; BM25 limits in
:mod:`cwcore.index.fields`; structural skips the document when an annotation cannot be resolved.
"""

from __future__ import annotations

import bisect
import hashlib
import math
from dataclasses import dataclass, field

from cwcore.index import anchors as anchor_mod
from cwcore.index import fields
from cwcore.index import windows as window_limits
from cwcore.index.windows import Window, byte_offsets, cut
from cwcore.store.reader import Reader
from cwcore.store.records import Manifest
from cwcore.text.tokenize import tokens_with_offsets

SEGMENT_BYTES = 256 * 1024
MAX_ANCHORS_RANKED = 8_000
MAX_EXACT_POSTINGS = 1_000
MAX_STAGED_MUTATIONS = 4_500
MAX_STAGED_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class ExactPosting:
    value: str
    kind: str
    window: int  # index of the window within the document
    start: int  # character offsets
    end: int
    byte_start: int
    byte_end: int


@dataclass(frozen=True)
class RelationPosting:
    relation: str
    window: int
    start: int
    end: int
    byte_start: int
    byte_end: int
    message_key: str


@dataclass
class Prepared:
    """Everything the handlers stage for one document version, plus their outcomes."""

    windows: list[Window]
    window_keys: list[list[str]]  # message keys each window covers
    terms: list[fields.WindowTerms]
    exact: list[ExactPosting]
    relations: list[RelationPosting]
    importance: float
    outcomes: dict[str, str] = field(default_factory=dict)
    #: Per handler whose outcome is not ``complete``: the limit it hit, as a sentence.
    limits: dict[str, str] = field(default_factory=dict)
    text_chars: int = 0
    text_digests: list[str] = field(default_factory=list)  # per window, of its exact bytes


def read_text(reader: Reader, manifest: Manifest) -> tuple[str, bytes]:
    """The document text, read in 256 KiB segments (never more than 512 KiB at once)."""
    total = int(manifest["bytes"])
    pieces = [
        reader.read_bytes(manifest, start, min(total, start + SEGMENT_BYTES))
        for start in range(0, total, SEGMENT_BYTES)
    ]
    data = b"".join(pieces)
    return data.decode("utf-8", "surrogatepass"), data


def _char_offsets(data: bytes, byte_positions: list[int]) -> dict[int, int]:
    """Character offset of each UTF-8 byte position (positions on character boundaries)."""
    out: dict[int, int] = {}
    chars = 0
    last = 0
    for pos in sorted(set(byte_positions)):
        chars += len(data[last:pos].decode("utf-8", "surrogatepass"))
        last = pos
        out[pos] = chars
    return out


def _window_of(starts: list[int], char_pos: int) -> int:
    """Index of the last window starting at or before ``char_pos`` (windows overlap and cover
    the text, so it contains the position; the later window holds more context after it)."""
    return max(0, bisect.bisect_right(starts, char_pos) - 1)


def importance_v1(manifest: Manifest, decision: bool, chain_depth: int) -> float:
    """Query-independent prior in [1, 1.15]: decision candidate, pin, referenced-by count
    (source messages and supersession-chain depth). The live recall counter is added at query
    time, under the same 1.15 cap."""
    prior = 1.0
    prior += 0.05 if decision else 0.0
    prior += 0.04 if manifest.get("pinned") else 0.0
    prior += 0.01 * min(3.0, math.log2(1 + len(manifest["parts"])))
    prior += 0.01 * min(3, chain_depth)
    return min(1.15, prior)


def prepare(
    reader: Reader,
    manifest: Manifest,
    *,
    window_tokens: int,
    window_overlap: float,
    chain_depth: int = 0,
    stems: bool = False,
) -> Prepared:
    """Everything one document version publishes. ``stems``: BM25 terms include the prose
    words' stem terms (:func:`cwcore.index.fields.analyze`)."""
    text, data = read_text(reader, manifest)
    parts = manifest["parts"]
    byte_to_char = _char_offsets(data, [p["start"] for p in parts] + [p["end"] for p in parts])
    spans = [
        fields.PartSpan(byte_to_char[p["start"]], byte_to_char[p["end"]], p["role"], p["kind"])
        for p in parts
    ]
    tokens = tokens_with_offsets(text)
    windows, truncated = cut(
        text, tokens, window_tokens, window_overlap, max_unique=fields.MAX_UNIQUE_TERMS
    )
    outcomes: dict[str, str] = {}

    starts = [w.start for w in windows]
    window_keys = [
        [parts[i]["key"] for i, s in enumerate(spans) if s.start < w.end and s.end > w.start]
        or ([parts[0]["key"]] if parts else [])
        for w in windows
    ]

    # Structural: every annotation must resolve inside the text, else the handler is skipped.
    annotations = manifest.get("annotations") or []
    relations: list[RelationPosting] = []
    resolvable = all(0 <= a[1] < a[2] <= len(text) for a in annotations)
    decision = any(a[0] == "decision" for a in annotations)
    limits: dict[str, str] = {}
    if not resolvable:
        outcomes["structural"] = "skipped"
        limits["structural"] = "an annotation did not resolve inside the text"
    else:
        bytes_at = byte_offsets(text, [x for a in annotations for x in (a[1], a[2])])
        for relation, start, end, key in annotations:
            relations.append(
                RelationPosting(
                    relation,
                    _window_of(starts, start),
                    start,
                    end,
                    bytes_at[start],
                    bytes_at[end],
                    key,
                )
            )
        outcomes["structural"] = "complete"

    # BM25F.
    terms = fields.analyze(
        tokens,
        windows,
        spans,
        [(a[0], a[1], a[2]) for a in annotations] if resolvable else [],
        kind=manifest["kind"],
        decision_candidate=decision,
        stems=stems,
    )
    bm25_partial = truncated or any(t.partial for t in terms)
    outcomes["bm25"] = "partial" if bm25_partial else "complete"
    if bm25_partial:
        limits["bm25"] = _bm25_limit(windows, terms, truncated)

    # Exact: rank the most specific anchors, publish at most 1,000 postings. A posting names
    # a window, so one per (value, window) — its first occurrence there — is all a lookup needs:
    # repeats of a symbol in one window would only spend the cap.
    found = anchor_mod.ranked(anchor_mod.with_path_suffixes(anchor_mod.extract(text)))
    exact_partial = len(found) > MAX_ANCHORS_RANKED
    hit: list[str] = []
    if exact_partial:
        hit.append(f"{len(found):,} anchors, more than the {MAX_ANCHORS_RANKED:,} ranked")
    found = found[:MAX_ANCHORS_RANKED]
    placed: dict[tuple[str, int], anchor_mod.Anchor] = {}
    for a in found:
        key = (a.value, _window_of(starts, a.start))
        if key not in placed or a.start < placed[key].start:
            placed[key] = a
    order = list(placed.items())  # in rank order: dicts keep their first insertion
    if len(order) > MAX_EXACT_POSTINGS:
        exact_partial = True
        hit.append(f"{len(order):,} exact postings, more than the {MAX_EXACT_POSTINGS:,} kept")
    kept = order[:MAX_EXACT_POSTINGS]
    bytes_at = byte_offsets(text, [x for _, a in kept for x in (a.start, a.end)])
    exact = [
        ExactPosting(a.value, a.kind, window, a.start, a.end, bytes_at[a.start], bytes_at[a.end])
        for (_, window), a in kept
    ]
    outcomes["exact"] = "partial" if exact_partial else "complete"

    # Staging budget: windows + exact + relations + importance + marker mutations.
    mutations = len(windows) + len(exact) + len(relations) + 2
    if mutations > MAX_STAGED_MUTATIONS:
        overflow = mutations - MAX_STAGED_MUTATIONS
        drop = min(overflow, len(exact))
        exact = exact[: len(exact) - drop]
        outcomes["exact"] = "partial"
        hit.append(
            f"{mutations:,} staged mutations, over the {MAX_STAGED_MUTATIONS:,} budget: "
            f"{drop:,} exact posting(s) dropped"
        )
        overflow -= drop
        if overflow > 0:
            relations, outcomes["structural"] = [], "skipped"
            limits["structural"] = (
                f"{mutations:,} staged mutations, over the {MAX_STAGED_MUTATIONS:,} budget: "
                "no room for relations"
            )
    staged = sum(len(e.value) + 48 for e in exact) + 96 * len(windows) + 64 * len(relations)
    if staged > MAX_STAGED_BYTES:
        exact, outcomes["exact"] = [], "skipped"
        hit = [f"staged exact postings of {staged / 2**20:.1f} MiB, over the 8 MiB budget"]
    if outcomes["exact"] != "complete":
        limits["exact"] = "; ".join(hit)

    outcomes["importance"] = "complete"
    return Prepared(
        windows=windows,
        window_keys=window_keys,
        terms=terms,
        exact=exact,
        relations=relations,
        importance=importance_v1(manifest, decision, chain_depth),
        outcomes=outcomes,
        limits=limits,
        text_chars=len(text),
        # Identical text in two documents (a message imported twice, copied between sessions)
        # is one source to search: equal digests collapse to one hit.
        text_digests=[
            hashlib.blake2b(data[w.byte_start : w.byte_end], digest_size=8).hexdigest()
            for w in windows
        ],
    )


def _bm25_limit(windows: list[Window], terms: list[fields.WindowTerms], truncated: bool) -> str:
    """Which of BM25's limits a partial document hit, as a sentence (spec 004's limits)."""
    said = []
    if truncated:
        cap = window_limits.MAX_WINDOWS
        said.append(f"more than {cap:,} windows: the rest of the text is not indexed")
    partial = [(w, t) for w, t in zip(windows, terms, strict=True) if t.partial]
    if partial and fields.LIMIT_SCOPE == "window":
        long = sum(1 for w, _ in partial if w.last_token - w.first_token > fields.MAX_OCCURRENCES)
        if long:
            said.append(f"{long:,} window(s) over {fields.MAX_OCCURRENCES:,} token occurrences")
        if len(partial) > long:
            said.append(
                f"{len(partial) - long:,} window(s) over {fields.MAX_UNIQUE_TERMS:,} unique terms"
            )
    elif partial:
        said.append(
            f"the document over {fields.MAX_OCCURRENCES:,} token occurrences, "
            f"{fields.MAX_UNIQUE_TERMS:,} unique terms or {fields.MAX_TERM_WINDOW_PAIRS:,} "
            "term-window pairs"
        )
    return "; ".join(said)

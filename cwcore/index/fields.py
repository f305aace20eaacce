"""BM25F at index time: weighted term frequencies and lengths per search window.

Each token's weight comes from the part (message) it sits in and from structural spans over it:

* user prose 1.5, assistant prose 1.0, tool calls 0.7, tool output 0.5, system 0.5, summaries
  1.0; question/request/correction/answer spans ×2 (title-like); every token of a
  decision-candidate document ×1.25;
* a document without role structure (Markdown, notes) weighs every token 1.0, so it scores
  exactly as plain BM25.

A window's term frequency is the sum of its tokens' weights, its length the sum of all weights.

Analysis limits (spec 003: 16,000 token occurrences, 256 unique terms, 1,024 term-window pairs),
bounding temporary memory, apply over :data:`LIMIT_SCOPE`:

* ``"window"`` (the default): per window. A window analyzes its first 16,000 tokens and keeps at
  most 256 unique terms (non-stopwords first, then by weighted frequency, then longer terms); each
  kept term is one term-window pair, so the 1,024 pair limit can never bind before the 256-term
  one does. Windows are cut at 256 distinct terms (:func:`cwcore.index.windows.cut`), so the
  term cap is a safety bound and every term of a document stays findable.
* ``"document"``: spec 003's literal reading, per document: the document's first 16,000 token
  positions are analyzed (later windows get no postings), its 256 highest-priority terms are kept
  (same order, by document-wide weighted frequency) and at most 1,024 (term, window) pairs are
  published: each kept term first in its window of highest frequency (so every kept term stays
  findable), then the remaining pairs by frequency. It is not the default because it drops
  vocabulary of ordinary documents (half the agent-log documents hold more than 256 distinct
  terms) and loses retrieval quality; docs/indexing.md has the measurement.

Either way, past a limit the window is marked partial and the handler reports ``partial``; a
window's length stays the weighted length of the tokens it analyzed (a dropped term changes no
kept term's frequency and no length, so no posting is misleading).
"""

from __future__ import annotations

import bisect
import itertools
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from cwcore.index.windows import Window
from cwcore.text.stems import with_stems
from cwcore.text.stopwords import STOPWORDS
from cwcore.text.tokenize import Token

MAX_OCCURRENCES = 16_000
MAX_UNIQUE_TERMS = 256
MAX_TERM_WINDOW_PAIRS = 1_024
#: Where the three limits above apply: ``"window"`` or ``"document"`` (module docstring). A
#: module constant so an evaluation can measure the other scope
#: (``python -m eval --override cwcore.index.fields.LIMIT_SCOPE='"document"'``).
LIMIT_SCOPE = "window"

ROLE_WEIGHTS: dict[tuple[str, str], float] = {
    ("user", "text"): 1.5,
    ("assistant", "text"): 1.0,
    ("assistant", "tool-call"): 0.7,
    ("tool", "tool-result"): 0.5,
    ("system", "text"): 0.5,
}
KIND_WEIGHTS = {"summary": 1.0, "tool-call": 0.7, "tool-result": 0.5, "thinking": 0.0}
SPAN_BOOST = 2.0
DECISION_BOOST = 1.25
BOOSTED_RELATIONS = ("question", "request", "correction", "answer")
#: Document kinds that carry role structure; others weigh every token 1.0.
STRUCTURED_KINDS = ("turn", "tool-result", "decision")


@dataclass(frozen=True)
class PartSpan:
    """A part's character range in the document text, with its role and kind."""

    start: int
    end: int
    role: str
    kind: str


@dataclass(frozen=True)
class WindowTerms:
    tfs: dict[str, float]
    length: float
    partial: bool


def part_weight(role: str, kind: str) -> float:
    if (role, kind) in ROLE_WEIGHTS:
        return ROLE_WEIGHTS[(role, kind)]
    return KIND_WEIGHTS.get(kind, 1.0)


def analyze(
    tokens: Sequence[Token],
    windows: Sequence[Window],
    parts: Sequence[PartSpan],
    spans: Sequence[tuple[str, int, int]],
    *,
    kind: str,
    decision_candidate: bool,
    stems: bool = False,
) -> list[WindowTerms]:
    """Weighted ``{term: tf}`` and length for each window. ``spans`` are structural
    ``(relation, start, end)`` character ranges; ``parts`` must be sorted by start. ``stems``:
    each window's prose words also counted under their stem terms
    (:func:`cwcore.text.stems.with_stems`), after the term caps, so a stem never displaces a
    surface term and the length is that of the surface tokens: a window holds at most 256
    surface terms and as many stem terms. Not with ``LIMIT_SCOPE = "document"``.

    A token's weight is that of the last part starting at or before it, doubled inside a boosted
    span, times the decision boost. Weights are constant over runs of tokens (a part, a span),
    so they are computed per run, and a window's frequencies are counted per run."""
    terms = [t[0] for t in tokens]
    runs = _weight_runs(tokens, parts, spans, kind=kind, decision_candidate=decision_candidate)
    # With every weight a multiple of 1/64 (all but the tool-call weight), each partial sum is
    # exact in binary floating point, so count × weight per run equals the token-by-token sum
    # bit for bit and may be added in any grouping. Otherwise sum token by token, in order.
    exact = all((w * 64.0).is_integer() for _, _, w in runs) and len(tokens) < 1 << 30
    weights: list[float] | None = None
    per_document = LIMIT_SCOPE == "document"
    # Per document: the first MAX_OCCURRENCES token positions of the document are analyzed.
    doc_end = (windows[0].first_token + MAX_OCCURRENCES) if per_document and windows else None
    out: list[WindowTerms] = []
    for window in windows:
        first, last = window.first_token, window.last_token
        if doc_end is not None:
            partial = last > doc_end
            last = max(first, min(last, doc_end))
        else:
            partial = last - first > MAX_OCCURRENCES
            if partial:
                last = first + MAX_OCCURRENCES
        if exact:
            tfs, length = _count_runs(terms, runs, first, last)
        else:
            if weights is None:
                weights = [0.0] * len(tokens)
                for a, b, w in runs:
                    weights[a:b] = [w] * (b - a)
            tfs, length = _sum_tokens(terms, weights, first, last)
        if not per_document and len(tfs) > MAX_UNIQUE_TERMS:
            partial = True
            tfs = {t: tfs[t] for t in _ranked(tfs)[:MAX_UNIQUE_TERMS]}
        out.append(WindowTerms(tfs, length, partial))
    if per_document:
        # The per-document bound counts every (term, window) pair; stem terms would double
        # them past it, so this measurement mode indexes none.
        return _bound_document(out)
    if stems:
        out = [WindowTerms(with_stems(w.tfs), w.length, w.partial) for w in out]
    return out


def _ranked(tfs: dict[str, float]) -> list[str]:
    """Terms in the order they are kept under a cap: non-stopwords first, then by weighted
    frequency, then longer terms, then alphabetically (deterministic)."""
    return sorted(tfs, key=lambda t: (t in STOPWORDS, -tfs[t], -len(t), t))


def _bound_document(analyzed: list[WindowTerms]) -> list[WindowTerms]:
    """Apply the unique-term and term-window pair limits over a whole document's windows.

    Keeps the :data:`MAX_UNIQUE_TERMS` highest-ranked terms by document-wide weighted frequency;
    then at most :data:`MAX_TERM_WINDOW_PAIRS` (term, window) pairs: first each kept term in its
    window of highest frequency (the earliest on a tie), then the remaining pairs by frequency
    (then window order, then term rank). Lengths are unchanged; a window that lost a term or a
    pair is partial."""
    doc_tfs: dict[str, float] = {}
    for wt in analyzed:
        for t, f in wt.tfs.items():
            doc_tfs[t] = doc_tfs.get(t, 0.0) + f
    rank = {t: i for i, t in enumerate(_ranked(doc_tfs)[:MAX_UNIQUE_TERMS])}
    pairs = [(w, t) for w, wt in enumerate(analyzed) for t in wt.tfs if t in rank]
    if len(rank) == len(doc_tfs) and len(pairs) <= MAX_TERM_WINDOW_PAIRS:
        return analyzed
    chosen: set[tuple[int, str]] = set()
    best: dict[str, int] = {}
    for w, t in pairs:  # in window order, so a strict improvement keeps the earliest tie
        if t not in best or analyzed[w].tfs[t] > analyzed[best[t]].tfs[t]:
            best[t] = w
    chosen.update((w, t) for t, w in best.items())
    rest = sorted(
        (p for p in pairs if p not in chosen),
        key=lambda p: (-analyzed[p[0]].tfs[p[1]], p[0], rank[p[1]]),
    )
    chosen.update(rest[: max(0, MAX_TERM_WINDOW_PAIRS - len(chosen))])
    out: list[WindowTerms] = []
    for w, wt in enumerate(analyzed):
        tfs = {t: f for t, f in wt.tfs.items() if (w, t) in chosen}
        out.append(WindowTerms(tfs, wt.length, wt.partial or len(tfs) < len(wt.tfs)))
    return out


def _weight_runs(
    tokens: Sequence[Token],
    parts: Sequence[PartSpan],
    spans: Sequence[tuple[str, int, int]],
    *,
    kind: str,
    decision_candidate: bool,
) -> list[tuple[int, int, float]]:
    """``(first token, end token, weight)`` runs covering every token, in token order."""
    n = len(tokens)
    structured = kind in STRUCTURED_KINDS and bool(parts)
    if not structured:
        return [(0, n, 1.0)] if n else []
    starts = [t[1] for t in tokens]
    doc_boost = DECISION_BOOST if decision_candidate else 1.0
    boosts = sorted((s, e) for r, s, e in spans if r in BOOSTED_RELATIONS)
    part_starts = [p.start for p in parts]
    if starts != sorted(starts) or part_starts != sorted(part_starts):
        # A path's file-name token follows the path's later parts, so token starts may step
        # back; weigh each token on its own, as the sweep below assumes order.
        return _runs_of(_token_weights(starts, parts, boosts, doc_boost))
    # Token boundaries where the weight may change: part starts and boosted-span edges.
    cuts: dict[int, None] = {0: None, n: None}
    part_at: list[tuple[int, float]] = []  # (first token, part weight) in token order
    if bisect.bisect_left(starts, parts[0].start) > 0:
        part_at.append((0, 1.0))  # tokens before the first part weigh 1.0
    for p in parts:
        at = bisect.bisect_left(starts, p.start)
        part_at.append((at, part_weight(p.role, p.kind)))
        cuts[at] = None
    boosted: list[tuple[int, int]] = []  # token ranges inside the union of boosted spans
    for s, e in _union(boosts):
        a, b = bisect.bisect_left(starts, s), bisect.bisect_left(starts, e)
        if a < b:
            boosted.append((a, b))
            cuts[a] = cuts[b] = None
    edges = sorted(cuts)
    runs: list[tuple[int, int, float]] = []
    pi = bi = 0
    for a, b in itertools.pairwise(edges):
        # The last part starting at or before token a (equal starts: the later part wins).
        while pi + 1 < len(part_at) and part_at[pi + 1][0] <= a:
            pi += 1
        weight = part_at[pi][1]
        while bi < len(boosted) and boosted[bi][1] <= a:
            bi += 1
        if bi < len(boosted) and boosted[bi][0] <= a:
            weight *= SPAN_BOOST
        runs.append((a, b, weight * doc_boost))
    return runs


def _token_weights(
    starts: list[int], parts: Sequence[PartSpan], boosts: list[tuple[int, int]], doc_boost: float
) -> list[float]:
    """Each token's weight, token by token (any token order)."""
    part_starts = [p.start for p in parts]
    weights: list[float] = []
    next_span = 0
    covered_to = -1  # the boosted spans are swept in step with the tokens' starts
    for start in starts:
        at = bisect.bisect_right(part_starts, start) - 1
        weight = part_weight(parts[at].role, parts[at].kind) if at >= 0 else 1.0
        while next_span < len(boosts) and boosts[next_span][0] <= start:
            covered_to = max(covered_to, boosts[next_span][1])
            next_span += 1
        if start < covered_to:
            weight *= SPAN_BOOST
        weights.append(weight * doc_boost)
    return weights


def _runs_of(weights: list[float]) -> list[tuple[int, int, float]]:
    """Maximal runs of equal consecutive weights."""
    runs: list[tuple[int, int, float]] = []
    at = 0
    for weight, group in itertools.groupby(weights):
        size = sum(1 for _ in group)
        runs.append((at, at + size, weight))
        at += size
    return runs


def _union(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge sorted ``(start, end)`` character intervals into disjoint ones."""
    out: list[tuple[int, int]] = []
    for s, e in intervals:
        if out and s <= out[-1][1]:
            if e > out[-1][1]:
                out[-1] = (out[-1][0], e)
        elif s < e:
            out.append((s, e))
    return out


def _count_runs(
    terms: list[str], runs: list[tuple[int, int, float]], first: int, last: int
) -> tuple[dict[str, float], float]:
    """Frequencies over tokens ``[first, last)`` counted per run (exact weights only)."""
    tfs: dict[str, float] = {}
    length = 0.0
    for a, b, w in runs:
        a, b = max(a, first), min(b, last)
        if a >= b or w <= 0:
            continue
        counts = Counter(terms[a:b])
        length += (b - a) * w
        if not tfs:
            tfs = {t: c * w for t, c in counts.items()}
            continue
        get = tfs.get
        for t, c in counts.items():
            tfs[t] = get(t, 0.0) + c * w
    return tfs, length


def _sum_tokens(
    terms: list[str], weights: list[float], first: int, last: int
) -> tuple[dict[str, float], float]:
    """Frequencies over tokens ``[first, last)`` summed token by token, in text order."""
    tfs: dict[str, float] = {}
    length = 0.0
    for i in range(first, last):
        w = weights[i]
        if w <= 0:
            continue
        term = terms[i]
        tfs[term] = tfs.get(term, 0.0) + w
        length += w
    return tfs, length

"""BM25F at index time: weighted term frequencies and lengths per search window.

Each token's weight comes from the part (message) it sits in and from structural spans over it:

* user prose 1.5, assistant prose 1.0, tool calls 0.7, tool output 0.5, system 0.5, summaries
  1.0; question/request/correction/answer spans ×2 (title-like); every token of a
  decision-candidate document ×1.25;
* a document without role structure (Markdown, notes) weighs every token 1.0, so it scores
  exactly as plain BM25.

A window's term frequency is the sum of its tokens' weights, its length the sum of all weights.
Analysis limits per window, bounding temporary memory: at most 16,000 token occurrences and 256
unique terms; over a limit the window keeps its highest-priority terms (non-stopwords first, then by
weighted frequency, then longer terms) and the handler reports ``partial``. Each kept unique term is
one term-window pair, so the 1,024 pair limit can never bind before the 256-term one does.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass

from cwcore.index.windows import Window
from cwcore.text.stopwords import STOPWORDS
from cwcore.text.tokenize import Token

MAX_OCCURRENCES = 16_000
MAX_UNIQUE_TERMS = 256
MAX_TERM_WINDOW_PAIRS = 1_024

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
) -> list[WindowTerms]:
    """Weighted ``{term: tf}`` and length for each window. ``spans`` are structural
    ``(relation, start, end)`` character ranges; ``parts`` must be sorted by start."""
    structured = kind in STRUCTURED_KINDS and bool(parts)
    starts = [p.start for p in parts]
    boosts = sorted((s, e) for r, s, e in spans if r in BOOSTED_RELATIONS)
    doc_boost = DECISION_BOOST if (structured and decision_candidate) else 1.0
    weights: list[float] = []
    next_span = 0
    covered_to = -1  # tokens start in increasing order: sweep the union of boosted spans
    for _, start, _end in tokens:
        if not structured:
            weights.append(1.0)
            continue
        at = bisect.bisect_right(starts, start) - 1
        weight = part_weight(parts[at].role, parts[at].kind) if at >= 0 else 1.0
        while next_span < len(boosts) and boosts[next_span][0] <= start:
            covered_to = max(covered_to, boosts[next_span][1])
            next_span += 1
        if start < covered_to:
            weight *= SPAN_BOOST
        weights.append(weight * doc_boost)
    out: list[WindowTerms] = []
    for window in windows:
        first, last = window.first_token, window.last_token
        partial = last - first > MAX_OCCURRENCES
        if partial:
            last = first + MAX_OCCURRENCES
        tfs: dict[str, float] = {}
        length = 0.0
        for i in range(first, last):
            w = weights[i]
            if w <= 0:
                continue
            term = tokens[i][0]
            tfs[term] = tfs.get(term, 0.0) + w
            length += w
        if len(tfs) > MAX_UNIQUE_TERMS:
            partial = True
            ranked = sorted(tfs, key=lambda t: (t in STOPWORDS, -tfs[t], -len(t), t))
            tfs = {t: tfs[t] for t in ranked[:MAX_UNIQUE_TERMS]}
        out.append(WindowTerms(tfs, length, partial))
    return out

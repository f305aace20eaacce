"""The ranking knobs of explicit search, in one frozen record carried by the search context.

Every stage of :func:`cwcore.retrieve.search.search` (and gather, which runs it) reads its knob
from the :class:`RetrievalParams` of its :class:`~cwcore.retrieve.search.SearchContext`, never
from a module constant: an experiment (``python -m eval --param rrf_k=30``) builds one instance
with :meth:`RetrievalParams.replace`, and a name that is not a field is refused
(:class:`~cwcore.errors.InvalidInput`) instead of silently changing nothing.

The defaults are the shipped values; docs/evaluation.md records the runs behind each. What is
not here on purpose (docs/retrieval.md, "Ranking knobs"):

* contracts of the spec: the relevance bands (:mod:`cwcore.contract.bands`, 000.29), the rank
  weights of the RRF blend (75 / 60 / 40 %, :func:`cwcore.retrieve.fusion.rank_weight`,
  000.33), the retrieval limits (:class:`cwcore.markdown.limits.Limits`, spec 004, settings);
* fitted maps of a presented score (the semantic calibrations: fits written by ``make eval``);
* work bounds that cap cost rather than order hits (posting and scan caps in ``exact.py``,
  ``lexical.py``, ``bm25.py``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from cwcore.errors import InvalidInput


@dataclass(frozen=True, slots=True)
class RetrievalParams:
    """Ranking knobs of one search context. Counts are of windows or terms; weights, shares and
    bonuses are plain ratios (0.03 = 3 %)."""

    # -- BM25 (cwcore.index.bm25, passed to every scoring call) --
    #: BM25 term-frequency saturation ``k1`` (Lucene's default).
    bm25_k1: float = 1.2
    #: BM25 length normalization ``b`` in [0, 1] (Lucene's default).
    bm25_b: float = 0.75

    # -- candidate depth (cwcore.retrieve.search) --
    #: BM25 windows fetched per requested hit in the first round (several windows share a
    #: document)...
    fetch_per_hit: int = 4
    #: ...and at least this many more than the hits wanted.
    fetch_extra: int = 40
    #: How many times deeper each further round looks than the one before.
    deeper: int = 4
    #: Rounds at most: the last looks at ``lexical`` × 4⁵ (30,720) windows, enough for the
    #: deepest page (100 sessions of 5 documents each).
    max_rounds: int = 6
    #: Documents gathered per wanted session when hits are grouped by session.
    session_depth: int = 5
    #: Nearest windows the semantic mode fetches per wanted candidate, before scope filters.
    semantic_overfetch: int = 4

    # -- weak first pass: expansion and the ``auto`` semantic rescue (cwcore.retrieve.search) --
    #: A first BM25 pass is weak when its top calibrated score is below this...
    weak_score: float = 0.5
    #: ...or its top window covers less than this IDF-weighted share of the query's terms.
    weak_coverage: float = 0.6
    #: The ``auto`` semantic rescue also runs (never after an exact answer, and without the
    #: expansion a weak pass gets) when the top calibrated lexical score is below this...
    rescue_score: float = 0.0
    #: ...or the top window's IDF-weighted coverage of the query's terms is below this: 0.8
    #: (issue 35) rescues the borderline passes whose top window misses a fifth of the query's
    #: weight; measured on every dev set (docs/evaluation.md, "Semantic rescue trigger"), it
    #: kept every primary metric and raised conversations hit@5 / recall_all@5 (0.662 → 0.667,
    #: 0.934 → 0.939) and LongMemEval NDCG@10 (first 30 questions, 0.960 → 0.963); the same
    #: threshold on ``weak_coverage`` (which also expands) gained nothing on conversations...
    rescue_coverage: float = 0.8
    #: ...or the top lexical window holds less than this share of the query's content words...
    rescue_content: float = 0.0
    #: ...or at least this share of the query's content words is in no window of the scope...
    rescue_absent: float = 0.0
    #: ...or the top calibrated lexical score leads the second by less than this (0: off)...
    rescue_margin: float = 0.0
    #: ...or the query has at least this many content words. Each is off at 0; all off, the
    #: rescue runs exactly after a weak first pass (the trigger before issue 35).
    rescue_words: int = 0
    #: Run the RM3/Bo1 requery after a weak first pass (a switch for measuring it).
    expansion: bool = True
    #: Query weight of the best expansion term (the user's own terms weigh 1); the others weigh
    #: this times their feedback score relative to the best one's (RM3 interpolation). Chosen on
    #: every dev set (docs/evaluation.md, "Earlier decisions"): full weight drifted the
    #: agent-log and demo queries (hit@1 0.694 → 0.673, 0.775 → 0.725), no expansion lost
    #: LongMemEval's multi-session questions (recall_all@5 0.937 → 0.863).
    expansion_weight: float = 0.5
    #: Expansion terms at most in the requery.
    expansion_terms: int = 8
    #: Top windows whose vocabulary feeds the expansion.
    expansion_windows: int = 3
    #: Most frequent feedback terms whose corpus IDF is read before the best are kept.
    expansion_candidates: int = 24
    #: Windows a feedback term must occur in (a term of one window is noise).
    expansion_min_df: int = 2
    #: Query weight of a prose word's stem term (the word itself weighs 1) in a search without
    #: a semantic stage, over an index that has stem terms (cwcore.text.stems). Chosen on every
    #: dev set (docs/evaluation.md, "Round 8"): 0.5 keeps or raises every lexical-only primary
    #: metric on all four sets; 0.25 and 0.35 lose an agent-log first place. 0: no stems.
    stem_weight: float = 0.5

    # -- exact tier (cwcore.retrieve.exact) --
    #: An anchor in more than this share of the scope's windows forms no exact tier...
    exact_tier_share: float = 0.05
    #: ...unless it occurs in at most this many windows.
    exact_tier_min_df: int = 20

    # -- fusion of the lexical/semantic tier (cwcore.retrieve.fusion) --
    #: The RRF constant ``k`` of ``weight / (k + rank)`` (spec 004: 60).
    rrf_k: float = 60
    #: RRF credit weight of a lexical rank.
    lexical_weight: float = 1.0
    #: RRF credit weight of a semantic rank: 0.3 of a lexical one, so a semantic hit joins the
    #: order beside lexical evidence instead of displacing it (chosen by ``make eval`` on all
    #: three dev sets together: 1.0, 0.7, 0.5 and 0.3 measured, and 1.0 to 0.2 with the pooled
    #: calibration in the blend; docs/evaluation.md).
    semantic_weight: float = 0.3
    #: Blend the normalized RRF credit with the calibrated score (False: RRF credit alone).
    score_blend: bool = True

    # -- priors, order only (cwcore.retrieve.importance) --
    #: Cap of the importance prior (stored prior × recall counter), as a multiplier.
    importance_cap: float = 1.15
    #: Share each recall of a searched document adds to its prior...
    recall_step: float = 0.02
    #: ...counted at most this many times.
    recall_max: int = 5
    #: Share the newest candidate gains over the oldest (by rank of creation time).
    recency_bonus: float = 0.03
    #: Share each generation of lineage from the named session costs...
    lineage_step: float = 0.02
    #: ...counted at most this many generations.
    lineage_max: int = 3

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            _check(f.name, f.type, getattr(self, f.name))

    def mode_weight(self, mode: str) -> float:
        """The RRF credit weight of ``mode`` (1 for a mode with no weight of its own)."""
        if mode == "lexical":
            return self.lexical_weight
        if mode == "semantic":
            return self.semantic_weight
        return 1.0

    def replace(self, **overrides: Any) -> RetrievalParams:
        """A copy with ``overrides`` applied; a name that is not a field, or a value of the wrong
        type or out of range, raises :class:`~cwcore.errors.InvalidInput` naming it."""
        unknown = sorted(set(overrides) - set(names()))
        if unknown:
            raise InvalidInput(
                f"unknown retrieval parameter {', '.join(unknown)}; known: {', '.join(names())}"
            )
        return dataclasses.replace(self, **overrides)


def names() -> tuple[str, ...]:
    """Every field of :class:`RetrievalParams`, in declaration order."""
    return tuple(f.name for f in dataclasses.fields(RetrievalParams))


#: Fields whose value is a share or weight in [0, 1].
_UNIT = frozenset(
    {
        "bm25_b",
        "weak_score",
        "weak_coverage",
        "rescue_score",
        "rescue_coverage",
        "rescue_content",
        "rescue_absent",
        "rescue_margin",
        "exact_tier_share",
        "recall_step",
        "recency_bonus",
        "lineage_step",
        "stem_weight",
    }
)


def _check(name: str, kind: object, value: object) -> None:
    """Type and range of one field (``kind`` is the annotation, a string under the future
    import)."""
    if kind == "bool":
        if not isinstance(value, bool):
            raise InvalidInput(f"retrieval parameter {name} takes true or false, not {value!r}")
        return
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"retrieval parameter {name} takes a number, not {value!r}")
    if kind == "int" and not isinstance(value, int):
        raise InvalidInput(f"retrieval parameter {name} takes a whole number, not {value!r}")
    if not math.isfinite(value) or value < 0:
        raise InvalidInput(f"retrieval parameter {name} takes a finite value >= 0, not {value!r}")
    if name in _UNIT and value > 1:
        raise InvalidInput(f"retrieval parameter {name} takes a value in [0, 1], not {value!r}")
    if name in ("deeper", "max_rounds", "fetch_per_hit", "session_depth") and value < 1:
        raise InvalidInput(f"retrieval parameter {name} takes a value >= 1, not {value!r}")
    if name == "importance_cap" and value < 1:
        raise InvalidInput(f"retrieval parameter {name} takes a value >= 1, not {value!r}")


def parse(items: list[str], base: RetrievalParams | None = None) -> RetrievalParams:
    """``NAME=VALUE`` items (a command line's ``--param``) applied to ``base`` (the defaults):
    a value is read as the field's type (``true``/``false`` for a switch)."""
    base = base or RetrievalParams()
    kinds = {f.name: f.type for f in dataclasses.fields(RetrievalParams)}
    overrides: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not sep or not name:
            raise InvalidInput(f"--param takes NAME=VALUE, not {item!r}")
        kind = kinds.get(name)
        if kind is None:
            raise InvalidInput(f"unknown retrieval parameter {name}; known: {', '.join(names())}")
        overrides[name] = _value(name, kind, text.strip())
    return base.replace(**overrides)


def _value(name: str, kind: object, text: str) -> Any:
    if kind == "bool":
        lowered = text.lower()
        if lowered in ("true", "1", "yes", "on"):
            return True
        if lowered in ("false", "0", "no", "off"):
            return False
        raise InvalidInput(f"retrieval parameter {name} takes true or false, not {text!r}")
    try:
        return int(text) if kind == "int" else float(text)
    except ValueError:
        raise InvalidInput(f"retrieval parameter {name} takes a number, not {text!r}") from None


#: The shipped values.
DEFAULT = RetrievalParams()

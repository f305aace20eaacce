"""The automatic preflight gate: what, if anything, a user message makes model-visible.

* the message has no topic → ``no-query``, nothing visible;
* no eligible candidate, or the best one is weak → ``none``, nothing visible;
* explicit historical intent with one strong, unambiguous candidate → ``excerpt``: one short,
  source-dated, JSON-quoted excerpt;
* explicit historical intent with an ambiguous strong match → ``marker``: current-message
  phrases only, no archived text;
* no historical intent, strong evidence (an implicit recurring concept) → ``marker``.

*Strong* evidence: the current message supplies a verbatim exact anchor the row contains
(identifier or phrase, case-sensitive), or at least :data:`~cwcore.hints.candidates.MIN_MATCHED`
matched units with coverage ≥ :data:`~cwcore.hints.candidates.COVERAGE_MIN` (0.60) and maximum
normalized IDF ≥ :data:`~cwcore.hints.candidates.IDF_MIN` (0.60).

*Ambiguous*: the runner-up of the same tier (literal identifier, literal phrase, other) is within
:data:`AMBIGUITY_MARGIN` (0.05) of the best on the normalized score. A lower tier never makes a
literal match ambiguous: tiers order candidates regardless of score.

Stale, repeated (suppressed), already-visible, durable and out-of-lineage rows never reach the
gate (they are filtered before ranking), so "current-only, stale, repeated or ineligible" ends
as ``none`` with no candidate. The marker repeats only exact spans of the current message that
the best candidate matched; it never copies archived text.
"""

from __future__ import annotations

from dataclasses import dataclass

from cwcore.hints.candidates import Evidence
from cwcore.hints.query import Query

AMBIGUITY_MARGIN = 0.05


@dataclass
class Decision:
    outcome: str  # no-query | none | excerpt | marker
    reason: str
    top: Evidence | None = None
    runner_up: Evidence | None = None
    margin: float | None = None

    @property
    def ambiguous(self) -> bool:
        return self.margin is not None and self.margin < AMBIGUITY_MARGIN


def decide(query: Query, ranked: list[Evidence]) -> Decision:
    if query.empty:
        return Decision("no-query", query.reason or "no-topic")
    if not ranked:
        return Decision("none", "no-candidate")
    top = ranked[0]
    if not top.strong:
        return Decision("none", "weak", top)
    peers = [c for c in ranked[1:] if c.tier == top.tier]
    runner = peers[0] if peers else None
    margin = round(top.norm - runner.norm, 4) if runner is not None else None
    decision = Decision("marker", "", top, runner, margin)
    if query.historical and not decision.ambiguous:
        decision.outcome, decision.reason = "excerpt", "historical-intent"
    elif query.historical:
        decision.reason = "ambiguous-historical"
    else:
        decision.reason = "recurring-concept"
    return decision


def marker_phrases(query: Query, top: Evidence) -> list[str]:
    """Exact spans of the current message that the candidate matched, in message order."""
    units = sorted((query.units[i] for i in top.matched_units), key=lambda u: u.start)
    return list(dict.fromkeys(u.literal for u in units if u.literal.strip()))
